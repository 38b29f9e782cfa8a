-- snodo task store, SQLite. Times are milliseconds since the Unix epoch (the database's
-- clock); JSON values are stored as text.
CREATE TABLE snodo_tasks (
    id               TEXT    NOT NULL PRIMARY KEY,
    owner_subject    TEXT    NOT NULL,
    owner_scope      TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    status_message   TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    ttl_ms           INTEGER,
    poll_interval_ms INTEGER,
    -- created_at + ttl_ms (NULL = never): what `get` and `sweep` compare with now
    expires_at       INTEGER,
    -- the outstanding input requests (a JSON object) while input_required
    input_requests   TEXT,
    -- 'result' | 'error', with the JSON value in `outcome`
    outcome_kind     TEXT,
    outcome          TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    -- answers received and not yet taken by the worker (a JSON object)
    input_responses  TEXT    NOT NULL DEFAULT '{}',
    version          INTEGER NOT NULL,
    -- the worker's instance id and its lease
    instance         TEXT    NOT NULL,
    lease_until      INTEGER NOT NULL
);
CREATE INDEX snodo_tasks_live ON snodo_tasks (status, lease_until);
CREATE INDEX snodo_tasks_instance ON snodo_tasks (instance, status);
CREATE INDEX snodo_tasks_expires ON snodo_tasks (expires_at) WHERE expires_at IS NOT NULL;

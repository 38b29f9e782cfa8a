-- snodo task store, PostgreSQL. Times are milliseconds since the Unix epoch (the
-- database's clock, so every instance compares leases against the same clock); JSON
-- values are stored as text, exactly as written.
CREATE TABLE snodo_tasks (
    id               TEXT    NOT NULL PRIMARY KEY,
    owner_subject    TEXT    NOT NULL,
    owner_scope      TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    status_message   TEXT,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    ttl_ms           BIGINT,
    poll_interval_ms BIGINT,
    -- created_at + ttl_ms (NULL = never): what `get` and `sweep` compare with now
    expires_at       BIGINT,
    -- the outstanding input requests (a JSON object) while input_required
    input_requests   TEXT,
    -- 'result' | 'error', with the JSON value in `outcome`
    outcome_kind     TEXT,
    outcome          TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    -- answers received and not yet taken by the worker (a JSON object)
    input_responses  TEXT    NOT NULL DEFAULT '{}',
    version          BIGINT  NOT NULL,
    -- the worker's instance id and its lease
    instance         TEXT    NOT NULL,
    lease_until      BIGINT  NOT NULL
);
CREATE INDEX snodo_tasks_live ON snodo_tasks (status, lease_until);
CREATE INDEX snodo_tasks_instance ON snodo_tasks (instance, status);
CREATE INDEX snodo_tasks_expires ON snodo_tasks (expires_at) WHERE expires_at IS NOT NULL;

-- Every change that bumps the version is announced on channel `snodo_tasks` with the
-- task id as payload: wait_change on any instance wakes at once (LISTEN), whoever wrote.
-- Lease renewals do not bump the version and are not announced; deletions (TTL) are.
CREATE FUNCTION snodo_tasks_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('snodo_tasks', OLD.id);
    ELSE
        PERFORM pg_notify('snodo_tasks', NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER snodo_tasks_changed
    AFTER UPDATE ON snodo_tasks
    FOR EACH ROW
    WHEN (OLD.version IS DISTINCT FROM NEW.version)
    EXECUTE FUNCTION snodo_tasks_notify();
CREATE TRIGGER snodo_tasks_deleted
    AFTER DELETE ON snodo_tasks
    FOR EACH ROW
    EXECUTE FUNCTION snodo_tasks_notify();

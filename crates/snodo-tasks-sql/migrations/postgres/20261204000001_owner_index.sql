-- snodo task store: counting an owner's live tasks (the per-owner limit on create).
CREATE INDEX snodo_tasks_owner ON snodo_tasks (owner_subject, owner_scope, expires_at);

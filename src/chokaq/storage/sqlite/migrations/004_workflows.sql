-- Results and workflows (see the PostgreSQL migration of the same number for the design): a
-- job enqueued with after= waits in jobs_hot with status 3 (Waiting), outside every index of
-- the fetch path, until its last parent succeeds. SQLite cannot change a CHECK constraint in
-- place, so jobs_hot is rebuilt with the new status and columns, and its indexes made again.
CREATE TABLE {p}jobs_hot_next (
    id                  TEXT PRIMARY KEY,
    queue               TEXT NOT NULL,
    type                TEXT NOT NULL,
    payload             TEXT NOT NULL,
    tags                TEXT,
    idempotency_key     TEXT,
    priority            INTEGER NOT NULL DEFAULT 10,
    status              INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2, 3)),
    attempt_count       INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER,
    timeout_seconds     REAL,
    worker_id           TEXT,
    lease_token         TEXT,
    heartbeat_at        REAL,
    scheduled_at        REAL NOT NULL,
    created_at          REAL NOT NULL,
    started_at          REAL,
    updated_at          REAL NOT NULL,
    created_by          TEXT,
    last_modified_by    TEXT,
    progress            INTEGER,
    last_error          TEXT,
    cancel_requested_at REAL,
    cancelled_by        TEXT,
    trace_context       TEXT,
    parents_left        INTEGER,
    children            INTEGER,
    waited              INTEGER
);
INSERT INTO {p}jobs_hot_next (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    max_attempts, timeout_seconds, worker_id, lease_token, heartbeat_at, scheduled_at,
    created_at, started_at, updated_at, created_by, last_modified_by, progress, last_error,
    cancel_requested_at, cancelled_by, trace_context
)
SELECT id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
       max_attempts, timeout_seconds, worker_id, lease_token, heartbeat_at, scheduled_at,
       created_at, started_at, updated_at, created_by, last_modified_by, progress, last_error,
       cancel_requested_at, cancelled_by, trace_context
FROM {p}jobs_hot;
DROP TABLE {p}jobs_hot;
ALTER TABLE {p}jobs_hot_next RENAME TO {p}jobs_hot;
CREATE INDEX {p}jobs_hot_fetch ON {p}jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0;
CREATE INDEX {p}jobs_hot_fetch_order ON {p}jobs_hot
    (priority DESC, scheduled_at, created_at) WHERE status = 0;
CREATE UNIQUE INDEX {p}jobs_hot_idempotency ON {p}jobs_hot (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX {p}jobs_hot_active ON {p}jobs_hot (queue, status) WHERE status IN (1, 2);
CREATE INDEX {p}jobs_hot_waiting ON {p}jobs_hot (queue) WHERE status = 3;

ALTER TABLE {p}jobs_archive ADD COLUMN result TEXT;
ALTER TABLE {p}jobs_archive ADD COLUMN result_error TEXT;

ALTER TABLE {p}jobs_dlq ADD COLUMN children INTEGER;

CREATE TABLE {p}job_edges (
    child_id    TEXT NOT NULL,
    parent_id   TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    satisfied   INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (child_id, parent_id)
) WITHOUT ROWID;
CREATE INDEX {p}job_edges_parent ON {p}job_edges (parent_id);
CREATE INDEX {p}job_edges_workflow ON {p}job_edges (workflow_id);

-- Durable jobs (see the PostgreSQL migration of the same number for the design): status 4
-- (Suspended) for a durable job that sleeps or waits for an event, outside every index of the
-- fetch path; job_steps for what it did; job_events for events sent before anyone waited.
-- SQLite cannot change a CHECK constraint in place, so jobs_hot is rebuilt with the new status
-- and columns, and its indexes made again.
CREATE TABLE {p}jobs_hot_next (
    id                  TEXT PRIMARY KEY,
    queue               TEXT NOT NULL,
    type                TEXT NOT NULL,
    payload             TEXT NOT NULL,
    tags                TEXT,
    idempotency_key     TEXT,
    priority            INTEGER NOT NULL DEFAULT 10,
    status              INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2, 3, 4)),
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
    waited              INTEGER,
    partition_key       TEXT,
    expires_at          REAL,
    requeues            INTEGER NOT NULL DEFAULT 0,
    wake_at             REAL,
    event_key           TEXT,
    gathering           TEXT
);
INSERT INTO {p}jobs_hot_next (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    max_attempts, timeout_seconds, worker_id, lease_token, heartbeat_at, scheduled_at,
    created_at, started_at, updated_at, created_by, last_modified_by, progress, last_error,
    cancel_requested_at, cancelled_by, trace_context, parents_left, children, waited,
    partition_key, expires_at, requeues
)
SELECT id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
       max_attempts, timeout_seconds, worker_id, lease_token, heartbeat_at, scheduled_at,
       created_at, started_at, updated_at, created_by, last_modified_by, progress, last_error,
       cancel_requested_at, cancelled_by, trace_context, parents_left, children, waited,
       partition_key, expires_at, requeues
FROM {p}jobs_hot;
DROP TABLE {p}jobs_hot;
ALTER TABLE {p}jobs_hot_next RENAME TO {p}jobs_hot;
CREATE INDEX {p}jobs_hot_active ON {p}jobs_hot (queue, status) WHERE status IN (1, 2);
CREATE INDEX {p}jobs_hot_created ON {p}jobs_hot (created_at, id);
CREATE INDEX {p}jobs_hot_expiry ON {p}jobs_hot (expires_at)
    WHERE expires_at IS NOT NULL AND status = 0 AND attempt_count = 0;
CREATE INDEX {p}jobs_hot_fetch ON {p}jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0 AND partition_key IS NULL;
CREATE INDEX {p}jobs_hot_fetch_order ON {p}jobs_hot
    (priority DESC, scheduled_at, created_at) WHERE status = 0 AND partition_key IS NULL;
CREATE UNIQUE INDEX {p}jobs_hot_idempotency ON {p}jobs_hot (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX {p}jobs_hot_partition ON {p}jobs_hot
    (type, partition_key, priority DESC, scheduled_at, created_at)
    WHERE status = 0 AND partition_key IS NOT NULL;
CREATE INDEX {p}jobs_hot_waiting ON {p}jobs_hot (queue) WHERE status = 3;
CREATE INDEX {p}jobs_hot_suspended ON {p}jobs_hot (wake_at) WHERE status = 4;
CREATE INDEX {p}jobs_hot_event ON {p}jobs_hot (event_key)
    WHERE status = 4 AND event_key IS NOT NULL;

CREATE INDEX {p}jobs_hot_gathering ON {p}jobs_hot (updated_at)
    WHERE status = 4 AND gathering IS NOT NULL;

CREATE TABLE {p}job_steps (
    job_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    kind        INTEGER NOT NULL,
    state       INTEGER NOT NULL,
    value       TEXT,
    error       TEXT,
    event_key   TEXT,
    wake_at     REAL,
    started_at  REAL,
    finished_at REAL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;

CREATE TABLE {p}job_events (
    id         INTEGER PRIMARY KEY,  -- rowid: always above every id kept, so FIFO by id
    key        TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX {p}job_events_key ON {p}job_events (key, id);
CREATE INDEX {p}job_events_expiry ON {p}job_events (expires_at);

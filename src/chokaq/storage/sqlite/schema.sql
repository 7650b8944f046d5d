-- The fresh-install schema on SQLite: equal to applying every numbered migration in order
-- (a test compares the two). "{p}name" is replaced by the quoted, prefixed table name.

-- Pillar 1: active work only (0 Pending, 1 Fetched, 2 Processing).
CREATE TABLE {p}jobs_hot (
    id                  TEXT PRIMARY KEY,
    queue               TEXT NOT NULL,
    type                TEXT NOT NULL,
    payload             TEXT NOT NULL,
    tags                TEXT,
    idempotency_key     TEXT,
    priority            INTEGER NOT NULL DEFAULT 10,
    status              INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    attempt_count       INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER,
    timeout_seconds     REAL,
    worker_id           TEXT,
    lease_token         TEXT,
    heartbeat_at        REAL,
    scheduled_at        REAL NOT NULL,  -- when the job is due (now, unless delayed)
    created_at          REAL NOT NULL,
    started_at          REAL,
    updated_at          REAL NOT NULL,
    created_by          TEXT,
    last_modified_by    TEXT,
    progress            INTEGER,
    last_error          TEXT,
    cancel_requested_at REAL,
    cancelled_by        TEXT,
    trace_context       TEXT
);

-- The fetch path: only pending rows are in this index, in claim order within a queue.
-- scheduled_at is always set (the due time), so the order needs no expression.
CREATE INDEX {p}jobs_hot_fetch ON {p}jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0;
-- SQLite only: the claim order across queues, so a fetch over every queue reads its LIMIT rows
-- in index order instead of sorting every pending row.
CREATE INDEX {p}jobs_hot_fetch_order ON {p}jobs_hot
    (priority DESC, scheduled_at, created_at) WHERE status = 0;
CREATE UNIQUE INDEX {p}jobs_hot_idempotency ON {p}jobs_hot (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Fetched and Processing rows: bulkhead counts, rescue and live counts. Few indexes on purpose:
-- every index on jobs_hot costs each claim, heartbeat and release a write.
CREATE INDEX {p}jobs_hot_active ON {p}jobs_hot (queue, status) WHERE status IN (1, 2);

-- Pillar 2: succeeded jobs, write-once.
CREATE TABLE {p}jobs_archive (
    id                  TEXT PRIMARY KEY,
    queue               TEXT NOT NULL,
    type                TEXT NOT NULL,
    payload             TEXT NOT NULL,
    tags                TEXT,
    priority            INTEGER NOT NULL,
    attempt_count       INTEGER NOT NULL,
    max_attempts        INTEGER,
    timeout_seconds     REAL,
    worker_id           TEXT,
    created_by          TEXT,
    last_modified_by    TEXT,
    created_at          REAL NOT NULL,
    started_at          REAL,
    finished_at         REAL NOT NULL,
    duration_seconds    REAL
);
CREATE INDEX {p}jobs_archive_finished ON {p}jobs_archive (finished_at DESC);
CREATE INDEX {p}jobs_archive_queue ON {p}jobs_archive (queue, finished_at DESC);

-- Pillar 3: terminal failures, with the reason and the error.
CREATE TABLE {p}jobs_dlq (
    id                  TEXT PRIMARY KEY,
    queue               TEXT NOT NULL,
    type                TEXT NOT NULL,
    payload             TEXT NOT NULL,
    tags                TEXT,
    priority            INTEGER NOT NULL,
    failure_reason      INTEGER NOT NULL,
    error               TEXT,
    attempt_count       INTEGER NOT NULL,
    max_attempts        INTEGER,
    timeout_seconds     REAL,
    worker_id           TEXT,
    created_by          TEXT,
    last_modified_by    TEXT,
    cancelled_by        TEXT,
    created_at          REAL NOT NULL,
    started_at          REAL,
    failed_at           REAL NOT NULL,
    duration_seconds    REAL
);
CREATE INDEX {p}jobs_dlq_failed ON {p}jobs_dlq (failed_at DESC);
CREATE INDEX {p}jobs_dlq_queue ON {p}jobs_dlq (queue, failed_at DESC);
CREATE INDEX {p}jobs_dlq_reason ON {p}jobs_dlq (failure_reason, failed_at DESC);
CREATE INDEX {p}jobs_dlq_type ON {p}jobs_dlq (type, failed_at DESC);

-- Lifetime counters per queue: only ever incremented.
CREATE TABLE {p}stats_summary (
    queue               TEXT PRIMARY KEY,
    succeeded_total     INTEGER NOT NULL DEFAULT 0 CHECK (succeeded_total >= 0),
    failed_total        INTEGER NOT NULL DEFAULT 0 CHECK (failed_total >= 0),
    retried_total       INTEGER NOT NULL DEFAULT 0 CHECK (retried_total >= 0),
    last_activity_at    REAL
);

-- Rolling outcomes: one row per (width, bucket start, queue, outcome, reason).
-- width_seconds is 1 for live buckets and 60 for the minute roll-ups.
CREATE TABLE {p}metric_buckets (
    width_seconds          INTEGER NOT NULL DEFAULT 1,
    bucket_start           REAL NOT NULL,
    queue                  TEXT NOT NULL,
    outcome                INTEGER NOT NULL CHECK (outcome IN (0, 1)),
    failure_reason         INTEGER NOT NULL,
    completed_count        INTEGER NOT NULL DEFAULT 0 CHECK (completed_count >= 0),
    duration_count         INTEGER NOT NULL DEFAULT 0 CHECK (duration_count >= 0),
    total_duration_seconds REAL NOT NULL DEFAULT 0,
    max_duration_seconds   REAL,
    updated_at             REAL NOT NULL,
    PRIMARY KEY (width_seconds, bucket_start, queue, outcome, failure_reason)
);

-- The control plane.
CREATE TABLE {p}queues (
    name                      TEXT PRIMARY KEY,
    paused                    INTEGER NOT NULL DEFAULT 0,
    active                    INTEGER NOT NULL DEFAULT 1,
    max_workers               INTEGER CHECK (max_workers IS NULL OR max_workers >= 1),
    zombie_timeout_seconds    REAL,
    execution_timeout_seconds REAL,
    updated_at                REAL NOT NULL,
    last_modified_by          TEXT
);

-- Live worker processes and what operators asked of them.
CREATE TABLE {p}workers (
    id                  TEXT PRIMARY KEY,
    hostname            TEXT NOT NULL,
    pid                 INTEGER NOT NULL,
    queues              TEXT,
    concurrency         INTEGER NOT NULL,
    desired_concurrency INTEGER,
    running             INTEGER NOT NULL DEFAULT 0,
    state               TEXT NOT NULL,
    circuits            TEXT NOT NULL DEFAULT '[]',
    close_circuits      TEXT NOT NULL DEFAULT '[]',
    started_at          REAL NOT NULL,
    heartbeat_at        REAL NOT NULL
);

INSERT INTO {p}queues (name, updated_at) VALUES ('default', (julianday('now') - 2440587.5) * 86400.0);
INSERT INTO {p}stats_summary (queue) VALUES ('default');

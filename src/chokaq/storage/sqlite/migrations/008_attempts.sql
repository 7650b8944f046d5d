-- Per-attempt error history and normalised error families (see the PostgreSQL migration of the
-- same number). SQLite cannot add a stored generated column to a table, so error_family is a
-- plain column that each statement writing a DLQ row fills with chokaq_error_family(error): the
-- Python function chokaq.storage.families.error_family, registered on every connection.
CREATE TABLE {p}job_attempts (
    job_id           TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    attempt          INTEGER NOT NULL,
    worker_id        TEXT,
    started_at       REAL,
    failed_at        REAL NOT NULL,
    duration_seconds REAL,
    failure_reason   INTEGER,  -- NULL: retried; else the DLQ reason of the final failure
    error            TEXT,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

ALTER TABLE {p}jobs_dlq ADD COLUMN error_family TEXT;
UPDATE {p}jobs_dlq SET error_family = chokaq_error_family(error);
CREATE INDEX {p}jobs_dlq_family ON {p}jobs_dlq (error_family, failed_at DESC);

-- Hiding a queue is The Deck's listing only (see the PostgreSQL migration of the same number).
ALTER TABLE {p}queues ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
UPDATE {p}queues SET paused = 1, hidden = 1, active = 1 WHERE active = 0;

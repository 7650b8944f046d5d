-- Batch handlers: which batch each run of a job was claimed in (see the PostgreSQL migration of
-- the same number for why a side table).
CREATE TABLE {p}job_batches (
    batch_id    TEXT NOT NULL,
    job_id      TEXT NOT NULL,
    type        TEXT NOT NULL,
    queue       TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    worker_id   TEXT NOT NULL,
    claimed_at  REAL NOT NULL,
    PRIMARY KEY (batch_id, job_id)
) WITHOUT ROWID;
CREATE INDEX {p}job_batches_job ON {p}job_batches (job_id);
CREATE INDEX {p}job_batches_type ON {p}job_batches (type, claimed_at);

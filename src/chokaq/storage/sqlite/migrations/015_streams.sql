-- Streams (see the PostgreSQL migration of the same number for the design): the items a job
-- emits with ctx.emit, keyed by (job, index), 0, 1, 2, ... with no gap.
CREATE TABLE {p}job_stream (
    job_id     TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    item       TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;

-- How many times an operator requeued a job from the DLQ (see the PostgreSQL migration of the
-- same number).
ALTER TABLE {p}jobs_hot ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}jobs_archive ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}jobs_dlq ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;

-- Batch handlers (docs/batches.md): which batch each run of a job was claimed in, one row per
-- job per batch claim, written by the claim's own statement (jobs_claim_batch). A side table
-- rather than a column of the three pillars: a job that retried ran in several batches, and the
-- moves out of hot (the worker's hot path) stay the statements they were. Pruned by age with the
-- metric buckets; The Deck reads a job's batches and a type's batch sizes from it.
CREATE TABLE {schema}.job_batches (
    batch_id    uuid NOT NULL,
    job_id      uuid NOT NULL,
    type        text NOT NULL,
    queue       text NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text NOT NULL,
    claimed_at  timestamptz NOT NULL,
    PRIMARY KEY (batch_id, job_id)
);
CREATE INDEX job_batches_job ON {schema}.job_batches (job_id);
CREATE INDEX job_batches_type ON {schema}.job_batches (type, claimed_at);

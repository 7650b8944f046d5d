-- Expiry and uniqueness windows. A job enqueued with an expiry that has not started by then
-- goes to the DLQ as EXPIRED instead of running: expires_at is read by the claim that takes
-- it, and the leader's rescue pass buries the Pending ones nobody claims (the partial index
-- holds only jobs that have an expiry, so jobs without one cost nothing).
ALTER TABLE {schema}.jobs_hot ADD COLUMN expires_at timestamptz;
CREATE INDEX jobs_hot_expiry ON {schema}.jobs_hot (expires_at)
    WHERE expires_at IS NOT NULL AND status = 0 AND attempt_count = 0;

-- One row per idempotency key enqueued with unique_for_seconds: until ``until``, another
-- enqueue with the key gets job_id, wherever that job is by then (hot, archive, DLQ or purged).
-- A row past its window is taken over by the next enqueue with the key, and deleted by the
-- retention pass.
CREATE TABLE {schema}.unique_keys (
    key        text PRIMARY KEY,
    job_id     uuid NOT NULL,
    until      timestamptz NOT NULL
);
CREATE INDEX unique_keys_until ON {schema}.unique_keys (until);

-- Enqueue conflicts (on_conflict; docs/concepts.md, "Debounce, throttle, latest wins"): per
-- queue, the lifetime counts of enqueues that replaced a Pending job's payload in place or
-- superseded a job already past Pending, and which job superseded which (the running job gave
-- its idempotency key up to a new one; with cancel_running it was also asked to stop).
ALTER TABLE {schema}.stats_summary
    ADD COLUMN replaced_total bigint NOT NULL DEFAULT 0 CHECK (replaced_total >= 0),
    ADD COLUMN superseded_total bigint NOT NULL DEFAULT 0 CHECK (superseded_total >= 0);

CREATE TABLE {schema}.job_supersessions (
    job_id           uuid PRIMARY KEY,
    by_id            uuid NOT NULL,
    cancel_requested boolean NOT NULL,
    at               timestamptz NOT NULL
);
CREATE INDEX job_supersessions_by ON {schema}.job_supersessions (by_id);

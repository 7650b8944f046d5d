-- The exception's qualified class name (module.Class) beside a dead job's error text, set by
-- the worker when an exception sent the job to the DLQ (JobFailedError.error_type, The Deck,
-- the CLI); NULL for every other failure and for rows dead-lettered before this migration.
-- And a schedule's expiry: every run it enqueues expires that long after its enqueue (NULL:
-- the job type's own, else none). Columns without a default rewrite no rows.
ALTER TABLE {schema}.jobs_dlq ADD COLUMN error_type text;
ALTER TABLE {schema}.schedules ADD COLUMN expires_after_seconds double precision;

-- The DLQ's duration sort, as the archive's (migration 11): a job without a duration compared
-- as the infinity it sorts as, each direction indexed with id, so that a page of the DLQ by
-- duration is one range of an index instead of a sort of every dead job (100,000 dead jobs:
-- 200-240 ms a page on a busy machine). The DLQ is written on final failures only, so two
-- more indexes cost the worker's hot path nothing.
CREATE INDEX IF NOT EXISTS jobs_dlq_duration_desc ON {schema}.jobs_dlq
    ((coalesce(duration_seconds, '-Infinity'::float8)), id);
CREATE INDEX IF NOT EXISTS jobs_dlq_duration_asc ON {schema}.jobs_dlq
    ((coalesce(duration_seconds, 'Infinity'::float8)), id);

-- The DLQ's duration sort, as the archive's (migration 11 and the PostgreSQL migration of the
-- same number): each direction indexed on the infinity a job without a duration sorts as.
CREATE INDEX IF NOT EXISTS {p}jobs_dlq_duration_desc ON {p}jobs_dlq (coalesce(duration_seconds, -1e999), id);
CREATE INDEX IF NOT EXISTS {p}jobs_dlq_duration_asc ON {p}jobs_dlq (coalesce(duration_seconds, 1e999), id);

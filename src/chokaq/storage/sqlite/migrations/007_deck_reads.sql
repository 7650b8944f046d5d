-- The Deck's reads (see the PostgreSQL migration of the same number): a b-tree on
-- (sort column, id) for each sort the Deck offers on the archive, so that a page read by key
-- costs what the first one does; (created_at, id) on hot; the id tie-breaker on the DLQ's
-- date index. SQLite has no trigram index: search scans (one host's file).
DROP INDEX IF EXISTS {p}jobs_archive_finished;
CREATE INDEX IF NOT EXISTS {p}jobs_archive_finished_id ON {p}jobs_archive (finished_at, id);
CREATE INDEX IF NOT EXISTS {p}jobs_archive_type_id ON {p}jobs_archive (type, id);
CREATE INDEX IF NOT EXISTS {p}jobs_archive_queue_id ON {p}jobs_archive (queue, id);
CREATE INDEX IF NOT EXISTS {p}jobs_archive_priority_id ON {p}jobs_archive (priority, id);
CREATE INDEX IF NOT EXISTS {p}jobs_archive_attempts_id ON {p}jobs_archive (attempt_count, id);
-- Descending, as the slowest-first sort reads it (SQLite puts NULLs last when descending).
CREATE INDEX IF NOT EXISTS {p}jobs_archive_duration_id ON {p}jobs_archive (duration_seconds DESC, id DESC);
DROP INDEX IF EXISTS {p}jobs_dlq_failed;
CREATE INDEX IF NOT EXISTS {p}jobs_dlq_failed_id ON {p}jobs_dlq (failed_at, id);
CREATE INDEX IF NOT EXISTS {p}jobs_hot_created ON {p}jobs_hot (created_at, id);

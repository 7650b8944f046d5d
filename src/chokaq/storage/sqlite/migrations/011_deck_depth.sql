-- The Deck at depth (see the PostgreSQL migration of the same number): the duration sort
-- compares a job without a duration as the infinity it sorts as, coalesce(duration_seconds,
-- -1e999) slowest first and 1e999 fastest first, each indexed with id, so that a page by key
-- starts at its key however deep. SQLite's listing filters are written for any filter
-- ("? IS NULL OR column = ?"), which it does not narrow to an index: the partition filter
-- gets no index here (it scans, as the other filters do on one host's file).
DROP INDEX IF EXISTS {p}jobs_archive_duration_id;
CREATE INDEX IF NOT EXISTS {p}jobs_archive_duration_desc ON {p}jobs_archive (coalesce(duration_seconds, -1e999), id);
CREATE INDEX IF NOT EXISTS {p}jobs_archive_duration_asc ON {p}jobs_archive (coalesce(duration_seconds, 1e999), id);

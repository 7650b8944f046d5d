-- The Deck's reads at a million rows. A listing page is read by key, from the position of
-- the row it follows in (sort column, id) order: each sort the Deck offers on the archive has
-- a b-tree on (column, id), so page 20,000 costs what page 1 does and a sort reads 50 index
-- entries instead of sorting every row. The hot table (written on every enqueue, claim and
-- heartbeat) only gets (created_at, id), its default order: its other sorts sort at most the
-- active jobs. The DLQ's date index gets the id tie-breaker; its other sorts sort its rows.
-- An existing archive is indexed by this migration in one transaction (the table is locked
-- for writes meanwhile): every index is created IF NOT EXISTS, so that an operator may build
-- them beforehand with CREATE INDEX CONCURRENTLY (docs/operations.md).
DROP INDEX IF EXISTS {schema}.jobs_archive_finished;
CREATE INDEX IF NOT EXISTS jobs_archive_finished_id ON {schema}.jobs_archive (finished_at, id);
CREATE INDEX IF NOT EXISTS jobs_archive_type_id ON {schema}.jobs_archive (type, id);
CREATE INDEX IF NOT EXISTS jobs_archive_queue_id ON {schema}.jobs_archive (queue, id);
CREATE INDEX IF NOT EXISTS jobs_archive_priority_id ON {schema}.jobs_archive (priority, id);
CREATE INDEX IF NOT EXISTS jobs_archive_attempts_id ON {schema}.jobs_archive (attempt_count, id);
-- Duration sorts put jobs without one last in either direction: this index serves the
-- default (descending, slowest first) and its walk back; ascending sorts the rows.
CREATE INDEX IF NOT EXISTS jobs_archive_duration_id ON {schema}.jobs_archive
    (duration_seconds DESC NULLS LAST, id DESC);
DROP INDEX IF EXISTS {schema}.jobs_dlq_failed;
CREATE INDEX IF NOT EXISTS jobs_dlq_failed_id ON {schema}.jobs_dlq (failed_at, id);
CREATE INDEX IF NOT EXISTS jobs_hot_created ON {schema}.jobs_hot (created_at, id);

-- Substring search (ILIKE '%text%' over id, type, tags and, in the DLQ, the error) scans the
-- table unless trigram indexes serve it: 2.1 s per archive page with no match. pg_trgm ships
-- with PostgreSQL and is a trusted extension (a user with CREATE on the database may add
-- it); where it cannot be created (not installed, no privilege) the migration goes on
-- without these indexes and search keeps scanning (docs/operations.md says how to add them
-- later). The extension lives in ``public``, never in chokaq's schema, so that dropping one
-- chokaq schema never drops what another one's indexes use.
DO $$
DECLARE
    trgm text;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'chokaq: pg_trgm not available (%): search scans the table', SQLERRM;
    END;
    SELECT n.nspname INTO trgm
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';
    IF trgm IS NOT NULL THEN
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS jobs_archive_search ON %s.jobs_archive USING gin '
            '((id::text) %I.gin_trgm_ops, type %I.gin_trgm_ops, '
            '(coalesce(tags, '''')) %I.gin_trgm_ops)',
            '{schema}', trgm, trgm, trgm);
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS jobs_dlq_search ON %s.jobs_dlq USING gin '
            '((id::text) %I.gin_trgm_ops, type %I.gin_trgm_ops, '
            '(coalesce(tags, '''')) %I.gin_trgm_ops, (coalesce(error, '''')) %I.gin_trgm_ops)',
            '{schema}', trgm, trgm, trgm, trgm);
    END IF;
END
$$;

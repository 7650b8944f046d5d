-- Archiving a job wrote some 40 trigram entries for its id alone (a random 36-character text)
-- into the archive's search index: that index cost 30 % of the storage statements' ceiling
-- (fetch 100 + finalize, 11,500 against 16,100 jobs/s) and the worker a tenth of its burn-down.
-- Search now matches an id by its end (a whole id, or the tail The Deck shows) instead of
-- anywhere in it, on every table and both backends; the archive serves that with a b-tree on
-- the reversed id (one entry a row), and its trigram index keeps type and tags only (short,
-- repeated texts: cheap to write). The DLQ, written only when a job fails, keeps its index.
DROP INDEX IF EXISTS {schema}.jobs_archive_search;
CREATE INDEX IF NOT EXISTS jobs_archive_id_tail ON {schema}.jobs_archive
    (reverse(id::text) text_pattern_ops);
DO $$
DECLARE
    trgm text;
BEGIN
    SELECT n.nspname INTO trgm
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';
    IF trgm IS NOT NULL THEN
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS jobs_archive_search ON %s.jobs_archive USING gin '
            '(type %I.gin_trgm_ops, (coalesce(tags, '''')) %I.gin_trgm_ops)',
            '{schema}', trgm, trgm);
    END IF;
END
$$;

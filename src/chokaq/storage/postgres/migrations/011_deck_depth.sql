-- The Deck at depth (issue 40). The duration sort compares a job without a duration as the
-- infinity it sorts as (reads.traversal): coalesce(duration_seconds, -inf) when slowest
-- first, +inf when fastest first, so a page by key is one range of an index on that
-- expression and id however deep it lies. Migration 7's index on (duration_seconds DESC NULLS
-- LAST, id DESC) served the order but not the key (a page 500,000 rows deep read every row
-- before it: 1.5 s); the ascending sort had none. Each index is scanned both ways: forward
-- for the sort's walk back, backward for the sort.
-- A partition filter read the whole archive (and counted it): a partial index on the rows
-- that have a partition, in the date order of the default sort, serves the filter, the page
-- and its bounded count, and costs unpartitioned jobs nothing.
-- An existing archive is indexed by this migration in one transaction (the table is locked
-- for writes meanwhile): every index is created IF NOT EXISTS, so that an operator may build
-- them beforehand with CREATE INDEX CONCURRENTLY (docs/operations.md).
DROP INDEX IF EXISTS {schema}.jobs_archive_duration_id;
CREATE INDEX IF NOT EXISTS jobs_archive_duration_desc ON {schema}.jobs_archive
    ((coalesce(duration_seconds, '-Infinity'::float8)), id);
CREATE INDEX IF NOT EXISTS jobs_archive_duration_asc ON {schema}.jobs_archive
    ((coalesce(duration_seconds, 'Infinity'::float8)), id);
CREATE INDEX IF NOT EXISTS jobs_archive_partition ON {schema}.jobs_archive
    (partition_key, finished_at, id) WHERE partition_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_dlq_partition ON {schema}.jobs_dlq
    (partition_key, failed_at, id) WHERE partition_key IS NOT NULL;

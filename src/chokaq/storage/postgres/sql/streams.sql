-- The streams area (docs/durable.md, "Streams"): the items a job emits (ctx.emit), in order,
-- written under its lease, read by anyone, removed once their job is in no pillar.
-- Run by postgres/streams.py; conventions in connection.sql.

-- name: streams_emit
-- An item at %(index)s, in one statement under the lease: the leased Processing row is held
-- FOR SHARE (a finalize, a rescue or a cancel of it waits for this statement, and one that
-- waited re-reads the row, so a lease taken over meanwhile writes nothing). Written only when
-- %(index)s is the stream's end: the items stay 0, 1, 2, ... with no gap, and a second writer
-- of one index writes nothing. A job someone reads (``waited``, marked by the reader's
-- job_outcome) tells its readers in this transaction, with the notice a move out of hot sends.
WITH owner AS MATERIALIZED (
    SELECT h.id, h.waited, coalesce(%(now)s::timestamptz, now()) AS now
    FROM {schema}.jobs_hot h
    WHERE h.id = %(id)s::uuid AND h.worker_id = %(worker)s
      AND h.lease_token = %(token)s::uuid
      AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
    FOR SHARE OF h
),
written AS (
    INSERT INTO {schema}.job_stream (job_id, idx, item, created_at)
    SELECT o.id, %(index)s::integer, %(item)s, o.now
    FROM owner o
    WHERE %(index)s::integer = coalesce(
        (SELECT max(s.idx) + 1 FROM {schema}.job_stream s WHERE s.job_id = o.id), 0)
    ON CONFLICT (job_id, idx) DO NOTHING
    RETURNING job_id
),
told AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'd:' || w.job_id::text)
    FROM written w JOIN owner o ON o.id = w.job_id
    WHERE o.waited
)
SELECT true FROM written
UNION ALL
SELECT NULL FROM told

-- name: streams_read
SELECT job_id::text, idx, item, created_at
FROM {schema}.job_stream
WHERE job_id = %(id)s::uuid AND idx >= %(from)s
ORDER BY idx
LIMIT %(limit)s

-- name: streams_length
SELECT coalesce(max(idx) + 1, 0) FROM {schema}.job_stream WHERE job_id = %(id)s::uuid

-- name: streams_tidy
-- The items of jobs that are in no pillar any more (purged, deleted by retention), a batch a
-- pass: each job is looked up by primary key in the three tables.
DELETE FROM {schema}.job_stream s
WHERE s.job_id IN (
    SELECT DISTINCT x.job_id FROM {schema}.job_stream x
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobs_hot h WHERE h.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_archive a WHERE a.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_dlq d WHERE d.id = x.job_id)
    LIMIT %(limit)s
)

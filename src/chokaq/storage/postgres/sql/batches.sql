-- The batches area (docs/batches.md): a batch handler's claim of many jobs of one type in one
-- statement, the record of which batch each job ran in, the reads of that record, and its tidy.
-- Run by postgres/batches.py; conventions in connection.sql; the claim's fragments are in
-- claims.sql.

-- name: jobs_claim_batch
-- A batch handler's claim (docs/batches.md): the first due job of the type picks the queue and key
-- (payload -> key, as JSON); up to %(limit)s such jobs go once that many are due or %(wait)s s passed.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS now
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed  -- see jobs_fetch
),
-- include: fragment_serving_queues
head AS MATERIALIZED (  -- each queue's first by the fetch index, then the first of those
    SELECT f.* FROM serving s, clock k, LATERAL (
        SELECT h.queue, s.room, h.payload::jsonb -> %(key)s::text AS value, h.priority, h.scheduled_at, h.created_at
        FROM {schema}.jobs_hot h WHERE h.status = 0 AND h.partition_key IS NULL AND h.queue = s.name
          AND h.scheduled_at <= k.now AND h.type = %(type)s  -- walks the fetch index
        ORDER BY h.priority DESC, h.scheduled_at, h.created_at LIMIT 1
    ) f WHERE s.room > 0 ORDER BY f.priority DESC, f.scheduled_at, f.created_at LIMIT 1
),
candidates AS MATERIALIZED (
    SELECT c.id, c.scheduled_at FROM head, clock k, LATERAL (
        SELECT h.id, h.scheduled_at FROM {schema}.jobs_hot h WHERE h.status = 0 AND h.partition_key IS NULL
          AND h.queue = head.queue AND h.scheduled_at <= k.now AND h.type = %(type)s
          AND (h.payload::jsonb -> %(key)s::text) IS NOT DISTINCT FROM head.value
        ORDER BY h.priority DESC, h.scheduled_at, h.created_at LIMIT head.room FOR UPDATE OF h SKIP LOCKED
    ) c),
ready AS (
    SELECT c.id FROM candidates c WHERE (SELECT count(*) FROM candidates) >= (SELECT room FROM head)
       OR (SELECT min(scheduled_at) FROM candidates) <= (SELECT now - make_interval(secs => %(wait)s::float8) FROM clock)
),
claimed AS (
    UPDATE {schema}.jobs_hot h
-- include: fragment_claim_set
    FROM clock k WHERE h.id = ANY(ARRAY(SELECT id FROM ready))
-- include: fragment_claim_returning
),
recorded AS (
    INSERT INTO {schema}.job_batches (batch_id, job_id, type, queue, attempt, worker_id, claimed_at)
    SELECT %(batch_id)s::uuid, c.id::uuid, c.type, c.queue, c.attempt_count, c.worker_id, k.now FROM claimed c, clock k)
SELECT * FROM claimed ORDER BY priority DESC, scheduled_at, created_at

-- name: jobs_claim_batch_due
WITH  -- when the first due job of a batch type (its batch left to fill) may be claimed
-- include: fragment_serving_queues
clock AS (SELECT coalesce(%(now)s::timestamptz, now()) AS now)
SELECT min(f.scheduled_at) + make_interval(secs => %(wait)s::float8) FROM serving s, clock k, LATERAL (
    SELECT h.scheduled_at FROM {schema}.jobs_hot h WHERE h.status = 0 AND h.partition_key IS NULL AND h.queue = s.name
      AND h.scheduled_at <= k.now AND h.type = %(type)s ORDER BY h.priority DESC, h.scheduled_at, h.created_at LIMIT 1
) f WHERE s.room > 0

-- name: batches_of_job
-- The batches a job ran in (newest first), each with every job claimed in it.
SELECT b.batch_id::text, b.type, b.queue, b.attempt, b.worker_id, b.claimed_at,
       (SELECT array_agg(s.job_id::text ORDER BY s.job_id)
        FROM {schema}.job_batches s WHERE s.batch_id = b.batch_id)
FROM {schema}.job_batches b
WHERE b.job_id = %(id)s::uuid
ORDER BY b.claimed_at DESC
LIMIT %(limit)s

-- name: batches_of_type
-- A type's batches claimed since a time, newest first, with their sizes.
SELECT batch_id::text, min(claimed_at), count(*)
FROM {schema}.job_batches
WHERE type = %(type)s AND claimed_at >= %(since)s
GROUP BY batch_id
ORDER BY min(claimed_at) DESC
LIMIT %(limit)s

-- name: batches_tidy
DELETE FROM {schema}.job_batches WHERE claimed_at < %(before)s

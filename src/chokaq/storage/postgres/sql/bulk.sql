-- The bulk area: the rows an action by filter over hot or the archive acts on, requeue-as-new and
-- delete of archived jobs, and run-now.
-- Run by postgres/bulk.py; conventions in connection.sql.

-- name: bulk_hot_ids
-- The hot rows an action by filter acts on: the newest created first (the preview's order).
SELECT id::text
FROM {schema}.jobs_hot
-- include: fragment_hot_filter
ORDER BY created_at DESC, id DESC
LIMIT %(cap)s

-- name: bulk_archive_ids
-- The archived rows an action by filter acts on: the newest finished first.
SELECT id::text
FROM {schema}.jobs_archive
-- include: fragment_archive_filter
ORDER BY finished_at DESC, id DESC
LIMIT %(cap)s

-- name: archive_requeue
-- Each archived row of %(ids)s -> a new Pending hot job with the id at the same place in
-- %(new_ids)s, in one statement. The archived row stays (write-once history); the new job's
-- created_by names it. Counters and buckets are not touched; the queues' workers are woken.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
source AS MATERIALIZED (
    SELECT p.new_id, a.id, a.queue, a.type, a.payload, a.tags, a.priority, a.max_attempts,
           a.timeout_seconds, a.partition_key
    FROM unnest(%(ids)b::uuid[], %(new_ids)b::uuid[]) AS p(old_id, new_id)
    JOIN {schema}.jobs_archive a ON a.id = p.old_id
),
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM source
),
-- include: fragment_ensure_queues
,
inserted AS (
    INSERT INTO {schema}.jobs_hot (
        id, queue, type, payload, tags, priority, status, attempt_count, max_attempts,
        timeout_seconds, scheduled_at, created_at, updated_at, created_by, last_modified_by,
        partition_key
    )
    SELECT s.new_id, s.queue, s.type, s.payload, s.tags, s.priority, 0, 0, s.max_attempts,
           s.timeout_seconds, k.now, k.now, k.now, 'requeue:' || s.id::text, %(actor)s,
           s.partition_key
    FROM source s CROSS JOIN clock k
    RETURNING id, queue
),
-- include: fragment_notify_inserted

-- name: archive_delete
-- As archive_purge: an archived parent whose children are still in hot (waiting, or about to
-- read its result) is kept; a deleted job takes its edges (as a child) and its failed attempts
-- with it. Counters are untouched.
WITH gone AS (
    DELETE FROM {schema}.jobs_archive a
    WHERE a.id = ANY(%(ids)b::uuid[])
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.job_edges e
          JOIN {schema}.jobs_hot h ON h.id = e.child_id
          WHERE e.parent_id = a.id
      )
    RETURNING a.id
),
-- include: fragment_forget_gone
SELECT id::text FROM gone

-- name: jobs_run_now
-- Delayed Pending rows (due after now) become due now; the workers of their queues are woken
-- when the transaction commits.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
moved AS (
    UPDATE {schema}.jobs_hot h
    SET scheduled_at = k.now, updated_at = k.now, last_modified_by = %(actor)s
    FROM clock k
    WHERE h.id = ANY(%(ids)b::uuid[]) AND h.status = 0 AND h.scheduled_at > k.now
    RETURNING h.id, h.queue
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || d.queue) FROM (SELECT DISTINCT queue FROM moved) d
)
SELECT id::text FROM moved
UNION ALL
SELECT NULL FROM woken

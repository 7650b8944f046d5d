-- The dlq area: the dead-letter queue's edit, resurrection and purge (by id or by filter).
-- Run by postgres/dlq.py; conventions in connection.sql.

-- name: dlq_edit
UPDATE {schema}.jobs_dlq
SET payload = coalesce(%(payload)s::text, payload),
    tags = CASE WHEN %(set_tags)s THEN %(tags)s::text ELSE tags END,
    priority = coalesce(%(priority)s::integer, priority),
    last_modified_by = %(actor)s
WHERE id = %(id)s::uuid

-- name: dlq_resurrect
-- DLQ -> hot Pending in one statement; lifetime counters and buckets are not touched. The
-- attempts start again from 0; requeues counts this requeue, and the DLQ error becomes the
-- last error, so the handler can tell that (and why) it ran before.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
moved AS (
    DELETE FROM {schema}.jobs_dlq
    WHERE id = ANY(%(ids)b::uuid[])
    RETURNING *
),
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM moved
),
-- include: fragment_ensure_queues
,
inserted AS (
    INSERT INTO {schema}.jobs_hot (
        id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
        max_attempts, timeout_seconds, scheduled_at, created_at, updated_at, created_by,
        last_modified_by, last_error, parents_left, children, partition_key, requeues
    )
    SELECT m.id, m.queue, m.type, coalesce(%(payload)s::text, m.payload),
           CASE WHEN %(set_tags)s THEN %(tags)s::text ELSE m.tags END, NULL,
           coalesce(%(priority)s::integer, m.priority), 0, 0, m.max_attempts,
           m.timeout_seconds, k.now, m.created_at, k.now, m.created_by, %(actor)s, m.error,
           -- a job enqueued with after= runs with whatever results its parents left
           CASE WHEN EXISTS (SELECT 1 FROM {schema}.job_edges e WHERE e.child_id = m.id)
                THEN 0 END,
           m.children, m.partition_key, m.requeues + 1
    FROM moved m CROSS JOIN clock k
    RETURNING id, queue
),
-- include: fragment_notify_inserted

-- name: dlq_purge
-- Run with jobs_orphans_fail next in the same transaction (see there). A purged job's attempts
-- go with it.
WITH gone AS (
    DELETE FROM {schema}.jobs_dlq
    WHERE id = ANY(%(ids)b::uuid[])
    RETURNING id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)
SELECT id::text FROM gone

-- name: dlq_count
SELECT count(*)
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter

-- name: dlq_match_ids
SELECT id::text
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter
ORDER BY failed_at DESC, id DESC
LIMIT %(cap)s

-- name: jobs_orphans_fail
-- Run after dlq_purge in its transaction, with a snapshot of its own (so that it sees the edges
-- of a child whose enqueue the purge waited for: see jobs_graph_attach_dlq): each child still
-- waiting on a purged parent (a parent now in no pillar) goes to the DLQ as DEPENDENCY_FAILED
-- (11) naming it, with counters and bucket.
WITH clock AS MATERIALIZED (
    SELECT now() AS now
),
orphans AS (
    SELECT DISTINCT ON (e.child_id) e.child_id AS child, e.parent_id AS parent
    FROM {schema}.job_edges e
    WHERE e.parent_id = ANY(%(ids)b::uuid[]) AND NOT e.satisfied
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_dlq q WHERE q.id = e.parent_id)
    ORDER BY e.child_id, e.parent_id
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING orphans o
    WHERE h.id = o.child AND h.status = 3
    RETURNING h.*, o.parent, 11 AS failure_reason
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason,
           'Dependency failed: parent ' || d.parent::text || ' was purged from the DLQ',
           d.last_modified_by, NULL, k.now, NULL, d.children
    FROM done d CROSS JOIN clock k
),
-- include: fragment_release_any
,
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM awoke

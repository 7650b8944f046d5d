-- The dlq area: the dead-letter queue's edit, resurrection and purge (by id or by filter).
-- Run by sqlite/dlq.py; conventions in connection.sql.

-- name: attempts_forget
-- The attempts of jobs that are gone (purged, deleted): they go with their job.
DELETE FROM {p}job_attempts WHERE job_id IN (SELECT value FROM json_each(:ids))

-- name: dlq_edit
UPDATE {p}jobs_dlq
SET payload = coalesce(:payload, payload),
    tags = CASE WHEN :set_tags THEN :tags ELSE tags END,
    priority = coalesce(:priority, priority),
    last_modified_by = :actor
WHERE id = :id

-- name: dlq_resurrect
-- As on PostgreSQL: attempts start over, requeues counts this one, the DLQ error is the last
-- error. A job enqueued with after= comes back with its parents_left at 0: it runs with whatever
-- results its parents left.
INSERT INTO {p}jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    max_attempts, timeout_seconds, scheduled_at, created_at, updated_at, created_by,
    last_modified_by, last_error, parents_left, children, partition_key, requeues
)
SELECT id, queue, type, coalesce(:payload, payload),
       CASE WHEN :set_tags THEN :tags ELSE tags END, NULL, coalesce(:priority, priority), 0, 0,
       max_attempts, timeout_seconds, :now, created_at, :now, created_by, :actor, error,
       CASE WHEN EXISTS (SELECT 1 FROM {p}job_edges e WHERE e.child_id = {p}jobs_dlq.id)
            THEN 0 END,
       children, partition_key, requeues + 1
FROM {p}jobs_dlq
WHERE id = :id
ON CONFLICT DO NOTHING

-- name: dlq_resurrect_delete
DELETE FROM {p}jobs_dlq WHERE id = :id RETURNING queue

-- name: dlq_purge
DELETE FROM {p}jobs_dlq WHERE id IN (SELECT value FROM json_each(:ids)) RETURNING id

-- name: dlq_count
SELECT count(*) FROM {p}jobs_dlq
-- include: fragment_dlq_filter

-- name: dlq_match_ids
SELECT id FROM {p}jobs_dlq
-- include: fragment_dlq_filter
ORDER BY failed_at DESC, id DESC
LIMIT :cap

-- name: jobs_orphans
-- The children still waiting on purged parents (parents now in no pillar), one per child.
SELECT e.child_id, min(e.parent_id)
FROM {p}job_edges e
WHERE e.parent_id IN (SELECT value FROM json_each(:ids)) AND e.satisfied = 0
  AND NOT EXISTS (SELECT 1 FROM {p}jobs_dlq q WHERE q.id = e.parent_id)
GROUP BY e.child_id
ORDER BY e.child_id

-- The bulk area: the rows an action by filter over hot or the archive acts on, requeue-as-new and
-- delete of archived jobs, and run-now.
-- Run by sqlite/bulk.py; conventions in connection.sql.

-- name: bulk_hot_count
SELECT count(*) FROM {p}jobs_hot
-- include: fragment_hot_filter

-- name: bulk_hot_ids
-- The hot rows an action by filter acts on: the newest created first (the preview's order).
SELECT id FROM {p}jobs_hot
-- include: fragment_hot_filter
ORDER BY created_at DESC, id DESC
LIMIT :cap

-- name: bulk_archive_count
SELECT count(*) FROM {p}jobs_archive
-- include: fragment_archive_filter

-- name: bulk_archive_ids
-- The archived rows an action by filter acts on: the newest finished first.
SELECT id FROM {p}jobs_archive
-- include: fragment_archive_filter
ORDER BY finished_at DESC, id DESC
LIMIT :cap

-- name: archive_requeue
-- The archived row :id -> a new Pending hot job :new_id (the archived row stays; the new job's
-- created_by names it). Counters and buckets are not touched. Returns the new job's queue.
INSERT INTO {p}jobs_hot (
    id, queue, type, payload, tags, priority, status, attempt_count, max_attempts,
    timeout_seconds, scheduled_at, created_at, updated_at, created_by, last_modified_by,
    partition_key
)
SELECT :new_id, queue, type, payload, tags, priority, 0, 0, max_attempts, timeout_seconds,
       :now, :now, :now, 'requeue:' || id, :actor, partition_key
FROM {p}jobs_archive
WHERE id = :id
RETURNING queue

-- name: archive_delete
-- As archive_purge: an archived parent whose children are still in hot (waiting, or about to
-- read its result) is kept. Counters are untouched; edges_unlink follows for the ids deleted.
DELETE FROM {p}jobs_archive
WHERE id IN (SELECT value FROM json_each(:ids))
  AND NOT EXISTS (SELECT 1 FROM {p}job_edges e
                  JOIN {p}jobs_hot h ON h.id = e.child_id
                  WHERE e.parent_id = {p}jobs_archive.id)
RETURNING id

-- name: jobs_run_now
-- Delayed Pending rows (due after :now) become due at :now.
UPDATE {p}jobs_hot
SET scheduled_at = :now, updated_at = :now, last_modified_by = :actor
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 0 AND scheduled_at > :now
RETURNING id, queue

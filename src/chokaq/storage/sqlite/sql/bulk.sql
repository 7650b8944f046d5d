-- The bulk area: the rows an action by filter over hot or the archive acts on, requeue-as-new and
-- delete of archived jobs, and run-now.
-- Run by sqlite/bulk.py; conventions in connection.sql.

-- name: fragment_bulk_hot_filter
-- The JobFilter of an action by filter over hot (as hot_count's).
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR created_at >= :since) AND (:until IS NULL OR created_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\' OR last_error LIKE :search ESCAPE '\')
  AND (:blocked IS NULL
       OR (status = 3 AND EXISTS (SELECT 1 FROM {p}job_edges e
                                  JOIN {p}jobs_dlq d ON d.id = e.parent_id
                                  WHERE e.child_id = {p}jobs_hot.id)) = :blocked)

-- name: fragment_bulk_archive_filter
-- The JobFilter of an action by filter over the archive (as archive_count's).
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:since IS NULL OR finished_at >= :since) AND (:until IS NULL OR finished_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\')

-- name: bulk_hot_count
SELECT count(*) FROM {p}jobs_hot
-- include: fragment_bulk_hot_filter

-- name: bulk_hot_ids
-- The hot rows an action by filter acts on: the newest created first (the preview's order).
SELECT id FROM {p}jobs_hot
-- include: fragment_bulk_hot_filter
ORDER BY created_at DESC, id DESC
LIMIT :cap

-- name: bulk_archive_count
SELECT count(*) FROM {p}jobs_archive
-- include: fragment_bulk_archive_filter

-- name: bulk_archive_ids
-- The archived rows an action by filter acts on: the newest finished first.
SELECT id FROM {p}jobs_archive
-- include: fragment_bulk_archive_filter
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

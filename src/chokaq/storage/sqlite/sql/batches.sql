-- The batches area (docs/batches.md), as on PostgreSQL: a batch handler's claim (its head, the
-- queue's room, its members, the record of each claimed job), the reads of that record, its tidy.
-- Run by sqlite/batches.py.

-- name: jobs_claim_batch_head
-- A batch claim's first pick (docs/batches.md): the oldest due Pending job of the type in an
-- open serving queue, by the fetch order (walking the fetch index: hence partition_key IS
-- NULL); its queue and its value of the batch key (:path, a JSON path; NULL: no key) make it.
SELECT h.queue, json_extract(h.payload, :path) AS value
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NULL AND h.type = :type AND h.scheduled_at <= :now
  AND (:queues IS NULL OR h.queue IN (SELECT value FROM json_each(:queues)))
  AND NOT EXISTS (SELECT 1 FROM {p}queues AS q
                  WHERE q.name = h.queue AND (q.paused <> 0 OR q.active = 0))
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT 1

-- name: jobs_claim_batch_room
-- The room a queue's bulkhead leaves (no row: no bulkhead).
SELECT q.max_workers - (SELECT count(*) FROM {p}jobs_hot AS h
                        WHERE h.queue = q.name AND h.status IN (1, 2))
FROM {p}queues AS q
WHERE q.name = :queue AND q.max_workers IS NOT NULL

-- name: jobs_claim_batch_members
-- The due jobs of the batch's type, queue and key value, in the fetch order.
SELECT h.id, h.scheduled_at
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NULL AND h.type = :type AND h.queue = :queue
  AND h.scheduled_at <= :now
  AND (:path IS NULL OR json_extract(h.payload, :path) IS :value)
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT :limit

-- name: jobs_claim_batch_record
INSERT INTO {p}job_batches (batch_id, job_id, type, queue, attempt, worker_id, claimed_at)
VALUES (:batch_id, :job_id, :type, :queue, :attempt, :worker_id, :now)

-- name: batches_of_job
-- The batches a job ran in (newest first), each with every job claimed in it (a JSON array).
SELECT b.batch_id, b.type, b.queue, b.attempt, b.worker_id, b.claimed_at,
       (SELECT json_group_array(job_id) FROM (SELECT s.job_id FROM {p}job_batches s
                                             WHERE s.batch_id = b.batch_id ORDER BY s.job_id))
FROM {p}job_batches b
WHERE b.job_id = :id
ORDER BY b.claimed_at DESC
LIMIT :limit

-- name: batches_of_type
-- A type's batches claimed since a time, newest first, with their sizes.
SELECT batch_id, min(claimed_at), count(*)
FROM {p}job_batches
WHERE type = :type AND claimed_at >= :since
GROUP BY batch_id
ORDER BY min(claimed_at) DESC
LIMIT :limit

-- name: batches_tidy
DELETE FROM {p}job_batches WHERE claimed_at < :before

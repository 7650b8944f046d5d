-- The maintenance area: what the elected worker runs: rescue of abandoned, zombie and expired
-- jobs, age purges of the archive and the DLQ, metric roll-ups and pruning, and the tidying of
-- limit and uniqueness rows.
-- Run by sqlite/maintenance.py; conventions in connection.sql.

-- name: attempts_record_zombie
-- The attempt a dead worker was running (the job just moved to the DLQ as ZOMBIE), read from
-- its DLQ row in the same transaction.
INSERT INTO {p}job_attempts (
    job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds, failure_reason,
    error
)
SELECT d.id, coalesce((SELECT max(a.seq) FROM {p}job_attempts a WHERE a.job_id = d.id), 0) + 1,
       d.attempt_count, d.worker_id, d.started_at, d.failed_at, NULL, d.failure_reason, d.error
FROM {p}jobs_dlq d
WHERE d.id = :id

-- name: jobs_rescue_fetched
UPDATE {p}jobs_hot
SET status = 0, worker_id = NULL, lease_token = NULL, updated_at = :now
WHERE status = 1 AND updated_at < :cutoff
RETURNING id

-- name: jobs_rescue_zombie_candidates
-- A heartbeat counts as written no earlier than :since, when the rescuer last regained the store
-- (NULL: no limit): one due while the store was out of reach could not have been written.
SELECT h.id, coalesce(q.zombie_timeout_seconds, :timeout) AS timeout
FROM {p}jobs_hot AS h LEFT JOIN {p}queues AS q ON q.name = h.queue
WHERE h.status = 2
  AND max(coalesce(h.heartbeat_at, h.updated_at), coalesce(:since, 0.0))
      < :now - coalesce(q.zombie_timeout_seconds, :timeout)

-- name: jobs_rescue_expired_candidates
-- Pending jobs that never started and are past their expiry (the partial index
-- jobs_hot_expiry holds only such jobs), oldest expiry first.
SELECT id, expires_at FROM {p}jobs_hot
WHERE expires_at IS NOT NULL AND status = 0 AND attempt_count = 0 AND expires_at <= :now
ORDER BY expires_at
LIMIT :limit

-- name: archive_purge
-- A parent whose children are still in hot (waiting, or about to read its result) is kept.
DELETE FROM {p}jobs_archive
WHERE id IN (SELECT a.id FROM {p}jobs_archive a
             WHERE a.finished_at < :cutoff
               AND NOT EXISTS (SELECT 1 FROM {p}job_edges e
                               JOIN {p}jobs_hot h ON h.id = e.child_id
                               WHERE e.parent_id = a.id)
             ORDER BY a.finished_at LIMIT :limit)
RETURNING id

-- name: dlq_purge_older
-- As archive_purge: a parent that children still wait on is kept (its repair unblocks them).
DELETE FROM {p}jobs_dlq
WHERE id IN (SELECT q.id FROM {p}jobs_dlq q
             WHERE q.failed_at < :cutoff
               AND NOT EXISTS (SELECT 1 FROM {p}job_edges e
                               JOIN {p}jobs_hot h ON h.id = e.child_id
                               WHERE e.parent_id = q.id)
             ORDER BY q.failed_at LIMIT :limit)
RETURNING id

-- name: edges_unlink
-- The edges of purged children.
DELETE FROM {p}job_edges WHERE child_id IN (SELECT value FROM json_each(:ids))

-- name: metrics_prune
DELETE FROM {p}metric_buckets WHERE width_seconds = :width AND bucket_start < :cutoff

-- name: metrics_rollup
INSERT INTO {p}metric_buckets (
    width_seconds, bucket_start, queue, outcome, failure_reason, completed_count,
    duration_count, total_duration_seconds, max_duration_seconds, updated_at
)
SELECT 60, CAST(bucket_start / 60 AS INTEGER) * 60.0 AS minute, queue, outcome, failure_reason,
       sum(completed_count), sum(duration_count), sum(total_duration_seconds),
       max(max_duration_seconds), :now
FROM {p}metric_buckets
WHERE width_seconds = 1 AND bucket_start < :cutoff
GROUP BY minute, queue, outcome, failure_reason
-- include: fragment_buckets_merge

-- name: metrics_rollup_delete
DELETE FROM {p}metric_buckets WHERE width_seconds = 1 AND bucket_start < :cutoff

-- name: unique_keys_tidy
DELETE FROM {p}unique_keys WHERE until <= :before

-- name: supersessions_tidy
DELETE FROM {p}job_supersessions WHERE at < :before

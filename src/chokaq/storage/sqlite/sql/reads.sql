-- The reads area: what the faces list, count and chart (counters, per-queue figures, throughput
-- and series, top errors, pages and single jobs of each pillar).
-- Run by sqlite/reads.py; conventions in connection.sql.

-- name: fragment_hot_filter
-- The JobFilter of a hot listing, count or action by filter (reads.filter_params; None switches
-- a test off).
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
                                  WHERE e.child_id = {p}jobs_hot.id
                                    AND e.satisfied = 0)) = :blocked)

-- name: fragment_archive_filter
-- The JobFilter of an archive listing, count or action by filter (every row succeeded: no
-- status or reason).
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:since IS NULL OR finished_at >= :since) AND (:until IS NULL OR finished_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\')

-- name: fragment_dlq_filter
-- The JobFilter of a DLQ listing, count, or action by filter.
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:reason IS NULL OR failure_reason = :reason)
  AND (:since IS NULL OR failed_at >= :since) AND (:until IS NULL OR failed_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:family IS NULL OR error_family = :family)
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\' OR error LIKE :search ESCAPE '\')

-- name: attempts_list
SELECT seq, attempt, failed_at, started_at, worker_id, duration_seconds, failure_reason, error
FROM {p}job_attempts
WHERE job_id = :id
ORDER BY seq DESC
LIMIT :limit

-- name: job_supersession
-- See the PostgreSQL block of the same name.
SELECT s.by_id, s.at, coalesce(s.cancel_requested, 0),
       (SELECT o.job_id FROM {p}job_supersessions o WHERE o.by_id = :id)
FROM (SELECT 1) one
LEFT JOIN {p}job_supersessions s ON s.job_id = :id

-- name: stats_summary
SELECT coalesce(sum(status = 0), 0), coalesce(sum(status = 1), 0), coalesce(sum(status = 2), 0),
       coalesce(sum(status = 3), 0)
FROM {p}jobs_hot

-- name: stats_summary_totals
SELECT coalesce(sum(succeeded_total), 0), coalesce(sum(failed_total), 0),
       coalesce(sum(retried_total), 0), max(last_activity_at)
FROM {p}stats_summary

-- name: stats_queues
SELECT q.name, q.paused, q.active, q.max_workers, q.zombie_timeout_seconds,
       q.execution_timeout_seconds, q.updated_at,
       coalesce(c.pending, 0), coalesce(c.fetched, 0), coalesce(c.processing, 0),
       coalesce(s.succeeded_total, 0), coalesce(s.failed_total, 0),
       coalesce(s.retried_total, 0), s.last_activity_at,
       coalesce(l.n, 0), coalesce(l.lag_avg, 0.0), coalesce(l.lag_max, 0.0),
       coalesce(w.waiting, 0), coalesce(w.blocked, 0), q.hidden,
       coalesce(s.replaced_total, 0), coalesce(s.superseded_total, 0)
FROM {p}queues AS q
LEFT JOIN {p}stats_summary AS s ON s.queue = q.name
LEFT JOIN (SELECT queue, sum(status = 0) AS pending, sum(status = 1) AS fetched,
                  sum(status = 2) AS processing
           FROM {p}jobs_hot GROUP BY queue) AS c ON c.queue = q.name
LEFT JOIN (SELECT queue, count(*) AS n,
                  avg(max(:now - coalesce(scheduled_at, created_at), 0.0)) AS lag_avg,
                  max(max(:now - coalesce(scheduled_at, created_at), 0.0)) AS lag_max
           FROM {p}jobs_hot
           WHERE status = 0 AND (scheduled_at IS NULL OR scheduled_at <= :now)
           GROUP BY queue) AS l ON l.queue = q.name
LEFT JOIN (SELECT queue, count(*) AS waiting,
                  sum(EXISTS (SELECT 1 FROM {p}job_edges e
                              JOIN {p}jobs_dlq d ON d.id = e.parent_id
                              WHERE e.child_id = w.id AND e.satisfied = 0)) AS blocked
           FROM {p}jobs_hot AS w
           WHERE status = 3
           GROUP BY queue) AS w ON w.queue = q.name
ORDER BY q.name

-- name: jobs_pending_groups
-- Pending rows by (queue, type): due now, waiting to run again, delayed by design, the next
-- due time, and how many a worker released for want of a handler (last_error LIKE marker).
-- :queues is a JSON list, or NULL for every queue.
SELECT queue, type,
       sum(scheduled_at IS NULL OR scheduled_at <= :now),
       sum(scheduled_at > :now AND (attempt_count > 0 OR last_error IS NOT NULL)),
       sum(scheduled_at > :now AND attempt_count = 0 AND last_error IS NULL),
       min(CASE WHEN scheduled_at > :now THEN scheduled_at END),
       sum(coalesce(last_error LIKE :marker, 0))
FROM {p}jobs_hot
WHERE status = 0
  AND (:queues IS NULL OR queue IN (SELECT value FROM json_each(:queues)))
GROUP BY queue, type
ORDER BY queue, type

-- name: jobs_lag
-- Why jobs wait, by (queue, type): Pending rows due now, retrying later, delayed by design,
-- rows waiting on parents, the oldest due time and the next one; the groups with the most due
-- jobs first, at most :limit of them.
SELECT queue, type,
       sum(status = 0 AND scheduled_at <= :now) AS due,
       sum(status = 0 AND scheduled_at > :now AND (attempt_count > 0 OR last_error IS NOT NULL)),
       sum(status = 0 AND scheduled_at > :now AND attempt_count = 0 AND last_error IS NULL),
       sum(status = 3),
       min(CASE WHEN status = 0 AND scheduled_at <= :now THEN scheduled_at END) AS oldest,
       min(CASE WHEN status = 0 AND scheduled_at > :now THEN scheduled_at END)
FROM {p}jobs_hot
WHERE status IN (0, 3)
GROUP BY queue, type
ORDER BY due DESC, oldest IS NULL, oldest, queue, type
LIMIT :limit

-- name: queues_unserved
-- Active, unpaused queues with due Pending jobs and no worker that beat since :since serving
-- them (a worker whose queues are '[]' serves every queue); due jobs counted up to :cap.
SELECT name, n FROM (
    SELECT q.name AS name,
           (SELECT count(*) FROM (SELECT 1 FROM {p}jobs_hot h
                                  WHERE h.status = 0 AND h.queue = q.name
                                    AND h.scheduled_at <= :now
                                  LIMIT :cap)) AS n
    FROM {p}queues q
    WHERE q.paused = 0 AND q.active = 1
      AND NOT EXISTS (
          SELECT 1 FROM {p}workers w
          WHERE w.heartbeat_at >= :since
            AND (w.queues IS NULL OR w.queues = '[]'
                 OR EXISTS (SELECT 1 FROM json_each(w.queues) WHERE value = q.name))
      )
)
WHERE n > 0
ORDER BY name

-- name: stats_throughput
SELECT coalesce(sum(CASE WHEN bucket_start >= :since_1m THEN completed_count END), 0),
       coalesce(sum(CASE WHEN bucket_start >= :since_1m AND outcome = 1
                         THEN completed_count END), 0),
       coalesce(sum(completed_count), 0),
       coalesce(sum(CASE WHEN outcome = 1 THEN completed_count END), 0)
FROM {p}metric_buckets
WHERE width_seconds = 1 AND bucket_start >= :since_5m

-- name: stats_series
-- Every stored width (live seconds and the minute roll-ups) in one pass, so that a window reaches
-- now whatever upkeep has rolled up; a stored bucket is summed whole into the chart bucket that
-- holds its start. Chart buckets are aligned to the Unix epoch (as on PostgreSQL).
SELECT CAST(bucket_start / :width AS INTEGER) * :width AS chart_bucket,
       coalesce(sum(CASE WHEN outcome = 0 THEN completed_count END), 0),
       coalesce(sum(CASE WHEN outcome = 1 THEN completed_count END), 0),
       coalesce(sum(total_duration_seconds), 0.0),
       max(max_duration_seconds),
       coalesce(sum(duration_count), 0)
FROM {p}metric_buckets
WHERE width_seconds IN (1, 60) AND bucket_start >= :since
  AND (:until IS NULL OR bucket_start <= :until)
  AND (:queue IS NULL OR queue = :queue)
GROUP BY chart_bucket
ORDER BY chart_bucket

-- name: dlq_top_errors
-- The newest :scan rows grouped by reason and family, most frequent first (newest on a tie).
SELECT failure_reason, error_family, count(*) AS n, max(failed_at) AS latest
FROM (SELECT failure_reason, error_family, failed_at FROM {p}jobs_dlq
      ORDER BY failed_at DESC LIMIT :scan)
GROUP BY failure_reason, error_family
ORDER BY n DESC, latest DESC, failure_reason, error_family
LIMIT :limit

-- name: hot_get
SELECT * FROM {p}jobs_hot WHERE id = :id

-- name: archive_get
SELECT * FROM {p}jobs_archive WHERE id = :id

-- name: dlq_get
SELECT * FROM {p}jobs_dlq WHERE id = :id

-- name: hot_count
SELECT count(*) FROM {p}jobs_hot
-- include: fragment_hot_filter

-- name: hot_list
SELECT id, queue, type, NULL AS payload, tags, priority, attempt_count, created_at, status,
       max_attempts, timeout_seconds, idempotency_key, worker_id, created_by, last_modified_by,
       scheduled_at, started_at, heartbeat_at, updated_at, progress, last_error,
       cancel_requested_at, cancelled_by, parents_left, partition_key, expires_at
FROM {p}jobs_hot
-- include: fragment_hot_filter
  AND {keyset}
ORDER BY {order}
LIMIT :limit OFFSET :offset

-- name: hot_key_time
-- The stored time (a sort column, {column}) of a keyset page's key row (reads.jobs_list).
SELECT {column} FROM {p}jobs_hot WHERE id = :key_id

-- name: archive_key_time
SELECT {column} FROM {p}jobs_archive WHERE id = :key_id

-- name: dlq_key_time
SELECT {column} FROM {p}jobs_dlq WHERE id = :key_id

-- name: archive_count
SELECT count(*) FROM {p}jobs_archive
-- include: fragment_archive_filter

-- name: archive_list
SELECT * FROM {p}jobs_archive
-- include: fragment_archive_filter
  AND {keyset}
ORDER BY {order}
LIMIT :limit OFFSET :offset

-- name: dlq_list
SELECT * FROM {p}jobs_dlq
-- include: fragment_dlq_filter
  AND {keyset}
ORDER BY {order}
LIMIT :limit OFFSET :offset

-- The SQLite backend's statements, loaded once by name. "{p}name" is replaced at load time by the
-- quoted, prefixed table name; ":name" are driver parameters. "{order}" (page queries only) is
-- replaced by a whitelisted, quoted ORDER BY list built from the sort field.

-- name: migrate_ledger
CREATE TABLE IF NOT EXISTS {p}schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
)

-- name: migrate_applied
SELECT version FROM {p}schema_migrations ORDER BY version

-- name: migrate_record
INSERT INTO {p}schema_migrations (version, name, applied_at) VALUES (:version, :name, :now)

-- name: migrate_has_ledger
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name

-- name: queue_ensure
INSERT OR IGNORE INTO {p}queues (name, updated_at) VALUES (:queue, :now)

-- name: queue_stats_row
INSERT OR IGNORE INTO {p}stats_summary (queue) VALUES (:queue)

-- name: jobs_enqueue
-- A job with parents still to succeed waits (status 3, outside the fetch indexes).
INSERT INTO {p}jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    max_attempts, timeout_seconds, scheduled_at, created_at, updated_at, created_by, trace_context,
    parents_left, children, partition_key, expires_at
) VALUES (
    :id, :queue, :type, :payload, :tags, :idempotency_key, :priority,
    CASE WHEN :parents_left > 0 THEN 3 ELSE 0 END, 0,
    :max_attempts, :timeout_seconds, :scheduled_at, :now, :now, :created_by, :trace_context,
    :parents_left, :children, :partition, :expires_at
)
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING

-- name: jobs_enqueue_holders
SELECT idempotency_key, id FROM {p}jobs_hot
WHERE idempotency_key IN (SELECT value FROM json_each(:keys))

-- name: jobs_unique_held
-- The keys of a batch whose uniqueness window (unique_for_seconds) is still open, and the job
-- that opened it: an enqueue with such a key gets that job, wherever it is by now.
SELECT key, job_id FROM {p}unique_keys
WHERE key IN (SELECT value FROM json_each(:keys)) AND until > :now

-- name: jobs_unique_take
-- A window opened (or one that had ended, taken over) for the job that now holds the key.
INSERT INTO {p}unique_keys (key, job_id, until) VALUES (:key, :job_id, :until)
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, until = excluded.until

-- name: jobs_fetch_bulkheads
SELECT q.name,
       q.max_workers - (SELECT count(*) FROM {p}jobs_hot AS h
                        WHERE h.queue = q.name AND h.status IN (1, 2)) AS free
FROM {p}queues AS q
WHERE q.max_workers IS NOT NULL AND q.paused = 0 AND q.active = 1

-- name: fragment_candidate_head
-- The candidates of a claim: pending rows, returned in claim order (the three statements below
-- differ only in how they pick queues, so that SQLite can choose the index for each).
SELECT h.id, h.priority, h.scheduled_at AS sort_at, h.created_at
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NULL

-- name: fragment_candidate_due
  AND h.scheduled_at <= :now
  AND h.type NOT IN (SELECT value FROM json_each(:exclude))

-- name: fragment_candidate_open_queue
  AND NOT EXISTS (SELECT 1 FROM {p}queues AS q
                  WHERE q.name = h.queue
                    AND (q.paused <> 0 OR q.active = 0 OR q.max_workers IS NOT NULL))

-- name: fragment_candidate_tail
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT :limit

-- name: jobs_fetch_candidates
-- include: fragment_candidate_head
-- include: fragment_candidate_due
-- include: fragment_candidate_open_queue
-- include: fragment_candidate_tail

-- name: jobs_fetch_candidates_in
-- include: fragment_candidate_head
  AND h.queue IN (SELECT value FROM json_each(:queues))
-- include: fragment_candidate_due
-- include: fragment_candidate_open_queue
-- include: fragment_candidate_tail

-- name: jobs_fetch_candidates_queue
-- include: fragment_candidate_head
  AND h.queue = :queue
-- include: fragment_candidate_due
-- include: fragment_candidate_tail

-- name: jobs_fetch
UPDATE {p}jobs_hot
SET status = :status,
    worker_id = :worker_id,
    lease_token = c.token,
    updated_at = :now,
    progress = NULL,
    -- A row past its expiry that never started is taken without starting it (no attempt, no
    -- start time): the seam buries it as EXPIRED, telling it by attempt_count 0.
    attempt_count = attempt_count + CASE
        WHEN :started AND (expires_at IS NULL OR expires_at > :now OR attempt_count > 0)
        THEN 1 ELSE 0 END,
    started_at = CASE
        WHEN :started AND (expires_at IS NULL OR expires_at > :now OR attempt_count > 0)
        THEN :now ELSE started_at END,
    heartbeat_at = CASE WHEN :started THEN :now ELSE heartbeat_at END
FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS token
      FROM json_each(:claims)) AS c
WHERE {p}jobs_hot.id = c.id AND {p}jobs_hot.status = 0
RETURNING id, queue, type, payload, tags, priority, status, attempt_count, max_attempts,
          timeout_seconds, idempotency_key, created_at, scheduled_at, started_at, created_by,
          last_error, trace_context, worker_id, lease_token, parents_left, partition_key,
          expires_at, requeues

-- name: jobs_fetch_claimed
-- The rows jobs_fetch just claimed, read again (in its transaction) when its RETURNING rows
-- could not be read (text that is not UTF-8): the same columns, read with bytes tolerated.
SELECT h.id, h.queue, h.type, h.payload, h.tags, h.priority, h.status, h.attempt_count,
       h.max_attempts, h.timeout_seconds, h.idempotency_key, h.created_at, h.scheduled_at,
       h.started_at, h.created_by, h.last_error, h.trace_context, h.worker_id, h.lease_token,
       h.parents_left, h.partition_key, h.expires_at, h.requeues
FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS token
      FROM json_each(:claims)) AS c
JOIN {p}jobs_hot h ON h.id = c.id AND h.lease_token = c.token AND h.worker_id = :worker_id

-- name: jobs_start
UPDATE {p}jobs_hot
SET status = 2, attempt_count = attempt_count + 1, started_at = :now, heartbeat_at = :now,
    updated_at = :now
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status = 1
RETURNING attempt_count, started_at

-- name: jobs_heartbeat
UPDATE {p}jobs_hot
SET heartbeat_at = :now, updated_at = :now, progress = coalesce(:progress, progress)
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status = 2
RETURNING cancel_requested_at, cancelled_by

-- name: jobs_progress
-- A progress report is a heartbeat that carries progress, as on PostgreSQL.
UPDATE {p}jobs_hot
SET progress = :progress, heartbeat_at = :now, updated_at = :now
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status = 2

-- name: jobs_release
UPDATE {p}jobs_hot
SET status = 0, worker_id = NULL, lease_token = NULL, updated_at = :now
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status = 1
RETURNING id

-- name: jobs_finalize_retry
-- A move without an error (a circuit deferral, a start refused) keeps the error before it.
UPDATE {p}jobs_hot
SET status = 0, scheduled_at = :scheduled_at, last_error = coalesce(:error, last_error),
    worker_id = NULL,
    lease_token = NULL, heartbeat_at = NULL, progress = NULL, updated_at = :now,
    attempt_count = max(attempt_count - :refund, 0)
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status IN (1, 2)
RETURNING queue

-- name: jobs_finalize_archive
-- finished_at is the attempt's start plus the worker's elapsed time, as on PostgreSQL (NULL
-- arithmetic: a move without one finishes at :now).
INSERT INTO {p}jobs_archive (
    id, queue, type, payload, tags, priority, attempt_count, max_attempts, timeout_seconds,
    worker_id, created_by, last_modified_by, created_at, started_at, finished_at, duration_seconds,
    result, result_error, partition_key, requeues
)
SELECT id, queue, type, payload, tags, priority, attempt_count, max_attempts, timeout_seconds,
       worker_id, created_by, last_modified_by, created_at, started_at,
       coalesce(started_at + :elapsed, :now), :duration, :result, :result_error, partition_key,
       requeues
FROM {p}jobs_hot
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status IN (1, 2)

-- name: jobs_finalize_dlq
INSERT INTO {p}jobs_dlq (
    id, queue, type, payload, tags, priority, failure_reason, error, attempt_count, max_attempts,
    timeout_seconds, worker_id, created_by, last_modified_by, cancelled_by, created_at,
    started_at, failed_at, duration_seconds, children, partition_key, error_family, requeues
)
SELECT id, queue, type, payload, tags, priority, :reason, :error, attempt_count, max_attempts,
       timeout_seconds, worker_id, created_by, last_modified_by,
       coalesce(:actor, CASE WHEN :reason = 1 THEN cancelled_by END), created_at,
       started_at, coalesce(started_at + :elapsed, :now), :duration, children, partition_key,
       chokaq_error_family(:error), requeues
FROM {p}jobs_hot
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status IN (1, 2)

-- name: jobs_finalize_delete
DELETE FROM {p}jobs_hot
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status IN (1, 2)
RETURNING queue, waited, children

-- name: attempts_record
-- A failed attempt of a running job (status 2: it ran), read from its leased row before the move
-- that records the failure clears the lease; seq follows the job's newest kept row.
INSERT INTO {p}job_attempts (
    job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds, failure_reason,
    error
)
SELECT h.id, coalesce((SELECT max(a.seq) FROM {p}job_attempts a WHERE a.job_id = h.id), 0) + 1,
       h.attempt_count, h.worker_id, h.started_at, coalesce(h.started_at + :elapsed, :now),
       :duration, :reason, :error
FROM {p}jobs_hot h
WHERE h.id = :id AND h.worker_id = :worker_id AND h.lease_token = :token AND h.status = 2

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

-- name: attempts_trim
-- Keep the job's newest :keep attempts.
DELETE FROM {p}job_attempts
WHERE job_id = :id
  AND seq <= (SELECT max(seq) FROM {p}job_attempts WHERE job_id = :id) - :keep

-- name: attempts_list
SELECT seq, attempt, failed_at, started_at, worker_id, duration_seconds, failure_reason, error
FROM {p}job_attempts
WHERE job_id = :id
ORDER BY seq DESC
LIMIT :limit

-- name: attempts_forget
-- The attempts of jobs that are gone (purged, deleted): they go with their job.
DELETE FROM {p}job_attempts WHERE job_id IN (SELECT value FROM json_each(:ids))

-- name: hot_to_dlq_insert
INSERT INTO {p}jobs_dlq (
    id, queue, type, payload, tags, priority, failure_reason, error, attempt_count, max_attempts,
    timeout_seconds, worker_id, created_by, last_modified_by, cancelled_by, created_at,
    started_at, failed_at, duration_seconds, children, partition_key, error_family, requeues
)
SELECT id, queue, type, payload, tags, priority, :reason, :error, attempt_count, max_attempts,
       timeout_seconds, worker_id, created_by, coalesce(:actor, last_modified_by), :actor,
       created_at, started_at, :now, NULL, children, partition_key,
       chokaq_error_family(:error), requeues
FROM {p}jobs_hot
WHERE id = :id AND status = :status

-- name: hot_to_dlq_delete
DELETE FROM {p}jobs_hot WHERE id = :id AND status = :status RETURNING queue, waited, children

-- name: stats_bump
INSERT INTO {p}stats_summary (queue, succeeded_total, failed_total, retried_total,
                              last_activity_at)
VALUES (:queue, :succeeded, :failed, :retried, :now)
ON CONFLICT (queue) DO UPDATE SET
    succeeded_total = succeeded_total + excluded.succeeded_total,
    failed_total = failed_total + excluded.failed_total,
    retried_total = retried_total + excluded.retried_total,
    last_activity_at = max(coalesce(last_activity_at, excluded.last_activity_at),
                           excluded.last_activity_at)

-- name: bucket_bump
INSERT INTO {p}metric_buckets (
    width_seconds, bucket_start, queue, outcome, failure_reason, completed_count,
    duration_count, total_duration_seconds, max_duration_seconds, updated_at
) VALUES (1, :bucket, :queue, :outcome, :reason, :count, :duration_count, :duration_total,
          :duration_max, :now)
ON CONFLICT (width_seconds, bucket_start, queue, outcome, failure_reason) DO UPDATE SET
    completed_count = completed_count + excluded.completed_count,
    duration_count = duration_count + excluded.duration_count,
    total_duration_seconds = total_duration_seconds + excluded.total_duration_seconds,
    max_duration_seconds = max(coalesce(max_duration_seconds, excluded.max_duration_seconds),
                               coalesce(excluded.max_duration_seconds, max_duration_seconds)),
    updated_at = excluded.updated_at

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

-- name: jobs_cancel_status
SELECT id, status FROM {p}jobs_hot WHERE id IN (SELECT value FROM json_each(:ids))

-- name: jobs_cancel_request
UPDATE {p}jobs_hot
SET cancel_requested_at = coalesce(cancel_requested_at, :now), cancelled_by = :actor,
    last_modified_by = :actor
WHERE id = :id AND status = 2

-- name: jobs_edit
UPDATE {p}jobs_hot
SET payload = coalesce(:payload, payload),
    tags = CASE WHEN :set_tags THEN :tags ELSE tags END,
    priority = coalesce(:priority, priority),
    last_modified_by = :actor,
    updated_at = :now
WHERE id = :id AND status = 0

-- name: jobs_advance
-- The test clock (chokaq.testing): Pending rows not yet due become due that much sooner (and
-- their expiry comes as much sooner). :queues is a JSON list, or NULL for every queue.
UPDATE {p}jobs_hot
SET scheduled_at = scheduled_at - :seconds, expires_at = expires_at - :seconds
WHERE status = 0 AND scheduled_at > :now
  AND (:queues IS NULL OR queue IN (SELECT value FROM json_each(:queues)))

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
ON CONFLICT (width_seconds, bucket_start, queue, outcome, failure_reason) DO UPDATE SET
    completed_count = completed_count + excluded.completed_count,
    duration_count = duration_count + excluded.duration_count,
    total_duration_seconds = total_duration_seconds + excluded.total_duration_seconds,
    max_duration_seconds = max(coalesce(max_duration_seconds, excluded.max_duration_seconds),
                               coalesce(excluded.max_duration_seconds, max_duration_seconds)),
    updated_at = excluded.updated_at

-- name: metrics_rollup_delete
DELETE FROM {p}metric_buckets WHERE width_seconds = 1 AND bucket_start < :cutoff

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
       coalesce(w.waiting, 0), coalesce(w.blocked, 0), q.hidden
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
                              WHERE e.child_id = w.id)) AS blocked
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

-- name: hot_list
SELECT id, queue, type, NULL AS payload, tags, priority, attempt_count, created_at, status,
       max_attempts, timeout_seconds, idempotency_key, worker_id, created_by, last_modified_by,
       scheduled_at, started_at, heartbeat_at, updated_at, progress, last_error,
       cancel_requested_at, cancelled_by, parents_left, partition_key, expires_at
FROM {p}jobs_hot
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
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:since IS NULL OR finished_at >= :since) AND (:until IS NULL OR finished_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\')

-- name: archive_list
SELECT * FROM {p}jobs_archive
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:since IS NULL OR finished_at >= :since) AND (:until IS NULL OR finished_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\')
  AND {keyset}
ORDER BY {order}
LIMIT :limit OFFSET :offset

-- name: dlq_count
SELECT count(*) FROM {p}jobs_dlq
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:reason IS NULL OR failure_reason = :reason)
  AND (:since IS NULL OR failed_at >= :since) AND (:until IS NULL OR failed_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:family IS NULL OR error_family = :family)
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\' OR error LIKE :search ESCAPE '\')

-- name: dlq_match_ids
SELECT id FROM {p}jobs_dlq
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:reason IS NULL OR failure_reason = :reason)
  AND (:since IS NULL OR failed_at >= :since) AND (:until IS NULL OR failed_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:family IS NULL OR error_family = :family)
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\' OR error LIKE :search ESCAPE '\')
ORDER BY failed_at DESC, id DESC
LIMIT :cap

-- name: dlq_list
SELECT * FROM {p}jobs_dlq
WHERE (:queue IS NULL OR queue = :queue) AND (:type IS NULL OR type = :type)
  AND (:reason IS NULL OR failure_reason = :reason)
  AND (:since IS NULL OR failed_at >= :since) AND (:until IS NULL OR failed_at <= :until)
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
  AND (:family IS NULL OR error_family = :family)
  AND (:partition IS NULL OR partition_key = :partition)
  AND (:search IS NULL OR id LIKE :search_id ESCAPE '\' OR type LIKE :search ESCAPE '\'
       OR tags LIKE :search ESCAPE '\' OR error LIKE :search ESCAPE '\')
  AND {keyset}
ORDER BY {order}
LIMIT :limit OFFSET :offset

-- name: queue_get
SELECT name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
       updated_at, hidden
FROM {p}queues WHERE name = :name

-- name: queue_list
SELECT name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
       updated_at, hidden
FROM {p}queues ORDER BY name

-- name: queue_pause
UPDATE {p}queues SET paused = :flag, updated_at = :now, last_modified_by = :actor
WHERE name = :name

-- name: queue_activate
UPDATE {p}queues SET active = :flag, updated_at = :now, last_modified_by = :actor
WHERE name = :name

-- name: queue_hide
UPDATE {p}queues SET hidden = :flag, updated_at = :now, last_modified_by = :actor
WHERE name = :name

-- name: queue_configure
UPDATE {p}queues
SET max_workers = CASE WHEN :set_max_workers THEN :max_workers ELSE max_workers END,
    zombie_timeout_seconds = CASE WHEN :set_zombie THEN :zombie ELSE zombie_timeout_seconds END,
    execution_timeout_seconds = CASE WHEN :set_execution THEN :execution
                                     ELSE execution_timeout_seconds END,
    updated_at = :now,
    last_modified_by = :actor
WHERE name = :name

-- name: worker_beat
INSERT INTO {p}workers (id, hostname, pid, queues, concurrency, running, state, circuits,
                        started_at, heartbeat_at)
VALUES (:id, :hostname, :pid, :queues, :concurrency, :running, :state, :circuits,
        :started_at, :now)
ON CONFLICT (id) DO UPDATE SET
    hostname = excluded.hostname, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, running = excluded.running, state = excluded.state,
    circuits = excluded.circuits, heartbeat_at = excluded.heartbeat_at
RETURNING desired_concurrency, close_circuits

-- name: worker_close_circuits
UPDATE {p}workers SET close_circuits = '[]' WHERE id = :id AND close_circuits <> '[]'

-- name: worker_remove
DELETE FROM {p}workers WHERE id = :id

-- name: workers_list
SELECT id, hostname, pid, queues, concurrency, desired_concurrency, running, state,
       started_at, heartbeat_at, circuits
FROM {p}workers WHERE heartbeat_at >= :since ORDER BY heartbeat_at DESC, id

-- name: worker_request
UPDATE {p}workers
SET desired_concurrency = coalesce(:concurrency, desired_concurrency),
    close_circuits = CASE
        WHEN :circuit IS NULL
          OR EXISTS (SELECT 1 FROM json_each(close_circuits) WHERE value = :circuit)
        THEN close_circuits
        ELSE json_insert(close_circuits, '$[#]', :circuit) END
WHERE (:id IS NULL OR id = :id)

-- name: begin_write
BEGIN IMMEDIATE

-- name: begin_exclusive
BEGIN EXCLUSIVE

-- name: begin_read
BEGIN

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- name: savepoint
SAVEPOINT move

-- name: savepoint_release
RELEASE SAVEPOINT move

-- name: savepoint_rollback
ROLLBACK TO SAVEPOINT move

-- name: pragma_wal
PRAGMA journal_mode = WAL

-- name: pragma_synchronous
PRAGMA synchronous = NORMAL

-- name: pragma_foreign_keys
PRAGMA foreign_keys = OFF

-- name: savepoint_batch
SAVEPOINT batch

-- name: savepoint_batch_release
RELEASE SAVEPOINT batch

-- name: savepoint_batch_rollback
ROLLBACK TO SAVEPOINT batch

-- name: jobs_finalize_archive_many
INSERT INTO {p}jobs_archive (
    id, queue, type, payload, tags, priority, attempt_count, max_attempts, timeout_seconds,
    worker_id, created_by, last_modified_by, created_at, started_at, finished_at, duration_seconds,
    result, result_error, partition_key, requeues
)
SELECT h.id, h.queue, h.type, h.payload, h.tags, h.priority, h.attempt_count, h.max_attempts,
       h.timeout_seconds, h.worker_id, h.created_by, h.last_modified_by, h.created_at,
       h.started_at, coalesce(h.started_at + json_extract(m.value, '$[4]'), :now),
       json_extract(m.value, '$[3]'), json_extract(m.value, '$[5]'),
       json_extract(m.value, '$[6]'), h.partition_key, h.requeues
FROM json_each(:moves) AS m
JOIN {p}jobs_hot AS h ON h.id = json_extract(m.value, '$[0]')
WHERE h.worker_id = json_extract(m.value, '$[1]')
  AND h.lease_token = json_extract(m.value, '$[2]')
  AND h.status IN (1, 2)

-- name: jobs_finalize_delete_many
DELETE FROM {p}jobs_hot
WHERE id IN (SELECT h.id
             FROM json_each(:moves) AS m
             JOIN {p}jobs_hot AS h ON h.id = json_extract(m.value, '$[0]')
             WHERE h.worker_id = json_extract(m.value, '$[1]')
               AND h.lease_token = json_extract(m.value, '$[2]')
               AND h.status IN (1, 2))
RETURNING id, queue, waited, children

-- ---------------------------------------------------------------------------------------------
-- Leadership: leases on the database's clock (SQLite's own 'now', the same for every process
-- sharing the file), each statement inside a write transaction, so claims are serialized.
-- ---------------------------------------------------------------------------------------------

-- name: leadership_claim
-- Take the role when it is free or expired, or renew the caller's own current term. A renewal
-- keeps the epoch; anything else starts a new term one epoch higher.
INSERT INTO {p}leadership AS l (name, holder, epoch, expires_at, renewed_at)
VALUES (:name, :holder, 1, (julianday('now') - 2440587.5) * 86400.0 + :lease,
        (julianday('now') - 2440587.5) * 86400.0)
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    epoch = CASE
        WHEN l.holder = excluded.holder AND l.epoch = :epoch
             AND l.expires_at > excluded.renewed_at THEN l.epoch
        ELSE l.epoch + 1
    END,
    expires_at = excluded.expires_at,
    renewed_at = excluded.renewed_at
WHERE l.expires_at <= excluded.renewed_at
   OR (l.holder = excluded.holder AND l.epoch = :epoch)
RETURNING name, holder, epoch, expires_at

-- name: leadership_release
UPDATE {p}leadership
SET expires_at = (julianday('now') - 2440587.5) * 86400.0
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at > (julianday('now') - 2440587.5) * 86400.0

-- name: leadership_get
SELECT name, holder, epoch, expires_at
FROM {p}leadership
WHERE name = :name AND expires_at > (julianday('now') - 2440587.5) * 86400.0

-- name: leadership_fence
-- The first statement of a write made under leadership; the write transaction holds the file's
-- write lock, so no rival can take the role before it commits.
SELECT 1
FROM {p}leadership
WHERE name = :name AND holder = :holder AND epoch = :epoch
  AND expires_at > (julianday('now') - 2440587.5) * 86400.0

-- name: schedules_declare
-- One declaration (run once per declaration, in one transaction). The code owns type, queue,
-- priority, misfire, overlap and declared_*; what is in force follows the code unless an
-- operator's edit is (edited_by set). A change of timing in force restarts the slots from now.
INSERT INTO {p}schedules AS s (
    name, type, queue, priority, cron, every_seconds, timezone, kwargs, misfire, overlap,
    declared_cron, declared_every_seconds, declared_timezone, declared_kwargs,
    last_slot, next_slot, seen_at, created_at, updated_at)
VALUES (:name, :type, :queue, :priority, :cron, :every, :tz, :kwargs, :misfire, :overlap,
        :cron, :every, :tz, :kwargs, :now, :next_slot, :now, :now, :now)
ON CONFLICT (name) DO UPDATE
SET type = excluded.type,
    queue = excluded.queue,
    priority = excluded.priority,
    misfire = excluded.misfire,
    overlap = excluded.overlap,
    declared_cron = excluded.declared_cron,
    declared_every_seconds = excluded.declared_every_seconds,
    declared_timezone = excluded.declared_timezone,
    declared_kwargs = excluded.declared_kwargs,
    cron = CASE WHEN s.edited_by IS NULL THEN excluded.cron ELSE s.cron END,
    every_seconds = CASE WHEN s.edited_by IS NULL THEN excluded.every_seconds
                         ELSE s.every_seconds END,
    timezone = CASE WHEN s.edited_by IS NULL THEN excluded.timezone ELSE s.timezone END,
    kwargs = CASE WHEN s.edited_by IS NULL THEN excluded.kwargs ELSE s.kwargs END,
    last_slot = CASE WHEN s.edited_by IS NULL
                      AND (s.cron IS NOT excluded.cron
                           OR s.every_seconds IS NOT excluded.every_seconds
                           OR s.timezone IS NOT excluded.timezone)
                     THEN excluded.last_slot ELSE s.last_slot END,
    next_slot = CASE WHEN s.edited_by IS NULL
                      AND (s.cron IS NOT excluded.cron
                           OR s.every_seconds IS NOT excluded.every_seconds
                           OR s.timezone IS NOT excluded.timezone)
                     THEN excluded.next_slot ELSE s.next_slot END,
    revision = CASE WHEN s.type IS NOT excluded.type OR s.queue IS NOT excluded.queue
                      OR s.priority IS NOT excluded.priority
                      OR s.misfire IS NOT excluded.misfire OR s.overlap IS NOT excluded.overlap
                      OR (s.edited_by IS NULL
                          AND (s.cron IS NOT excluded.cron
                               OR s.every_seconds IS NOT excluded.every_seconds
                               OR s.timezone IS NOT excluded.timezone
                               OR s.kwargs IS NOT excluded.kwargs))
                    THEN s.revision + 1 ELSE s.revision END,
    seen_at = excluded.seen_at,
    updated_at = excluded.updated_at

-- name: schedules_seen
UPDATE {p}schedules SET seen_at = :now WHERE name IN (SELECT value FROM json_each(:names))

-- name: schedules_list
-- The schedules, with where each one's last job is now: its hot status, or in the archive, or
-- its DLQ failure reason (all NULL: gone, or never run).
SELECT s.name, s.type, s.queue, s.priority, s.cron, s.every_seconds, s.timezone, s.kwargs,
       s.misfire, s.overlap, s.paused, s.declared_cron, s.declared_every_seconds,
       s.declared_timezone, s.declared_kwargs, s.edited_by, s.edited_at, s.revision,
       s.last_slot, s.next_slot, s.last_job_id, s.last_run_at, s.seen_at, s.created_at,
       s.updated_at, s.last_modified_by,
       h.status, a.id IS NOT NULL, d.failure_reason
FROM {p}schedules s
LEFT JOIN {p}jobs_hot h ON h.id = s.last_job_id
LEFT JOIN {p}jobs_archive a ON a.id = s.last_job_id
LEFT JOIN {p}jobs_dlq d ON d.id = s.last_job_id
WHERE (:names IS NULL OR s.name IN (SELECT value FROM json_each(:names)))
  AND (:due_at IS NULL OR (s.paused = 0 AND s.next_slot <= :due_at))
  AND (:seen_since IS NULL OR s.seen_at >= :seen_since)
ORDER BY s.name

-- name: schedule_history
SELECT slot, outcome, job_id, detail, recorded_at
FROM {p}schedule_slots
WHERE name = :name
ORDER BY id DESC
LIMIT :limit

-- name: schedule_advance
-- The compare-and-set a slot is enqueued under: the row moves on only from what was read
-- (times are REAL seconds: equal to the microsecond).
UPDATE {p}schedules
SET last_slot = :new_last_slot, next_slot = :next_slot
WHERE name = :name AND revision = :revision AND abs(last_slot - :last_slot) < 0.0000005
RETURNING last_job_id

-- name: schedule_lock
SELECT last_job_id FROM {p}schedules WHERE name = :name

-- name: schedule_unfinished
SELECT 1 FROM {p}jobs_hot WHERE id = :id

-- name: schedule_ran
UPDATE {p}schedules SET last_job_id = :job_id, last_run_at = :now WHERE name = :name

-- name: schedule_record
INSERT INTO {p}schedule_slots (name, slot, outcome, job_id, detail, recorded_at)
VALUES (:name, :slot, :outcome, :job_id, :detail, :now)

-- name: schedule_trim
-- Keep each schedule's newest 100 records.
DELETE FROM {p}schedule_slots
WHERE name = :name
  AND id < (SELECT min(id) FROM (SELECT id FROM {p}schedule_slots
                                 WHERE name = :name ORDER BY id DESC LIMIT 100))

-- name: schedule_update
UPDATE {p}schedules
SET paused = :paused,
    cron = :cron,
    every_seconds = :every,
    timezone = :tz,
    kwargs = :kwargs,
    edited_by = CASE WHEN :edited THEN :actor END,
    edited_at = CASE WHEN :edited THEN :now END,
    last_slot = coalesce(:restart_at, last_slot),
    next_slot = CASE WHEN :restart_at IS NULL THEN next_slot ELSE :next_slot END,
    revision = revision + 1,
    updated_at = :now,
    last_modified_by = :actor
WHERE name = :name AND revision = :revision

-- name: schedule_delete_slots
DELETE FROM {p}schedule_slots WHERE name = :name

-- name: schedule_delete
DELETE FROM {p}schedules WHERE name = :name

-- ---------------------------------------------------------------------------------------------
-- Results and workflows
-- ---------------------------------------------------------------------------------------------

-- name: jobs_graph_where
-- Where each stored parent of an enqueue is: 0 hot, 1 archive, 2 DLQ (none: not stored).
SELECT id, 0 FROM {p}jobs_hot WHERE id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT id, 1 FROM {p}jobs_archive WHERE id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT id, 2 FROM {p}jobs_dlq WHERE id IN (SELECT value FROM json_each(:ids))

-- name: jobs_graph_attach_hot
-- Count new children on a stored parent (its move out of hot releases them).
UPDATE {p}jobs_hot SET children = coalesce(children, 0) + :n WHERE id = :id

-- name: jobs_graph_attach_dlq
UPDATE {p}jobs_dlq SET children = coalesce(children, 0) + :n WHERE id = :id

-- name: jobs_graph_workflows
SELECT child_id, workflow_id FROM {p}job_edges
WHERE child_id IN (SELECT value FROM json_each(:ids))
ORDER BY created_at DESC

-- name: jobs_graph_edge
INSERT INTO {p}job_edges (child_id, parent_id, workflow_id, satisfied, created_at)
VALUES (:child, :parent, :workflow, :satisfied, :now)

-- name: jobs_edges_satisfy
-- The edges from parents just moved to the archive, satisfied once; the children they lead to
-- (one row per edge).
UPDATE {p}job_edges SET satisfied = 1
WHERE parent_id IN (SELECT value FROM json_each(:ids)) AND satisfied = 0
  AND parent_id IN (SELECT id FROM {p}jobs_archive WHERE id IN (SELECT value FROM json_each(:ids)))
RETURNING child_id

-- name: jobs_orphans
-- The children still waiting on purged parents (parents now in no pillar), one per child.
SELECT e.child_id, min(e.parent_id)
FROM {p}job_edges e
WHERE e.parent_id IN (SELECT value FROM json_each(:ids)) AND e.satisfied = 0
  AND NOT EXISTS (SELECT 1 FROM {p}jobs_dlq q WHERE q.id = e.parent_id)
GROUP BY e.child_id
ORDER BY e.child_id

-- name: jobs_release_children
-- A parent moved to the archive: each waiting child it was a parent of counts down, and goes
-- to Pending when no parent is left.
UPDATE {p}jobs_hot
SET parents_left = max(parents_left - :n, 0),
    status = CASE WHEN parents_left - :n <= 0 THEN 0 ELSE 3 END,
    updated_at = :now
WHERE id = :id AND status = 3
RETURNING queue, status

-- name: jobs_orphans_fail
-- A waiting child whose parent is gone -> the DLQ as DEPENDENCY_FAILED (11).
INSERT INTO {p}jobs_dlq (
    id, queue, type, payload, tags, priority, failure_reason, error, attempt_count, max_attempts,
    timeout_seconds, worker_id, created_by, last_modified_by, cancelled_by, created_at,
    started_at, failed_at, duration_seconds, children, partition_key, error_family, requeues
)
SELECT id, queue, type, payload, tags, priority, 11, :error, attempt_count, max_attempts,
       timeout_seconds, worker_id, created_by, coalesce(:actor, last_modified_by), :actor,
       created_at, started_at, :now, NULL, children, partition_key,
       chokaq_error_family(:error), requeues
FROM {p}jobs_hot
WHERE id = :id AND status = 3

-- name: job_watch
UPDATE {p}jobs_hot SET waited = 1 WHERE id = :id AND waited IS NOT 1 RETURNING status

-- name: job_outcome
-- As on PostgreSQL: a Waiting job names the first job in the DLQ it waits on, directly or
-- through parents that wait themselves (that job's reason in the reason column).
WITH RECURSIVE up(id) AS (
    SELECT e.parent_id
    FROM {p}jobs_hot h JOIN {p}job_edges e ON e.child_id = h.id
    WHERE h.id = :id AND h.status = 3
    UNION
    SELECT e.parent_id
    FROM up JOIN {p}jobs_hot h ON h.id = up.id AND h.status = 3
    JOIN {p}job_edges e ON e.child_id = h.id
),
blocker AS (
    SELECT d.id, d.failure_reason
    FROM up JOIN {p}jobs_dlq d ON d.id = up.id
    ORDER BY d.failed_at, d.id
    LIMIT 1
)
SELECT 'hot', h.status, b.failure_reason, NULL, NULL, NULL, b.id
FROM {p}jobs_hot h LEFT JOIN blocker b ON 1
WHERE h.id = :id
UNION ALL
SELECT 'archive', NULL, NULL, NULL, result, result_error, NULL
FROM {p}jobs_archive WHERE id = :id
UNION ALL
SELECT 'dlq', NULL, failure_reason, error, NULL, NULL, NULL FROM {p}jobs_dlq WHERE id = :id

-- name: job_parent_results
SELECT e.parent_id, a.result, a.result_error
FROM {p}job_edges e
JOIN {p}jobs_archive a ON a.id = e.parent_id
WHERE e.child_id = :id

-- name: job_relatives
SELECT l.id, l.side, l.workflow_id, coalesce(h.type, a.type, d.type), h.status,
       a.id IS NOT NULL, d.failure_reason,
       coalesce(h.status = 3 AND EXISTS (SELECT 1 FROM {p}job_edges x
                                         JOIN {p}jobs_dlq q ON q.id = x.parent_id
                                         WHERE x.child_id = l.id), 0)
FROM (
    SELECT * FROM (SELECT e.parent_id AS id, 0 AS side, e.workflow_id, e.created_at
                   FROM {p}job_edges e WHERE e.child_id = :id
                   ORDER BY e.created_at, e.parent_id LIMIT :limit)
    UNION ALL
    SELECT * FROM (SELECT e.child_id, 1, e.workflow_id, e.created_at
                   FROM {p}job_edges e WHERE e.parent_id = :id
                   ORDER BY e.created_at, e.child_id LIMIT :limit)
) AS l
LEFT JOIN {p}jobs_hot h ON h.id = l.id
LEFT JOIN {p}jobs_archive a ON a.id = l.id
LEFT JOIN {p}jobs_dlq d ON d.id = l.id
ORDER BY l.side, l.created_at, l.id

-- name: workflow_members
WITH e AS (
    SELECT child_id, parent_id FROM {p}job_edges WHERE workflow_id = :id
),
members AS (
    SELECT child_id AS id FROM e UNION SELECT parent_id FROM e
)
SELECT m.id, coalesce(h.type, a.type, d.type), coalesce(h.queue, a.queue, d.queue),
       h.status, a.id IS NOT NULL, d.failure_reason, d.error,
       (SELECT group_concat(x.parent_id, ',') FROM (SELECT parent_id FROM e
                                                    WHERE e.child_id = m.id
                                                    ORDER BY parent_id) x)
FROM members m
LEFT JOIN {p}jobs_hot h ON h.id = m.id
LEFT JOIN {p}jobs_archive a ON a.id = m.id
LEFT JOIN {p}jobs_dlq d ON d.id = m.id
ORDER BY m.id
LIMIT :limit

-- ---------------------------------------------------------------------------------------------
-- Rate limits and partitions (the decisions are chokaq.storage.throttle's)
-- ---------------------------------------------------------------------------------------------

-- name: limits_rows
SELECT scope, name, interval_seconds, burst, concurrency, cursor FROM {p}limits

-- name: limits_running
SELECT type, partition_key, count(*) FROM {p}jobs_hot WHERE status IN (1, 2) GROUP BY 1, 2

-- name: limits_tats
SELECT scope, name, partition_key, tat FROM {p}limit_state WHERE tat > :now

-- name: limits_next_partitioned_type
-- One step of a skip scan over the partition index: the next type with partitioned pending jobs
-- (ORDER BY ... LIMIT 1 stops at the first index entry, whatever the planner thinks of min()).
SELECT type FROM {p}jobs_hot
WHERE status = 0 AND partition_key IS NOT NULL AND type > :after
ORDER BY type LIMIT 1

-- name: limits_next_partition
SELECT partition_key FROM {p}jobs_hot
WHERE status = 0 AND partition_key IS NOT NULL AND type = :type AND partition_key > :after
ORDER BY partition_key LIMIT 1

-- name: limits_serving
SELECT q.name, q.paused, q.active, q.max_workers,
       (SELECT count(*) FROM {p}jobs_hot AS a WHERE a.queue = q.name AND a.status IN (1, 2))
FROM {p}queues AS q

-- name: limits_queue_head
SELECT h.id, h.queue, h.type, h.priority, h.scheduled_at, h.created_at
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NULL
  AND h.queue = :queue
  AND h.scheduled_at <= :now
  AND h.type NOT IN (SELECT value FROM json_each(:exclude))
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT :limit

-- name: limits_type_head
SELECT h.id, h.queue, h.type, h.priority, h.scheduled_at, h.created_at
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NULL
  AND h.queue = :queue AND h.type = :type
  AND h.scheduled_at <= :now
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT :limit

-- name: limits_partition_head
SELECT h.id, h.queue, h.type, h.priority, h.scheduled_at, h.created_at
FROM {p}jobs_hot AS h
WHERE h.status = 0 AND h.partition_key IS NOT NULL
  AND h.type = :type AND h.partition_key = :partition
  AND h.scheduled_at <= :now
  AND h.queue IN (SELECT value FROM json_each(:queues))
ORDER BY h.priority DESC, h.scheduled_at, h.created_at
LIMIT :limit

-- name: limits_spend_tat
INSERT INTO {p}limit_state (scope, name, partition_key, tat) VALUES (:scope, :name, :partition, :tat)
ON CONFLICT (scope, name, partition_key) DO UPDATE SET tat = excluded.tat

-- name: limits_spend_cursor
INSERT INTO {p}limits (scope, name, cursor, updated_at) VALUES ('type', :name, :cursor, :now)
ON CONFLICT (scope, name) DO UPDATE SET cursor = excluded.cursor

-- name: limits_get
SELECT scope, name, rate, concurrency, declared_rate, declared_concurrency, rate_set,
       concurrency_set, updated_at, last_modified_by
FROM {p}limits WHERE scope = :scope AND name = :name

-- name: limits_all
SELECT scope, name, rate, concurrency, declared_rate, declared_concurrency, rate_set,
       concurrency_set, updated_at, last_modified_by
FROM {p}limits
WHERE rate IS NOT NULL OR concurrency IS NOT NULL OR declared_rate IS NOT NULL
   OR declared_concurrency IS NOT NULL OR rate_set <> 0 OR concurrency_set <> 0
ORDER BY scope, name

-- name: limits_put
-- The whole row as limits.py computed it (declared, settings and what is in force).
INSERT INTO {p}limits (scope, name, declared_rate, declared_concurrency, rate_set,
                       concurrency_set, rate, interval_seconds, burst, concurrency, updated_at,
                       last_modified_by)
VALUES (:scope, :name, :declared_rate, :declared_concurrency, :rate_set, :concurrency_set,
        :rate, :interval, :burst, :concurrency, :now, :actor)
ON CONFLICT (scope, name) DO UPDATE SET
    declared_rate = excluded.declared_rate,
    declared_concurrency = excluded.declared_concurrency,
    rate_set = excluded.rate_set,
    concurrency_set = excluded.concurrency_set,
    rate = excluded.rate,
    interval_seconds = excluded.interval_seconds,
    burst = excluded.burst,
    concurrency = excluded.concurrency,
    updated_at = excluded.updated_at,
    last_modified_by = coalesce(excluded.last_modified_by, {p}limits.last_modified_by)

-- name: limits_load_started
-- Jobs of a queue or type started in the window: running ones and those that finished since.
SELECT count(*) FROM (
    SELECT started_at, queue, type FROM {p}jobs_hot WHERE status IN (1, 2) AND started_at >= :since
    UNION ALL
    SELECT started_at, queue, type FROM {p}jobs_archive WHERE finished_at >= :since
    UNION ALL
    SELECT started_at, queue, type FROM {p}jobs_dlq WHERE failed_at >= :since
) AS s
WHERE s.started_at >= :since AND CASE :scope WHEN 'queue' THEN s.queue ELSE s.type END = :name

-- name: limits_load_pending
-- Due pending jobs of a queue or type, by partition ('' for none), with the running ones.
SELECT coalesce(partition_key, ''), sum(status = 0 AND scheduled_at <= :now), sum(status IN (1, 2))
FROM {p}jobs_hot
WHERE status IN (0, 1, 2) AND CASE :scope WHEN 'queue' THEN queue ELSE type END = :name
GROUP BY 1

-- name: unique_keys_tidy
DELETE FROM {p}unique_keys WHERE until <= :before

-- name: limit_state_tidy
DELETE FROM {p}limit_state WHERE tat < :before

-- ---------------------------------------------------------------------------------------------
-- Bulk actions by filter over hot and archive, and run-now (bulk.py)
-- ---------------------------------------------------------------------------------------------

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

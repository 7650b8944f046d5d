-- The claims area: the worker path of a job, from the claim (fetch) through start, heartbeat,
-- progress and release to the finalize that moves it out of hot.
-- Run by sqlite/claims.py; conventions in connection.sql.

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
    started_at, failed_at, duration_seconds, children, partition_key, error_family, requeues,
    error_type
)
SELECT id, queue, type, payload, tags, priority, :reason, :error, attempt_count, max_attempts,
       timeout_seconds, worker_id, created_by, last_modified_by,
       coalesce(:actor, CASE WHEN :reason = 1 THEN cancelled_by END), created_at,
       started_at, coalesce(started_at + :elapsed, :now), :duration, children, partition_key,
       chokaq_error_family(:error), requeues, :error_type
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

-- name: attempts_trim
-- Keep the job's newest :keep attempts.
DELETE FROM {p}job_attempts
WHERE job_id = :id
  AND seq <= (SELECT max(seq) FROM {p}job_attempts WHERE job_id = :id) - :keep

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

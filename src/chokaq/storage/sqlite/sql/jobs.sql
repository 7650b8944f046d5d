-- The jobs area: enqueue (queue rows, uniqueness windows, the dependency graph of a batch), the
-- operator's cancel, edit and advance of hot jobs; and the moves out of hot every area shares
-- (counters, buckets, releasing children, savepoints).
-- Run by sqlite/jobs.py; conventions in connection.sql.

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

-- name: jobs_conflict_holder
-- The hot job holding a key, for an enqueue with on_conflict other than "keep" (the write
-- transaction it runs in keeps every other writer out until it commits).
SELECT id, status, queue FROM {p}jobs_hot WHERE idempotency_key = :idempotency_key

-- name: jobs_conflict_replace
-- A Pending holder of the key takes the new payload in place, and but for replace_payload the
-- new due time and expiry (tried first: the common case, a debounce's hit, is one statement).
UPDATE {p}jobs_hot
SET payload = :payload,
    scheduled_at = CASE WHEN :mode = 'replace_payload' THEN scheduled_at ELSE :scheduled_at END,
    expires_at = CASE WHEN :mode = 'replace_payload' THEN expires_at ELSE :expires_at END,
    updated_at = :now
WHERE idempotency_key = :idempotency_key AND status = 0
RETURNING id, queue

-- name: jobs_conflict_release
-- A holder past Pending gives its key up to the new job; with cancel_running a claimed or
-- running one is asked to stop, as jobs_cancel_request asks.
UPDATE {p}jobs_hot
SET idempotency_key = NULL,
    cancel_requested_at = CASE WHEN :cancel THEN coalesce(cancel_requested_at, :now)
                               ELSE cancel_requested_at END,
    cancelled_by = CASE WHEN :cancel THEN 'superseded by ' || :id ELSE cancelled_by END,
    updated_at = :now
WHERE id = :holder

-- name: jobs_conflict_record
INSERT INTO {p}job_supersessions (job_id, by_id, cancel_requested, at)
VALUES (:holder, :id, :cancel, :now)
ON CONFLICT (job_id) DO NOTHING

-- name: jobs_superseded_cancels
SELECT job_id FROM {p}job_supersessions
WHERE by_id IN (SELECT value FROM json_each(:ids)) AND cancel_requested

-- name: stats_conflict_bump
UPDATE {p}stats_summary
SET replaced_total = replaced_total + :replaced, superseded_total = superseded_total + :superseded
WHERE queue = :queue

-- name: jobs_unique_held
-- The keys of a batch whose uniqueness window (unique_for_seconds) is still open, and the job
-- that opened it: an enqueue with such a key gets that job, wherever it is by now.
SELECT key, job_id FROM {p}unique_keys
WHERE key IN (SELECT value FROM json_each(:keys)) AND until > :now

-- name: jobs_unique_take
-- A window opened (or one that had ended, taken over) for the job that now holds the key.
INSERT INTO {p}unique_keys (key, job_id, until) VALUES (:key, :job_id, :until)
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, until = excluded.until

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

-- name: fragment_buckets_merge
-- Fold a new bucket into an existing one: sum the counts and durations, keep the max.
ON CONFLICT (width_seconds, bucket_start, queue, outcome, failure_reason) DO UPDATE SET
    completed_count = completed_count + excluded.completed_count,
    duration_count = duration_count + excluded.duration_count,
    total_duration_seconds = total_duration_seconds + excluded.total_duration_seconds,
    max_duration_seconds = max(coalesce(max_duration_seconds, excluded.max_duration_seconds),
                               coalesce(excluded.max_duration_seconds, max_duration_seconds)),
    updated_at = excluded.updated_at

-- name: bucket_bump
INSERT INTO {p}metric_buckets (
    width_seconds, bucket_start, queue, outcome, failure_reason, completed_count,
    duration_count, total_duration_seconds, max_duration_seconds, updated_at
) VALUES (1, :bucket, :queue, :outcome, :reason, :count, :duration_count, :duration_total,
          :duration_max, :now)
-- include: fragment_buckets_merge

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

-- name: savepoint
SAVEPOINT move

-- name: savepoint_release
RELEASE SAVEPOINT move

-- name: savepoint_rollback
ROLLBACK TO SAVEPOINT move

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
INSERT INTO {p}job_edges (
    child_id, parent_id, workflow_id, satisfied, created_at, any_outcome, arg_position
)
VALUES (:child, :parent, :workflow, :satisfied, :now, :any, :argument)

-- name: jobs_edges_satisfy
-- The edges from parents just moved out of hot, satisfied once: every edge of a parent in the
-- archive, and the edges of children released on any outcome of a parent in the DLQ; the
-- children they lead to (one row per edge).
UPDATE {p}job_edges SET satisfied = 1
WHERE parent_id IN (SELECT value FROM json_each(:ids)) AND satisfied = 0
  AND (parent_id IN (SELECT id FROM {p}jobs_archive
                     WHERE id IN (SELECT value FROM json_each(:ids)))
       OR (any_outcome = 1 AND parent_id IN (SELECT id FROM {p}jobs_dlq
                                             WHERE id IN (SELECT value FROM json_each(:ids)))))
RETURNING child_id

-- name: jobs_release_children
-- A parent moved out of hot: each waiting child it was a parent of counts down, and goes
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

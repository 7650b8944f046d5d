-- Durable jobs (see the PostgreSQL file of the same name): steps recorded under the lease,
-- sleeps and event waits that suspend the job (status 4), events, the wake pass and the
-- resumption of durable jobs whose worker died. SQLite's single writer serialises each
-- transaction of these statements (``durable``), so no row or key lock is taken.

-- name: steps_list
SELECT job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {p}job_steps
WHERE job_id = :id
ORDER BY seq

-- name: steps_list_many
-- The steps of many jobs (:ids, a JSON array), for the worker's step batcher.
SELECT job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {p}job_steps
WHERE job_id IN (SELECT value FROM json_each(:ids))
ORDER BY job_id, seq

-- name: durable_owner
-- The leased Processing row, and the step :name as recorded (NULLs when it is not yet).
SELECT h.id, s.job_id, s.name, s.seq, s.kind, s.state, s.value, s.error, s.event_key, s.wake_at,
       s.started_at, s.finished_at
FROM {p}jobs_hot h
LEFT JOIN {p}job_steps s ON s.job_id = h.id AND s.name = :name
WHERE h.id = :id AND h.worker_id = :worker_id AND h.lease_token = :token AND h.status = 2

-- name: steps_record
-- A step's outcome under the lease (run in the transaction of durable_owner's check): done
-- with its value or failed with its error; a done step never changes.
INSERT INTO {p}job_steps AS s (
    job_id, name, seq, kind, state, value, error, started_at, finished_at
)
SELECT :id, :name,
       coalesce((SELECT max(x.seq) FROM {p}job_steps x WHERE x.job_id = :id), 0) + 1,
       0, :state, :value, :error, :now - :elapsed, :now
WHERE true
ON CONFLICT (job_id, name) DO UPDATE
SET state = excluded.state, value = excluded.value, error = excluded.error,
    started_at = excluded.started_at, finished_at = excluded.finished_at
WHERE s.state = 1
RETURNING job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
          finished_at

-- name: steps_get
SELECT job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {p}job_steps
WHERE job_id = :id AND name = :name

-- name: steps_pending
INSERT INTO {p}job_steps (
    job_id, name, seq, kind, state, value, event_key, wake_at, started_at
)
SELECT :id, :name,
       coalesce((SELECT max(x.seq) FROM {p}job_steps x WHERE x.job_id = :id), 0) + 1,
       :kind, 2, :value, :key, :wake_at, :now
WHERE true
ON CONFLICT (job_id, name) DO NOTHING

-- name: steps_settle
UPDATE {p}job_steps
SET state = 0, value = :value, error = :error, finished_at = :now
WHERE job_id = :id AND name = :name AND state = 2
RETURNING job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
          finished_at

-- name: durable_suspend
-- Processing -> Suspended under the lease; the attempt of this run is given back.
UPDATE {p}jobs_hot
SET status = 4, wake_at = :wake_at, event_key = :key, gathering = :gathering,
    worker_id = NULL, lease_token = NULL, heartbeat_at = NULL, progress = NULL,
    attempt_count = max(attempt_count - 1, 0), updated_at = :now
WHERE id = :id AND worker_id = :worker_id AND lease_token = :token AND status = 2
RETURNING id

-- name: events_take
-- As on PostgreSQL: the oldest kept event of a key, sent by the wait's deadline (``until``).
DELETE FROM {p}job_events
WHERE id = (
    SELECT x.id FROM {p}job_events x
    WHERE x.key = :key AND x.expires_at > :now
      AND (:until IS NULL OR x.created_at <= :until)
    ORDER BY x.id
    LIMIT 1
)
RETURNING data

-- name: events_waiting
-- The oldest job suspended on a key before its wait's deadline (as PostgreSQL's events_send).
SELECT id, queue FROM {p}jobs_hot
WHERE status = 4 AND event_key = :key AND (wake_at IS NULL OR wake_at > :now)
ORDER BY updated_at, id
LIMIT 1

-- name: events_deliver
UPDATE {p}job_steps
SET state = 0, value = :data, finished_at = :now
WHERE job_id = :id AND kind = 2 AND state = 2

-- name: events_woke
UPDATE {p}jobs_hot
SET status = 0, scheduled_at = :now, wake_at = NULL, event_key = NULL, gathering = NULL,
    updated_at = :now
WHERE id = :id AND status = 4

-- name: events_keep
INSERT INTO {p}job_events (key, data, created_at, expires_at)
VALUES (:key, :data, :now, :now + :retention)

-- name: durable_wake
UPDATE {p}jobs_hot
SET status = 0, scheduled_at = wake_at, wake_at = NULL, event_key = NULL, gathering = NULL,
    updated_at = :now
WHERE id IN (
    SELECT id FROM {p}jobs_hot
    WHERE status = 4 AND wake_at <= :now
    ORDER BY wake_at
    LIMIT :limit
)
RETURNING id, queue

-- name: events_prune
DELETE FROM {p}job_events
WHERE id IN (
    SELECT id FROM {p}job_events WHERE expires_at <= :now ORDER BY expires_at LIMIT :limit
)

-- name: steps_tidy
DELETE FROM {p}job_steps
WHERE job_id IN (
    SELECT DISTINCT x.job_id FROM {p}job_steps x
    WHERE NOT EXISTS (SELECT 1 FROM {p}jobs_hot h WHERE h.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {p}jobs_archive a WHERE a.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {p}jobs_dlq d WHERE d.id = x.job_id)
    LIMIT :limit
)

-- name: durable_resume_candidates
-- Durable zombies with attempts left: jobs_rescue_zombie_candidates' judgement, for the types
-- given as a JSON object of type -> max attempts.
SELECT h.id, h.queue, coalesce(q.zombie_timeout_seconds, :timeout) AS timeout
FROM {p}jobs_hot AS h
JOIN json_each(:types) AS t ON t.key = h.type
LEFT JOIN {p}queues AS q ON q.name = h.queue
WHERE h.status = 2
  AND max(coalesce(h.heartbeat_at, h.updated_at), coalesce(:since, 0.0))
      < :now - coalesce(q.zombie_timeout_seconds, :timeout)
  AND h.attempt_count < coalesce(h.max_attempts, t.value)

-- name: durable_resume_attempt
-- The attempt the dead worker was running, kept in the job's history (read from hot before
-- durable_resume_move clears its worker).
INSERT INTO {p}job_attempts (
    job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds, failure_reason,
    error
)
SELECT h.id, coalesce((SELECT max(a.seq) FROM {p}job_attempts a WHERE a.job_id = h.id), 0) + 1,
       h.attempt_count, h.worker_id, h.started_at, :now, NULL, NULL, :error
FROM {p}jobs_hot h
WHERE h.id = :id AND h.status = 2

-- name: durable_resume_move
UPDATE {p}jobs_hot
SET status = 0, scheduled_at = :now, worker_id = NULL, lease_token = NULL,
    heartbeat_at = NULL, progress = NULL, last_error = :error, updated_at = :now
WHERE id = :id AND status = 2

-- name: steps_spawned
INSERT INTO {p}job_steps (job_id, name, seq, kind, state, value, started_at, finished_at)
SELECT :id, :name,
       coalesce((SELECT max(x.seq) FROM {p}job_steps x WHERE x.job_id = :id), 0) + 1,
       3, 0, :value, :now, :now
WHERE true
ON CONFLICT (job_id, name) DO NOTHING
RETURNING job_id, name, seq, kind, state, value, error, event_key, wake_at, started_at,
          finished_at

-- name: steps_spawn_edges
INSERT INTO {p}job_edges (child_id, parent_id, workflow_id, satisfied, created_at)
SELECT c.value, :id,
       coalesce(
           (SELECT e.workflow_id FROM {p}job_edges e
            WHERE e.child_id = :id ORDER BY e.created_at LIMIT 1),
           :id),
       1, :now
FROM json_each(:children) AS c
WHERE true
ON CONFLICT (child_id, parent_id) DO NOTHING

-- name: gather_outcomes
SELECT c.value, h.id IS NOT NULL, a.id IS NOT NULL, a.result, a.result_error,
       d.failure_reason, d.error
FROM json_each(:ids) AS c
LEFT JOIN {p}jobs_hot h ON h.id = c.value
LEFT JOIN {p}jobs_archive a ON a.id = c.value
LEFT JOIN {p}jobs_dlq d ON d.id = c.value
ORDER BY c.key

-- name: durable_wake_gathers
UPDATE {p}jobs_hot
SET status = 0, scheduled_at = :now, wake_at = NULL, event_key = NULL, gathering = NULL,
    updated_at = :now
WHERE id IN (
    SELECT h.id FROM {p}jobs_hot h
    JOIN {p}job_steps s ON s.job_id = h.id AND s.name = h.gathering
    WHERE h.status = 4 AND h.gathering IS NOT NULL
      AND NOT EXISTS (
          SELECT 1 FROM json_each(s.value) AS c JOIN {p}jobs_hot x ON x.id = c.value
      )
    ORDER BY h.updated_at
    LIMIT :limit
)
RETURNING id, queue

-- name: steps_children
SELECT DISTINCT c.value
FROM {p}job_steps s, json_each(s.value) AS c
WHERE s.job_id IN (SELECT value FROM json_each(:ids)) AND s.kind = 3 AND s.state = 0

-- name: durable_counts
SELECT 's', h.queue,
       CASE WHEN h.gathering IS NOT NULL THEN 'children'
            WHEN h.event_key IS NOT NULL THEN 'event'
            ELSE 'sleep' END,
       count(*)
FROM {p}jobs_hot h
WHERE h.status = 4
GROUP BY 2, 3
UNION ALL
SELECT 'e', NULL, NULL, count(*)
FROM {p}job_events e
WHERE e.expires_at > :now
ORDER BY 1, 2, 3

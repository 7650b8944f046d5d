-- Durable jobs (issue 34; docs/durable.md): steps recorded under the lease, sleeps and event
-- waits that suspend the job (status 4) and the one statement that brings it back, events
-- sent before anyone waited, and the resumption of a durable job whose worker died.

-- name: steps_list
SELECT job_id::text, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {schema}.job_steps
WHERE job_id = %(id)s::uuid
ORDER BY seq

-- name: fragment_durable_owner
-- The leased Processing row of the job a durable statement writes for, held FOR SHARE until
-- its transaction ends: a rescue, a cancel or a finalize of that row waits for it, and a
-- statement that waited re-reads the row, so a lease taken over meanwhile records nothing.
owner AS MATERIALIZED (
    SELECT h.id, coalesce(%(now)s::timestamptz, now()) AS now
    FROM {schema}.jobs_hot h
    WHERE h.id = %(id)s::uuid AND h.worker_id = %(worker)s
      AND h.lease_token = %(token)s::uuid
      AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
    FOR SHARE OF h
)

-- name: steps_list_many
-- The steps of many jobs (the worker's step batcher reads the replays of its jobs at once).
SELECT job_id::text, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {schema}.job_steps
WHERE job_id = ANY(%(ids)s::uuid[])
ORDER BY job_id, seq

-- name: steps_record_many
-- Step outcomes of many jobs, in one statement, each under its own lease: done with its value,
-- or failed with its error (a failed step runs again on replay and is recorded again; a done one
-- never changes). The leased Processing rows are held FOR SHARE (in id order, so two batches
-- cannot deadlock) until the statement ends, as fragment_durable_owner holds one: a rescue, a
-- cancel or a finalize waits, and a lease taken over meanwhile records nothing. A record whose
-- lease does not match joins no owner and writes nothing. started_at is the statement's clock
-- less the step's elapsed time on the worker. New steps of one job take the next seqs in input
-- order.
WITH
clock AS MATERIALIZED (SELECT coalesce(%(now)s::timestamptz, now()) AS now),
u AS (
    SELECT * FROM unnest(
        %(ids)s::uuid[], %(workers)s::text[], %(tokens)s::uuid[], %(names)s::text[],
        %(states)s::int[], %(values)s::text[], %(errors)s::text[], %(elapsed)s::float8[]
    ) WITH ORDINALITY AS u(id, worker_id, token, name, state, value, error, elapsed, ord)
),
v AS (
    -- A step the job has not recorded yet takes a new seq; one it has keeps its own.
    SELECT u.*, NOT EXISTS (
        SELECT 1 FROM {schema}.job_steps x WHERE x.job_id = u.id AND x.name = u.name
    ) AS fresh
    FROM u
),
owner AS MATERIALIZED (
    SELECT h.id, h.worker_id, h.lease_token
    FROM {schema}.jobs_hot h
    WHERE h.id = ANY(%(ids)s::uuid[])
      AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
    ORDER BY h.id
    FOR SHARE OF h
)
INSERT INTO {schema}.job_steps AS s (
    job_id, name, seq, kind, state, value, error, started_at, finished_at
)
SELECT v.id, v.name,
       coalesce((SELECT max(x.seq) FROM {schema}.job_steps x WHERE x.job_id = v.id), 0)
         + sum(v.fresh::int) OVER (PARTITION BY v.id ORDER BY v.ord),
       0, v.state, v.value, v.error, k.now - make_interval(secs => v.elapsed), k.now
FROM v
JOIN owner o ON o.id = v.id AND o.worker_id = v.worker_id AND o.lease_token = v.token
CROSS JOIN clock k
ON CONFLICT (job_id, name) DO UPDATE
SET state = excluded.state, value = excluded.value, error = excluded.error,
    started_at = excluded.started_at, finished_at = excluded.finished_at
WHERE s.state = 1
RETURNING s.job_id::text, s.name, s.seq, s.kind, s.state, s.value, s.error, s.event_key,
          s.wake_at, s.started_at, s.finished_at

-- name: durable_owner
-- Opens a sleep, a wait, a spawn or a gather (in its transaction): the leased row, held, the
-- clock, and the step ``name`` as recorded (NULLs when it is not yet).
WITH
-- include: fragment_durable_owner
SELECT o.now, s.job_id::text, s.name, s.seq, s.kind, s.state, s.value, s.error, s.event_key,
       s.wake_at, s.started_at, s.finished_at
FROM owner o
LEFT JOIN {schema}.job_steps s ON s.job_id = o.id AND s.name = %(name)s

-- name: steps_get
SELECT job_id::text, name, seq, kind, state, value, error, event_key, wake_at, started_at,
       finished_at
FROM {schema}.job_steps
WHERE job_id = %(id)s::uuid AND name = %(name)s

-- name: steps_pending
-- A sleep, a wait or a gather the job is about to suspend on: recorded pending, with its wake
-- time, its key, or (a gather) the ids it waits for as ``value``.
INSERT INTO {schema}.job_steps (
    job_id, name, seq, kind, state, value, event_key, wake_at, started_at
)
SELECT %(id)s::uuid, %(name)s,
       coalesce((SELECT max(x.seq) FROM {schema}.job_steps x WHERE x.job_id = %(id)s::uuid), 0)
           + 1,
       %(kind)s, 2, %(value)s, %(key)s, %(wake_at)s::timestamptz, %(now)s::timestamptz
ON CONFLICT (job_id, name) DO NOTHING

-- name: steps_settle
-- A pending sleep or wait completes: over (a sleep), an event's data, or a timeout.
UPDATE {schema}.job_steps s
SET state = 0, value = %(value)s, error = %(error)s, finished_at = %(now)s::timestamptz
WHERE s.job_id = %(id)s::uuid AND s.name = %(name)s AND s.state = 2
RETURNING s.job_id::text, s.name, s.seq, s.kind, s.state, s.value, s.error, s.event_key,
          s.wake_at, s.started_at, s.finished_at

-- name: durable_suspend
-- Processing -> Suspended under the lease: no worker, no lease, no slot; the attempt this run
-- counted is given back (a suspension uses none), and the row waits for wake_at (a timer) or
-- event_key (an event), whichever comes first.
UPDATE {schema}.jobs_hot h
SET status = 4, wake_at = %(wake_at)s::timestamptz, event_key = %(key)s,
    gathering = %(gathering)s, worker_id = NULL, lease_token = NULL, heartbeat_at = NULL, progress = NULL,
    attempt_count = greatest(h.attempt_count - 1, 0), updated_at = %(now)s::timestamptz
WHERE h.id = %(id)s::uuid AND h.worker_id = %(worker)s AND h.lease_token = %(token)s::uuid
  AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
RETURNING h.id::text

-- name: events_lock
-- Serialises the senders and the waiters of one key for the rest of the transaction, so an
-- event is either found by the wait or finds the waiting job, never neither.
SELECT pg_advisory_xact_lock(hashtextextended(%(schema_key)s, 0))

-- name: events_take
-- The oldest event kept for a key, consumed; with a deadline (``until``), only one sent by
-- then: an event sent after a wait timed out is kept for the next wait.
DELETE FROM {schema}.job_events e
WHERE e.id = (
    SELECT x.id FROM {schema}.job_events x
    WHERE x.key = %(key)s AND x.expires_at > %(now)s::timestamptz
      AND (%(until)s::timestamptz IS NULL OR x.created_at <= %(until)s::timestamptz)
    ORDER BY x.id
    LIMIT 1
)
RETURNING e.data

-- name: events_send
-- An event for a key: the oldest job suspended on it, before its wait's deadline, gets the
-- data as its wait's outcome and goes back to Pending (its workers are told); with no such job
-- the event is kept until expires_at for the first job that waits on the key (a wait whose
-- deadline passed times out, and the event stays for the next). Run after events_lock.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
waiting AS (
    SELECT h.id FROM {schema}.jobs_hot h, clock k
    WHERE h.status = 4 AND h.event_key = %(key)s AND (h.wake_at IS NULL OR h.wake_at > k.now)
    ORDER BY h.updated_at, h.id
    LIMIT 1
    FOR UPDATE OF h SKIP LOCKED
),
settled AS (
    UPDATE {schema}.job_steps s
    SET state = 0, value = %(data)s, finished_at = k.now
    FROM waiting w, clock k
    WHERE s.job_id = w.id AND s.kind = 2 AND s.state = 2
    RETURNING s.job_id
),
woke AS (
    UPDATE {schema}.jobs_hot h
    SET status = 0, scheduled_at = k.now, wake_at = NULL, event_key = NULL, gathering = NULL,
        updated_at = k.now
    FROM waiting w, clock k
    WHERE h.id = w.id AND h.status = 4
    RETURNING h.id, h.queue
),
kept AS (
    INSERT INTO {schema}.job_events (key, data, created_at, expires_at)
    SELECT %(key)s, %(data)s, k.now, k.now + make_interval(secs => %(retention)s::float8)
    FROM clock k
    WHERE NOT EXISTS (SELECT 1 FROM waiting)
    RETURNING id
),
told AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || w.queue) FROM woke w
)
SELECT id::text FROM woke
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM kept
UNION ALL
SELECT NULL FROM settled

-- name: fragment_durable_woke
-- The suspended rows ``due`` names go back to Pending, due at their ``due_at``; the workers of
-- their queues are told. Answers their ids (and a NULL for each notice sent).
woke AS (
    UPDATE {schema}.jobs_hot h
    SET status = 0, scheduled_at = d.due_at, wake_at = NULL, event_key = NULL, gathering = NULL,
        updated_at = k.now
    FROM due d, clock k
    WHERE h.id = d.id AND h.status = 4
    RETURNING h.id, h.queue
),
told AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || q.queue) FROM (SELECT DISTINCT queue FROM woke) q
)
SELECT id::text FROM woke
UNION ALL
SELECT NULL FROM told

-- name: durable_wake
-- Suspended rows whose time came (a sleep's end, a wait's deadline) go back to Pending, due at
-- that time, oldest first, at most %(limit)s a pass; their workers are told.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
due AS (
    SELECT h.id, h.wake_at AS due_at FROM {schema}.jobs_hot h CROSS JOIN clock k
    WHERE h.status = 4 AND h.wake_at <= k.now
    ORDER BY h.wake_at
    LIMIT %(limit)s
    FOR UPDATE OF h SKIP LOCKED
),
-- include: fragment_durable_woke

-- name: events_prune
DELETE FROM {schema}.job_events e
WHERE e.id IN (
    SELECT x.id FROM {schema}.job_events x
    WHERE x.expires_at <= coalesce(%(now)s::timestamptz, now())
    ORDER BY x.expires_at
    LIMIT %(limit)s
)

-- name: steps_tidy
-- The steps of jobs that are in no pillar any more (purged, deleted, retention), a batch a
-- pass: each job is looked up by primary key in the three tables.
DELETE FROM {schema}.job_steps s
WHERE s.job_id IN (
    SELECT DISTINCT x.job_id FROM {schema}.job_steps x
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobs_hot h WHERE h.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_archive a WHERE a.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_dlq d WHERE d.id = x.job_id)
    LIMIT %(limit)s
)

-- name: durable_resume
-- Processing rows of durable types (``types``, each with its max attempts) whose worker's
-- heartbeat expired, as jobs_rescue_zombies judges them, with attempts left: back to Pending
-- at once (their replay returns every recorded step), the dead worker's attempt kept in the
-- job's history as that block keeps it, and counted as a retry. Runs before the rescue, which
-- dead-letters the rest as ZOMBIE.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
types AS (
    SELECT * FROM unnest(%(types)s::text[], %(attempts)s::integer[]) AS t(type, max_attempts)
),
due AS (
    SELECT h.id, h.attempt_count, h.worker_id, h.started_at,
           'Zombie: heartbeat expired (no heartbeat for more than '
               || coalesce(q.zombie_timeout_seconds, %(timeout)s::float8)::numeric::text
               || ' s); a durable job, resumed' AS error
    FROM {schema}.jobs_hot h
    JOIN types t ON t.type = h.type
    LEFT JOIN {schema}.queues q ON q.name = h.queue
    CROSS JOIN clock k
    WHERE h.status = 2
      AND greatest(coalesce(h.heartbeat_at, h.updated_at), %(since)s::timestamptz)
          < k.now - make_interval(secs => coalesce(q.zombie_timeout_seconds, %(timeout)s::float8))
      AND h.attempt_count < coalesce(h.max_attempts, t.max_attempts)
    FOR UPDATE OF h SKIP LOCKED
),
resumed AS (
    UPDATE {schema}.jobs_hot h
    SET status = 0, scheduled_at = k.now, worker_id = NULL, lease_token = NULL,
        heartbeat_at = NULL, progress = NULL, last_error = d.error, updated_at = k.now
    FROM due d, clock k
    WHERE h.id = d.id AND h.status = 2
    RETURNING h.id, h.queue
),
tried AS (
    INSERT INTO {schema}.job_attempts (
        job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds,
        failure_reason, error
    )
    SELECT d.id,
           coalesce((SELECT max(a.seq) FROM {schema}.job_attempts a WHERE a.job_id = d.id), 0) + 1,
           d.attempt_count, d.worker_id, d.started_at, k.now, NULL, NULL, d.error
    FROM due d JOIN resumed r ON r.id = d.id CROSS JOIN clock k
),
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, retried_total, last_activity_at)
    SELECT r.queue, count(*), min(k.now)
    FROM resumed r, clock k
    GROUP BY r.queue
    ORDER BY r.queue
    ON CONFLICT (queue) DO UPDATE
    SET retried_total = s.retried_total + excluded.retried_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
told AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || q.queue) FROM (SELECT DISTINCT queue FROM resumed) q
)
SELECT id::text FROM resumed
UNION ALL
SELECT NULL FROM told

-- name: steps_spawned
-- A spawn, done in the transaction that enqueued its children: their ids as ``value``.
INSERT INTO {schema}.job_steps (
    job_id, name, seq, kind, state, value, started_at, finished_at
)
SELECT %(id)s::uuid, %(name)s,
       coalesce((SELECT max(x.seq) FROM {schema}.job_steps x WHERE x.job_id = %(id)s::uuid), 0)
           + 1,
       3, 0, %(value)s, %(now)s::timestamptz, %(now)s::timestamptz
ON CONFLICT (job_id, name) DO NOTHING
RETURNING job_id::text, name, seq, kind, state, value, error, event_key, wake_at, started_at,
          finished_at

-- name: steps_spawn_edges
-- Spawned children join the parent's workflow (the oldest it belongs to, else one rooted at
-- the parent): satisfied edges, which no move releases or counts (the parent's ``children``
-- stays as it was), so the workflow's reads show them.
INSERT INTO {schema}.job_edges (child_id, parent_id, workflow_id, satisfied, created_at)
SELECT c.id, %(id)s::uuid,
       coalesce(
           (SELECT e.workflow_id FROM {schema}.job_edges e
            WHERE e.child_id = %(id)s::uuid ORDER BY e.created_at LIMIT 1),
           %(id)s::uuid),
       true, %(now)s::timestamptz
FROM unnest(%(children)s::uuid[]) AS c(id)
ON CONFLICT (child_id, parent_id) DO NOTHING

-- name: gather_outcomes
-- Where each gathered job is, in the order given: still in hot, its result (archive), or its
-- reason and error (DLQ); in no pillar, none of these.
SELECT c.id::text, h.id IS NOT NULL, a.id IS NOT NULL, a.result, a.result_error,
       d.failure_reason, d.error
FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS c(id, n)
LEFT JOIN {schema}.jobs_hot h ON h.id = c.id
LEFT JOIN {schema}.jobs_archive a ON a.id = c.id
LEFT JOIN {schema}.jobs_dlq d ON d.id = c.id
ORDER BY c.n

-- name: durable_wake_gathers
-- Suspended rows gathering children none of which is in hot any more go back to Pending, at
-- most %(limit)s a pass; their workers are told. (A gather's pending step holds its ids.)
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
due AS (
    SELECT h.id, k.now AS due_at FROM {schema}.jobs_hot h
    JOIN {schema}.job_steps s ON s.job_id = h.id AND s.name = h.gathering
    CROSS JOIN clock k
    WHERE h.status = 4 AND h.gathering IS NOT NULL
      AND NOT EXISTS (
          SELECT 1 FROM json_array_elements_text(s.value::json) AS c(id)
          JOIN {schema}.jobs_hot x ON x.id = c.id::uuid
      )
    ORDER BY h.updated_at
    LIMIT %(limit)s
    FOR UPDATE OF h SKIP LOCKED
),
-- include: fragment_durable_woke

-- name: steps_children
-- The ids the spawns of these jobs made (to cancel the unfinished ones with their parent).
SELECT DISTINCT c.id
FROM {schema}.job_steps s, json_array_elements_text(s.value::json) AS c(id)
WHERE s.job_id = ANY(%(ids)s::uuid[]) AND s.kind = 3 AND s.state = 0

-- name: durable_counts
-- Suspended jobs by queue and what they wait for (the partial index of suspended rows), and
-- the events kept unexpired, as one row each: ('s', queue, kind, n) and ('e', NULL, NULL, n).
SELECT 's', h.queue,
       CASE WHEN h.gathering IS NOT NULL THEN 'children'
            WHEN h.event_key IS NOT NULL THEN 'event'
            ELSE 'sleep' END,
       count(*)
FROM {schema}.jobs_hot h
WHERE h.status = 4
GROUP BY 2, 3
UNION ALL
SELECT 'e', NULL, NULL, count(*)
FROM {schema}.job_events e
WHERE e.expires_at > coalesce(%(now)s::timestamptz, now())
ORDER BY 1, 2, 3

-- The queues area (the control plane): queue rows and their settings, worker rows, their beats and
-- what operators ask of them; and waking a queue's workers.
-- Run by postgres/queues.py; conventions in connection.sql.

-- name: queue_list
SELECT name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
       updated_at, hidden
FROM {schema}.queues
ORDER BY name

-- name: queue_ensure
WITH made AS (
    INSERT INTO {schema}.queues (name, updated_at)
    VALUES (%(name)s, now())
    ON CONFLICT (name) DO NOTHING
    RETURNING name, paused, active, max_workers, zombie_timeout_seconds,
              execution_timeout_seconds, updated_at, hidden
)
SELECT * FROM made
UNION ALL
SELECT name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
       updated_at, hidden
FROM {schema}.queues
WHERE name = %(name)s AND NOT EXISTS (SELECT 1 FROM made)

-- name: queue_get
SELECT name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
       updated_at, hidden
FROM {schema}.queues
WHERE name = %(name)s

-- name: queue_stats_row
INSERT INTO {schema}.stats_summary (queue) VALUES (%(name)s)
ON CONFLICT (queue) DO NOTHING

-- name: queue_pause
INSERT INTO {schema}.queues AS q (name, paused, updated_at, last_modified_by)
VALUES (%(name)s, %(paused)s, now(), %(actor)s)
ON CONFLICT (name) DO UPDATE
SET paused = excluded.paused, updated_at = excluded.updated_at,
    last_modified_by = excluded.last_modified_by
RETURNING name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
          updated_at, hidden

-- name: queue_wake
-- Wake the workers of the given queues (jobs_wake).
SELECT pg_notify(%(channel)s, 'j:' || name) FROM unnest(%(names)b::text[]) AS q(name)

-- name: queue_activate
INSERT INTO {schema}.queues AS q (name, active, updated_at, last_modified_by)
VALUES (%(name)s, %(active)s, now(), %(actor)s)
ON CONFLICT (name) DO UPDATE
SET active = excluded.active, updated_at = excluded.updated_at,
    last_modified_by = excluded.last_modified_by
RETURNING name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
          updated_at, hidden

-- name: queue_hide
INSERT INTO {schema}.queues AS q (name, hidden, updated_at, last_modified_by)
VALUES (%(name)s, %(hidden)s, now(), %(actor)s)
ON CONFLICT (name) DO UPDATE
SET hidden = excluded.hidden, updated_at = excluded.updated_at,
    last_modified_by = excluded.last_modified_by
RETURNING name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
          updated_at, hidden

-- name: queue_configure
INSERT INTO {schema}.queues AS q (
    name, max_workers, zombie_timeout_seconds, execution_timeout_seconds, updated_at,
    last_modified_by
)
VALUES (%(name)s, %(max_workers)s::integer, %(zombie)s::float8, %(execution)s::float8, now(),
        %(actor)s)
ON CONFLICT (name) DO UPDATE
SET max_workers = CASE WHEN %(set_max_workers)s THEN excluded.max_workers
                       ELSE q.max_workers END,
    zombie_timeout_seconds = CASE WHEN %(set_zombie)s THEN excluded.zombie_timeout_seconds
                                  ELSE q.zombie_timeout_seconds END,
    execution_timeout_seconds = CASE WHEN %(set_execution)s
                                     THEN excluded.execution_timeout_seconds
                                     ELSE q.execution_timeout_seconds END,
    updated_at = excluded.updated_at,
    last_modified_by = excluded.last_modified_by
RETURNING name, paused, active, max_workers, zombie_timeout_seconds, execution_timeout_seconds,
          updated_at, hidden

-- name: worker_close_circuits
-- Read under the row lock, in the same transaction as worker_beat clears them, so each request
-- is handed over exactly once.
SELECT close_circuits FROM {schema}.workers WHERE id = %(id)s FOR UPDATE

-- name: worker_beat
INSERT INTO {schema}.workers AS w (
    id, hostname, pid, queues, concurrency, desired_concurrency, running, state,
    circuits, close_circuits, started_at, heartbeat_at
)
VALUES (%(id)s, %(hostname)s, %(pid)s, %(queues)s, %(concurrency)s,
        %(desired)s::integer, %(running)s, %(state)s, %(circuits)s, '[]',
        %(started_at)s, coalesce(%(now)s::timestamptz, now()))
ON CONFLICT (id) DO UPDATE
SET hostname = excluded.hostname,
    pid = excluded.pid,
    queues = excluded.queues,
    concurrency = excluded.concurrency,
    running = excluded.running,
    state = excluded.state,
    circuits = excluded.circuits,
    close_circuits = '[]',
    heartbeat_at = excluded.heartbeat_at
RETURNING w.desired_concurrency

-- name: worker_remove
DELETE FROM {schema}.workers WHERE id = %(id)s

-- name: workers_list
SELECT id, hostname, pid, queues, concurrency, desired_concurrency, running, state,
       started_at, heartbeat_at, circuits
FROM {schema}.workers
WHERE heartbeat_at >= coalesce(%(now)s::timestamptz, now()) - make_interval(secs => %(within)s::float8)
ORDER BY heartbeat_at DESC, id

-- name: worker_request
UPDATE {schema}.workers
SET desired_concurrency = coalesce(%(concurrency)s::integer, desired_concurrency),
    close_circuits = CASE
        WHEN %(circuit)s::text IS NULL THEN close_circuits
        WHEN close_circuits::jsonb ? %(circuit)s::text THEN close_circuits
        ELSE (close_circuits::jsonb || to_jsonb(%(circuit)s::text))::text
    END
WHERE (%(id)s::text IS NULL OR id = %(id)s::text)

-- name: queues_wake
-- Wake every worker of every queue (jobs_wake with no queues).
SELECT pg_notify(%(channel)s, 'j:' || name) FROM {schema}.queues

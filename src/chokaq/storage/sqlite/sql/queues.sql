-- The queues area (the control plane): queue rows and their settings, worker rows, their beats and
-- what operators ask of them.
-- Run by sqlite/queues.py; conventions in connection.sql.

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

-- The ratelimits area: rate and concurrency limits and partitions, the limited claim's reads and
-- spends, and the limits' settings (the decisions are chokaq.storage.throttle's).
-- Run by sqlite/ratelimits.py; conventions in connection.sql.

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

-- name: limit_state_tidy
DELETE FROM {p}limit_state WHERE tat < :before

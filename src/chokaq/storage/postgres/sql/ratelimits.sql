-- The ratelimits area: rate and concurrency limits and partitions, the limited claim's reads and
-- spends, and the limits' settings (the decisions are chokaq.storage.throttle's).
-- Run by postgres/ratelimits.py; conventions in connection.sql.

-- name: limits_rows
SELECT scope, name, interval_seconds, burst, concurrency, cursor FROM {schema}.limits

-- name: limits_lock
-- Every claim that may spend a limit locks the rows first, in one order, so that claims of
-- limited keys take turns; the reads after it take a fresh snapshot that sees the last one.
SELECT scope, name, interval_seconds, burst, concurrency, cursor
FROM {schema}.limits
ORDER BY scope, name
FOR UPDATE

-- name: limits_clock
-- The limited claim's clock, read after the locks and the running counts (not at the start of
-- its transaction, which may have waited for the locks): the rate is spent at it, and the claim
-- records it as started_at, so that time is never earlier than the moment the claim could see
-- the slot it took free (a partition's jobs' times never overlap).
SELECT extract(epoch FROM coalesce(%(now)s::timestamptz, clock_timestamp()))::float8

-- name: limits_running
SELECT type, partition_key, count(*) FROM {schema}.jobs_hot WHERE status IN (1, 2) GROUP BY 1, 2

-- name: limits_tats
-- Keys whose next start is still ahead (a past one is the same as none).
SELECT scope, name, partition_key, tat FROM {schema}.limit_state
WHERE tat > extract(epoch FROM coalesce(%(now)s::timestamptz, now()))

-- name: limits_partitioned_types
-- A skip scan over the partition index: the types with partitioned pending jobs. Each probe
-- is ORDER BY ... LIMIT 1, not min(): with statistics from an emptier table the planner would
-- aggregate the whole index range (every pending row of the type) instead of stopping early.
WITH RECURSIVE t(type, n) AS (
    SELECT (SELECT h.type FROM {schema}.jobs_hot h
            WHERE h.status = 0 AND h.partition_key IS NOT NULL
            ORDER BY h.type LIMIT 1), 1
    UNION ALL
    SELECT (SELECT h.type FROM {schema}.jobs_hot h
            WHERE h.status = 0 AND h.partition_key IS NOT NULL AND h.type > t.type
            ORDER BY h.type LIMIT 1), t.n + 1
    FROM t WHERE t.type IS NOT NULL AND t.n < 1000
)
SELECT type FROM t WHERE type IS NOT NULL

-- name: limits_walk
-- Up to %(steps)s partitions of a type with pending jobs, in key order after %(after)s and
-- before %(before)s (NULL: no end): a skip scan, one index probe per partition (ORDER BY ...
-- LIMIT 1, as above).
WITH RECURSIVE w(p, n) AS (
    SELECT (SELECT h.partition_key FROM {schema}.jobs_hot h
            WHERE h.status = 0 AND h.partition_key IS NOT NULL AND h.type = %(type)s
              AND h.partition_key > %(after)s
            ORDER BY h.partition_key LIMIT 1), 1
    UNION ALL
    SELECT (SELECT h.partition_key FROM {schema}.jobs_hot h
            WHERE h.status = 0 AND h.partition_key IS NOT NULL AND h.type = %(type)s
              AND h.partition_key > w.p
            ORDER BY h.partition_key LIMIT 1), w.n + 1
    FROM w WHERE w.p IS NOT NULL AND w.n < %(steps)s
)
SELECT p FROM w WHERE p IS NOT NULL AND (%(before)s::text IS NULL OR p <= %(before)s)

-- name: limits_serving
SELECT q.name, q.paused, q.active, q.max_workers,
       (SELECT count(*) FROM {schema}.jobs_hot a WHERE a.queue = q.name AND a.status IN (1, 2))
FROM {schema}.queues q

-- name: limits_queue_heads
-- The unpartitioned head of each (queue, type) asked for (type NULL: the queue's other types).
SELECT c.id::text, c.queue, c.type, c.priority, extract(epoch FROM c.scheduled_at)::float8,
       extract(epoch FROM c.created_at)::float8
FROM unnest(%(queues)b::text[], %(types)b::text[], %(limits)b::integer[]) AS s(queue, type, lim)
CROSS JOIN LATERAL (
    SELECT h.id, h.queue, h.type, h.priority, h.scheduled_at, h.created_at
    FROM {schema}.jobs_hot h
    WHERE h.status = 0 AND h.partition_key IS NULL AND h.queue = s.queue
      AND h.scheduled_at <= coalesce(%(now)s::timestamptz, now())
      -- (h.type || ''): an estimate no plan can collapse on; see jobs_fetch.
      AND ((s.type IS NULL AND NOT ((h.type || '') = ANY(%(exclude)b::text[])))
           OR h.type = s.type)
    ORDER BY h.priority DESC, h.scheduled_at, h.created_at
    LIMIT s.lim
    FOR UPDATE OF h SKIP LOCKED
) c

-- name: limits_partition_heads
SELECT c.id::text, c.queue, c.type, p.part, c.priority, extract(epoch FROM c.scheduled_at)::float8,
       extract(epoch FROM c.created_at)::float8, p.ord
FROM unnest(%(parts)b::text[], %(quotas)b::integer[], %(ords)b::integer[]) AS p(part, quota, ord)
CROSS JOIN LATERAL (
    SELECT h.id, h.queue, h.type, h.priority, h.scheduled_at, h.created_at
    FROM {schema}.jobs_hot h
    WHERE h.status = 0 AND h.partition_key IS NOT NULL AND h.type = %(type)s
      AND h.partition_key = p.part
      AND h.scheduled_at <= coalesce(%(now)s::timestamptz, now())
      AND h.queue = ANY(%(serving)b::text[])
    ORDER BY h.priority DESC, h.scheduled_at, h.created_at
    LIMIT p.quota
    FOR UPDATE OF h SKIP LOCKED
) c

-- name: limits_claim
UPDATE {schema}.jobs_hot h
-- include: fragment_claim_set
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) k
WHERE h.id = ANY(%(ids)b::uuid[]) AND h.status = 0
-- include: fragment_claim_returning

-- name: limits_spend
WITH tats AS (
    INSERT INTO {schema}.limit_state (scope, name, partition_key, tat)
    SELECT * FROM unnest(%(scopes)b::text[], %(names)b::text[], %(parts)b::text[],
                         %(tats)b::float8[])
    ON CONFLICT (scope, name, partition_key) DO UPDATE SET tat = excluded.tat
)
INSERT INTO {schema}.limits (scope, name, cursor, updated_at)
SELECT 'type', c.name, c.cursor, now()
FROM unnest(%(cursor_types)b::text[], %(cursors)b::text[]) AS c(name, cursor)
ON CONFLICT (scope, name) DO UPDATE SET cursor = excluded.cursor

-- name: limits_get
SELECT scope, name, rate, concurrency, declared_rate, declared_concurrency, rate_set,
       concurrency_set, updated_at, last_modified_by
FROM {schema}.limits WHERE scope = %(scope)s AND name = %(name)s
FOR UPDATE

-- name: limits_all
SELECT scope, name, rate, concurrency, declared_rate, declared_concurrency, rate_set,
       concurrency_set, updated_at, last_modified_by
FROM {schema}.limits
WHERE rate IS NOT NULL OR concurrency IS NOT NULL OR declared_rate IS NOT NULL
   OR declared_concurrency IS NOT NULL OR rate_set OR concurrency_set
ORDER BY scope, name

-- name: limits_put
INSERT INTO {schema}.limits (scope, name, declared_rate, declared_concurrency, rate_set,
                             concurrency_set, rate, interval_seconds, burst, concurrency,
                             updated_at, last_modified_by)
VALUES (%(scope)s, %(name)s, %(declared_rate)s, %(declared_concurrency)s, %(rate_set)s,
        %(concurrency_set)s, %(rate)s, %(interval)s, %(burst)s, %(concurrency)s, now(),
        %(actor)s)
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
    last_modified_by = coalesce(excluded.last_modified_by, {schema}.limits.last_modified_by)

-- name: limits_load_started
SELECT count(*) FROM (
    SELECT started_at, queue, type FROM {schema}.jobs_hot
    WHERE status IN (1, 2) AND started_at >= to_timestamp(%(since)s)
    UNION ALL
    SELECT started_at, queue, type FROM {schema}.jobs_archive
    WHERE finished_at >= to_timestamp(%(since)s)
    UNION ALL
    SELECT started_at, queue, type FROM {schema}.jobs_dlq WHERE failed_at >= to_timestamp(%(since)s)
) s
WHERE s.started_at >= to_timestamp(%(since)s)
  AND CASE %(scope)s WHEN 'queue' THEN s.queue ELSE s.type END = %(name)s

-- name: limits_load_pending
SELECT coalesce(partition_key, ''),
       count(*) FILTER (WHERE status = 0 AND scheduled_at <= to_timestamp(%(now)s)),
       count(*) FILTER (WHERE status IN (1, 2))
FROM {schema}.jobs_hot
WHERE status IN (0, 1, 2) AND CASE %(scope)s WHEN 'queue' THEN queue ELSE type END = %(name)s
GROUP BY 1

-- The reads area: what the faces list, count and chart (counters, per-queue figures, throughput
-- and series, top errors, pages and single jobs of each pillar); the JobFilter fragments bulk and
-- dlq include too.
-- Run by postgres/reads.py; conventions in connection.sql.

-- name: fragment_hot_filter
-- The ``JobFilter`` of a hot listing (``reads.filter_params``; None switches a test off).
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (%(partition)s::text IS NULL OR partition_key = %(partition)s::text)
  AND (%(status)s::integer IS NULL OR status = %(status)s::integer)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR created_at <= %(until)s::timestamptz)
  AND (%(ids)b::uuid[] IS NULL OR id = ANY(%(ids)b::uuid[]))
  AND (%(search)s::text IS NULL
       -- An id matches by its end (a whole id, or the tail The Deck shows): migration 9.
       OR id::text LIKE %(search_id)s::text ESCAPE '\'
       OR type ILIKE %(search)s::text ESCAPE '\'
       OR coalesce(tags, '') ILIKE %(search)s::text ESCAPE '\'
       OR coalesce(last_error, '') ILIKE %(search)s::text ESCAPE '\')
  AND (%(blocked)s::boolean IS NULL
       OR (status = 3 AND EXISTS (
               SELECT 1 FROM {schema}.job_edges e
               JOIN {schema}.jobs_dlq p ON p.id = e.parent_id
               WHERE e.child_id = jobs_hot.id AND NOT e.satisfied
           )) = %(blocked)s::boolean)

-- name: fragment_archive_filter
-- The ``JobFilter`` of an archive listing (no status or reason: every row succeeded).
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (%(partition)s::text IS NULL OR partition_key = %(partition)s::text)
  AND (%(since)s::timestamptz IS NULL OR finished_at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR finished_at <= %(until)s::timestamptz)
  AND (%(ids)b::uuid[] IS NULL OR id = ANY(%(ids)b::uuid[]))
  AND (%(search)s::text IS NULL
       -- An id matches by its end (a whole id, or the tail The Deck shows), read off the
       -- b-tree on the reversed id (migration 9).
       OR reverse(id::text) LIKE %(search_id_reversed)s::text ESCAPE '\'
       OR type ILIKE %(search)s::text ESCAPE '\'
       OR coalesce(tags, '') ILIKE %(search)s::text ESCAPE '\')

-- name: fragment_dlq_filter
-- The ``JobFilter`` of a DLQ listing or a bulk action by filter.
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(type)s::text IS NULL OR type = %(type)s::text)
  AND (%(partition)s::text IS NULL OR partition_key = %(partition)s::text)
  AND (%(reason)s::integer IS NULL OR failure_reason = %(reason)s::integer)
  AND (%(since)s::timestamptz IS NULL OR failed_at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR failed_at <= %(until)s::timestamptz)
  AND (%(ids)b::uuid[] IS NULL OR id = ANY(%(ids)b::uuid[]))
  AND (%(family)s::text IS NULL OR error_family = %(family)s::text)
  AND (%(search)s::text IS NULL
       -- An id matches by its end (a whole id, or the tail The Deck shows): migration 9.
       OR id::text LIKE %(search_id)s::text ESCAPE '\'
       OR type ILIKE %(search)s::text ESCAPE '\'
       OR coalesce(tags, '') ILIKE %(search)s::text ESCAPE '\'
       OR coalesce(error, '') ILIKE %(search)s::text ESCAPE '\')

-- name: fragment_archive_view
-- The columns ``rows.job_view`` maps for the archive, in its order.
SELECT id::text, queue, type, payload, tags, priority, attempt_count, created_at,
       max_attempts, timeout_seconds, worker_id, created_by, last_modified_by, started_at,
       finished_at, duration_seconds, result, result_error, partition_key
FROM {schema}.jobs_archive

-- name: fragment_dlq_view
-- The columns ``rows.job_view`` maps for the DLQ, in its order.
SELECT id::text, queue, type, payload, tags, priority, attempt_count, created_at,
       max_attempts, timeout_seconds, worker_id, created_by, last_modified_by, started_at,
       failed_at, duration_seconds, failure_reason, error, cancelled_by, partition_key,
       error_type
FROM {schema}.jobs_dlq

-- name: job_supersession
-- The job that superseded this one (on_conflict), when, whether it asked it to stop, and the
-- job this one superseded (one row, NULLs where there is none).
SELECT s.by_id::text, s.at, coalesce(s.cancel_requested, false),
       (SELECT o.job_id::text FROM {schema}.job_supersessions o WHERE o.by_id = %(id)s::uuid)
FROM (SELECT 1) one
LEFT JOIN {schema}.job_supersessions s ON s.job_id = %(id)s::uuid

-- name: stats_summary
SELECT
    (SELECT count(*) FROM {schema}.jobs_hot WHERE status = 0),
    (SELECT count(*) FROM {schema}.jobs_hot WHERE status = 1),
    (SELECT count(*) FROM {schema}.jobs_hot WHERE status = 2),
    coalesce(sum(s.succeeded_total), 0)::bigint,
    coalesce(sum(s.failed_total), 0)::bigint,
    coalesce(sum(s.retried_total), 0)::bigint,
    max(s.last_activity_at),
    (SELECT count(*) FROM {schema}.jobs_hot WHERE status = 3)
FROM {schema}.stats_summary s

-- name: stats_queues
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
hot AS (
    SELECT h.queue,
           count(*) FILTER (WHERE h.status = 0) AS pending,
           count(*) FILTER (WHERE h.status = 1) AS fetched,
           count(*) FILTER (WHERE h.status = 2) AS processing,
           count(*) FILTER (WHERE h.status = 0 AND h.scheduled_at <= k.now)
               AS lag_count,
           avg(greatest(0, extract(epoch FROM k.now - h.scheduled_at)))
               FILTER (WHERE h.status = 0 AND h.scheduled_at <= k.now)
               AS lag_avg,
           max(greatest(0, extract(epoch FROM k.now - h.scheduled_at)))
               FILTER (WHERE h.status = 0 AND h.scheduled_at <= k.now)
               AS lag_max
    FROM {schema}.jobs_hot h CROSS JOIN clock k
    WHERE h.status IN (0, 1, 2)
    GROUP BY h.queue
),
-- Waiting rows, and those of them that wait on a parent in the DLQ (blocked), by queue.
waiting AS (
    SELECT w.queue, count(*) AS waiting,
           count(*) FILTER (WHERE EXISTS (
               SELECT 1 FROM {schema}.job_edges e
               JOIN {schema}.jobs_dlq p ON p.id = e.parent_id
               WHERE e.child_id = w.id AND NOT e.satisfied
           )) AS blocked
    FROM {schema}.jobs_hot w
    WHERE w.status = 3
    GROUP BY w.queue
)
SELECT q.name, q.paused, q.active, q.max_workers, q.zombie_timeout_seconds,
       q.execution_timeout_seconds, q.updated_at,
       coalesce(h.pending, 0), coalesce(h.fetched, 0), coalesce(h.processing, 0),
       coalesce(s.succeeded_total, 0), coalesce(s.failed_total, 0),
       coalesce(s.retried_total, 0), s.last_activity_at,
       coalesce(h.lag_count, 0), coalesce(h.lag_avg, 0)::float8, coalesce(h.lag_max, 0)::float8,
       coalesce(w.waiting, 0), coalesce(w.blocked, 0), q.hidden,
       coalesce(s.replaced_total, 0), coalesce(s.superseded_total, 0)
FROM {schema}.queues q
LEFT JOIN {schema}.stats_summary s ON s.queue = q.name
LEFT JOIN hot h ON h.queue = q.name
LEFT JOIN waiting w ON w.queue = q.name
ORDER BY q.name

-- name: jobs_pending_groups
-- Pending rows by (queue, type): due now, waiting to run again, delayed by design, the next
-- due time, and how many a worker released for want of a handler (last_error LIKE marker).
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
SELECT h.queue, h.type,
       count(*) FILTER (WHERE h.scheduled_at <= k.now),
       count(*) FILTER (WHERE h.scheduled_at > k.now
                          AND (h.attempt_count > 0 OR h.last_error IS NOT NULL)),
       count(*) FILTER (WHERE h.scheduled_at > k.now
                          AND h.attempt_count = 0 AND h.last_error IS NULL),
       min(h.scheduled_at) FILTER (WHERE h.scheduled_at > k.now),
       count(*) FILTER (WHERE h.last_error LIKE %(marker)s::text)
FROM {schema}.jobs_hot h CROSS JOIN clock k
WHERE h.status = 0
  AND (%(queues)b::text[] IS NULL OR h.queue = ANY(%(queues)b::text[]))
GROUP BY h.queue, h.type
ORDER BY h.queue, h.type

-- name: jobs_lag
-- Why jobs wait, by (queue, type): Pending rows due now, retrying later, delayed by design,
-- rows waiting on parents, the oldest due time and the next one; the groups with the most due
-- jobs first, at most %(limit)s of them. It reads every Pending and Waiting row once (the
-- type is not in any index), so The Deck reads it at a slower cadence than its snapshot.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
SELECT h.queue, h.type,
       count(*) FILTER (WHERE h.status = 0 AND h.scheduled_at <= k.now) AS due,
       count(*) FILTER (WHERE h.status = 0 AND h.scheduled_at > k.now
                          AND (h.attempt_count > 0 OR h.last_error IS NOT NULL)),
       count(*) FILTER (WHERE h.status = 0 AND h.scheduled_at > k.now
                          AND h.attempt_count = 0 AND h.last_error IS NULL),
       count(*) FILTER (WHERE h.status = 3),
       min(h.scheduled_at) FILTER (WHERE h.status = 0 AND h.scheduled_at <= k.now) AS oldest,
       min(h.scheduled_at) FILTER (WHERE h.status = 0 AND h.scheduled_at > k.now)
FROM {schema}.jobs_hot h CROSS JOIN clock k
WHERE h.status IN (0, 3)
GROUP BY h.queue, h.type
ORDER BY due DESC, oldest NULLS LAST, h.queue, h.type
LIMIT %(limit)s

-- name: queues_unserved
-- Active, unpaused queues with due Pending jobs and no worker that beat within %(within)s
-- seconds serving them (a worker whose queues are NULL serves every queue). Unpartitioned due
-- jobs are counted off the partial fetch index, up to %(cap)s per queue, so the read stays
-- bounded however many wait; partitioned ones (in an index led by type, not queue) in one
-- pass over the partitioned due rows, stopping at %(cap)s matches.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
unserved AS MATERIALIZED (
    SELECT q.name
    FROM {schema}.queues q CROSS JOIN clock k
    WHERE NOT q.paused AND q.active
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.workers w
          WHERE w.heartbeat_at >= k.now - make_interval(secs => %(within)s::float8)
            AND (w.queues IS NULL OR q.name = ANY(string_to_array(w.queues, ',')))
      )
),
partitioned AS MATERIALIZED (
    SELECT p.queue, count(*) AS n
    FROM (SELECT h.queue
          FROM {schema}.jobs_hot h CROSS JOIN clock k
          WHERE h.status = 0 AND h.partition_key IS NOT NULL AND h.scheduled_at <= k.now
            AND h.queue IN (SELECT name FROM unserved)
          LIMIT %(cap)s) AS p
    GROUP BY p.queue
)
SELECT u.name, d.n + coalesce(p.n, 0)
FROM unserved u
CROSS JOIN clock k
CROSS JOIN LATERAL (
    SELECT count(*) AS n FROM (
        SELECT 1 FROM {schema}.jobs_hot h
        WHERE h.status = 0 AND h.partition_key IS NULL
          AND h.queue = u.name AND h.scheduled_at <= k.now
        LIMIT %(cap)s
    ) AS due
) AS d
LEFT JOIN partitioned p ON p.queue = u.name
WHERE d.n + coalesce(p.n, 0) > 0
ORDER BY u.name

-- name: stats_throughput
WITH clock AS MATERIALIZED (
    SELECT date_trunc('second', coalesce(%(now)s::timestamptz, now())) AS now
)
SELECT
    coalesce(sum(b.completed_count) FILTER (WHERE b.bucket_start > k.now - interval '60 seconds'), 0)::bigint,
    coalesce(sum(b.completed_count) FILTER (WHERE b.bucket_start > k.now - interval '60 seconds' AND b.outcome = 1), 0)::bigint,
    coalesce(sum(b.completed_count), 0)::bigint,
    coalesce(sum(b.completed_count) FILTER (WHERE b.outcome = 1), 0)::bigint
FROM {schema}.metric_buckets b CROSS JOIN clock k
WHERE b.width_seconds = 1
  AND b.bucket_start > k.now - interval '300 seconds'
  AND b.bucket_start <= k.now

-- name: stats_series
-- Every stored width (live seconds and the minute roll-ups) in one pass, so that a window reaches
-- now whatever upkeep has rolled up; a stored bucket is summed whole into the chart bucket that
-- holds its start. Chart buckets are aligned to the Unix epoch (as on SQLite). The IN list keeps
-- the primary key's leading column usable for the time range.
SELECT date_bin(make_interval(secs => %(width)s), bucket_start,
                TIMESTAMPTZ '1970-01-01 00:00:00+00') AS chart_bucket,
       coalesce(sum(completed_count) FILTER (WHERE outcome = 0), 0)::bigint,
       coalesce(sum(completed_count) FILTER (WHERE outcome = 1), 0)::bigint,
       coalesce(sum(total_duration_seconds), 0)::float8,
       max(max_duration_seconds),
       coalesce(sum(duration_count), 0)::bigint
FROM {schema}.metric_buckets
WHERE width_seconds IN (1, 60)
  AND bucket_start >= %(since)s
  AND (%(until)s::timestamptz IS NULL OR bucket_start <= %(until)s::timestamptz)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
GROUP BY chart_bucket
ORDER BY chart_bucket

-- name: dlq_top_errors
-- The newest %(scan)s rows grouped by reason and family (the stored error_family column, see
-- migration 008), most frequent first (newest on a tie).
SELECT failure_reason, error_family, count(*) AS n, max(failed_at) AS latest
FROM (
    SELECT failure_reason, error_family, failed_at
    FROM {schema}.jobs_dlq
    ORDER BY failed_at DESC
    LIMIT %(scan)s
) recent
GROUP BY failure_reason, error_family
ORDER BY n DESC, latest DESC, failure_reason, error_family
LIMIT %(limit)s

-- name: attempts_list
SELECT seq, attempt, failed_at, started_at, worker_id, duration_seconds, failure_reason, error
FROM {schema}.job_attempts
WHERE job_id = %(id)s::uuid
ORDER BY seq DESC
LIMIT %(limit)s

-- name: hot_count_upto
-- How many rows match, counting at most %(bound)s of them (jobs_count).
SELECT count(*) FROM (
    SELECT 1
    FROM {schema}.jobs_hot
-- include: fragment_hot_filter
    LIMIT %(bound)s
) matched

-- name: hot_estimate
-- The planner's estimate of the matches, read from statistics (jobs_count past its bound).
EXPLAIN (FORMAT JSON)
SELECT 1
FROM {schema}.jobs_hot
-- include: fragment_hot_filter

-- name: hot_list
-- A page of a listing (jobs_list): {order} and the {keyset} condition come from
-- reads.traversal; the text fields are cut to %(cut)s characters (an error to its last ones).
SELECT id::text AS job_id, queue, type, NULL AS payload, tags, priority, attempt_count, created_at,
       status, max_attempts, timeout_seconds, idempotency_key, worker_id, created_by,
       last_modified_by, scheduled_at, started_at, heartbeat_at, updated_at,
       right(last_error, %(cut)s), progress, cancel_requested_at, cancelled_by, parents_left,
       partition_key, expires_at
FROM {schema}.jobs_hot
-- include: fragment_hot_filter
  AND {keyset}
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s

-- name: archive_count_upto
SELECT count(*) FROM (
    SELECT 1
    FROM {schema}.jobs_archive
-- include: fragment_archive_filter
    LIMIT %(bound)s
) matched

-- name: archive_estimate
EXPLAIN (FORMAT JSON)
SELECT 1
FROM {schema}.jobs_archive
-- include: fragment_archive_filter

-- name: archive_list
SELECT id::text AS job_id, queue, type, left(payload, %(cut)s), tags, priority, attempt_count,
       created_at, max_attempts, timeout_seconds, worker_id, created_by, last_modified_by,
       started_at, finished_at, duration_seconds, left(result, %(cut)s), result_error,
       partition_key
FROM {schema}.jobs_archive
-- include: fragment_archive_filter
  AND {keyset}
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s

-- name: dlq_count_upto
SELECT count(*) FROM (
    SELECT 1
    FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter
    LIMIT %(bound)s
) matched

-- name: dlq_estimate
EXPLAIN (FORMAT JSON)
SELECT 1
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter

-- name: dlq_list
SELECT id::text AS job_id, queue, type, left(payload, %(cut)s), tags, priority, attempt_count,
       created_at, max_attempts, timeout_seconds, worker_id, created_by, last_modified_by,
       started_at, failed_at, duration_seconds, failure_reason, right(error, %(cut)s),
       cancelled_by, partition_key, error_type
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter
  AND {keyset}
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s

-- name: hot_get
SELECT id::text, queue, type, payload, tags, priority, attempt_count, created_at,
       status, max_attempts, timeout_seconds, idempotency_key, worker_id, created_by,
       last_modified_by, scheduled_at, started_at, heartbeat_at, updated_at, last_error,
       progress, cancel_requested_at, cancelled_by, parents_left, partition_key, expires_at
FROM {schema}.jobs_hot
WHERE id = %(id)s::uuid

-- name: archive_get
-- include: fragment_archive_view
WHERE id = %(id)s::uuid

-- name: dlq_get
-- include: fragment_dlq_view
WHERE id = %(id)s::uuid

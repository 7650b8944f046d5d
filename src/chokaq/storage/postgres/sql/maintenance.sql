-- The maintenance area: what the elected worker runs: rescue of abandoned, zombie and expired
-- jobs, age purges of the archive and the DLQ, metric roll-ups and pruning, and the tidying of
-- limit and uniqueness rows; and the hot table's tidy.
-- Run by postgres/maintenance.py; conventions in connection.sql.

-- name: jobs_rescue_fetched
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
-- include: fragment_back_to_pending
FROM clock k
WHERE h.status = 1
  AND h.updated_at < k.now - make_interval(secs => %(timeout)s::float8)
RETURNING h.id::text

-- name: jobs_rescue_zombies
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
limits AS (
    SELECT h.id, coalesce(q.zombie_timeout_seconds, %(timeout)s::float8) AS timeout
    FROM {schema}.jobs_hot h
    LEFT JOIN {schema}.queues q ON q.name = h.queue, clock k
    WHERE h.status = 2
      -- A heartbeat counts as written no earlier than since, when the rescuer last regained
      -- the store (one due while it was out of reach could not be written); greatest() skips
      -- a NULL, so without it the heartbeat alone is judged.
      AND greatest(coalesce(h.heartbeat_at, h.updated_at), %(since)s::timestamptz)
          < k.now - make_interval(secs => coalesce(q.zombie_timeout_seconds, %(timeout)s::float8))
      AND (%(ids)b::uuid[] IS NULL OR h.id = ANY(%(ids)b::uuid[]))
    FOR UPDATE OF h SKIP LOCKED
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING limits l
    WHERE h.id = l.id AND h.status = 2
    RETURNING h.*, 2 AS failure_reason,
              'Zombie: heartbeat expired (no heartbeat for more than '
                  || l.timeout::numeric::text || ' s)' AS zombie_error
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason, d.zombie_error, d.last_modified_by, NULL, k.now, NULL, d.children
    FROM done d, clock k
),
-- The attempt the dead worker was running failed: kept in the job's history (as attempts_record).
tried AS (
    INSERT INTO {schema}.job_attempts (
        job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds,
        failure_reason, error
    )
    SELECT d.id,
           coalesce((SELECT max(a.seq) FROM {schema}.job_attempts a WHERE a.job_id = d.id), 0) + 1,
           d.attempt_count, d.worker_id, d.started_at, k.now, NULL, 2, d.zombie_error
    FROM done d, clock k
),
trimmed AS (
    DELETE FROM {schema}.job_attempts a
    USING done d
    WHERE a.job_id = d.id
      AND a.seq <= (SELECT max(x.seq) FROM {schema}.job_attempts x WHERE x.job_id = d.id)
                   + 1 - %(keep)s
),
-- include: fragment_release_any
,
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM awoke

-- name: jobs_rescue_expired
-- Pending jobs that never started and are past their expiry go to the DLQ as EXPIRED (12),
-- counted and bucketed as failures, oldest expiry first, at most %(limit)s per pass (the partial
-- index jobs_hot_expiry holds only such jobs). ``ids`` narrows it to those jobs.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
due AS (
    SELECT h.id
    FROM {schema}.jobs_hot h CROSS JOIN clock k
    WHERE h.expires_at IS NOT NULL AND h.status = 0 AND h.attempt_count = 0
      AND h.expires_at <= k.now
      AND (%(ids)b::uuid[] IS NULL OR h.id = ANY(%(ids)b::uuid[]))
    ORDER BY h.expires_at
    LIMIT %(limit)s
    FOR UPDATE OF h SKIP LOCKED
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING due u
    WHERE h.id = u.id AND h.status = 0
    RETURNING h.*, 12 AS failure_reason
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason,
           'Expired: not started by '
               || to_char(d.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC',
           d.last_modified_by, NULL, k.now, NULL, d.children
    FROM done d CROSS JOIN clock k
),
-- include: fragment_release_any
,
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM awoke

-- name: jobs_rescue_expired_candidates
SELECT h.id::text
FROM {schema}.jobs_hot h
WHERE h.expires_at IS NOT NULL AND h.status = 0 AND h.attempt_count = 0
  AND h.expires_at <= coalesce(%(now)s::timestamptz, now())
ORDER BY h.expires_at
LIMIT %(limit)s

-- name: jobs_rescue_zombie_candidates
SELECT h.id::text
FROM {schema}.jobs_hot h
LEFT JOIN {schema}.queues q ON q.name = h.queue
WHERE h.status = 2
  AND greatest(coalesce(h.heartbeat_at, h.updated_at), %(since)s::timestamptz)
      < coalesce(%(now)s::timestamptz, now())
        - make_interval(secs => coalesce(q.zombie_timeout_seconds, %(timeout)s::float8))
ORDER BY h.id

-- name: fragment_forget_gone
-- The jobs of ``gone`` (deleted from the archive or the DLQ) take their edges (as a child) and
-- their attempts with them.
unlinked AS (
    DELETE FROM {schema}.job_edges e USING gone g WHERE e.child_id = g.id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)

-- name: archive_purge
-- A parent whose children are still in hot (waiting, or about to read its result) is kept;
-- a purged child takes its edges with it.
WITH gone AS (
    DELETE FROM {schema}.jobs_archive
    WHERE id IN (
        SELECT a.id FROM {schema}.jobs_archive a
        WHERE a.finished_at < %(older_than)s
          AND NOT EXISTS (
              SELECT 1 FROM {schema}.job_edges e
              JOIN {schema}.jobs_hot h ON h.id = e.child_id
              WHERE e.parent_id = a.id
          )
        ORDER BY a.finished_at
        LIMIT %(batch)s
        FOR UPDATE OF a SKIP LOCKED
    )
    RETURNING id
),
-- include: fragment_forget_gone
SELECT count(*) FROM gone

-- name: dlq_purge_older
-- As archive_purge: a parent that children still wait on is kept (its repair unblocks them).
WITH gone AS (
    DELETE FROM {schema}.jobs_dlq
    WHERE id IN (
        SELECT q.id FROM {schema}.jobs_dlq q
        WHERE q.failed_at < %(older_than)s
          AND NOT EXISTS (
              SELECT 1 FROM {schema}.job_edges e
              JOIN {schema}.jobs_hot h ON h.id = e.child_id
              WHERE e.parent_id = q.id
          )
        ORDER BY q.failed_at
        LIMIT %(batch)s
        FOR UPDATE OF q SKIP LOCKED
    )
    RETURNING id
),
-- include: fragment_forget_gone
SELECT count(*) FROM gone

-- name: jobs_hot_tidy_dead_rows
-- Dead row versions of the hot table, and live ones (the statistics collector's estimates).
SELECT coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0)
FROM pg_stat_user_tables
WHERE schemaname = %(schema)s AND relname = 'jobs_hot'

-- name: jobs_hot_tidy
VACUUM {schema}.jobs_hot

-- name: metrics_prune
DELETE FROM {schema}.metric_buckets
WHERE width_seconds = %(width)s AND bucket_start < %(older_than)s

-- name: metrics_rollup
WITH gone AS (
    DELETE FROM {schema}.metric_buckets
    WHERE width_seconds = 1 AND bucket_start < %(older_than)s
    RETURNING *
),
folded AS (
-- include: fragment_buckets_insert
    SELECT 60, date_bin('60 seconds', g.bucket_start, TIMESTAMPTZ '2000-01-01 00:00:00+00'),
           g.queue, g.outcome, g.failure_reason, sum(g.completed_count),
           sum(g.duration_count), sum(g.total_duration_seconds),
           max(g.max_duration_seconds), now()
    FROM gone g
    GROUP BY 2, 3, 4, 5
    ORDER BY 2, 3, 4, 5
-- include: fragment_buckets_merge
)
SELECT count(*) FROM gone

-- name: unique_keys_tidy
DELETE FROM {schema}.unique_keys WHERE until <= %(before)s

-- name: supersessions_tidy
DELETE FROM {schema}.job_supersessions WHERE at < %(before)s

-- name: limit_state_tidy
DELETE FROM {schema}.limit_state WHERE tat < %(before)s

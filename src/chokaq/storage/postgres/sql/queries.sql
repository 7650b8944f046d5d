-- Every statement of the PostgreSQL backend, as named blocks loaded once by ``queries.py``.
-- "{schema}" is replaced by the quoted schema name (psycopg's sql.Identifier) and "{channel}" by
-- the quoted notification channel; literal braces are doubled. Parameters are psycopg's
-- "%(name)s" placeholders, and "%(name)b" (binary, much cheaper to dump) for arrays; a literal
-- percent sign is written "%%".

-- ---------------------------------------------------------------------------------------------
-- Migrations
-- ---------------------------------------------------------------------------------------------

-- name: migrate_lock
SELECT pg_advisory_xact_lock(hashtext('chokaq-migrate:' || %(schema)s))

-- name: migrate_ledger
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL
)

-- name: migrate_applied
SELECT version FROM {schema}.schema_migrations ORDER BY version

-- name: migrate_record
INSERT INTO {schema}.schema_migrations (version, name, applied_at)
VALUES (%(version)s, %(name)s, now())

-- name: migrate_has_ledger
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_tables
    WHERE schemaname = %(schema)s AND tablename = 'schema_migrations'
)

-- name: schema_version
SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations

-- ---------------------------------------------------------------------------------------------
-- Enqueue
-- ---------------------------------------------------------------------------------------------

-- name: fragment_ensure_queues
-- Queue and counter rows for every queue in ``names`` (race-safe, sorted so that concurrent
-- statements take the row locks in the same order).
queue_rows AS (
    INSERT INTO {schema}.queues (name, updated_at)
    SELECT n.queue, k.now FROM names n CROSS JOIN clock k ORDER BY n.queue
    ON CONFLICT (name) DO NOTHING
),
stats_rows AS (
    INSERT INTO {schema}.stats_summary (queue)
    SELECT queue FROM names ORDER BY queue
    ON CONFLICT (queue) DO NOTHING
)

-- name: fragment_notify_inserted
-- Wake the workers of every queue that got a job in ``inserted`` (delivered at commit), and
-- return the ids inserted.
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || d.queue) FROM (SELECT DISTINCT queue FROM inserted) d
)
SELECT id::text FROM inserted
UNION ALL
SELECT NULL FROM woken

-- name: fragment_enqueue_input
-- The rows of an enqueue batch, and the clock. The columns every job has come as one text each,
-- joined by a separator none of their values can hold (ids and priorities by commas; names,
-- which have no control characters, and JSON payloads, which escape them, by chr(31)): joining
-- costs the client a fraction of dumping an array element by element.
input AS (
    SELECT *
    FROM unnest(
        string_to_array(%(ids)s, ',')::uuid[], string_to_array(%(queues)s, chr(31)),
        string_to_array(%(types)s, chr(31)), string_to_array(%(payloads)s, chr(31)),
        %(tags)b::text[], %(keys)b::text[], string_to_array(%(priorities)s, ',')::integer[],
        %(max_attempts)b::integer[], %(timeouts)b::float8[], %(run_ats)b::timestamptz[],
        %(delays)b::float8[], %(created_by)b::text[], %(traces)b::text[],
        %(waits)b::integer[], %(children)b::integer[], %(partitions)b::text[],
        %(expires_ats)b::timestamptz[], %(expires_afters)b::float8[]
    ) AS t(id, queue, type, payload, tags, idempotency_key, priority, max_attempts,
           timeout_seconds, run_at, delay_seconds, created_by, trace_context, parents_left,
           children, partition_key, expires_at, expires_after)
),
clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)

-- name: fragment_enqueue_columns
-- The columns of an enqueue insert, in the order fragment_enqueue_rows gives them.
INSERT INTO {schema}.jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    max_attempts, timeout_seconds, scheduled_at, created_at, updated_at, created_by,
    trace_context, parents_left, children, partition_key, expires_at
)

-- name: fragment_enqueue_rows
-- The hot rows of the batch's jobs (fragment_enqueue_columns): a job with parents still to
-- succeed waits (status 3).
SELECT i.id, i.queue, i.type, i.payload, i.tags, i.idempotency_key, i.priority,
       CASE WHEN i.parents_left > 0 THEN 3 ELSE 0 END, 0,
       i.max_attempts, i.timeout_seconds,
       coalesce(i.run_at, c.now + make_interval(secs => i.delay_seconds), c.now),
       c.now, c.now, i.created_by, i.trace_context, i.parents_left, i.children,
       i.partition_key, coalesce(i.expires_at, c.now + make_interval(secs => i.expires_after))
FROM input i CROSS JOIN clock c

-- name: fragment_enqueue_insert
-- Jobs with an idempotency key are inserted with ON CONFLICT (sorted by key, so two batches
-- sharing keys cannot deadlock on each other) and return their ids, since the key may have been
-- taken. The others cannot conflict: a plain insert skips the speculative insertion (an index
-- probe and a confirm record per row) and returns only their count. Every queue that got a job
-- is notified; the notification is delivered when the transaction commits.
keyed AS (
-- include: fragment_enqueue_columns
-- include: fragment_enqueue_rows
    WHERE i.idempotency_key IS NOT NULL
    ORDER BY i.idempotency_key
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue
),
plain AS (
-- include: fragment_enqueue_columns
-- include: fragment_enqueue_rows
    WHERE i.idempotency_key IS NULL
    RETURNING queue
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || d.queue)
    FROM (SELECT queue FROM keyed UNION SELECT queue FROM plain) d
)
SELECT id::text, NULL::bigint FROM keyed
UNION ALL
SELECT NULL, count(*) FROM plain
UNION ALL
SELECT NULL, NULL FROM woken

-- name: jobs_enqueue
-- One statement for a whole batch: the queue and counter rows are ensured, then the insert.
WITH
-- include: fragment_enqueue_input
,
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM input
),
-- include: fragment_ensure_queues
,
-- include: fragment_enqueue_insert

-- name: jobs_enqueue_known
-- The same for queues this process has already ensured (queue and counter rows are never
-- deleted), skipping two upserts on the producer's hot path.
WITH
-- include: fragment_enqueue_input
,
-- include: fragment_enqueue_insert

-- name: jobs_enqueue_plain
-- The common bulk case: known queues and no idempotency key in the batch. One plain insert
-- reads the input once (so it is not materialized), and the queues to wake come from the
-- client, which knows them.
WITH
-- include: fragment_enqueue_input
,
plain AS (
-- include: fragment_enqueue_columns
-- include: fragment_enqueue_rows
    RETURNING 1
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || q) FROM unnest(%(wake)b::text[]) AS q
)
SELECT NULL::text, count(*) FROM plain
UNION ALL
SELECT NULL, NULL FROM woken

-- name: jobs_enqueue_holders
SELECT idempotency_key, id::text
FROM {schema}.jobs_hot
WHERE idempotency_key = ANY(%(keys)b::text[])

-- name: jobs_unique_take
-- The uniqueness windows of a batch's keys (unique_for_seconds): a key nobody holds, or whose
-- window has ended, is taken for the given job (sorted by key, so two batches take the rows in
-- the same order); the keys taken are returned. A key held by a window still open is not: a
-- concurrent enqueue of it waits here for the first to commit, then reads its row.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
INSERT INTO {schema}.unique_keys AS u (key, job_id, until)
SELECT t.key, t.job_id, k.now + make_interval(secs => t.seconds)
FROM unnest(%(keys)b::text[], %(ids)b::uuid[], %(seconds)b::float8[]) AS t(key, job_id, seconds)
CROSS JOIN clock k
ORDER BY t.key
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, until = excluded.until
WHERE u.until <= (SELECT now FROM clock)
RETURNING key

-- name: jobs_unique_holders
SELECT key, job_id::text FROM {schema}.unique_keys WHERE key = ANY(%(keys)b::text[])

-- name: jobs_unique_point
-- A key taken for a job that was not inserted (a hot job held the key already, its own window
-- ended or never opened): the window is that job's.
UPDATE {schema}.unique_keys u
SET job_id = t.job_id
FROM unnest(%(keys)b::text[], %(ids)b::uuid[]) AS t(key, job_id)
WHERE u.key = t.key

-- ---------------------------------------------------------------------------------------------
-- Worker path
-- ---------------------------------------------------------------------------------------------

-- name: jobs_fetch_bulkheads
SELECT name FROM {schema}.queues WHERE max_workers IS NOT NULL

-- name: fragment_claim_set
-- What a claim writes on each row it takes (``k.now``: the claim's clock), for jobs_fetch and
-- limits_claim alike. A row past its expiry that never started is taken without starting it
-- (no attempt, no start time): the seam buries it as EXPIRED, telling it by attempt_count 0.
SET status = CASE WHEN %(start)s THEN 2 ELSE 1 END,
    attempt_count = h.attempt_count + CASE
        WHEN %(start)s AND (h.expires_at IS NULL OR h.expires_at > k.now OR h.attempt_count > 0)
        THEN 1 ELSE 0 END,
    started_at = CASE
        WHEN %(start)s AND (h.expires_at IS NULL OR h.expires_at > k.now OR h.attempt_count > 0)
        THEN k.now ELSE h.started_at END,
    heartbeat_at = CASE WHEN %(start)s THEN k.now ELSE NULL END,
    worker_id = %(worker_id)s,
    lease_token = gen_random_uuid(),
    updated_at = k.now,
    progress = NULL

-- name: fragment_claim_returning
-- A claimed row, in the order rows.claimed_rows reads it.
RETURNING h.id::text, h.queue, h.type, h.payload, h.tags, h.priority, h.status,
          h.attempt_count, h.max_attempts, h.timeout_seconds, h.idempotency_key,
          h.created_at, h.scheduled_at, h.started_at, h.created_by, h.last_error,
          h.trace_context, h.worker_id, h.lease_token::text, h.parents_left IS NOT NULL,
          h.partition_key, h.expires_at, h.requeues

-- name: jobs_fetch_lock
-- Fetchers of a queue with a bulkhead (max_workers) take turns: the lock is held until the
-- claiming transaction commits, and the fetch that follows takes a fresh snapshot, so it counts
-- the claims of the fetcher before it.
SELECT pg_advisory_xact_lock(hashtext(%(prefix)s || name))
FROM {schema}.queues
WHERE max_workers IS NOT NULL
  AND (%(queues)b::text[] IS NULL OR name = ANY(%(queues)b::text[]))
ORDER BY name

-- name: jobs_fetch
-- Each serving queue (the given names, or every queue row) gets its own ordered scan of the
-- partial fetch index, capped by the room its bulkhead leaves (max_workers minus the rows
-- Fetched or Processing anywhere); the union is ordered and cut to the limit. A queue without a
-- row counts as active and unpaused. The per-queue LIMIT keeps each scan short, so the index is
-- walked in order instead of sorting the whole pending set.
WITH clock AS MATERIALIZED (
    -- A claim, start, heartbeat or release that a server crash loses is harmless: the row
    -- is simply as it was before, and the lease fence refuses the stale worker. So these
    -- commit without waiting for the WAL flush; finalization and enqueue always wait.
    -- The clock is read as the statement runs, after its snapshot, not at the start of its
    -- transaction (before the bulkhead lock it may have waited for): a claim's started_at is
    -- then never earlier than the moment it could see the slot it took free.
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS now
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed
),
serving AS MATERIALIZED (
    SELECT n.name,
           CASE
               WHEN q.max_workers IS NULL THEN %(limit)s::integer
               ELSE greatest(0, least(%(limit)s::integer, q.max_workers - (
                   SELECT count(*) FROM {schema}.jobs_hot a
                   WHERE a.queue = n.name AND a.status IN (1, 2)
               )))::integer
           END AS room
    FROM (
        SELECT DISTINCT name FROM unnest(%(queues)b::text[]) AS u(name)
        UNION
        SELECT name FROM {schema}.queues WHERE %(queues)b::text[] IS NULL
    ) n
    LEFT JOIN {schema}.queues q ON q.name = n.name
    WHERE q.name IS NULL OR (NOT q.paused AND q.active)
),
candidates AS MATERIALIZED (
    SELECT c.id, c.priority, c.due, c.created_at
    FROM serving s
    CROSS JOIN clock k
    CROSS JOIN LATERAL (
        SELECT h.id, h.priority, h.scheduled_at AS due, h.created_at
        FROM {schema}.jobs_hot h
        WHERE h.status = 0 AND h.partition_key IS NULL
          AND h.queue = s.name
          AND h.scheduled_at <= k.now
          -- The type is compared as an expression (h.type || ''), which has no statistics, so
          -- the planner keeps its default estimate (most rows pass). Against the column's own
          -- statistics, a generic plan (the claim lane's, see connection.LANE_OPTIONS) knows
          -- nothing of the array and reckons that a few types, excluded, leave almost no row:
          -- then "read every pending row and sort them" looks cheaper than walking the fetch
          -- index for LIMIT rows, and a claim over 20,000 pending rows took 13 ms for 2.
          AND NOT ((h.type || '') = ANY(%(exclude)b::text[]))
        ORDER BY h.priority DESC, h.scheduled_at, h.created_at
        LIMIT s.room
        FOR UPDATE OF h SKIP LOCKED
    ) c
    WHERE s.room > 0
),
picked AS (
    SELECT id FROM candidates
    ORDER BY priority DESC, due, created_at
    LIMIT %(limit)s
),
claimed AS (
    UPDATE {schema}.jobs_hot h
-- include: fragment_claim_set
    FROM clock k
    WHERE h.id = ANY(ARRAY(SELECT id FROM picked))
-- include: fragment_claim_returning
)
SELECT * FROM claimed
ORDER BY priority DESC, scheduled_at, created_at

-- name: fragment_lease_input
-- The clock (with a relaxed commit: see jobs_fetch) and the leases of a batch, as ``v``.
--
-- A statement that moves leased rows finds each by its primary key, and tests the status as an
-- expression (h.status + 0) so that jobs_hot_active cannot serve the lookup. Statistics taken
-- while most rows were pending say that index is nearly empty, so a plan walked all of it for
-- every batch, dead entries included; and the entries of rows that just left hot stay in the
-- index until no snapshot can see them, which the moves' own statements prevent once they are
-- slow: a 20,000-job burn-down fell from about 5,000 to 600-1,800 jobs/s, one finalize taking
-- up to 2.7 s. By primary key a move costs the same whatever the index holds.
clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed  -- see jobs_fetch
),
v AS (
    SELECT * FROM unnest(%(ids)b::uuid[], %(workers)b::text[], %(tokens)b::text[])
        AS v(id, worker_id, token)
)

-- name: jobs_start
WITH
-- include: fragment_lease_input
UPDATE {schema}.jobs_hot h
SET status = 2,
    attempt_count = h.attempt_count + 1,
    started_at = k.now,
    heartbeat_at = k.now,
    updated_at = k.now
FROM v, clock k
WHERE h.id = v.id AND h.worker_id = v.worker_id AND h.lease_token::text = v.token
  AND h.status + 0 = 1  -- by primary key: see fragment_lease_input
RETURNING h.id::text, h.attempt_count, h.started_at

-- name: fragment_jobs_heartbeat
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
    FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed  -- see jobs_fetch
),
v AS (
    SELECT * FROM unnest(
        %(ids)b::uuid[], %(workers)b::text[], %(tokens)b::text[], %(progress)b::integer[]
    ) AS v(id, worker_id, token, progress)
)
UPDATE {schema}.jobs_hot h
SET heartbeat_at = k.now,
    updated_at = k.now,
    progress = coalesce(least(greatest(v.progress, 0), 100), h.progress)
FROM v, clock k
WHERE h.id = v.id AND h.worker_id = v.worker_id AND h.lease_token::text = v.token
  AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
RETURNING h.id::text, h.cancel_requested_at IS NOT NULL, h.cancelled_by

-- name: jobs_heartbeat
-- include: fragment_jobs_heartbeat

-- name: jobs_progress
-- A heartbeat that carries progress: the same statement for one lease.
-- include: fragment_jobs_heartbeat

-- name: jobs_release
WITH
-- include: fragment_lease_input
UPDATE {schema}.jobs_hot h
SET status = 0,
    worker_id = NULL,
    lease_token = NULL,
    heartbeat_at = NULL,
    progress = NULL,
    updated_at = k.now
FROM v, clock k
WHERE h.id = v.id AND h.worker_id = v.worker_id AND h.lease_token::text = v.token
  AND h.status + 0 = 1  -- by primary key: see fragment_lease_input
RETURNING h.id::text

-- name: fragment_kept_columns
-- The columns a row keeps unchanged when it leaves hot for the archive or the DLQ, named alike
-- in all three tables: one list for both the INSERT's columns and its SELECT from ``done``
-- (unqualified there: nothing ``done`` is joined with may have a column of these names).
id, queue, type, payload, tags, priority, attempt_count, max_attempts, timeout_seconds,
worker_id, created_by, created_at, started_at, partition_key, requeues

-- name: fragment_dlq_insert
-- The columns a row lands in when it moves to the DLQ (finalize, zombie rescue, cancel,
-- dependency failures): the kept ones, then those its SELECT gives in this order.
INSERT INTO {schema}.jobs_dlq (
-- include: fragment_kept_columns
    , failure_reason, error, last_modified_by, cancelled_by, failed_at, duration_seconds,
    children
)

-- name: fragment_failed_counts
-- The rows of ``done`` (moved to the DLQ at clock ``k``, each with its ``failure_reason``)
-- counted as failed: the queue's lifetime counter and its 1-second bucket per reason.
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, failed_total, last_activity_at)
    SELECT d.queue, count(*), min(k.now)
    FROM done d CROSS JOIN clock k
    GROUP BY d.queue
    ORDER BY d.queue
    ON CONFLICT (queue) DO UPDATE
    SET failed_total = s.failed_total + excluded.failed_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
buckets AS (
-- include: fragment_buckets_insert
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 1, d.failure_reason, count(*), 0, 0,
           NULL, min(k.now)
    FROM done d CROSS JOIN clock k
    GROUP BY d.queue, d.failure_reason
    ORDER BY d.queue, d.failure_reason
    ON CONFLICT (width_seconds, bucket_start, queue, outcome, failure_reason) DO UPDATE
    SET completed_count = b.completed_count + excluded.completed_count,
        updated_at = excluded.updated_at
)

-- name: fragment_buckets_insert
-- The columns of a 1-second (or rolled-up) metric bucket.
INSERT INTO {schema}.metric_buckets AS b (
    width_seconds, bucket_start, queue, outcome, failure_reason, completed_count,
    duration_count, total_duration_seconds, max_duration_seconds, updated_at
)

-- name: fragment_buckets_merge
-- Fold a new bucket into an existing one: sum the counts and durations, keep the max.
ON CONFLICT (width_seconds, bucket_start, queue, outcome, failure_reason) DO UPDATE
SET completed_count = b.completed_count + excluded.completed_count,
    duration_count = b.duration_count + excluded.duration_count,
    total_duration_seconds = b.total_duration_seconds + excluded.total_duration_seconds,
    max_duration_seconds = greatest(b.max_duration_seconds, excluded.max_duration_seconds),
    updated_at = excluded.updated_at

-- name: fragment_release_children
-- The children of the jobs of ``done`` that succeeded (``children`` counts them on the parent's
-- row; NULL for a job nobody waits on, which skips all of this): each edge from such a parent
-- is satisfied, once, and each child counts its ``parents_left`` down, going to Pending at zero
-- (``rl``). Two parents of one child finishing at once update the child's row in turn, the
-- second from the first's result, so exactly one releases it. A child enqueued while its
-- parent was finishing is counted on the parent's row (its enqueue updated that row, and the
-- move waited for it, so ``done`` reads the new count) but its edge is not in this
-- statement's snapshot: the parent is then left in ``job_releases`` (``missed``), in this
-- transaction, for jobs_release_missed to finish with a fresh snapshot right after the commit.
sat AS (
    UPDATE {schema}.job_edges e
    SET satisfied = true
    FROM done d
    WHERE d.k = 0 AND d.children > 0 AND e.parent_id = d.id AND NOT e.satisfied
    RETURNING e.child_id, e.parent_id
),
nc AS (
    SELECT child_id, count(*) AS n FROM sat GROUP BY child_id
),
rl AS (
    UPDATE {schema}.jobs_hot c
    SET parents_left = greatest(c.parents_left - nc.n, 0),
        status = CASE WHEN c.parents_left <= nc.n THEN 0 ELSE 3 END, updated_at = k.now
    FROM nc, clock k
    WHERE c.id = nc.child_id AND c.status = 3
    RETURNING c.queue, c.status
),
missed AS (
    INSERT INTO {schema}.job_releases (parent_id, created_at)
    SELECT d.id, k.now FROM done d, clock k
    WHERE d.k = 0 AND d.children > 0
      AND d.children > (SELECT count(*) FROM sat WHERE sat.parent_id = d.id)
    ON CONFLICT (parent_id) DO NOTHING
    RETURNING 1
)

-- name: fragment_notify_waited
-- Tell whoever waits on a job of ``done`` (``App.result`` marked it ``waited``) that it left
-- the hot table; delivered when the transaction commits.
told AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'd:' || d.id::text) FROM done d WHERE d.waited
)

-- name: fragment_finalize_clock
-- The clock of a finalize. Its moves (``v``) come as one JSON array of rows with short keys:
-- for a batch of a few moves that is several times cheaper to send from Python than binary
-- arrays, and the statements must fit the driver's cache of 4096 bytes. The keys
-- (``jobs._finalize_params``): i id, w worker, t lease token, k kind (0 succeed, 1 fail,
-- 2 retry), du duration, r reason, e error, a actor, ra run_at, dl delay, rf refund the
-- attempt, cr count the retry, rs result, re why the result was not kept. Keys left out read
-- as NULL; each statement declares only the keys it reads (json_to_recordset skips the rest).
clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)

-- name: jobs_finalize
-- Succeed moves of a batch in one statement: the rows leave hot, land in the archive, and the
-- lifetime counters and 1-second buckets move with them; children whose last parent succeeded
-- are released (fragment_release_children), and waiters are told. Every move is guarded by its
-- lease; a stale one matches nothing. (Fail moves: jobs_finalize_fail; retry moves:
-- jobs_finalize_retry. A batch of several kinds sends them in one transaction; apart, each
-- statement fits the driver's cache of prepared statements.) finished_at is the attempt's
-- start plus the worker's elapsed time (``el``: SucceedMove.elapsed_seconds), on the
-- database's clock like the start; a move without one finishes at this statement's clock.
WITH v AS (
    SELECT * FROM json_to_recordset(%(moves)s::json)
        AS v(i uuid, w text, t uuid, k int, du float8, el float8, rs text, re text)
),
-- include: fragment_finalize_clock
,
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING v
    WHERE v.k = 0 AND h.id = v.i AND h.worker_id = v.w AND h.lease_token = v.t
      AND h.status + 0 IN (1, 2)  -- by primary key: see fragment_lease_input
    RETURNING h.*, v.k, v.du, v.rs, v.re, h.started_at + v.el * interval '1 second' AS ended
),
archived AS (
    INSERT INTO {schema}.jobs_archive (
-- include: fragment_kept_columns
        , last_modified_by, finished_at, duration_seconds, result, result_error
    )
    SELECT
-- include: fragment_kept_columns
           , d.last_modified_by, coalesce(d.ended, k.now), d.du, d.rs, d.re
    FROM done d, clock k
),
-- include: fragment_release_children
,
woke AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || q.queue)
    FROM (SELECT DISTINCT queue FROM rl WHERE status = 0) q
),
-- include: fragment_notify_waited
,
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, succeeded_total, last_activity_at)
    SELECT d.queue, count(*), min(k.now)
    FROM done d, clock k
    GROUP BY d.queue
    ORDER BY d.queue
    ON CONFLICT (queue) DO UPDATE
    SET succeeded_total = s.succeeded_total + excluded.succeeded_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
buckets AS (
-- include: fragment_buckets_insert
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 0, -1,
           count(*), count(d.du), coalesce(sum(d.du), 0), max(d.du), min(k.now)
    FROM done d, clock k
    GROUP BY 3
    ORDER BY 3
-- include: fragment_buckets_merge
)
SELECT id::text FROM done
UNION ALL
SELECT 'release' FROM missed
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM woke

-- name: jobs_finalize_fail
-- Fail moves of a batch in one statement, as jobs_finalize: the rows leave hot for the DLQ with
-- their reason, error and actor; the counters and buckets move with them, and waiters are
-- told. failed_at is the attempt's start plus the worker's elapsed time, as finished_at there.
WITH v AS (
    SELECT * FROM json_to_recordset(%(moves)s::json)
        AS v(i uuid, w text, t uuid, k int, du float8, el float8, r int, e text, a text)
),
-- include: fragment_finalize_clock
,
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING v
    WHERE v.k = 1 AND h.id = v.i AND h.worker_id = v.w AND h.lease_token = v.t
      AND h.status + 0 IN (1, 2)  -- by primary key: see fragment_lease_input
    RETURNING h.*, v.du, v.r, v.e, v.a, h.started_at + v.el * interval '1 second' AS ended
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.r, d.e, d.last_modified_by, d.a, coalesce(d.ended, k.now), d.du, d.children
    FROM done d, clock k
),
-- include: fragment_notify_waited
,
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, failed_total, last_activity_at)
    SELECT d.queue, count(*), min(k.now)
    FROM done d, clock k
    GROUP BY d.queue
    ORDER BY d.queue
    ON CONFLICT (queue) DO UPDATE
    SET failed_total = s.failed_total + excluded.failed_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
buckets AS (
-- include: fragment_buckets_insert
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 1, d.r,
           count(*), count(d.du), coalesce(sum(d.du), 0), max(d.du), min(k.now)
    FROM done d, clock k
    GROUP BY 3, 5
    ORDER BY 3, 5
-- include: fragment_buckets_merge
)
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told

-- name: attempts_record
-- The failed attempts of a finalize batch, sent before its finalize statements in the same
-- transaction (so a batch of successes sends nothing more): fail moves and retries that used
-- their attempt, of jobs that ran (Processing), guarded by the lease. The rows are locked, so
-- the moves that follow find them as read here. seq is one past the job's newest kept row, and
-- only the newest %(keep)s rows of each job are kept (the DELETE does not see the new row).
WITH v AS (
    SELECT * FROM json_to_recordset(%(moves)s::json)
        AS v(i uuid, w text, t uuid, k int, du float8, el float8, r int, e text, rf bool)
),
-- include: fragment_finalize_clock
,
ran AS MATERIALIZED (
    SELECT h.id, h.attempt_count, h.worker_id, h.started_at, v.du, v.r, v.e,
           h.started_at + v.el * interval '1 second' AS ended,
           coalesce((SELECT max(a.seq) FROM {schema}.job_attempts a WHERE a.job_id = h.id), 0)
               AS newest
    FROM {schema}.jobs_hot h JOIN v ON h.id = v.i
    WHERE v.k IN (1, 2) AND NOT coalesce(v.rf, false)
      AND h.worker_id = v.w AND h.lease_token = v.t
      AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
    ORDER BY h.id
    FOR UPDATE OF h
),
tried AS (
    INSERT INTO {schema}.job_attempts (
        job_id, seq, attempt, worker_id, started_at, failed_at, duration_seconds,
        failure_reason, error
    )
    SELECT r.id, r.newest + 1, r.attempt_count, r.worker_id, r.started_at,
           coalesce(r.ended, k.now), r.du, r.r, r.e
    FROM ran r CROSS JOIN clock k
),
trimmed AS (
    DELETE FROM {schema}.job_attempts a
    USING ran r
    WHERE a.job_id = r.id AND a.seq <= r.newest + 1 - %(keep)s
)
SELECT count(*) FROM ran

-- name: jobs_finalize_retry
-- Retry moves of a batch: back to Pending, due at run_at or after the delay, the last error
-- kept (a move without one, a circuit deferral or a start refused, keeps the error before it,
-- which the next attempt's handler reads as JobContext.previous_error), worker and lease
-- cleared, the attempt refunded when asked; retried_total counted.
WITH v AS (
    SELECT * FROM json_to_recordset(%(moves)s::json)
        AS v(i uuid, w text, t uuid, k int, e text, ra timestamptz, dl float8, rf bool, cr bool)
),
-- include: fragment_finalize_clock
,
retried AS (
    UPDATE {schema}.jobs_hot h
    SET status = 0, scheduled_at = coalesce(v.ra, k.now + make_interval(secs => v.dl)),
        last_error = coalesce(v.e, h.last_error), worker_id = NULL, lease_token = NULL,
        heartbeat_at = NULL,
        progress = NULL,
        attempt_count = CASE WHEN v.rf THEN greatest(h.attempt_count - 1, 0)
                             ELSE h.attempt_count END,
        updated_at = k.now
    FROM v, clock k
    WHERE v.k = 2 AND h.id = v.i AND h.worker_id = v.w AND h.lease_token = v.t
      AND h.status + 0 IN (1, 2)  -- by primary key: see fragment_lease_input
    RETURNING h.id, h.queue, v.cr
),
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, retried_total, last_activity_at)
    SELECT r.queue, count(*) FILTER (WHERE r.cr), min(k.now)
    FROM retried r, clock k
    GROUP BY r.queue
    ORDER BY r.queue
    ON CONFLICT (queue) DO UPDATE
    SET retried_total = s.retried_total + excluded.retried_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
)
SELECT id::text FROM retried

-- ---------------------------------------------------------------------------------------------
-- Maintenance
-- ---------------------------------------------------------------------------------------------

-- name: jobs_rescue_fetched
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
UPDATE {schema}.jobs_hot h
SET status = 0,
    worker_id = NULL,
    lease_token = NULL,
    heartbeat_at = NULL,
    progress = NULL,
    updated_at = k.now
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
    LEFT JOIN {schema}.queues q ON q.name = h.queue
    CROSS JOIN clock k
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
    FROM done d CROSS JOIN clock k
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
    FROM done d CROSS JOIN clock k
),
trimmed AS (
    DELETE FROM {schema}.job_attempts a
    USING done d
    WHERE a.job_id = d.id
      AND a.seq <= (SELECT max(x.seq) FROM {schema}.job_attempts x WHERE x.job_id = d.id)
                   + 1 - %(keep)s
),
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told

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
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told

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
unlinked AS (
    DELETE FROM {schema}.job_edges e USING gone g WHERE e.child_id = g.id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)
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
unlinked AS (
    DELETE FROM {schema}.job_edges e USING gone g WHERE e.child_id = g.id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)
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

-- ---------------------------------------------------------------------------------------------
-- Operators
-- ---------------------------------------------------------------------------------------------

-- name: jobs_cancel_lock
-- Run before jobs_cancel in its transaction: waits for a claim, start or finalize holding one
-- of the rows, so that jobs_cancel sees each row as committed. In id order: two cancels of
-- overlapping sets cannot deadlock.
SELECT h.id FROM {schema}.jobs_hot h
WHERE h.id = ANY(%(ids)b::uuid[])
ORDER BY h.id
FOR UPDATE

-- name: jobs_cancel
-- Pending, Fetched, Waiting and Suspended rows go to the DLQ as CANCELLED at once (with counters and buckets);
-- Processing rows get a durable cancel request that the owning worker hears.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    WHERE h.id = ANY(%(ids)b::uuid[]) AND h.status IN (0, 1, 3, 4)  -- 4: suspended (durable)
    RETURNING h.*, 1 AS failure_reason
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason, 'Cancelled by ' || %(actor)s::text, %(actor)s, %(actor)s,
           k.now, NULL, d.children
    FROM done d CROSS JOIN clock k
),
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
,
requested AS (
    UPDATE {schema}.jobs_hot h
    SET cancel_requested_at = k.now,
        cancelled_by = %(actor)s,
        last_modified_by = %(actor)s
    FROM clock k
    WHERE h.id = ANY(%(ids)b::uuid[])
      AND h.status + 0 = 2  -- by primary key: see fragment_lease_input
    RETURNING h.id
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'c:' || r.id::text) FROM requested r
)
SELECT id::text, true FROM done
UNION ALL
SELECT id::text, false FROM requested
UNION ALL
SELECT NULL, NULL FROM woken
UNION ALL
SELECT NULL, NULL FROM told

-- name: jobs_edit
UPDATE {schema}.jobs_hot
SET payload = coalesce(%(payload)s::text, payload),
    tags = CASE WHEN %(set_tags)s THEN %(tags)s::text ELSE tags END,
    priority = coalesce(%(priority)s::integer, priority),
    last_modified_by = %(actor)s,
    updated_at = coalesce(%(now)s::timestamptz, now())
WHERE id = %(id)s::uuid AND status = 0

-- name: jobs_advance
-- The test clock (chokaq.testing): Pending rows not yet due become due that much sooner (and
-- their expiry comes as much sooner), and the workers of their queues are woken.
WITH moved AS (
    UPDATE {schema}.jobs_hot
    SET scheduled_at = scheduled_at - make_interval(secs => %(seconds)s::double precision),
        expires_at = expires_at - make_interval(secs => %(seconds)s::double precision)
    WHERE status = 0 AND scheduled_at > coalesce(%(now)s::timestamptz, now())
      AND (%(queues)b::text[] IS NULL OR queue = ANY(%(queues)b::text[]))
    RETURNING queue
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || d.queue) FROM (SELECT DISTINCT queue FROM moved) d
)
SELECT count(*) FROM moved, (SELECT count(*) FROM woken) w

-- name: dlq_edit
UPDATE {schema}.jobs_dlq
SET payload = coalesce(%(payload)s::text, payload),
    tags = CASE WHEN %(set_tags)s THEN %(tags)s::text ELSE tags END,
    priority = coalesce(%(priority)s::integer, priority),
    last_modified_by = %(actor)s
WHERE id = %(id)s::uuid

-- name: dlq_resurrect
-- DLQ -> hot Pending in one statement; lifetime counters and buckets are not touched. The
-- attempts start again from 0; requeues counts this requeue, and the DLQ error becomes the
-- last error, so the handler can tell that (and why) it ran before.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
moved AS (
    DELETE FROM {schema}.jobs_dlq
    WHERE id = ANY(%(ids)b::uuid[])
    RETURNING *
),
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM moved
),
-- include: fragment_ensure_queues
,
inserted AS (
    INSERT INTO {schema}.jobs_hot (
        id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
        max_attempts, timeout_seconds, scheduled_at, created_at, updated_at, created_by,
        last_modified_by, last_error, parents_left, children, partition_key, requeues
    )
    SELECT m.id, m.queue, m.type, coalesce(%(payload)s::text, m.payload),
           CASE WHEN %(set_tags)s THEN %(tags)s::text ELSE m.tags END, NULL,
           coalesce(%(priority)s::integer, m.priority), 0, 0, m.max_attempts,
           m.timeout_seconds, k.now, m.created_at, k.now, m.created_by, %(actor)s, m.error,
           -- a job enqueued with after= runs with whatever results its parents left
           CASE WHEN EXISTS (SELECT 1 FROM {schema}.job_edges e WHERE e.child_id = m.id)
                THEN 0 END,
           m.children, m.partition_key, m.requeues + 1
    FROM moved m CROSS JOIN clock k
    RETURNING id, queue
),
-- include: fragment_notify_inserted

-- name: dlq_purge
-- Run with jobs_orphans_fail next in the same transaction (see there). A purged job's attempts
-- go with it.
WITH gone AS (
    DELETE FROM {schema}.jobs_dlq
    WHERE id = ANY(%(ids)b::uuid[])
    RETURNING id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)
SELECT id::text FROM gone

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
               WHERE e.child_id = jobs_hot.id
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
       failed_at, duration_seconds, failure_reason, error, cancelled_by, partition_key
FROM {schema}.jobs_dlq

-- name: dlq_count
SELECT count(*)
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter

-- name: dlq_match_ids
SELECT id::text
FROM {schema}.jobs_dlq
-- include: fragment_dlq_filter
ORDER BY failed_at DESC, id DESC
LIMIT %(cap)s

-- ---------------------------------------------------------------------------------------------
-- Reads
-- ---------------------------------------------------------------------------------------------

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
               WHERE e.child_id = w.id
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
       coalesce(w.waiting, 0), coalesce(w.blocked, 0), q.hidden
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
       cancelled_by, partition_key
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

-- ---------------------------------------------------------------------------------------------
-- Queues
-- ---------------------------------------------------------------------------------------------

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

-- ---------------------------------------------------------------------------------------------
-- Workers
-- ---------------------------------------------------------------------------------------------

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

-- ---------------------------------------------------------------------------------------------
-- Notification
-- ---------------------------------------------------------------------------------------------

-- name: listen
LISTEN {channel}

-- name: unlisten
UNLISTEN {channel}

-- ---------------------------------------------------------------------------------------------
-- Leadership: leases on the database's clock (clock_timestamp(), not the transaction's start,
-- so a statement that waited on a row lock judges expiry when it runs)
-- ---------------------------------------------------------------------------------------------

-- name: leadership_claim
-- Take the role when it is free or expired, or renew the caller's own current term; one
-- statement, so two claimants racing are serialized on the row and exactly one wins. A renewal
-- keeps the epoch; anything else starts a new term one epoch higher.
INSERT INTO {schema}.leadership AS l (name, holder, epoch, expires_at, renewed_at)
VALUES (%(name)s, %(holder)s, 1,
        clock_timestamp() + make_interval(secs => %(lease)s::float8), clock_timestamp())
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    epoch = CASE
        WHEN l.holder = excluded.holder AND l.epoch = %(epoch)s::bigint
             AND l.expires_at > clock_timestamp() THEN l.epoch
        ELSE l.epoch + 1
    END,
    expires_at = excluded.expires_at,
    renewed_at = excluded.renewed_at
WHERE l.expires_at <= clock_timestamp()
   OR (l.holder = excluded.holder AND l.epoch = %(epoch)s::bigint)
RETURNING l.name, l.holder, l.epoch, l.expires_at

-- name: leadership_release
UPDATE {schema}.leadership
SET expires_at = clock_timestamp()
WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s
  AND expires_at > clock_timestamp()

-- name: leadership_get
SELECT name, holder, epoch, expires_at
FROM {schema}.leadership
WHERE name = %(name)s AND expires_at > clock_timestamp()

-- name: leadership_fence
-- The first statement of a write made under leadership: the term is current, and FOR SHARE
-- holds it so until the write commits (a rival's take-over waits, then finds it renewed or
-- expired on its own clock reading). A holder frozen or cut off mid-transaction would hold that
-- row lock, and so the role, for as long as its session lives: the transaction may therefore
-- sit idle for no longer than what is left of the lease, after which the server ends the
-- session and its locks with it.
SELECT set_config(
    'idle_in_transaction_session_timeout',
    greatest(1, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000))::bigint::text,
    true
)
FROM {schema}.leadership
WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s
  AND expires_at > clock_timestamp()
FOR SHARE

-- name: schedules_declare
-- One row per declaration (arrays of equal length). The code owns type, queue, priority,
-- misfire, overlap and declared_*; what is in force follows the code unless an operator's edit
-- is (edited_by set). A change of timing in force restarts the slots from now.
INSERT INTO {schema}.schedules AS s (
    name, type, queue, priority, cron, every_seconds, timezone, kwargs, misfire, overlap,
    declared_cron, declared_every_seconds, declared_timezone, declared_kwargs,
    last_slot, next_slot, seen_at, created_at, updated_at)
SELECT d.name, d.type, d.queue, d.priority, d.cron, d.every, d.tz, d.kwargs, d.misfire, d.overlap,
       d.cron, d.every, d.tz, d.kwargs,
       %(now)s, d.next_slot, %(now)s, %(now)s, %(now)s
FROM unnest(%(names)s::text[], %(types)s::text[], %(queues)s::text[], %(priorities)s::int[],
            %(crons)s::text[], %(everies)s::float8[], %(tzs)s::text[], %(kwargs)s::text[],
            %(misfires)s::text[], %(overlaps)s::bool[], %(next_slots)s::timestamptz[])
     AS d(name, type, queue, priority, cron, every, tz, kwargs, misfire, overlap, next_slot)
ON CONFLICT (name) DO UPDATE
SET type = excluded.type,
    queue = excluded.queue,
    priority = excluded.priority,
    misfire = excluded.misfire,
    overlap = excluded.overlap,
    declared_cron = excluded.declared_cron,
    declared_every_seconds = excluded.declared_every_seconds,
    declared_timezone = excluded.declared_timezone,
    declared_kwargs = excluded.declared_kwargs,
    cron = CASE WHEN s.edited_by IS NULL THEN excluded.cron ELSE s.cron END,
    every_seconds = CASE WHEN s.edited_by IS NULL THEN excluded.every_seconds
                         ELSE s.every_seconds END,
    timezone = CASE WHEN s.edited_by IS NULL THEN excluded.timezone ELSE s.timezone END,
    kwargs = CASE WHEN s.edited_by IS NULL THEN excluded.kwargs ELSE s.kwargs END,
    last_slot = CASE WHEN s.edited_by IS NULL
                      AND (s.cron, s.every_seconds, s.timezone)
                          IS DISTINCT FROM (excluded.cron, excluded.every_seconds, excluded.timezone)
                     THEN excluded.last_slot ELSE s.last_slot END,
    next_slot = CASE WHEN s.edited_by IS NULL
                      AND (s.cron, s.every_seconds, s.timezone)
                          IS DISTINCT FROM (excluded.cron, excluded.every_seconds, excluded.timezone)
                     THEN excluded.next_slot ELSE s.next_slot END,
    revision = CASE WHEN (s.type, s.queue, s.priority, s.misfire, s.overlap)
                         IS DISTINCT FROM (excluded.type, excluded.queue, excluded.priority,
                                           excluded.misfire, excluded.overlap)
                      OR (s.edited_by IS NULL
                          AND (s.cron, s.every_seconds, s.timezone, s.kwargs)
                              IS DISTINCT FROM (excluded.cron, excluded.every_seconds,
                                                excluded.timezone, excluded.kwargs))
                    THEN s.revision + 1 ELSE s.revision END,
    seen_at = excluded.seen_at,
    updated_at = excluded.updated_at

-- name: schedules_seen
UPDATE {schema}.schedules SET seen_at = %(now)s WHERE name = ANY(%(names)s::text[])

-- name: schedules_list
-- The schedules, with where each one's last job is now: its hot status, or in the archive, or
-- its DLQ failure reason (all NULL: gone, or never run).
SELECT s.name, s.type, s.queue, s.priority, s.cron, s.every_seconds, s.timezone, s.kwargs,
       s.misfire, s.overlap, s.paused, s.declared_cron, s.declared_every_seconds,
       s.declared_timezone, s.declared_kwargs, s.edited_by, s.edited_at, s.revision,
       s.last_slot, s.next_slot, s.last_job_id::text, s.last_run_at, s.seen_at, s.created_at,
       s.updated_at, s.last_modified_by,
       h.status, a.id IS NOT NULL, d.failure_reason
FROM {schema}.schedules s
LEFT JOIN {schema}.jobs_hot h ON h.id = s.last_job_id
LEFT JOIN {schema}.jobs_archive a ON a.id = s.last_job_id
LEFT JOIN {schema}.jobs_dlq d ON d.id = s.last_job_id
WHERE (%(names)s::text[] IS NULL OR s.name = ANY(%(names)s::text[]))
  AND (%(due_at)s::timestamptz IS NULL
       OR (NOT s.paused AND s.next_slot <= %(due_at)s::timestamptz))
  AND (%(seen_since)s::timestamptz IS NULL OR s.seen_at >= %(seen_since)s::timestamptz)
ORDER BY s.name

-- name: schedule_history
SELECT slot, outcome, job_id::text, detail, recorded_at
FROM {schema}.schedule_slots
WHERE name = %(name)s
ORDER BY id DESC
LIMIT %(limit)s

-- name: schedule_advance
-- The compare-and-set a slot is enqueued under: the row moves on only from what was read.
UPDATE {schema}.schedules
SET last_slot = %(new_last_slot)s, next_slot = %(next_slot)s
WHERE name = %(name)s AND revision = %(revision)s AND last_slot = %(last_slot)s
RETURNING last_job_id::text

-- name: schedule_lock
-- A trigger's read of the row, held until its job is enqueued.
SELECT last_job_id::text FROM {schema}.schedules WHERE name = %(name)s FOR UPDATE

-- name: schedule_unfinished
SELECT 1 FROM {schema}.jobs_hot WHERE id = %(id)s::uuid

-- name: schedule_ran
UPDATE {schema}.schedules
SET last_job_id = %(job_id)s::uuid, last_run_at = %(now)s
WHERE name = %(name)s

-- name: schedule_record
INSERT INTO {schema}.schedule_slots (name, slot, outcome, job_id, detail, recorded_at)
SELECT %(name)s, r.slot, r.outcome, r.job_id, r.detail, %(now)s
FROM unnest(%(slots)s::timestamptz[], %(outcomes)s::text[], %(job_ids)s::uuid[],
            %(details)s::text[]) AS r(slot, outcome, job_id, detail)

-- name: schedule_trim
-- Keep each schedule's newest 100 records.
DELETE FROM {schema}.schedule_slots
WHERE name = %(name)s
  AND id < (SELECT min(id) FROM (SELECT id FROM {schema}.schedule_slots
                                 WHERE name = %(name)s ORDER BY id DESC LIMIT 100) newest)

-- name: schedule_update
UPDATE {schema}.schedules
SET paused = %(paused)s,
    cron = %(cron)s,
    every_seconds = %(every)s,
    timezone = %(tz)s,
    kwargs = %(kwargs)s,
    edited_by = CASE WHEN %(edited)s THEN %(actor)s END,
    edited_at = CASE WHEN %(edited)s THEN %(now)s END,
    last_slot = coalesce(%(restart_at)s::timestamptz, last_slot),
    next_slot = CASE WHEN %(restart_at)s::timestamptz IS NULL THEN next_slot
                     ELSE %(next_slot)s END,
    revision = revision + 1,
    updated_at = %(now)s,
    last_modified_by = %(actor)s
WHERE name = %(name)s AND revision = %(revision)s

-- name: schedule_delete_slots
DELETE FROM {schema}.schedule_slots WHERE name = %(name)s

-- name: schedule_delete
DELETE FROM {schema}.schedules WHERE name = %(name)s

-- ---------------------------------------------------------------------------------------------
-- Results and workflows
-- ---------------------------------------------------------------------------------------------

-- name: jobs_graph_where
-- Where each stored parent of an enqueue is: 0 hot, 1 archive, 2 DLQ (none: not stored),
-- read before anything is written.
SELECT id::text, 0 FROM {schema}.jobs_hot WHERE id = ANY(%(ids)b::uuid[])
UNION ALL
SELECT id::text, 1 FROM {schema}.jobs_archive WHERE id = ANY(%(ids)b::uuid[])
UNION ALL
SELECT id::text, 2 FROM {schema}.jobs_dlq WHERE id = ANY(%(ids)b::uuid[])

-- name: jobs_graph_attach_hot
-- Count new children on the stored parents still in hot. The row lock this takes holds a
-- parent's move out of hot (finalize, cancel, rescue) until the enqueue commits, and the move
-- then reads the new count (see fragment_release_children). Returns the parents found.
UPDATE {schema}.jobs_hot h
SET children = coalesce(h.children, 0) + v.n
FROM unnest(%(ids)b::uuid[], %(counts)b::integer[]) AS v(id, n)
WHERE h.id = v.id
RETURNING h.id::text

-- name: jobs_graph_attach_dlq
-- The same for parents in the DLQ (a resurrection carries the count back to hot; a purge
-- waits for the enqueue).
UPDATE {schema}.jobs_dlq d
SET children = coalesce(d.children, 0) + v.n
FROM unnest(%(ids)b::uuid[], %(counts)b::integer[]) AS v(id, n)
WHERE d.id = v.id
RETURNING d.id::text

-- name: jobs_graph_archived
SELECT id::text FROM {schema}.jobs_archive WHERE id = ANY(%(ids)b::uuid[])

-- name: jobs_graph_workflows
-- The workflow of each stored parent that has parents of its own.
SELECT DISTINCT ON (child_id) child_id::text, workflow_id::text
FROM {schema}.job_edges
WHERE child_id = ANY(%(ids)b::uuid[])
ORDER BY child_id, created_at

-- name: jobs_graph_edges
-- An edge is satisfied once its parent is in the archive (then, or later by the release).
INSERT INTO {schema}.job_edges (child_id, parent_id, workflow_id, satisfied, created_at)
SELECT c, p, w, s, coalesce(%(now)s::timestamptz, now())
FROM unnest(
    %(children)b::uuid[], %(parents)b::uuid[], %(workflows)b::uuid[], %(satisfied)b::bool[]
) AS v(c, p, w, s)

-- name: jobs_release_missed
-- Finish the releases a move left in ``job_releases`` (see fragment_release_children), with a
-- snapshot taken after that move committed, so after the enqueue it waited for: each
-- unsatisfied edge from such a parent, now in the archive, is satisfied and counted down on its
-- child, as the move does. Run by the worker right after such a move, and by the elected
-- worker's rescue pass (after a crash in between).
WITH m AS (
    DELETE FROM {schema}.job_releases RETURNING parent_id
),
sat AS (
    UPDATE {schema}.job_edges e
    SET satisfied = true
    FROM m, {schema}.jobs_archive a
    WHERE e.parent_id = m.parent_id AND a.id = m.parent_id AND NOT e.satisfied
    RETURNING e.child_id
),
nc AS (
    SELECT child_id, count(*) AS n FROM sat GROUP BY child_id
),
rl AS (
    UPDATE {schema}.jobs_hot c
    SET parents_left = greatest(c.parents_left - nc.n, 0),
        status = CASE WHEN c.parents_left <= nc.n THEN 0 ELSE 3 END, updated_at = now()
    FROM nc
    WHERE c.id = nc.child_id AND c.status = 3
    RETURNING c.queue, c.status
),
woke AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || q.queue)
    FROM (SELECT DISTINCT queue FROM rl WHERE status = 0) q
)
SELECT count(*) FROM m
UNION ALL
SELECT count(*) FROM woke

-- name: jobs_orphans_fail
-- Run after dlq_purge in its transaction, with a snapshot of its own (so that it sees the edges
-- of a child whose enqueue the purge waited for: see jobs_graph_attach_dlq): each child still
-- waiting on a purged parent (a parent now in no pillar) goes to the DLQ as DEPENDENCY_FAILED
-- (11) naming it, with counters and bucket.
WITH clock AS MATERIALIZED (
    SELECT now() AS now
),
orphans AS (
    SELECT DISTINCT ON (e.child_id) e.child_id AS child, e.parent_id AS parent
    FROM {schema}.job_edges e
    WHERE e.parent_id = ANY(%(ids)b::uuid[]) AND NOT e.satisfied
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobs_dlq q WHERE q.id = e.parent_id)
    ORDER BY e.child_id, e.parent_id
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING orphans o
    WHERE h.id = o.child AND h.status = 3
    RETURNING h.*, o.parent, 11 AS failure_reason
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason,
           'Dependency failed: parent ' || d.parent::text || ' was purged from the DLQ',
           d.last_modified_by, NULL, k.now, NULL, d.children
    FROM done d CROSS JOIN clock k
),
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told

-- name: job_watch
-- Mark a hot job waited on (its move out of hot then notifies ``d:<id>``); the row lock holds a
-- concurrent move until this commits, so the move sees the mark.
UPDATE {schema}.jobs_hot
SET waited = true
WHERE id = %(id)s::uuid AND waited IS NOT TRUE
RETURNING status

-- name: job_outcome
-- Where a job is, in one snapshot: a move between pillars is one transaction, so the job is in
-- exactly one of them (or none). A Waiting job also names the first job it waits on that is in
-- the DLQ, a parent or, through parents that wait themselves, an ancestor (with that job's
-- reason in the reason column): it cannot run until an operator repairs or purges that job.
-- The walk goes only up through Waiting jobs, each once (UNION), so it ends on any graph.
WITH RECURSIVE up(id) AS (
    SELECT e.parent_id
    FROM {schema}.jobs_hot h JOIN {schema}.job_edges e ON e.child_id = h.id
    WHERE h.id = %(id)s::uuid AND h.status = 3
    UNION
    SELECT e.parent_id
    FROM up JOIN {schema}.jobs_hot h ON h.id = up.id AND h.status = 3
    JOIN {schema}.job_edges e ON e.child_id = h.id
),
blocker AS (
    SELECT d.id, d.failure_reason
    FROM up JOIN {schema}.jobs_dlq d ON d.id = up.id
    ORDER BY d.failed_at, d.id
    LIMIT 1
)
SELECT 'hot', h.status, b.failure_reason, NULL::text, NULL::text, NULL::text, b.id::text
FROM {schema}.jobs_hot h LEFT JOIN blocker b ON true
WHERE h.id = %(id)s::uuid
UNION ALL
SELECT 'archive', NULL, NULL, NULL, result, result_error, NULL
FROM {schema}.jobs_archive WHERE id = %(id)s::uuid
UNION ALL
SELECT 'dlq', NULL, failure_reason, error, NULL, NULL, NULL
FROM {schema}.jobs_dlq WHERE id = %(id)s::uuid

-- name: job_parent_results
-- The results of a job's parents that succeeded.
SELECT e.parent_id::text, a.result, a.result_error
FROM {schema}.job_edges e
JOIN {schema}.jobs_archive a ON a.id = e.parent_id
WHERE e.child_id = %(id)s::uuid

-- name: job_relatives
-- A job's parents and children with where each is now (at most ``limit`` of each side).
WITH links AS (
    (SELECT e.parent_id AS id, 0 AS side, e.workflow_id, e.created_at
     FROM {schema}.job_edges e WHERE e.child_id = %(id)s::uuid
     ORDER BY e.created_at, e.parent_id LIMIT %(limit)s)
    UNION ALL
    (SELECT e.child_id, 1, e.workflow_id, e.created_at
     FROM {schema}.job_edges e WHERE e.parent_id = %(id)s::uuid
     ORDER BY e.created_at, e.child_id LIMIT %(limit)s)
)
SELECT l.id::text, l.side, l.workflow_id::text, coalesce(h.type, a.type, d.type), h.status,
       a.id IS NOT NULL, d.failure_reason,
       h.status = 3 AND EXISTS (
           SELECT 1 FROM {schema}.job_edges x
           JOIN {schema}.jobs_dlq q ON q.id = x.parent_id
           WHERE x.child_id = l.id
       )
FROM links l
LEFT JOIN {schema}.jobs_hot h ON h.id = l.id
LEFT JOIN {schema}.jobs_archive a ON a.id = l.id
LEFT JOIN {schema}.jobs_dlq d ON d.id = l.id
ORDER BY l.side, l.created_at, l.id

-- name: workflow_members
-- Every job of a workflow (the children whose workflow it is, and their parents), with where
-- each is and its parents' ids; at most ``limit``.
WITH e AS (
    SELECT child_id, parent_id FROM {schema}.job_edges WHERE workflow_id = %(id)s::uuid
),
members AS (
    SELECT child_id AS id FROM e UNION SELECT parent_id FROM e
)
SELECT m.id::text, coalesce(h.type, a.type, d.type), coalesce(h.queue, a.queue, d.queue),
       h.status, a.id IS NOT NULL, d.failure_reason, d.error,
       (SELECT string_agg(x.parent_id::text, ',' ORDER BY x.parent_id)
        FROM e x WHERE x.child_id = m.id)
FROM members m
LEFT JOIN {schema}.jobs_hot h ON h.id = m.id
LEFT JOIN {schema}.jobs_archive a ON a.id = m.id
LEFT JOIN {schema}.jobs_dlq d ON d.id = m.id
ORDER BY m.id
LIMIT %(limit)s

-- name: jobs_dependency_fail
-- Waiting children given with the parent that failed them -> DLQ as DEPENDENCY_FAILED (11),
-- with counters and buckets (a cancelled workflow's blocked jobs).
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
pairs AS (
    SELECT * FROM unnest(%(children)b::uuid[], %(parents)b::uuid[]) AS v(child, parent)
),
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING pairs o
    WHERE h.id = o.child AND h.status = 3
    RETURNING h.*, o.parent, 11 AS failure_reason
),
buried AS (
-- include: fragment_dlq_insert
    SELECT
-- include: fragment_kept_columns
           , d.failure_reason,
           'Dependency failed: parent ' || d.parent::text || ' is in the DLQ; '
               || %(why)s::text,
           %(actor)s, %(actor)s, k.now, NULL, d.children
    FROM done d CROSS JOIN clock k
),
-- include: fragment_notify_waited
,
-- include: fragment_failed_counts
SELECT id::text FROM done
UNION ALL
SELECT NULL FROM told

-- ---------------------------------------------------------------------------------------------
-- Rate limits and partitions (the decisions are chokaq.storage.throttle's; see postgres/ratelimits)
-- ---------------------------------------------------------------------------------------------

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

-- name: queues_wake
-- Wake every worker of every queue (jobs_wake with no queues).
SELECT pg_notify(%(channel)s, 'j:' || name) FROM {schema}.queues

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

-- name: unique_keys_tidy
DELETE FROM {schema}.unique_keys WHERE until <= %(before)s

-- name: limit_state_tidy
DELETE FROM {schema}.limit_state WHERE tat < %(before)s

-- ---------------------------------------------------------------------------------------------
-- Bulk actions by filter over hot and archive, and run-now (bulk.py)
-- ---------------------------------------------------------------------------------------------

-- name: bulk_hot_ids
-- The hot rows an action by filter acts on: the newest created first (the preview's order).
SELECT id::text
FROM {schema}.jobs_hot
-- include: fragment_hot_filter
ORDER BY created_at DESC, id DESC
LIMIT %(cap)s

-- name: bulk_archive_ids
-- The archived rows an action by filter acts on: the newest finished first.
SELECT id::text
FROM {schema}.jobs_archive
-- include: fragment_archive_filter
ORDER BY finished_at DESC, id DESC
LIMIT %(cap)s

-- name: archive_requeue
-- Each archived row of %(ids)s -> a new Pending hot job with the id at the same place in
-- %(new_ids)s, in one statement. The archived row stays (write-once history); the new job's
-- created_by names it. Counters and buckets are not touched; the queues' workers are woken.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
source AS MATERIALIZED (
    SELECT p.new_id, a.id, a.queue, a.type, a.payload, a.tags, a.priority, a.max_attempts,
           a.timeout_seconds, a.partition_key
    FROM unnest(%(ids)b::uuid[], %(new_ids)b::uuid[]) AS p(old_id, new_id)
    JOIN {schema}.jobs_archive a ON a.id = p.old_id
),
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM source
),
-- include: fragment_ensure_queues
,
inserted AS (
    INSERT INTO {schema}.jobs_hot (
        id, queue, type, payload, tags, priority, status, attempt_count, max_attempts,
        timeout_seconds, scheduled_at, created_at, updated_at, created_by, last_modified_by,
        partition_key
    )
    SELECT s.new_id, s.queue, s.type, s.payload, s.tags, s.priority, 0, 0, s.max_attempts,
           s.timeout_seconds, k.now, k.now, k.now, 'requeue:' || s.id::text, %(actor)s,
           s.partition_key
    FROM source s CROSS JOIN clock k
    RETURNING id, queue
),
-- include: fragment_notify_inserted

-- name: archive_delete
-- As archive_purge: an archived parent whose children are still in hot (waiting, or about to
-- read its result) is kept; a deleted job takes its edges (as a child) and its failed attempts
-- with it. Counters are untouched.
WITH gone AS (
    DELETE FROM {schema}.jobs_archive a
    WHERE a.id = ANY(%(ids)b::uuid[])
      AND NOT EXISTS (
          SELECT 1 FROM {schema}.job_edges e
          JOIN {schema}.jobs_hot h ON h.id = e.child_id
          WHERE e.parent_id = a.id
      )
    RETURNING a.id
),
unlinked AS (
    DELETE FROM {schema}.job_edges e USING gone g WHERE e.child_id = g.id
),
forgot AS (
    DELETE FROM {schema}.job_attempts a USING gone g WHERE a.job_id = g.id
)
SELECT id::text FROM gone

-- name: jobs_run_now
-- Delayed Pending rows (due after now) become due now; the workers of their queues are woken
-- when the transaction commits.
WITH clock AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
),
moved AS (
    UPDATE {schema}.jobs_hot h
    SET scheduled_at = k.now, updated_at = k.now, last_modified_by = %(actor)s
    FROM clock k
    WHERE h.id = ANY(%(ids)b::uuid[]) AND h.status = 0 AND h.scheduled_at > k.now
    RETURNING h.id, h.queue
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || d.queue) FROM (SELECT DISTINCT queue FROM moved) d
)
SELECT id::text FROM moved
UNION ALL
SELECT NULL FROM woken

-- The claims area: the worker path of a job, from the claim (fetch) through start, heartbeat,
-- progress and release to the finalize that moves it out of hot; and the fragments every move out
-- of hot shares (kept columns, DLQ insert, counters and buckets, releasing children, telling
-- waiters).
-- Run by postgres/claims.py; conventions in connection.sql.

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

-- name: fragment_serving_queues
-- The queues a claim serves and each bulkhead's room, as ``serving`` (see jobs_fetch).
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
-- include: fragment_serving_queues
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

-- name: fragment_back_to_pending
-- A claimed row handed back: Pending again, its lease and progress cleared (``k.now``: the
-- clock), for jobs_release and the rescue of jobs fetched but never started.
UPDATE {schema}.jobs_hot h
SET status = 0,
    worker_id = NULL,
    lease_token = NULL,
    heartbeat_at = NULL,
    progress = NULL,
    updated_at = k.now

-- name: jobs_release
WITH
-- include: fragment_lease_input
-- include: fragment_back_to_pending
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

-- name: fragment_dlq_columns
-- The columns a row lands in when it moves to the DLQ (finalize, zombie rescue, cancel,
-- dependency failures): the kept ones, then those its SELECT gives in this order.
-- include: fragment_kept_columns
    , failure_reason, error, last_modified_by, cancelled_by, failed_at, duration_seconds,
    children

-- name: fragment_dlq_insert
-- The DLQ insert of every move but a finalize's (which adds the exception's class name).
INSERT INTO {schema}.jobs_dlq (
-- include: fragment_dlq_columns
)

-- name: fragment_failed_counts
-- The rows of ``done`` (moved to the DLQ at clock ``k``, each with its ``failure_reason``)
-- counted as failed: the queue's lifetime counter and its 1-second bucket per reason.
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
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 1, d.failure_reason, count(*), 0, 0,
           NULL, min(k.now)
    FROM done d, clock k
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

-- name: fragment_release_any
-- The children released on any outcome (after_outcome="any") of the jobs of ``done``, which went
-- to the DLQ: each such edge from one of them is satisfied, once, and its child counts its
-- ``parents_left`` down, going to Pending at zero and waking its queue's workers, as
-- fragment_release_children does for a parent that succeeded. A child that is itself in
-- ``done`` (cancelled in the same statement) goes where ``done`` takes it. A child enqueued
-- while its parent moved is counted on the parent's row but its edge is not in this snapshot:
-- so every parent with children is left in ``job_releases`` (``amiss``; moves to the DLQ are
-- rare, and a release finished twice does nothing), for jobs_release_missed to finish with a
-- fresh snapshot: right after a finalize, or in the elected worker's next rescue pass.
asat AS (
    UPDATE {schema}.job_edges e
    SET satisfied = true
    FROM done d
    WHERE e.parent_id = d.id AND e.any_outcome AND NOT e.satisfied
    RETURNING e.child_id
),
arel AS (
    UPDATE {schema}.jobs_hot c
    SET parents_left = greatest(c.parents_left - n.n, 0),
        status = CASE WHEN c.parents_left <= n.n THEN 0 ELSE 3 END, updated_at = k.now
    FROM (SELECT child_id, count(*) n FROM asat GROUP BY 1) n, clock k
    WHERE c.id = n.child_id AND c.status = 3 AND c.id NOT IN (SELECT id FROM done)
    RETURNING c.queue, c.status
),
awoke AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || queue) FROM arel WHERE status = 0 GROUP BY queue
),
amiss AS (
    INSERT INTO {schema}.job_releases (parent_id, created_at)
    SELECT d.id, k.now FROM done d, clock k WHERE d.children > 0
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

-- name: fragment_finalize_stats
-- The lifetime counter rows of a finalize's ``done`` rows, one per queue (each statement names
-- the counter it adds to, and adds it ON CONFLICT).
    SELECT d.queue, count(*), min(k.now)
    FROM done d, clock k
    GROUP BY d.queue
    ORDER BY d.queue
    ON CONFLICT (queue) DO UPDATE

-- name: fragment_finalize_bucket
-- The counts and durations of a finalize's 1-second metric bucket, from its ``done`` rows.
           count(*), count(d.du), coalesce(sum(d.du), 0), max(d.du), min(k.now)
    FROM done d, clock k

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
-- include: fragment_finalize_stats
    SET succeeded_total = s.succeeded_total + excluded.succeeded_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
buckets AS (
-- include: fragment_buckets_insert
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 0, -1,
-- include: fragment_finalize_bucket
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
-- error_type (et) is the class name of the exception that failed the job, when one did.
WITH v AS (
    SELECT * FROM json_to_recordset(%(moves)s::json)
        AS v(i uuid, w text, t uuid, k int, du float8, el float8, r int, e text, a text,
             et text)
),
-- include: fragment_finalize_clock
,
done AS (
    DELETE FROM {schema}.jobs_hot h
    USING v
    WHERE v.k = 1 AND h.id = v.i AND h.worker_id = v.w AND h.lease_token = v.t
      AND h.status + 0 IN (1, 2)  -- by primary key: see fragment_lease_input
    RETURNING h.*, v.du, v.r, v.e, v.a, v.et,
              h.started_at + v.el * interval '1 second' AS ended
),
buried AS (
    INSERT INTO {schema}.jobs_dlq (
-- include: fragment_dlq_columns
        , error_type
    )
    SELECT
-- include: fragment_kept_columns
           , d.r, d.e, d.last_modified_by, d.a, coalesce(d.ended, k.now), d.du, d.children,
           d.et
    FROM done d, clock k
),
-- include: fragment_release_any
,
-- include: fragment_notify_waited
,
stats AS (
    INSERT INTO {schema}.stats_summary AS s (queue, failed_total, last_activity_at)
-- include: fragment_finalize_stats
    SET failed_total = s.failed_total + excluded.failed_total,
        last_activity_at = greatest(s.last_activity_at, excluded.last_activity_at)
),
buckets AS (
-- include: fragment_buckets_insert
    SELECT 1, date_trunc('second', min(k.now)), d.queue, 1, d.r,
-- include: fragment_finalize_bucket
    GROUP BY 3, 5
    ORDER BY 3, 5
-- include: fragment_buckets_merge
)
SELECT id::text FROM done
UNION ALL
SELECT 'release' FROM amiss
UNION ALL
SELECT NULL FROM told
UNION ALL
SELECT NULL FROM awoke

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

-- name: jobs_release_missed
-- Finish the releases a move left in ``job_releases`` (see fragment_release_children), with a
-- snapshot taken after that move committed, so after the enqueue it waited for: each
-- unsatisfied edge from such a parent, now in the archive (or, for a child released on any
-- outcome, in the DLQ), is satisfied and counted down on its child, as the move does. Run by
-- the worker right after such a finalize, and by the elected worker's rescue pass (after a
-- crash in between, and for the other moves to the DLQ: cancel, rescue, dependency failure).
WITH m AS (
    DELETE FROM {schema}.job_releases RETURNING parent_id
),
sat AS (
    UPDATE {schema}.job_edges e
    SET satisfied = true
    FROM m
    WHERE e.parent_id = m.parent_id AND NOT e.satisfied
      AND (EXISTS (SELECT FROM {schema}.jobs_archive a WHERE a.id = m.parent_id)
           OR (e.any_outcome AND EXISTS (SELECT FROM {schema}.jobs_dlq q
                                         WHERE q.id = m.parent_id)))
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

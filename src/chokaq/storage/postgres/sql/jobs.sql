-- The jobs area: enqueue (queue rows, uniqueness windows, the dependency graph of a batch), the
-- operator's cancel, edit and advance of hot jobs.
-- Run by postgres/jobs.py; conventions in connection.sql.

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

-- name: fragment_enqueue_conflict
-- One job enqueued with on_conflict other than "keep" (docs/concepts.md, "Debounce, throttle,
-- latest wins"), decided in this one statement. A Pending holder of the key takes the new
-- payload in place (and, but for replace_payload, the new due time and expiry). A holder past
-- Pending (claimed, running, suspended) is never changed in place: it gives its key up to a
-- new job written after it, the supersession is recorded, and with cancel_running a claimed or
-- running one is asked to stop as jobs_cancel asks. Each update re-checks the holder's status
-- on the row as committed (a claim may have moved it since this statement's snapshot), and
-- the insert finds the key taken when a holder was committed after the snapshot: either way
-- the statement returns no row, and the caller runs it again. (No FOR UPDATE on the holder:
-- the updates lock the row they change, and a lock of its own cost a WAL record per enqueue.)
holder AS MATERIALIZED (
    SELECT h.id, h.status, h.queue FROM {schema}.jobs_hot h
    WHERE h.idempotency_key = (SELECT idempotency_key FROM input)
),
replaced AS (
    UPDATE {schema}.jobs_hot h
    SET payload = i.payload,
        scheduled_at = CASE WHEN %(keep_due)s THEN h.scheduled_at
            ELSE coalesce(i.run_at, c.now + make_interval(secs => i.delay_seconds), c.now) END,
        expires_at = CASE WHEN %(keep_due)s THEN h.expires_at
            ELSE coalesce(i.expires_at, c.now + make_interval(secs => i.expires_after)) END,
        updated_at = c.now
    FROM holder o, input i, clock c
    WHERE h.id = o.id AND o.status = 0 AND h.status = 0
    RETURNING h.id
),
released AS (
    UPDATE {schema}.jobs_hot h
    SET idempotency_key = NULL,
        cancel_requested_at = CASE WHEN %(cancel)s AND h.status < 3
            THEN coalesce(h.cancel_requested_at, c.now) ELSE h.cancel_requested_at END,
        cancelled_by = CASE WHEN %(cancel)s AND h.status < 3
            THEN 'superseded by ' || i.id::text ELSE h.cancelled_by END,
        updated_at = c.now
    FROM holder o, input i, clock c
    WHERE h.id = o.id AND o.status <> 0 AND h.status <> 0
      AND h.idempotency_key = i.idempotency_key
    RETURNING h.id, i.id AS by_id, %(cancel)s AND h.status < 3 AS cancel
),
recorded AS (
    INSERT INTO {schema}.job_supersessions (job_id, by_id, cancel_requested, at)
    SELECT r.id, r.by_id, r.cancel, c.now FROM released r CROSS JOIN clock c
),
inserted AS (
-- include: fragment_enqueue_columns
-- include: fragment_enqueue_rows
    -- The scalar subquery on released makes the key's release run before this insert looks
    -- at the unique index (a one-time filter is evaluated before the first row).
    WHERE NOT EXISTS (SELECT 1 FROM holder WHERE status = 0)
      AND (SELECT count(*) FROM released) >= 0
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue
),
counted AS (
    UPDATE {schema}.stats_summary s
    SET replaced_total = s.replaced_total + (SELECT count(*) FROM replaced),
        superseded_total = s.superseded_total + (SELECT count(*) FROM released)
    FROM holder o
    WHERE s.queue = o.queue
),
woken AS MATERIALIZED (
    SELECT pg_notify(%(channel)s, 'j:' || queue) FROM inserted
    UNION ALL
    SELECT pg_notify(%(channel)s, 'c:' || id::text) FROM released WHERE cancel
)
-- What happened: 0 replaced, 1 inserted, 2 superseded (inserted after a release).
SELECT 0::bigint, id::text FROM replaced
UNION ALL
SELECT 1 + (SELECT count(*) FROM released), id::text FROM inserted
UNION ALL
SELECT NULL, NULL FROM woken

-- name: jobs_enqueue_conflict
-- fragment_enqueue_conflict on a queue this process has not ensured yet.
WITH
-- include: fragment_enqueue_input
,
names AS MATERIALIZED (
    SELECT DISTINCT queue FROM input
),
-- include: fragment_ensure_queues
,
-- include: fragment_enqueue_conflict

-- name: jobs_enqueue_conflict_known
-- fragment_enqueue_conflict on a known queue (its rows are never deleted).
WITH
-- include: fragment_enqueue_input
,
-- include: fragment_enqueue_conflict

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

-- name: jobs_cancel_lock
-- Run before jobs_cancel in its transaction: waits for a claim, start or finalize holding one
-- of the rows, so that jobs_cancel sees each row as committed. In id order: two cancels of
-- overlapping sets cannot deadlock.
SELECT h.id FROM {schema}.jobs_hot h
WHERE h.id = ANY(%(ids)b::uuid[])
ORDER BY h.id
FOR UPDATE

-- name: jobs_cancel
-- Pending, Fetched, Waiting and Suspended rows go to the DLQ as CANCELLED at once (with
-- counters and buckets);
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
-- include: fragment_release_any
,
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
UNION ALL
SELECT NULL, NULL FROM awoke

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
-- An edge is satisfied once its parent is in the archive, or, for a child released on any
-- outcome, in the DLQ (then, or later by the release).
INSERT INTO {schema}.job_edges (
    child_id, parent_id, workflow_id, satisfied, created_at, any_outcome, arg_position
)
SELECT c, p, w, s, coalesce(%(now)s::timestamptz, now()), a, n
FROM unnest(
    %(children)b::uuid[], %(parents)b::uuid[], %(workflows)b::uuid[], %(satisfied)b::bool[],
    %(any)b::bool[], %(arguments)b::integer[]
) AS v(c, p, w, s, a, n)

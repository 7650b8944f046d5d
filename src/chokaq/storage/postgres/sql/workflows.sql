-- The workflows area: where a job is (its outcome), its parents' results, its relatives, the
-- members of a workflow, and the failure of children whose parent is in the DLQ.
-- Run by postgres/workflows.py; conventions in connection.sql.

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
SELECT 'hot', h.status, b.failure_reason, NULL::text, NULL::text, NULL::text, b.id::text,
       NULL::text
FROM {schema}.jobs_hot h LEFT JOIN blocker b ON true
WHERE h.id = %(id)s::uuid
UNION ALL
SELECT 'archive', NULL, NULL, NULL, result, result_error, NULL, NULL
FROM {schema}.jobs_archive WHERE id = %(id)s::uuid
UNION ALL
SELECT 'dlq', NULL, failure_reason, error, NULL, NULL, NULL, error_type
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

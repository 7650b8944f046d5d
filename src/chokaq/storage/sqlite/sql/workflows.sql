-- The workflows area: where a job is (its outcome), its parents' results, its relatives, the
-- members of a workflow, and the failure of children whose parent is in the DLQ.
-- Run by sqlite/workflows.py; conventions in connection.sql.

-- name: job_watch
UPDATE {p}jobs_hot SET waited = 1 WHERE id = :id AND waited IS NOT 1 RETURNING status

-- name: job_outcome
-- As on PostgreSQL: a Waiting job names the first job in the DLQ it waits on, directly or
-- through parents that wait themselves (that job's reason in the reason column).
WITH RECURSIVE up(id) AS (
    SELECT e.parent_id
    FROM {p}jobs_hot h JOIN {p}job_edges e ON e.child_id = h.id
    WHERE h.id = :id AND h.status = 3
    UNION
    SELECT e.parent_id
    FROM up JOIN {p}jobs_hot h ON h.id = up.id AND h.status = 3
    JOIN {p}job_edges e ON e.child_id = h.id
),
blocker AS (
    SELECT d.id, d.failure_reason
    FROM up JOIN {p}jobs_dlq d ON d.id = up.id
    ORDER BY d.failed_at, d.id
    LIMIT 1
)
SELECT 'hot', h.status, b.failure_reason, NULL, NULL, NULL, b.id, NULL
FROM {p}jobs_hot h LEFT JOIN blocker b ON 1
WHERE h.id = :id
UNION ALL
SELECT 'archive', NULL, NULL, NULL, result, result_error, NULL, NULL
FROM {p}jobs_archive WHERE id = :id
UNION ALL
SELECT 'dlq', NULL, failure_reason, error, NULL, NULL, NULL, error_type
FROM {p}jobs_dlq WHERE id = :id

-- name: job_parent_results
SELECT e.parent_id, a.result, a.result_error
FROM {p}job_edges e
JOIN {p}jobs_archive a ON a.id = e.parent_id
WHERE e.child_id = :id

-- name: job_relatives
SELECT l.id, l.side, l.workflow_id, coalesce(h.type, a.type, d.type), h.status,
       a.id IS NOT NULL, d.failure_reason,
       coalesce(h.status = 3 AND EXISTS (SELECT 1 FROM {p}job_edges x
                                         JOIN {p}jobs_dlq q ON q.id = x.parent_id
                                         WHERE x.child_id = l.id), 0)
FROM (
    SELECT * FROM (SELECT e.parent_id AS id, 0 AS side, e.workflow_id, e.created_at
                   FROM {p}job_edges e WHERE e.child_id = :id
                   ORDER BY e.created_at, e.parent_id LIMIT :limit)
    UNION ALL
    SELECT * FROM (SELECT e.child_id, 1, e.workflow_id, e.created_at
                   FROM {p}job_edges e WHERE e.parent_id = :id
                   ORDER BY e.created_at, e.child_id LIMIT :limit)
) AS l
LEFT JOIN {p}jobs_hot h ON h.id = l.id
LEFT JOIN {p}jobs_archive a ON a.id = l.id
LEFT JOIN {p}jobs_dlq d ON d.id = l.id
ORDER BY l.side, l.created_at, l.id

-- name: workflow_members
WITH e AS (
    SELECT child_id, parent_id FROM {p}job_edges WHERE workflow_id = :id
),
members AS (
    SELECT child_id AS id FROM e UNION SELECT parent_id FROM e
)
SELECT m.id, coalesce(h.type, a.type, d.type), coalesce(h.queue, a.queue, d.queue),
       h.status, a.id IS NOT NULL, d.failure_reason, d.error,
       (SELECT group_concat(x.parent_id, ',') FROM (SELECT parent_id FROM e
                                                    WHERE e.child_id = m.id
                                                    ORDER BY parent_id) x)
FROM members m
LEFT JOIN {p}jobs_hot h ON h.id = m.id
LEFT JOIN {p}jobs_archive a ON a.id = m.id
LEFT JOIN {p}jobs_dlq d ON d.id = m.id
ORDER BY m.id
LIMIT :limit

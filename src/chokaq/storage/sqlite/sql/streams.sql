-- Streams (see the PostgreSQL file of the same name): the items a job emits, in order, written
-- under its lease, read by anyone, removed once their job is in no pillar. SQLite's single
-- writer serialises each emit's transaction (``streams``), so no row lock is taken.

-- name: streams_owner
-- The leased Processing row an emit writes for, and whether someone reads its stream.
SELECT h.waited
FROM {p}jobs_hot h
WHERE h.id = :id AND h.worker_id = :worker_id AND h.lease_token = :token AND h.status = 2

-- name: streams_emit
-- An item at :index, only at the stream's end (run in the transaction of streams_owner's
-- check): the items stay 0, 1, 2, ... with no gap.
INSERT INTO {p}job_stream (job_id, idx, item, created_at)
SELECT :id, :index, :item, :now
WHERE :index = coalesce((SELECT max(s.idx) + 1 FROM {p}job_stream s WHERE s.job_id = :id), 0)
ON CONFLICT (job_id, idx) DO NOTHING

-- name: streams_read
SELECT job_id, idx, item, created_at
FROM {p}job_stream
WHERE job_id = :id AND idx >= :from
ORDER BY idx
LIMIT :limit

-- name: streams_length
SELECT coalesce(max(idx) + 1, 0) FROM {p}job_stream WHERE job_id = :id

-- name: streams_tidy
DELETE FROM {p}job_stream
WHERE job_id IN (
    SELECT DISTINCT x.job_id FROM {p}job_stream x
    WHERE NOT EXISTS (SELECT 1 FROM {p}jobs_hot h WHERE h.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {p}jobs_archive a WHERE a.id = x.job_id)
      AND NOT EXISTS (SELECT 1 FROM {p}jobs_dlq d WHERE d.id = x.job_id)
    LIMIT :limit
)

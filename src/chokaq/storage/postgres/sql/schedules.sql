-- The schedules area: periodic schedules, declared by workers, fired slot by slot under compare-
-- and-set, and their history.
-- Run by postgres/schedules.py; conventions in connection.sql.

-- name: schedules_declare
-- One row per declaration (arrays of equal length). The code owns type, queue, priority,
-- expires_after_seconds, misfire, overlap and declared_*; what is in force follows the code unless an operator's edit
-- is (edited_by set). A change of timing in force restarts the slots from now.
INSERT INTO {schema}.schedules AS s (
    name, type, queue, priority, cron, every_seconds, timezone, kwargs, misfire, overlap,
    declared_cron, declared_every_seconds, declared_timezone, declared_kwargs,
    last_slot, next_slot, seen_at, created_at, updated_at, expires_after_seconds)
SELECT d.name, d.type, d.queue, d.priority, d.cron, d.every, d.tz, d.kwargs, d.misfire, d.overlap,
       d.cron, d.every, d.tz, d.kwargs,
       %(now)s, d.next_slot, %(now)s, %(now)s, %(now)s, d.expires
FROM unnest(%(names)s::text[], %(types)s::text[], %(queues)s::text[], %(priorities)s::int[],
            %(crons)s::text[], %(everies)s::float8[], %(tzs)s::text[], %(kwargs)s::text[],
            %(misfires)s::text[], %(overlaps)s::bool[], %(next_slots)s::timestamptz[],
            %(expiries)s::float8[])
     AS d(name, type, queue, priority, cron, every, tz, kwargs, misfire, overlap, next_slot,
          expires)
ON CONFLICT (name) DO UPDATE
SET type = excluded.type,
    queue = excluded.queue,
    priority = excluded.priority,
    expires_after_seconds = excluded.expires_after_seconds,
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
    revision = CASE WHEN (s.type, s.queue, s.priority, s.misfire, s.overlap,
                          s.expires_after_seconds)
                         IS DISTINCT FROM (excluded.type, excluded.queue, excluded.priority,
                                           excluded.misfire, excluded.overlap,
                                           excluded.expires_after_seconds)
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
       h.status, a.id IS NOT NULL, d.failure_reason, s.expires_after_seconds
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

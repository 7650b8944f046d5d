-- The schedules area: periodic schedules, declared by workers, fired slot by slot under compare-
-- and-set, and their history.
-- Run by sqlite/schedules.py; conventions in connection.sql.

-- name: schedules_declare
-- One declaration (run once per declaration, in one transaction). The code owns type, queue,
-- priority, expires_after_seconds, misfire, overlap and declared_*; what is in force follows the code unless an
-- operator's edit is (edited_by set). A change of timing in force restarts the slots from now.
INSERT INTO {p}schedules AS s (
    name, type, queue, priority, cron, every_seconds, timezone, kwargs, misfire, overlap,
    declared_cron, declared_every_seconds, declared_timezone, declared_kwargs,
    last_slot, next_slot, seen_at, created_at, updated_at, expires_after_seconds)
VALUES (:name, :type, :queue, :priority, :cron, :every, :tz, :kwargs, :misfire, :overlap,
        :cron, :every, :tz, :kwargs, :now, :next_slot, :now, :now, :now, :expires)
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
                      AND (s.cron IS NOT excluded.cron
                           OR s.every_seconds IS NOT excluded.every_seconds
                           OR s.timezone IS NOT excluded.timezone)
                     THEN excluded.last_slot ELSE s.last_slot END,
    next_slot = CASE WHEN s.edited_by IS NULL
                      AND (s.cron IS NOT excluded.cron
                           OR s.every_seconds IS NOT excluded.every_seconds
                           OR s.timezone IS NOT excluded.timezone)
                     THEN excluded.next_slot ELSE s.next_slot END,
    revision = CASE WHEN s.type IS NOT excluded.type OR s.queue IS NOT excluded.queue
                      OR s.priority IS NOT excluded.priority
                      OR s.expires_after_seconds IS NOT excluded.expires_after_seconds
                      OR s.misfire IS NOT excluded.misfire OR s.overlap IS NOT excluded.overlap
                      OR (s.edited_by IS NULL
                          AND (s.cron IS NOT excluded.cron
                               OR s.every_seconds IS NOT excluded.every_seconds
                               OR s.timezone IS NOT excluded.timezone
                               OR s.kwargs IS NOT excluded.kwargs))
                    THEN s.revision + 1 ELSE s.revision END,
    seen_at = excluded.seen_at,
    updated_at = excluded.updated_at

-- name: schedules_seen
UPDATE {p}schedules SET seen_at = :now WHERE name IN (SELECT value FROM json_each(:names))

-- name: schedules_list
-- The schedules, with where each one's last job is now: its hot status, or in the archive, or
-- its DLQ failure reason (all NULL: gone, or never run).
SELECT s.name, s.type, s.queue, s.priority, s.cron, s.every_seconds, s.timezone, s.kwargs,
       s.misfire, s.overlap, s.paused, s.declared_cron, s.declared_every_seconds,
       s.declared_timezone, s.declared_kwargs, s.edited_by, s.edited_at, s.revision,
       s.last_slot, s.next_slot, s.last_job_id, s.last_run_at, s.seen_at, s.created_at,
       s.updated_at, s.last_modified_by,
       h.status, a.id IS NOT NULL, d.failure_reason, s.expires_after_seconds
FROM {p}schedules s
LEFT JOIN {p}jobs_hot h ON h.id = s.last_job_id
LEFT JOIN {p}jobs_archive a ON a.id = s.last_job_id
LEFT JOIN {p}jobs_dlq d ON d.id = s.last_job_id
WHERE (:names IS NULL OR s.name IN (SELECT value FROM json_each(:names)))
  AND (:due_at IS NULL OR (s.paused = 0 AND s.next_slot <= :due_at))
  AND (:seen_since IS NULL OR s.seen_at >= :seen_since)
ORDER BY s.name

-- name: schedule_history
SELECT slot, outcome, job_id, detail, recorded_at
FROM {p}schedule_slots
WHERE name = :name
ORDER BY id DESC
LIMIT :limit

-- name: schedule_advance
-- The compare-and-set a slot is enqueued under: the row moves on only from what was read
-- (times are REAL seconds: equal to the microsecond).
UPDATE {p}schedules
SET last_slot = :new_last_slot, next_slot = :next_slot
WHERE name = :name AND revision = :revision AND abs(last_slot - :last_slot) < 0.0000005
RETURNING last_job_id

-- name: schedule_lock
SELECT last_job_id FROM {p}schedules WHERE name = :name

-- name: schedule_unfinished
SELECT 1 FROM {p}jobs_hot WHERE id = :id

-- name: schedule_ran
UPDATE {p}schedules SET last_job_id = :job_id, last_run_at = :now WHERE name = :name

-- name: schedule_record
INSERT INTO {p}schedule_slots (name, slot, outcome, job_id, detail, recorded_at)
VALUES (:name, :slot, :outcome, :job_id, :detail, :now)

-- name: schedule_trim
-- Keep each schedule's newest 100 records.
DELETE FROM {p}schedule_slots
WHERE name = :name
  AND id < (SELECT min(id) FROM (SELECT id FROM {p}schedule_slots
                                 WHERE name = :name ORDER BY id DESC LIMIT 100))

-- name: schedule_update
UPDATE {p}schedules
SET paused = :paused,
    cron = :cron,
    every_seconds = :every,
    timezone = :tz,
    kwargs = :kwargs,
    edited_by = CASE WHEN :edited THEN :actor END,
    edited_at = CASE WHEN :edited THEN :now END,
    last_slot = coalesce(:restart_at, last_slot),
    next_slot = CASE WHEN :restart_at IS NULL THEN next_slot ELSE :next_slot END,
    revision = revision + 1,
    updated_at = :now,
    last_modified_by = :actor
WHERE name = :name AND revision = :revision

-- name: schedule_delete_slots
DELETE FROM {p}schedule_slots WHERE name = :name

-- name: schedule_delete
DELETE FROM {p}schedules WHERE name = :name

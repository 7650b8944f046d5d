-- A dead job's exception class name and a schedule's expiry (see the PostgreSQL migration of
-- the same number).
ALTER TABLE {p}jobs_dlq ADD COLUMN error_type TEXT;
ALTER TABLE {p}schedules ADD COLUMN expires_after_seconds REAL;

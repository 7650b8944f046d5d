-- Callbacks on any outcome and results passed as arguments: see the PostgreSQL migration of
-- the same number for the design.
ALTER TABLE {p}job_edges ADD COLUMN any_outcome INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}job_edges ADD COLUMN arg_position INTEGER;

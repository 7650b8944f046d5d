-- Enqueue conflicts (see the PostgreSQL migration of the same number).
ALTER TABLE {p}stats_summary
    ADD COLUMN replaced_total INTEGER NOT NULL DEFAULT 0 CHECK (replaced_total >= 0);
ALTER TABLE {p}stats_summary
    ADD COLUMN superseded_total INTEGER NOT NULL DEFAULT 0 CHECK (superseded_total >= 0);

CREATE TABLE {p}job_supersessions (
    job_id           TEXT PRIMARY KEY,
    by_id            TEXT NOT NULL,
    cancel_requested INTEGER NOT NULL,
    at               REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX {p}job_supersessions_by ON {p}job_supersessions (by_id);

-- Expiry and uniqueness windows (see the PostgreSQL migration of the same number).
ALTER TABLE {p}jobs_hot ADD COLUMN expires_at REAL;
CREATE INDEX {p}jobs_hot_expiry ON {p}jobs_hot (expires_at)
    WHERE expires_at IS NOT NULL AND status = 0 AND attempt_count = 0;

CREATE TABLE {p}unique_keys (
    key        TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL,
    until      REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX {p}unique_keys_until ON {p}unique_keys (until);

-- Rate limits and partitions (see the PostgreSQL migration of the same number for the design).
ALTER TABLE {p}jobs_hot ADD COLUMN partition_key TEXT;
ALTER TABLE {p}jobs_archive ADD COLUMN partition_key TEXT;
ALTER TABLE {p}jobs_dlq ADD COLUMN partition_key TEXT;

DROP INDEX {p}jobs_hot_fetch;
DROP INDEX {p}jobs_hot_fetch_order;
CREATE INDEX {p}jobs_hot_fetch ON {p}jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0 AND partition_key IS NULL;
CREATE INDEX {p}jobs_hot_fetch_order ON {p}jobs_hot
    (priority DESC, scheduled_at, created_at) WHERE status = 0 AND partition_key IS NULL;
CREATE INDEX {p}jobs_hot_partition ON {p}jobs_hot
    (type, partition_key, priority DESC, scheduled_at, created_at)
    WHERE status = 0 AND partition_key IS NOT NULL;

CREATE TABLE {p}limits (
    scope                TEXT NOT NULL CHECK (scope IN ('queue', 'type')),
    name                 TEXT NOT NULL,
    declared_rate        TEXT,
    declared_concurrency INTEGER,
    rate_set             INTEGER NOT NULL DEFAULT 0,
    concurrency_set      INTEGER NOT NULL DEFAULT 0,
    rate                 TEXT,
    interval_seconds     REAL,
    burst                INTEGER,
    concurrency          INTEGER CHECK (concurrency IS NULL OR concurrency >= 1),
    cursor               TEXT,
    updated_at           REAL NOT NULL,
    last_modified_by     TEXT,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;

CREATE TABLE {p}limit_state (
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    partition_key TEXT NOT NULL,
    tat           REAL NOT NULL,
    PRIMARY KEY (scope, name, partition_key)
) WITHOUT ROWID;

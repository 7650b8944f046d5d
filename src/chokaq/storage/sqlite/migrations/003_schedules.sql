-- Periodic schedules: one row per schedule, upserted from the code's declarations when a worker
-- starts and edited by operators. The columns without a prefix are what is in force; declared_*
-- are what the code last said (they differ while an operator's edit is in force, edited_by set).
-- last_slot is the compare-and-set target: a slot is enqueued by moving last_slot from the value
-- read to the slot's due time, in the same transaction as the enqueue, so that no slot is ever
-- enqueued twice or skipped by two workers at once. revision grows with every change of what is
-- in force, so a slot planned from an old reading enqueues nothing.
CREATE TABLE {p}schedules (
    name                   TEXT PRIMARY KEY,
    type                   TEXT NOT NULL,
    queue                  TEXT NOT NULL,
    priority               INTEGER NOT NULL,
    cron                   TEXT,
    every_seconds          REAL,
    timezone               TEXT NOT NULL,
    kwargs                 TEXT NOT NULL,
    misfire                TEXT NOT NULL CHECK (misfire IN ('skip', 'latest', 'all')),
    overlap                INTEGER NOT NULL,
    paused                 INTEGER NOT NULL DEFAULT 0,
    declared_cron          TEXT,
    declared_every_seconds REAL,
    declared_timezone      TEXT NOT NULL,
    declared_kwargs        TEXT NOT NULL,
    edited_by              TEXT,
    edited_at              REAL,
    revision               INTEGER NOT NULL DEFAULT 1,
    last_slot              REAL NOT NULL,
    next_slot              REAL,
    last_job_id            TEXT,
    last_run_at            REAL,
    seen_at                REAL NOT NULL,
    created_at             REAL NOT NULL,
    updated_at             REAL NOT NULL,
    last_modified_by       TEXT,
    CHECK ((cron IS NULL) <> (every_seconds IS NULL))
);
-- What the elected worker reads every tick: the schedules that are due.
CREATE INDEX {p}schedules_due ON {p}schedules (next_slot) WHERE paused = 0;

-- Each schedule's recent slots (the newest 100 are kept; deleted with their schedule): enqueued, triggered, skipped, missed.
CREATE TABLE {p}schedule_slots (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    slot        REAL NOT NULL,
    outcome     TEXT NOT NULL,
    job_id      TEXT,
    detail      TEXT,
    recorded_at REAL NOT NULL
);
CREATE INDEX {p}schedule_slots_name ON {p}schedule_slots (name, id DESC);

-- Periodic schedules: one row per schedule, upserted from the code's declarations when a worker
-- starts and edited by operators. The columns without a prefix are what is in force; declared_*
-- are what the code last said (they differ while an operator's edit is in force, edited_by set).
-- last_slot is the compare-and-set target: a slot is enqueued by moving last_slot from the value
-- read to the slot's due time, in the same transaction as the enqueue, so that no slot is ever
-- enqueued twice or skipped by two workers at once. revision grows with every change of what is
-- in force, so a slot planned from an old reading enqueues nothing.
CREATE TABLE {schema}.schedules (
    name                   text PRIMARY KEY,
    type                   text NOT NULL,
    queue                  text NOT NULL,
    priority               integer NOT NULL,
    cron                   text,
    every_seconds          double precision,
    timezone               text NOT NULL,
    kwargs                 text NOT NULL,
    misfire                text NOT NULL CHECK (misfire IN ('skip', 'latest', 'all')),
    overlap                boolean NOT NULL,
    paused                 boolean NOT NULL DEFAULT false,
    declared_cron          text,
    declared_every_seconds double precision,
    declared_timezone      text NOT NULL,
    declared_kwargs        text NOT NULL,
    edited_by              text,
    edited_at              timestamptz,
    revision               bigint NOT NULL DEFAULT 1,
    last_slot              timestamptz NOT NULL,
    next_slot              timestamptz,
    last_job_id            uuid,
    last_run_at            timestamptz,
    seen_at                timestamptz NOT NULL,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    last_modified_by       text,
    CHECK ((cron IS NULL) <> (every_seconds IS NULL))
);
-- What the elected worker reads every tick: the schedules that are due.
CREATE INDEX schedules_due ON {schema}.schedules (next_slot) WHERE NOT paused;

-- Each schedule's recent slots (the newest 100 are kept; deleted with their schedule): enqueued, triggered, skipped, missed.
CREATE TABLE {schema}.schedule_slots (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    slot        timestamptz NOT NULL,
    outcome     text NOT NULL,
    job_id      uuid,
    detail      text,
    recorded_at timestamptz NOT NULL
);
CREATE INDEX schedule_slots_name ON {schema}.schedule_slots (name, id DESC);

-- The Three Pillars schema on PostgreSQL. "{schema}" is replaced by the quoted schema name
-- through psycopg's sql.Identifier; literal braces are doubled.

CREATE SCHEMA IF NOT EXISTS {schema};

-- Pillar 1: active work only (0 Pending, 1 Fetched, 2 Processing).
CREATE TABLE {schema}.jobs_hot (
    id                  uuid PRIMARY KEY,
    queue               text NOT NULL,
    type                text NOT NULL,
    payload             text NOT NULL,
    tags                text,
    idempotency_key     text,
    priority            integer NOT NULL DEFAULT 10,
    status              smallint NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    attempt_count       integer NOT NULL DEFAULT 0,
    max_attempts        integer,
    timeout_seconds     double precision,
    worker_id           text,
    lease_token         uuid,
    heartbeat_at        timestamptz,
    scheduled_at        timestamptz NOT NULL,  -- when the job is due (now, unless delayed)
    created_at          timestamptz NOT NULL,
    started_at          timestamptz,
    updated_at          timestamptz NOT NULL,
    created_by          text,
    last_modified_by    text,
    progress            smallint,
    last_error          text,
    cancel_requested_at timestamptz,
    cancelled_by        text,
    trace_context       text
) WITH (fillfactor = 80);

-- The fetch path: only pending rows are in this index, in the exact claim order within a queue
-- (priority DESC, then due time, then creation), so a fetch walks it in order and stops after
-- LIMIT rows. scheduled_at is always set (the due time) so that the order needs no expression.
CREATE INDEX jobs_hot_fetch ON {schema}.jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0;
CREATE UNIQUE INDEX jobs_hot_idempotency ON {schema}.jobs_hot (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Fetched and Processing rows: bulkhead counts, rescue and the live counts read this. It is the
-- only other index a claim has to maintain: every index on jobs_hot costs each claim an insert,
-- and heartbeats stay HOT updates because heartbeat_at and updated_at are not indexed.
CREATE INDEX jobs_hot_active ON {schema}.jobs_hot (queue, status) WHERE status IN (1, 2);

-- Pillar 2: succeeded jobs, write-once.
CREATE TABLE {schema}.jobs_archive (
    id                  uuid PRIMARY KEY,
    queue               text NOT NULL,
    type                text NOT NULL,
    payload             text NOT NULL,
    tags                text,
    priority            integer NOT NULL,
    attempt_count       integer NOT NULL,
    max_attempts        integer,
    timeout_seconds     double precision,
    worker_id           text,
    created_by          text,
    last_modified_by    text,
    created_at          timestamptz NOT NULL,
    started_at          timestamptz,
    finished_at         timestamptz NOT NULL,
    duration_seconds    double precision
);
CREATE INDEX jobs_archive_finished ON {schema}.jobs_archive (finished_at DESC);
CREATE INDEX jobs_archive_queue ON {schema}.jobs_archive (queue, finished_at DESC);

-- Pillar 3: terminal failures, with the reason and the error.
CREATE TABLE {schema}.jobs_dlq (
    id                  uuid PRIMARY KEY,
    queue               text NOT NULL,
    type                text NOT NULL,
    payload             text NOT NULL,
    tags                text,
    priority            integer NOT NULL,
    failure_reason      smallint NOT NULL,
    error               text,
    attempt_count       integer NOT NULL,
    max_attempts        integer,
    timeout_seconds     double precision,
    worker_id           text,
    created_by          text,
    last_modified_by    text,
    cancelled_by        text,
    created_at          timestamptz NOT NULL,
    started_at          timestamptz,
    failed_at           timestamptz NOT NULL,
    duration_seconds    double precision
);
CREATE INDEX jobs_dlq_failed ON {schema}.jobs_dlq (failed_at DESC);
CREATE INDEX jobs_dlq_queue ON {schema}.jobs_dlq (queue, failed_at DESC);
CREATE INDEX jobs_dlq_reason ON {schema}.jobs_dlq (failure_reason, failed_at DESC);
CREATE INDEX jobs_dlq_type ON {schema}.jobs_dlq (type, failed_at DESC);

-- Lifetime counters per queue: only ever incremented.
CREATE TABLE {schema}.stats_summary (
    queue               text PRIMARY KEY,
    succeeded_total     bigint NOT NULL DEFAULT 0 CHECK (succeeded_total >= 0),
    failed_total        bigint NOT NULL DEFAULT 0 CHECK (failed_total >= 0),
    retried_total       bigint NOT NULL DEFAULT 0 CHECK (retried_total >= 0),
    last_activity_at    timestamptz
);

-- Rolling outcomes: one row per (width, bucket start, queue, outcome, reason).
-- width_seconds is 1 for live buckets and 60 for the minute roll-ups.
CREATE TABLE {schema}.metric_buckets (
    width_seconds          smallint NOT NULL DEFAULT 1,
    bucket_start           timestamptz NOT NULL,
    queue                  text NOT NULL,
    outcome                smallint NOT NULL CHECK (outcome IN (0, 1)),
    failure_reason         smallint NOT NULL,
    completed_count        bigint NOT NULL DEFAULT 0 CHECK (completed_count >= 0),
    duration_count         bigint NOT NULL DEFAULT 0 CHECK (duration_count >= 0),
    total_duration_seconds double precision NOT NULL DEFAULT 0,
    max_duration_seconds   double precision,
    updated_at             timestamptz NOT NULL,
    PRIMARY KEY (width_seconds, bucket_start, queue, outcome, failure_reason)
);

-- The control plane.
CREATE TABLE {schema}.queues (
    name                      text PRIMARY KEY,
    paused                    boolean NOT NULL DEFAULT false,
    active                    boolean NOT NULL DEFAULT true,
    max_workers               integer CHECK (max_workers IS NULL OR max_workers >= 1),
    zombie_timeout_seconds    double precision,
    execution_timeout_seconds double precision,
    updated_at                timestamptz NOT NULL,
    last_modified_by          text
);

-- Live worker processes and what operators asked of them.
CREATE TABLE {schema}.workers (
    id                  text PRIMARY KEY,
    hostname            text NOT NULL,
    pid                 integer NOT NULL,
    queues              text,
    concurrency         integer NOT NULL,
    desired_concurrency integer,
    running             integer NOT NULL DEFAULT 0,
    state               text NOT NULL,
    circuits            text NOT NULL DEFAULT '[]',
    close_circuits      text NOT NULL DEFAULT '[]',
    started_at          timestamptz NOT NULL,
    heartbeat_at        timestamptz NOT NULL
);

INSERT INTO {schema}.queues (name, updated_at) VALUES ('default', now());
INSERT INTO {schema}.stats_summary (queue) VALUES ('default');

-- Archive and DLQ payloads are cold: compress them with lz4 where the server was built with it,
-- and keep the default (pglz) where it was not.
DO $$
BEGIN
    ALTER TABLE {schema}.jobs_archive ALTER COLUMN payload SET COMPRESSION lz4;
    ALTER TABLE {schema}.jobs_dlq ALTER COLUMN payload SET COMPRESSION lz4;
    ALTER TABLE {schema}.jobs_dlq ALTER COLUMN error SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'lz4 compression is not available; payloads use the server default';
END
$$;

-- Rate limits and partitions. A job enqueued with a partition carries it in partition_key
-- (kept in the archive and the DLQ for history and filters). Pending partitioned jobs leave the
-- queue's fetch index for their own, ordered by type and partition, so that a claim can walk a
-- type's partitions in turn (one index probe per partition) without reading past a hot one.
ALTER TABLE {schema}.jobs_hot ADD COLUMN partition_key text;
ALTER TABLE {schema}.jobs_archive ADD COLUMN partition_key text;
ALTER TABLE {schema}.jobs_dlq ADD COLUMN partition_key text;

DROP INDEX {schema}.jobs_hot_fetch;
CREATE INDEX jobs_hot_fetch ON {schema}.jobs_hot
    (queue, priority DESC, scheduled_at, created_at) WHERE status = 0 AND partition_key IS NULL;
CREATE INDEX jobs_hot_partition ON {schema}.jobs_hot
    (type, partition_key, priority DESC, scheduled_at, created_at)
    WHERE status = 0 AND partition_key IS NOT NULL;

-- One row per limited queue or job type. declared_* is what the code says (@app.job, written
-- by the workers that serve the type); an operator's setting overrides it (rate_set,
-- concurrency_set) until reset. rate, interval_seconds, burst and concurrency are the limits in
-- force. cursor is the partition the last claim of the type served (the walk goes on after it).
-- The row is locked by every claim that spends it, so that claims of a limited key take turns.
CREATE TABLE {schema}.limits (
    scope                text NOT NULL CHECK (scope IN ('queue', 'type')),
    name                 text NOT NULL,
    declared_rate        text,
    declared_concurrency integer,
    rate_set             boolean NOT NULL DEFAULT false,
    concurrency_set      boolean NOT NULL DEFAULT false,
    rate                 text,
    interval_seconds     double precision,
    burst                integer,
    concurrency          integer CHECK (concurrency IS NULL OR concurrency >= 1),
    cursor               text,
    updated_at           timestamptz NOT NULL,
    last_modified_by     text,
    PRIMARY KEY (scope, name)
);

-- The rate state of one key (a queue, a type, or one partition of a type: partition_key '' for
-- the type as a whole): the theoretical time of its next start, in epoch seconds. A key whose
-- time has passed has its whole burst, so old rows are deleted by the maintenance tidy.
CREATE TABLE {schema}.limit_state (
    scope         text NOT NULL,
    name          text NOT NULL,
    partition_key text NOT NULL,
    tat           double precision NOT NULL,
    PRIMARY KEY (scope, name, partition_key)
);

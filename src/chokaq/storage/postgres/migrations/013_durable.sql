-- Durable jobs (issue 34; docs/durable.md). A durable job that sleeps, waits for an event or
-- gathers its children goes to status 4 (Suspended): no partial index of the fetch path holds
-- it, it has no worker, no lease and no attempt counted, until its time (wake_at), its event
-- (event_key) or its children's end (gathering) comes; the move back to Pending is one
-- statement (durable_wake, events_send).
--
-- job_steps records what a durable job did, keyed by (job, step name): a step's return value
-- or error, a sleep's end, a wait's event data or timeout. A row is written by one short,
-- lease-fenced statement; the handler's replay returns the recorded outcome. The rows outlive
-- a move to the archive or the DLQ (a requeued job replays them) and are removed with their job
-- (durable_tidy removes the rows of jobs in no pillar).
--
-- job_events holds events sent while no job waited on their key, for the first job that waits
-- on it, until expires_at (7 days after sending; docs/durable.md).
ALTER TABLE {schema}.jobs_hot DROP CONSTRAINT IF EXISTS jobs_hot_status_check;
ALTER TABLE {schema}.jobs_hot ADD CONSTRAINT jobs_hot_status_check
    CHECK (status IN (0, 1, 2, 3, 4));
ALTER TABLE {schema}.jobs_hot
    ADD COLUMN wake_at timestamptz,
    ADD COLUMN event_key text,
    ADD COLUMN gathering text;
-- Suspended rows with a timer, in wake order: the only rows durable_wake reads.
CREATE INDEX jobs_hot_suspended ON {schema}.jobs_hot (wake_at) WHERE status = 4;
-- Suspended rows waiting for an event: what events_send looks up by key.
CREATE INDEX jobs_hot_event ON {schema}.jobs_hot (event_key)
    WHERE status = 4 AND event_key IS NOT NULL;

-- Suspended rows gathering their children (the pending gather step's name): what the wake
-- pass checks for a gather whose children all left hot.
CREATE INDEX jobs_hot_gathering ON {schema}.jobs_hot (updated_at)
    WHERE status = 4 AND gathering IS NOT NULL;

CREATE TABLE {schema}.job_steps (
    job_id      uuid NOT NULL,
    name        text NOT NULL,
    seq         integer NOT NULL,   -- the order the job first recorded its steps in
    kind        smallint NOT NULL,  -- 0 step, 1 sleep, 2 wait for an event, 3 spawn, 4 gather
    state       smallint NOT NULL,  -- 0 done, 1 failed (runs again), 2 pending (suspended on it)
    value       text,               -- JSON: a step's return value, a wait's event data
    error       text,               -- a failed step's error; 'timeout' for a wait timed out
    event_key   text,
    wake_at     timestamptz,        -- a sleep's end, a wait's deadline
    started_at  timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (job_id, name)
);

CREATE TABLE {schema}.job_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text NOT NULL,
    data       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX job_events_key ON {schema}.job_events (key, id);
CREATE INDEX job_events_expiry ON {schema}.job_events (expires_at);

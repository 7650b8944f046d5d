-- Results and workflows. A job enqueued with after= waits in jobs_hot with status 3 (Waiting),
-- which no partial index of the fetch path holds, until its last parent succeeds: the parent's
-- move to the archive reads the ids of its waiting children from its own row (dependents, a
-- comma-joined list written when each child was enqueued, under the parent row's lock) and
-- counts each child's parents_left down, releasing it to Pending at zero, in the same
-- statement. waited marks a job someone waits on (App.result): the statement that moves it out
-- of hot notifies them. job_edges keeps the graph for reads, retention and purges.
ALTER TABLE {schema}.jobs_hot DROP CONSTRAINT IF EXISTS jobs_hot_status_check;
ALTER TABLE {schema}.jobs_hot ADD CONSTRAINT jobs_hot_status_check CHECK (status IN (0, 1, 2, 3));
ALTER TABLE {schema}.jobs_hot
    ADD COLUMN parents_left integer,
    ADD COLUMN dependents text,
    ADD COLUMN waited boolean;
-- Waiting rows by queue: the waiting and blocked counts read this, never the fetch path.
CREATE INDEX jobs_hot_waiting ON {schema}.jobs_hot (queue) WHERE status = 3;

ALTER TABLE {schema}.jobs_archive
    ADD COLUMN result text,
    ADD COLUMN result_error text;

ALTER TABLE {schema}.jobs_dlq ADD COLUMN dependents text;

CREATE TABLE {schema}.job_edges (
    child_id    uuid NOT NULL,
    parent_id   uuid NOT NULL,
    workflow_id uuid NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX job_edges_parent ON {schema}.job_edges (parent_id);
CREATE INDEX job_edges_workflow ON {schema}.job_edges (workflow_id);

-- Results and workflows. A job enqueued with after= waits in jobs_hot with status 3 (Waiting),
-- which no partial index of the fetch path holds, until its last parent succeeds. job_edges
-- holds the graph: the transaction that moves a parent to the archive satisfies its edges and
-- counts each child's parents_left down, releasing the child to Pending at zero. waited marks a
-- job someone waits on (App.result): the statement that moves it out of hot notifies them.
ALTER TABLE {schema}.jobs_hot DROP CONSTRAINT IF EXISTS jobs_hot_status_check;
ALTER TABLE {schema}.jobs_hot ADD CONSTRAINT jobs_hot_status_check CHECK (status IN (0, 1, 2, 3));
ALTER TABLE {schema}.jobs_hot
    ADD COLUMN parents_left integer,
    ADD COLUMN waited boolean;
-- Waiting rows by queue: the waiting and blocked counts read this, never the fetch path.
CREATE INDEX jobs_hot_waiting ON {schema}.jobs_hot (queue) WHERE status = 3;

ALTER TABLE {schema}.jobs_archive
    ADD COLUMN result text,
    ADD COLUMN result_error text;

CREATE TABLE {schema}.job_edges (
    child_id    uuid NOT NULL,
    parent_id   uuid NOT NULL,
    workflow_id uuid NOT NULL,
    satisfied   boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (child_id, parent_id)
);
CREATE INDEX job_edges_parent ON {schema}.job_edges (parent_id);
CREATE INDEX job_edges_workflow ON {schema}.job_edges (workflow_id);

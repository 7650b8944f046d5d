-- Results and workflows. A job enqueued with after= waits in jobs_hot with status 3 (Waiting),
-- which no partial index of the fetch path holds, until its last parent succeeds. job_edges
-- holds the graph; children counts them on the parent's row (NULL: none), so that the move of
-- a parent nobody waits on skips the release: the move of one with children satisfies its
-- edges and counts each child's parents_left down, releasing the child to Pending at zero.
-- job_releases holds the parents whose move could not see a child enqueued while it finished,
-- for the release to finish right after. waited marks a job someone waits on (App.result): the
-- statement that moves it out of hot notifies them.
ALTER TABLE {schema}.jobs_hot DROP CONSTRAINT IF EXISTS jobs_hot_status_check;
ALTER TABLE {schema}.jobs_hot ADD CONSTRAINT jobs_hot_status_check CHECK (status IN (0, 1, 2, 3));
ALTER TABLE {schema}.jobs_hot
    ADD COLUMN parents_left integer,
    ADD COLUMN children integer,
    ADD COLUMN waited boolean;
-- Waiting rows by queue: the waiting and blocked counts read this, never the fetch path.
CREATE INDEX jobs_hot_waiting ON {schema}.jobs_hot (queue) WHERE status = 3;

ALTER TABLE {schema}.jobs_archive
    ADD COLUMN result text,
    ADD COLUMN result_error text;

ALTER TABLE {schema}.jobs_dlq ADD COLUMN children integer;

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

CREATE TABLE {schema}.job_releases (
    parent_id  uuid PRIMARY KEY,
    created_at timestamptz NOT NULL
);

-- How many times an operator requeued a job from the DLQ (dlq_resurrect, The Deck's and the
-- CLI's requeue): a requeue resets attempt_count, so without it a handler could not tell that
-- its job ran before (JobContext.requeues). It travels with the job through every pillar, so a
-- job requeued twice says 2. Adding a column with a constant default rewrites no rows.
ALTER TABLE {schema}.jobs_hot ADD COLUMN requeues integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.jobs_archive ADD COLUMN requeues integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.jobs_dlq ADD COLUMN requeues integer NOT NULL DEFAULT 0;

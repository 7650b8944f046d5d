-- Streams (issue 34; docs/durable.md, "Streams"): the items a job emits with ctx.emit, keyed
-- by (job, index). Indexes run 0, 1, 2, ... with no gap: an item is written under the job's
-- lease only at the stream's end (streams_emit). The rows outlive a move to the archive or the
-- DLQ (a reader that comes late still reads them) and are removed with their job (streams_tidy
-- removes the items of jobs in no pillar).
CREATE TABLE {schema}.job_stream (
    job_id     uuid NOT NULL,
    idx        integer NOT NULL,
    item       text NOT NULL,   -- JSON, at most 64 KiB (chokaq.limits.MAX_STREAM_ITEM_BYTES)
    created_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, idx)
);

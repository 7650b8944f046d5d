-- Per-attempt error history and normalised error families.
--
-- job_attempts keeps one row per failed attempt of a job (a retry, and the final failure), written
-- in the transaction of the move that records the failure, so the success path writes nothing
-- here. seq numbers a job's rows in order (attempt restarts at 1 after a resurrection, which keeps
-- the history); each failure keeps only the newest rows of its job (the bound is in the finalize
-- statement). The rows go with their job: retention, purge and delete remove them.
CREATE TABLE {schema}.job_attempts (
    job_id           uuid NOT NULL,
    seq              integer NOT NULL,
    attempt          integer NOT NULL,
    worker_id        text,
    started_at       timestamptz,
    failed_at        timestamptz NOT NULL,
    duration_seconds double precision,
    failure_reason   smallint,  -- NULL: retried; else the DLQ reason of the final failure
    error            text,
    PRIMARY KEY (job_id, seq)
);
-- Tracebacks are cold text, compressed as the DLQ's error is (see migration 001).
DO $$
BEGIN
    ALTER TABLE {schema}.job_attempts ALTER COLUMN error SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'lz4 compression is not available; attempt errors use the server default';
END
$$;

-- The error family: an error's first line with numbers, ids (uuids, hex) and quoted values
-- folded ("card 4242 declined" and "card 1111 declined" are "card <n> declined"). The same rules
-- as chokaq.storage.families.error_family (the differential test holds them to it), as an
-- immutable function so that jobs_dlq.error_family can be a stored generated column: every
-- statement that writes a DLQ row gets it without naming it, and the top-errors panel groups and
-- filters on a plain indexed column instead of running regular expressions at read time.
CREATE FUNCTION {schema}.error_family(error text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce(nullif(btrim(left(btrim(regexp_replace(
    regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        split_part(ltrim(coalesce(error, ''), E' \t\r\n\f\x0B'), E'\n', 1),
        '(?<![0-9A-Za-z_])(''[^'']*''|"[^"]*")', '<str>', 'g'),
        '[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{12}}', '<id>',
        'g'),
        '(?<![0-9A-Za-z_])(0[xX][0-9a-fA-F]+|(?=[0-9]*[a-fA-F])[0-9a-fA-F]{{8,}}(?![0-9A-Za-z_]))',
        '<id>', 'g'),
        '(?<![0-9A-Za-z_])[0-9]+(\.[0-9]+)?', '<n>', 'g'),
    E'[ \t\r\f\x0B]+', ' ', 'g'), E' \t\r\f\x0B'), 160), E' \t\r\f\x0B'), ''), '(empty error details)') $$;

ALTER TABLE {schema}.jobs_dlq
    ADD COLUMN error_family text GENERATED ALWAYS AS ({schema}.error_family(error)) STORED;
CREATE INDEX jobs_dlq_family ON {schema}.jobs_dlq (error_family, failed_at DESC);

-- Hiding a queue is The Deck's listing only (workers keep claiming its jobs); stopping a queue is
-- pausing it. Before this migration "Hide" set active = false, which also stopped its workers:
-- such a queue becomes paused and hidden, so it stays stopped and out of the list, and Resume
-- starts it again.
ALTER TABLE {schema}.queues ADD COLUMN hidden boolean NOT NULL DEFAULT false;
UPDATE {schema}.queues SET paused = true, hidden = true, active = true WHERE NOT active;

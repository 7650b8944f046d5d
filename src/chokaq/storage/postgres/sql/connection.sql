-- The PostgreSQL driver's SQL lives in the files of this folder, one per storage area under the
-- area's name (jobs.sql is run by postgres/jobs.py, and so on), loaded once by
-- chokaq.storage.sqlfile into one namespace (a block may include a fragment of another file). This
-- file holds what connection.py runs: the migration ledger and the schema version.
--
-- "{schema}" is replaced by the quoted schema name (psycopg's sql.Identifier) and "{channel}" by
-- the quoted notification channel; literal braces are doubled. Parameters are psycopg's "%(name)s"
-- placeholders, and "%(name)b" (binary, much cheaper to dump) for arrays; a literal percent sign
-- is written "%%".

-- name: migrate_lock
SELECT pg_advisory_xact_lock(hashtext('chokaq-migrate:' || %(schema)s))

-- name: migrate_ledger
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL
)

-- name: migrate_applied
SELECT version FROM {schema}.schema_migrations ORDER BY version

-- name: migrate_record
INSERT INTO {schema}.schema_migrations (version, name, applied_at)
VALUES (%(version)s, %(name)s, now())

-- name: migrate_has_ledger
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_tables
    WHERE schemaname = %(schema)s AND tablename = 'schema_migrations'
)

-- name: schema_version
SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations

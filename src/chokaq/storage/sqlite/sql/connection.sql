-- The SQLite driver's SQL lives in the files of this folder, one per storage area under the area's
-- name (jobs.sql is run by sqlite/jobs.py, and so on), loaded once by chokaq.storage.sqlfile into
-- one namespace. This file holds what connection.py runs: the migration ledger, the PRAGMAs and
-- the transaction statements.
--
-- "{p}name" is replaced at load time by the quoted, prefixed table name; ":name" are driver
-- parameters. "{order}" (page queries only) is replaced by a whitelisted, quoted ORDER BY list
-- built from the sort field.

-- name: migrate_ledger
CREATE TABLE IF NOT EXISTS {p}schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
)

-- name: migrate_applied
SELECT version FROM {p}schema_migrations ORDER BY version

-- name: migrate_record
INSERT INTO {p}schema_migrations (version, name, applied_at) VALUES (:version, :name, :now)

-- name: migrate_has_ledger
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name

-- name: begin_write
BEGIN IMMEDIATE

-- name: begin_exclusive
BEGIN EXCLUSIVE

-- name: begin_read
BEGIN

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- name: pragma_wal
PRAGMA journal_mode = WAL

-- name: pragma_synchronous
PRAGMA synchronous = NORMAL

-- name: pragma_foreign_keys
PRAGMA foreign_keys = OFF

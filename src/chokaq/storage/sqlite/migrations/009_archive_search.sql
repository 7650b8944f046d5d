-- Search matches an id by its end (see the PostgreSQL migration of the same number, which
-- replaces the archive's trigram index). SQLite has no search index to change: search scans.
-- The number is kept so that a schema version means the same on both backends.
SELECT 1;

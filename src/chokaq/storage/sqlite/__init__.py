"""The SQLite backend: one file, one host, standard-library ``sqlite3`` only (see ``backend``)."""

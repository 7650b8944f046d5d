"""The SQLite driver: one file, one host, standard-library ``sqlite3`` only (see ``driver``)."""

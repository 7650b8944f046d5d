"""Fixtures of the storage conformance suite beyond ``store`` / ``open_backend`` / ``backend``.

``raw`` opens a plain driver connection (sqlite3 or psycopg) on the test's store, for the few
tests that must plant a conflicting row or read a catalog; everything else goes through the
backend interface.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest


class Raw:
    """Plain SQL on the store, outside any backend. ``table("jobs_dlq")`` names a table."""

    def __init__(self, store: Any) -> None:
        self.dialect = store.dialect
        self.schema = store.schema
        if store.dialect == "sqlite":
            path = store.url.removeprefix("sqlite:///")
            self._conn: Any = sqlite3.connect(path, isolation_level=None, timeout=30)
        else:
            import psycopg

            self._conn = psycopg.connect(store.url, autocommit=True)

    def table(self, name: str) -> str:
        if self.dialect == "sqlite":
            return f"{self.schema}_{name}"
        return f'"{self.schema}".{name}'

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``{jobs_hot}`` and friends are replaced by table names)."""
        names = {
            n: self.table(n)
            for n in (
                "jobs_hot",
                "jobs_archive",
                "jobs_dlq",
                "stats_summary",
                "metric_buckets",
                "queues",
                "workers",
            )
        }
        text = sql.format(**names)
        if self.dialect == "postgres":
            text = text.replace("?", "%s")
        cursor = self._conn.execute(text, params)
        return list(cursor.fetchall()) if cursor.description else []

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def raw(store: Any) -> Iterator[Raw]:
    conn = Raw(store)
    yield conn
    conn.close()

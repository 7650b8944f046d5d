"""The duration sort's cursor on SQLite is served by migration 11's indexes (issue 40).

SQLite does not turn a row comparison on an expression into an index range, so the keyset
bounds the sort expression by the key's value first: the plan must SEARCH the index (start at
the key), not SCAN it from the top. Checked with EXPLAIN QUERY PLAN on the ORDER BY and keyset
``reads.traversal`` writes, over the migrated archive table; never a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chokaq.models import PageKey
from chokaq.storage import create_backend
from chokaq.storage.sqlite.reads import traversal

ID = "0190a0b0-0000-7000-8000-000000000001"


@pytest.fixture
async def archive(tmp_path: Path) -> AsyncIterator[tuple[sqlite3.Connection, str]]:
    """A migrated SQLite store's connection and its archive table's name."""
    path = tmp_path / "x.db"
    backend = create_backend(f"sqlite:///{path}")
    await backend.open()
    await backend.migrate()
    await backend.close()
    conn = sqlite3.connect(path)
    yield conn, "chokaq_jobs_archive"
    conn.close()


@pytest.mark.parametrize(("descending", "index"), [(True, "desc"), (False, "asc")])
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("value", [2.5, None])
async def test_a_duration_page_by_key_searches_its_index(
    archive, descending, index, backward, value
):
    conn, table = archive
    order, keyset = traversal("duration_seconds", descending, PageKey(value, ID), backward)
    plan = conn.execute(
        f"EXPLAIN QUERY PLAN SELECT id FROM {table} WHERE {keyset} ORDER BY {order} LIMIT 51",
        {"key_value": value, "key_id": ID},
    ).fetchall()
    details = [row[3] for row in plan]
    assert len(details) == 1, details
    assert details[0].startswith(f"SEARCH {table} USING "), details
    assert f"INDEX {table}_duration_{index} " in details[0], details

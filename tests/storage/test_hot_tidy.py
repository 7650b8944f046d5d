"""The elected worker's hot-table vacuum, for servers where autovacuum is off or behind."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from conformance import claim, enqueue, succeed

import chokaq.storage.postgres.maintenance as pg_retention
from chokaq.errors import LeadershipLostError


async def hot_stats(store, schema: str) -> tuple[int, int]:
    """Dead rows and vacuums of the hot table, as the statistics system has them."""
    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        cur = await conn.execute(
            "SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables"
            " WHERE schemaname = %s AND relname = %s",
            (schema, "jobs_hot"),
        )
        row = await cur.fetchone()
        return (row[0], row[1]) if row else (0, 0)


async def test_the_hot_table_is_vacuumed_when_dead_rows_pile_up(
    backend, store, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not store.capabilities.row_versions:
        assert await backend.jobs_hot_tidy() is False  # no row versions: nothing to reclaim
        return
    monkeypatch.setattr(pg_retention, "HOT_DEAD_ROWS_LIMIT", 10)
    assert await backend.jobs_hot_tidy() is False  # a fresh table: nothing to reclaim
    await enqueue(backend, 50)
    await succeed(backend, await claim(backend, 50))
    # The backend's sessions report their dead rows to the statistics collector within about
    # a second (10 s when idle): wait for the report rather than for a fixed time.
    deadline = time.monotonic() + 20
    while (await hot_stats(store, store.schema))[0] < 50:
        assert time.monotonic() < deadline, "the dead rows were never reported"
        await backend.stats_summary()  # a statement on the backend's sessions flushes stats
        await asyncio.sleep(0.1)
    vacuums = (await hot_stats(store, store.schema))[1]
    # An ex-leader's tidy (its term released, so over) is fenced: no vacuum runs.
    over = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=60)
    assert over is not None and await backend.leadership_release(term=over)
    with pytest.raises(LeadershipLostError):
        await backend.jobs_hot_tidy(fence=over)
    assert (await hot_stats(store, store.schema))[1] == vacuums
    assert await backend.jobs_hot_tidy() is True
    # VACUUM reports itself at once. The dead-row count is not compared: a session that had
    # not flushed its share of the dead rows yet adds it after the vacuum's report.
    assert (await hot_stats(store, store.schema))[1] == vacuums + 1

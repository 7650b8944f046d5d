"""The one order of a child's enqueue and its parent's move that a single statement cannot see,
forced on PostgreSQL: the enqueue (in the caller's transaction) has counted the child on the
running parent's row and holds it; the parent's move starts, waits for that row, and reads the
new count after the enqueue commits, but the child's edge is not in its snapshot. The move
then leaves the parent in ``job_releases`` in its own transaction, and the worker's follow-up
(``jobs_release_missed``) releases the child before ``jobs_finalize`` returns.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from conformance import at, claim

from chokaq.ids import new_job_ids
from chokaq.models import JobStatus, NewJob, Pillar, SucceedMove
from chokaq.storage import Backend

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_store: Any) -> Any:
    return pg_store


async def _waiting_on_a_lock(store: Any) -> bool:
    """Whether a statement on this test's schema waits for a lock (any other session of the
    server, or of another test, is not this one's move)."""
    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            " AND strpos(query, %s) > 0",
            (f'"{store.schema}".jobs_hot',),
        )
        row = await cur.fetchone()
        return bool(row and row[0])


async def _race(backend: Backend, store: Any) -> str:
    """Force the order; returns the child's id once the parent's move has returned."""
    parent, child = new_job_ids(2)
    await backend.jobs_enqueue([NewJob(type="t", queue="p", id=parent)], now=at(0))
    [running] = await claim(backend, 1, queues=["p"], now=at(1))
    async with await psycopg.AsyncConnection.connect(store.url) as caller:
        # The enqueue counts the child on the parent's row, and holds the row until commit.
        await backend.jobs_enqueue(
            [NewJob(type="t", queue="c", id=child, after=(parent,))], connection=caller
        )
        move = asyncio.create_task(
            backend.jobs_finalize(moves=[SucceedMove(running.lease, 0.1)], now=at(2))
        )
        for _ in range(500):  # until the move waits on the parent's row (no fixed sleep)
            if await _waiting_on_a_lock(store):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the parent's move never waited for the enqueue")
        assert not move.done()
        await caller.commit()
    assert await move == [True]
    return child


async def _left_over(store: Any) -> int:
    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        table = f'"{store.schema}".job_releases'
        cur = await conn.execute(f"SELECT count(*) FROM {table}")  # type: ignore[arg-type]
        row = await cur.fetchone()
        return int(row[0]) if row else -1


async def test_a_child_counted_while_its_parent_moves_is_released_after_it(
    backend: Backend, store: Any
) -> None:
    child = await _race(backend, store)
    view = await backend.job_get(child)
    assert view is not None and (view.pillar, view.status) == (Pillar.HOT, JobStatus.PENDING)
    assert await backend.jobs_release_missed() == 0  # nothing was left over
    assert await _left_over(store) == 0


async def test_a_release_left_over_by_a_crash_is_finished_by_the_rescue_pass(
    backend: Backend, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chokaq.storage.postgres.claims import PostgresClaims

    async def crashed(self: PostgresClaims) -> None:
        """The worker died between its move's commit and the follow-up."""

    monkeypatch.setattr(PostgresClaims, "_release_missed", crashed)
    child = await _race(backend, store)
    assert await _left_over(store) == 1
    view = await backend.job_get(child)
    assert view is not None and view.status is JobStatus.WAITING
    assert await backend.jobs_release_missed() == 1  # what the rescue pass runs
    view = await backend.job_get(child)
    assert view is not None and (view.status, view.parents_left) == (JobStatus.PENDING, 0)
    assert await _left_over(store) == 0

"""Enqueue on the caller's own PostgreSQL connection, whatever row factory it was opened with.

The insert joins the caller's transaction; the rows it reads back are ours to decode, so a
caller's ``dict_row`` / ``namedtuple_row`` / ``class_row`` must not change them (it once did,
after the row was already inserted). A connection that is not a psycopg one is refused at the
seam, before anything is written, with the same error on every backend that takes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from conformance import job
from psycopg.rows import class_row, dict_row, namedtuple_row

from chokaq.errors import ValidationError

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_store: Any) -> Any:
    return pg_store


@dataclass
class _Anything:
    # class_row calls the class with the columns as keywords: take whatever comes.
    def __init__(self, **columns: Any) -> None:
        self.columns = columns


FACTORIES = {
    "dict_row": dict_row,
    "namedtuple_row": namedtuple_row,
    "class_row": class_row(_Anything),
}


@pytest.mark.parametrize("factory", list(FACTORIES))
async def test_enqueue_on_an_async_connection_with_any_row_factory(
    backend: Any, store: Any, factory: str
) -> None:
    async with await psycopg.AsyncConnection.connect(
        store.url, row_factory=FACTORIES[factory]
    ) as conn:
        results = await backend.jobs_enqueue(
            [job(), job(idempotency_key="k1"), job(idempotency_key="k1")], connection=conn
        )
        await conn.commit()
    assert [r.duplicate for r in results] == [False, False, True]
    assert results[1].id == results[2].id
    for result in results:
        assert await backend.job_get(result.id) is not None
    # A key already held by a hot row resolves to its holder through the caller's cursor too.
    async with await psycopg.AsyncConnection.connect(
        store.url, row_factory=FACTORIES[factory]
    ) as conn:
        again = await backend.jobs_enqueue([job(idempotency_key="k1")], connection=conn)
        await conn.commit()
    assert again[0].duplicate and again[0].id == results[1].id


@pytest.mark.parametrize("factory", list(FACTORIES))
async def test_enqueue_on_a_sync_connection_with_any_row_factory(
    backend: Any, store: Any, factory: str
) -> None:
    with psycopg.connect(store.url, row_factory=FACTORIES[factory]) as conn:
        results = await backend.jobs_enqueue([job(), job(idempotency_key="k2")], connection=conn)
        conn.commit()
    assert [r.duplicate for r in results] == [False, False]
    assert all([await backend.job_get(r.id) is not None for r in results])


@pytest.mark.parametrize("bad", ["postgresql://x", object(), 42])
async def test_a_connection_that_is_not_psycopg_is_refused_at_the_seam(
    backend: Any, bad: object
) -> None:
    with pytest.raises(ValidationError) as caught:
        await backend.jobs_enqueue([job()], connection=bad)
    assert caught.value.field == "connection"
    assert "psycopg Connection or AsyncConnection" in str(caught.value)
    assert (await backend.stats_summary()).pending == 0


async def test_a_closed_or_failed_connection_is_refused_before_anything_is_written(
    backend: Any, store: Any
) -> None:
    conn = await psycopg.AsyncConnection.connect(store.url)
    await conn.close()
    with pytest.raises(ValidationError, match="closed") as caught:
        await backend.jobs_enqueue([job()], connection=conn)
    assert caught.value.field == "connection"
    async with await psycopg.AsyncConnection.connect(store.url) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await conn.execute("SELECT 1 / 0")
        with pytest.raises(ValidationError, match="failed transaction") as caught:
            await backend.jobs_enqueue([job()], connection=conn)
        assert caught.value.field == "connection"
    assert (await backend.stats_summary()).pending == 0

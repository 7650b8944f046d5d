"""The Deck answers with a row it cannot fully decode in any pillar: no 500.

Rows written outside chokaq (planted with raw SQL here) can hold values Python cannot
represent: a time before year 1 or infinite on PostgreSQL, text or a blob where a number
belongs on SQLite. The claim moves such a hot row to the DLQ as REJECTED; The Deck's listing
and job detail must still show it there, and an archived row with such a value too.
"""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest

from chokaq.app import App
from chokaq.deck import Credentials, Role, create_deck
from chokaq.ids import new_job_ids
from chokaq.models import NewJob, SucceedMove


def _sql(store: Any, statement: str, params: tuple[Any, ...]) -> None:
    if store.dialect == "sqlite":
        conn = sqlite3.connect(store.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            conn.execute(statement.replace("%s", "?"), params)
        finally:
            conn.close()
    else:
        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute(statement, params)


def _table(store: Any, name: str) -> str:
    return f"{store.schema}_{name}" if store.dialect == "sqlite" else f'"{store.schema}".{name}'


@pytest.fixture
async def app(store: Any) -> AsyncIterator[App]:
    chokaq_app = App(store.url, schema=store.schema, auto_migrate=True)
    await chokaq_app.open()
    await chokaq_app.backend.migrate()
    yield chokaq_app
    await chokaq_app.close()


async def test_the_deck_lists_and_shows_undecodable_rows(app: App, store: Any) -> None:
    backend = app.backend
    (poison,) = new_job_ids(1)
    bad_time: Any = "0001-01-01 00:00+00 BC" if store.dialect == "postgres" else "garbage"
    hot = _table(store, "jobs_hot")
    _sql(
        store,
        f"INSERT INTO {hot} (id, queue, type, payload, status, scheduled_at, created_at,"
        " updated_at) VALUES (%s, 'default', 't', '{}', 0, %s, %s, %s)",
        (poison, 0.0 if store.dialect == "sqlite" else "2001-01-01", bad_time, "2001-01-01"),
    )
    (done,) = await backend.jobs_enqueue([NewJob(type="t")])
    claimed = await backend.jobs_fetch(worker_id="w1", limit=10, start=True)
    assert [job.id for job in claimed] == [done.id]  # the poison row went to the DLQ
    assert await backend.jobs_finalize(moves=[SucceedMove(claimed[0].lease, 0.1)]) == [True]
    _sql(store, f"UPDATE {_table(store, 'jobs_archive')} SET created_at = %s", (bad_time,))

    deck = create_deck(app, credentials=Credentials(users={"alice": ("pw", Role.ADMIN)}))
    auth = {"authorization": "Basic " + base64.b64encode(b"alice:pw").decode()}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=deck), base_url="http://deck.test", headers=auth
    ) as c:
        for source, job_id in (("dlq", poison), ("archive", done.id)):
            listing = await c.get(f"/api/jobs?source={source}")
            assert listing.status_code == 200, listing.text
            assert [item["id"] for item in listing.json()["items"]] == [job_id]
            detail = await c.get(f"/api/jobs/{job_id}")
            assert detail.status_code == 200, detail.text
        shown = (await c.get(f"/api/jobs/{poison}")).json()
        assert "undecodable row (created_at" in str(shown)
        assert (await c.get("/")).status_code == 200

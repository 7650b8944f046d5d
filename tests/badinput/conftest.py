"""Fixtures of the bad-input suite: a seeded store on each backend (a job in every pillar) and a
fingerprint of every table, so each case can assert that a refused input changed nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.conftest import Store

from chokaq import App
from chokaq.models import FailMove, FailureReason, SucceedMove


def fingerprint(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every chokaq table, in a stable order."""
    if store.dialect == "postgres":
        import psycopg

        with psycopg.connect(store.url, autocommit=True) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                    " ORDER BY 1",
                    (store.schema,),
                )
            ]
            return {
                t: sorted(
                    conn.execute(f'SELECT * FROM "{store.schema}"."{t}"').fetchall(), key=repr
                )
                for t in tables
            }
    conn = sqlite3.connect(store.url.removeprefix("sqlite:///"))
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? ORDER BY 1",
                (f"{store.schema}_%",),
            )
        ]
        return {
            t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables
        }
    finally:
        conn.close()


@dataclass
class Seeded:
    """An opened app on a store holding one pending, one archived and one dead-lettered job."""

    app: App
    store: Store
    pending: str
    archived: str
    dead: str

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        return fingerprint(self.store)


async def seed(app: App, store: Store) -> Seeded:
    backend = app.backend
    done = await app.enqueue_raw("seed", {"n": 1}, queue="seed-a", tags=["old"])
    dead = await app.enqueue_raw("seed", {"n": 2}, queue="seed-b", tags=["old"])
    claimed = {
        c.id: c
        for c in await backend.jobs_fetch(
            worker_id="seeder", limit=2, queues=["seed-a", "seed-b"], start=True
        )
    }
    await backend.jobs_finalize(
        moves=[
            SucceedMove(claimed[done].lease, 0.01),
            FailMove(claimed[dead].lease, FailureReason.FATAL_ERROR, "seeded failure"),
        ]
    )
    pending = await app.enqueue_raw("seed", {"n": 3}, queue="seed-c", tags=["old"])
    return Seeded(app, store, str(pending), str(done), str(dead))


@pytest.fixture
async def seeded(store: Store) -> AsyncIterator[Seeded]:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        yield await seed(app, store)
    finally:
        await app.close()

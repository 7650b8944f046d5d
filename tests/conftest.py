"""Shared fixtures: a real SQLite file per test and a private PostgreSQL schema per test.

PostgreSQL tests need a server (``CHOKAQ_TEST_PG_URL``, default the local trust-auth server).
Without one they skip with the reason shown; under ``CI=true`` they fail instead, since CI must
run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chokaq.models import Capabilities
from chokaq.storage import Backend, create_backend

PG_URL = os.environ.get("CHOKAQ_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

_pg_state: dict[str, str | None] = {}


def postgres_unavailable() -> str | None:
    """None when the test server answers, else why not (checked once per session)."""
    if "reason" not in _pg_state:
        try:
            import psycopg

            with psycopg.connect(PG_URL, connect_timeout=3) as conn:
                conn.execute("select 1")
            _pg_state["reason"] = None
        except Exception as exc:
            _pg_state["reason"] = f"PostgreSQL not reachable at {PG_URL}: {exc}".strip()
    return _pg_state["reason"]


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@dataclass
class Store:
    """Where one test's data lives: the URL and schema, to open more backends or workers on.

    Tests that depend on what a database can do skip by ``capabilities``, never by its name;
    ``dialect`` ("sqlite" or "postgres") only picks the client for the few tests that read the
    tables with plain SQL."""

    dialect: str
    url: str
    schema: str

    def backend(self, **options: object) -> Backend:
        return create_backend(self.url, schema=self.schema, **options)

    @property
    def capabilities(self) -> Capabilities:
        return self.backend().capabilities


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store on each backend (not migrated)."""
    if request.param == "sqlite":
        yield Store("sqlite", f"sqlite:///{tmp_path / 'jobs.db'}", "chokaq")
        return
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield Store("postgres", PG_URL, schema)
    finally:
        drop_schema(schema)


@pytest.fixture
async def open_backend(store: Store) -> AsyncIterator[Callable[..., Awaitable[Backend]]]:
    """A factory of opened, migrated backends on this test's store (each its own connections)."""
    opened: list[Backend] = []

    async def factory(**options: object) -> Backend:
        backend = store.backend(**options)
        await backend.open()
        await backend.migrate()
        opened.append(backend)
        return backend

    yield factory
    for backend in opened:
        await backend.close()


@pytest.fixture
async def backend(open_backend: Callable[..., Awaitable[Backend]]) -> Backend:
    """One opened, migrated backend on a fresh store."""
    return await open_backend()


@pytest.fixture
def pg_store() -> Iterator[Store]:
    """A fresh PostgreSQL schema only (for PostgreSQL-specific tests)."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield Store("postgres", PG_URL, schema)
    finally:
        drop_schema(schema)

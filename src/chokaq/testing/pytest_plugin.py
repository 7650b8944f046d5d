"""pytest fixtures for projects that use chokaq: a store per test (a temporary SQLite file, and
a private PostgreSQL schema when ``CHOKAQ_TEST_DATABASE_URL`` names a server) and an App on it.

Registered through the ``pytest11`` entry point, so installing chokaq makes the fixtures
available; ``-p no:chokaq`` turns them off. Async fixtures need pytest-asyncio. It owns the
fixtures only: what runs jobs is ``chokaq.testing``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..app import App

__all__ = ["URL_VARIABLE", "TestDatabase", "chokaq_app", "chokaq_database"]

# The environment variable naming a PostgreSQL server; when set, the fixtures run on both.
URL_VARIABLE = "CHOKAQ_TEST_DATABASE_URL"

# pytest-asyncio's strict mode needs its decorator for async fixtures; auto mode takes either.
if TYPE_CHECKING:
    _async_fixture = pytest.fixture
else:
    try:
        from pytest_asyncio import fixture as _async_fixture
    except ImportError:  # without pytest-asyncio, async tests cannot run anyway
        _async_fixture = pytest.fixture


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if os.environ.get(URL_VARIABLE) else ["sqlite"]


@dataclass
class TestDatabase:
    """Where one test's jobs live: ``url`` and ``schema`` (pass them to ``App``), and
    ``bind(app)`` to point an app of your own at it for the test (closed at the end)."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    url: str
    schema: str
    backend: str  # "sqlite" or "postgres"
    _apps: list[App] = field(default_factory=list, repr=False)

    def app(self, **options: Any) -> App:
        """A new ``App`` on this store that migrates it on open; ``options`` go to ``App``."""
        app = App(self.url, schema=self.schema, auto_migrate=True, **options)
        self._apps.append(app)
        return app

    def bind(self, app: App) -> App:
        """Point ``app`` (closed) at this store and migrate it on open, for the test; it is
        closed at the end of the test, and keeps this store until configured again."""
        app.configure(url=self.url, schema=self.schema)
        app.auto_migrate = True
        self._apps.append(app)
        return app

    async def close(self) -> None:
        for app in self._apps:
            await app.close()
            app.close_sync()


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=_backends())
def _chokaq_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    if request.param == "sqlite":
        yield TestDatabase(f"sqlite:///{tmp_path / 'chokaq.db'}", "chokaq", "sqlite")
        return
    url = os.environ[URL_VARIABLE]
    schema = f"chokaq_test_{uuid.uuid4().hex[:12]}"
    try:
        yield TestDatabase(url, schema, "postgres")
    finally:
        _drop_schema(url, schema)


@_async_fixture
async def chokaq_database(_chokaq_store: TestDatabase) -> AsyncIterator[TestDatabase]:
    """This test's store: a SQLite file in ``tmp_path``, and (a second run of the test) a
    fresh PostgreSQL schema on ``CHOKAQ_TEST_DATABASE_URL`` when it is set, dropped after.
    Apps made by ``app()`` or bound by ``bind()`` are closed at the end of the test."""
    try:
        yield _chokaq_store
    finally:
        await _chokaq_store.close()


@_async_fixture
async def chokaq_app(chokaq_database: TestDatabase) -> App:
    """A new, opened ``App`` on this test's store (migrated), to register handlers on."""
    return await chokaq_database.app().open()

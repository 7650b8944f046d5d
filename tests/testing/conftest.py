"""Fixtures for the tests of ``chokaq.testing``: an app on this test's store (both backends,
from tests/conftest.py's ``store``), with the worker settings a user would leave alone."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from chokaq import App, WorkerSettings


@pytest.fixture
async def make_app(store: Any) -> AsyncIterator[Callable[..., App]]:
    """``make_app(**worker_settings)``: an App on this test's store, migrated on open."""
    apps: list[App] = []

    def factory(**settings: Any) -> App:
        app = App(
            store.url, schema=store.schema, auto_migrate=True, worker=WorkerSettings(**settings)
        )
        apps.append(app)
        return app

    yield factory
    for app in apps:
        await app.close()

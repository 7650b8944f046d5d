"""Fixtures of the storage tests that read the SQL a backend sends (the PostgreSQL plan tests)."""

from __future__ import annotations

from contextlib import contextmanager

import psycopg
import pytest


@pytest.fixture
def capture(monkeypatch):
    """``with capture() as sent:`` collects ``(query, params)`` of every statement executed."""

    @contextmanager
    def recorder():
        sent = []
        original = psycopg.AsyncCursor.execute

        async def execute(self, query, params=None, **kwargs):
            text = query if isinstance(query, str) else query.as_string(self.connection)
            sent.append((text, params))
            return await original(self, query, params, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
        try:
            yield sent
        finally:
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", original)

    return recorder


@pytest.fixture
def pg(store):
    """A plain client connection to the test's PostgreSQL store (parameters bound client-side,
    so that a captured statement can be planned as it was sent)."""
    with psycopg.connect(store.url, autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
        yield conn

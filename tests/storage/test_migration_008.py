"""Migration 008 on a store that already holds data: DLQ rows written before it get their error
family, and a queue that the old "Hide" deactivated (which also stopped it) becomes paused and
hidden, so it stays stopped and out of the Deck's list, and Resume starts it."""

from __future__ import annotations

import uuid

from tests.conftest import Raw, Store

from chokaq.storage import Backend

BEFORE = 7  # the migration before this one


def _migrations(backend: Backend) -> tuple[object, str]:
    """Where this backend's driver keeps its migration list (to stop short of 008)."""
    driver: object = backend.driver
    if backend.capabilities.name == "sqlite":
        return driver._db, "migrations"  # type: ignore[attr-defined]
    return driver, "_migrations"


async def test_existing_dlq_rows_and_hidden_queues_are_carried_over(store: Store) -> None:
    backend = store.backend()
    await backend.open()
    try:
        holder, attribute = _migrations(backend)
        everything = getattr(holder, attribute)
        setattr(holder, attribute, [m for m in everything if m.version <= BEFORE])
        await backend.migrate()
        raw = Raw(store.url, store.schema)
        try:
            when = 1735732800.0 if raw.dialect == "sqlite" else "2025-01-01T12:00:00Z"
            for n in (4242, 1111):
                raw.rows(
                    "INSERT INTO {jobs_dlq} (id, queue, type, payload, priority, failure_reason,"
                    " error, attempt_count, created_at, failed_at)"
                    " VALUES (?, 'q', 't', '{{}}', 10, 8, ?, 1, ?, ?)",
                    (str(uuid.uuid4()), f"CardError: card {n} declined\nTraceback", when, when),
                )
            old_false = 0 if raw.dialect == "sqlite" else False
            raw.rows(
                "INSERT INTO {queues} (name, active, updated_at) VALUES ('old', ?, ?)",
                (old_false, when),
            )
        finally:
            raw.close()
        setattr(holder, attribute, everything)
        assert await backend.migrate() == list(range(BEFORE + 1, backend.latest_version() + 1))
        [family] = await backend.dlq_top_errors()
        assert (family.family, family.count) == ("CardError: card <n> declined", 2)
        old = await backend.queue_get("old")
        assert old is not None and (old.paused, old.hidden, old.active) == (True, True, True)
        default = await backend.queue_get("default")
        assert default is not None and (default.paused, default.hidden) == (False, False)
    finally:
        await backend.close()

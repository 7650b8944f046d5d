"""Migrations: idempotent, race-safe, and the schema they build is the one described by hand.

``schema/<backend>.txt`` says what a migrated store must hold; ``schema_catalog`` reads what it
does hold from the database's own catalog. The two are independent accounts of one schema, so a
migration that changes the schema without the description (or the reverse) fails here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib

import pytest
from schema_catalog import Catalog, catalog


async def test_version_is_latest_after_migrate(backend):
    assert await backend.schema_version() == backend.latest_version() >= 1


async def test_unmigrated_store_is_version_zero(store):
    backend = store.backend()
    await backend.open()
    try:
        assert await backend.schema_version() == 0
    finally:
        await backend.close()


async def test_migrate_twice_is_a_no_op(store):
    backend = store.backend()
    await backend.open()
    try:
        applied = await backend.migrate()
        assert applied == list(range(1, backend.latest_version() + 1))
        assert await backend.migrate() == []
        assert await backend.migrate(via_migrations=True) == []
    finally:
        await backend.close()


async def test_two_concurrent_migrates_on_a_fresh_store(store):
    one, two = store.backend(), store.backend()
    await one.open()
    await two.open()
    try:
        first, second = await asyncio.gather(one.migrate(), two.migrate())
        latest = list(range(1, one.latest_version() + 1))
        assert sorted([first, second]) == [[], latest]
        assert await one.schema_version() == await two.schema_version() == one.latest_version()
        assert len(await one.queue_list()) >= 1
    finally:
        await one.close()
        await two.close()


async def _migrated(store, *, via_migrations: bool = False) -> Catalog:
    """Migrate ``store`` and return the reader of its catalog."""
    backend = store.backend()
    await backend.open()
    try:
        await backend.migrate(via_migrations=via_migrations)
        name = backend.capabilities.name
    finally:
        await backend.close()
    return catalog(name, store.url, store.schema)


def _changed(rendered: list[str], expected: list[str]) -> list[str]:
    """The lines one side has and the other lacks, in order (a line may occur in many tables)."""
    return [line for line in difflib.ndiff(expected, rendered) if line[:2] in {"- ", "+ "}]


@pytest.mark.parametrize("via_migrations", [False, True], ids=["fresh", "walked"])
async def test_the_migrated_schema_is_the_described_one(store, via_migrations):
    """Every table, column, constraint, index and seed row, against schema/<backend>.txt."""
    migrated = await _migrated(store, via_migrations=via_migrations)
    assert migrated.render() == migrated.description()


async def test_walking_the_migrations_gives_the_fresh_install(store):
    """One migration per transaction (an upgrade) ends where the one-transaction install does."""
    # A second schema on the same store: on SQLite another table prefix in the same file, which
    # must not start with the first one's ("wchokaq_" against "chokaq_").
    walked_store = dataclasses.replace(store, schema="w" + store.schema)
    fresh = await _migrated(store)
    try:
        walked = await _migrated(walked_store, via_migrations=True)
        assert walked.render() == fresh.render()
    finally:
        dataclasses.replace(fresh, schema=walked_store.schema).drop()


# Each mutation is raw SQL that leaves a schema the description must reject, and a word that the
# differing lines must name (so that the test shows the oracle saw this change, not another one).
MUTATIONS = {
    "a column added": ("ALTER TABLE {q[jobs_hot]} ADD COLUMN extra integer", "column extra"),
    "an index dropped": ("DROP INDEX {q[jobs_dlq_type]}", "jobs_dlq_type"),
    "a partial index made full": (
        "DROP INDEX {q[jobs_hot_fetch]};"
        " CREATE INDEX {i[jobs_hot_fetch]} ON {q[jobs_hot]}"
        " (queue, priority DESC, scheduled_at, created_at)",
        "jobs_hot_fetch",
    ),
    "an index lost its DESC": (
        "DROP INDEX {q[jobs_archive_queue]};"
        " CREATE INDEX {i[jobs_archive_queue]} ON {q[jobs_archive]} (queue, finished_at)",
        "jobs_archive_queue",
    ),
    "a table dropped": ("DROP TABLE {q[workers]}", "table workers"),
    "a view added": ("CREATE VIEW {q[pending]} AS SELECT id FROM {q[jobs_hot]}", "pending"),
    "a seed row removed": ("DELETE FROM {q[stats_summary]}", "row default"),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
async def test_the_description_rejects_a_different_schema(store, mutation):
    migrated = await _migrated(store)
    assert migrated.render() == migrated.description()
    statement, word = MUTATIONS[mutation]
    migrated.execute(statement)
    rendered = migrated.render()
    assert rendered != migrated.description()
    assert any(word in line for line in _changed(rendered, migrated.description()))


PG_MUTATIONS = {
    "fillfactor reset": ("ALTER TABLE {q[jobs_hot]} RESET (fillfactor)", "fillfactor=80"),
    "payload compression changed": (
        "ALTER TABLE {q[jobs_dlq]} ALTER COLUMN error SET COMPRESSION pglz",
        "column error",
    ),
    "a default changed": (
        "ALTER TABLE {q[jobs_hot]} ALTER COLUMN priority SET DEFAULT 5",
        "column priority",
    ),
    "a column made nullable": (
        "ALTER TABLE {q[jobs_archive]} ALTER COLUMN finished_at DROP NOT NULL",
        "column finished_at",
    ),
    "a check dropped": (
        "ALTER TABLE {q[queues]} DROP CONSTRAINT queues_max_workers_check",
        "queues_max_workers_check",
    ),
    "an enum added": ("CREATE TYPE {q[mood]} AS ENUM ('calm')", "type mood"),
    "a function added": (
        "CREATE FUNCTION {q[noop]}() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
        "function noop()",
    ),
}


@pytest.mark.parametrize("mutation", list(PG_MUTATIONS))
async def test_the_postgres_description_checks_storage_options(pg_store, mutation):
    """What only PostgreSQL declares: reloptions, column compression, defaults, constraints."""
    migrated = await _migrated(pg_store)
    assert migrated.render() == migrated.description()
    statement, word = PG_MUTATIONS[mutation]
    migrated.execute(statement)
    rendered = migrated.render()
    assert rendered != migrated.description()
    assert any(word in line for line in _changed(rendered, migrated.description()))

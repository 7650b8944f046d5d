"""Migrations: idempotent, race-safe, and "every migration applied" equals a fresh install."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3

import pytest


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


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _normalize(sql: str, name: str) -> str:
    return re.sub(r"\s+", " ", sql.replace(name, "<schema>")).strip()


def _sqlite_catalog(path: str, prefix: str) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name"
        ).fetchall()
    return [(t, n.replace(prefix, "<schema>"), _normalize(s, prefix)) for t, n, s in rows]


def _postgres_catalog(url: str, schema: str) -> dict[str, list[tuple[object, ...]]]:
    import psycopg

    queries = {
        "columns": """SELECT table_name, column_name, ordinal_position, data_type,
                             is_nullable, column_default
                        FROM information_schema.columns WHERE table_schema = %s
                       ORDER BY table_name, ordinal_position""",
        "indexes": """SELECT tablename, indexname, indexdef FROM pg_indexes
                       WHERE schemaname = %s ORDER BY tablename, indexname""",
        "constraints": """SELECT c.conrelid::regclass::text, c.conname,
                                 pg_get_constraintdef(c.oid)
                            FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
                           WHERE n.nspname = %s ORDER BY 1, 2""",
        "options": """SELECT c.relname, c.reloptions, a.attname, a.attcompression
                        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
                                                 AND a.attcompression <> ''
                       WHERE n.nspname = %s ORDER BY 1, 3""",
    }
    out = {}
    with psycopg.connect(url) as conn:
        for key, query in queries.items():
            rows = conn.execute(query, (schema,)).fetchall()
            out[key] = [
                tuple(_normalize(str(v), schema) if v is not None else None for v in row)
                for row in rows
            ]
    return out


async def test_migrations_equal_a_fresh_install(store, tmp_path):
    """Walk every numbered migration on one store, fresh-install another, compare catalogs."""
    if store.kind == "sqlite":
        other = dataclasses.replace(store, url=f"sqlite:///{tmp_path / 'walked.db'}")
    else:
        other = dataclasses.replace(store, schema=store.schema + "_w")
    fresh, walked = store.backend(), other.backend()
    await fresh.open()
    await walked.open()
    try:
        await fresh.migrate()
        await walked.migrate(via_migrations=True)
        assert await walked.schema_version() == await fresh.schema_version()
        if store.kind == "sqlite":
            left = _sqlite_catalog(store.url.removeprefix("sqlite:///"), store.schema)
            right = _sqlite_catalog(other.url.removeprefix("sqlite:///"), other.schema)
            assert left == right
        else:
            left = _postgres_catalog(store.url, store.schema)
            right = _postgres_catalog(other.url, other.schema)
            for key in left:
                assert left[key] == right[key], key
            assert left["indexes"], "the catalog query found nothing"
    finally:
        await fresh.close()
        await walked.close()
        if other.kind == "postgres":
            _drop_schema(other.url, other.schema)


@pytest.mark.parametrize("via_migrations", [False, True])
async def test_the_fetch_index_is_partial_on_pending(store, via_migrations):
    backend = store.backend()
    await backend.open()
    try:
        await backend.migrate(via_migrations=via_migrations)
    finally:
        await backend.close()
    if store.kind == "sqlite":
        with sqlite3.connect(store.url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
            ).fetchall()
        fetch = [sql for name, sql in rows if name.endswith("jobs_hot_fetch")]
    else:
        import psycopg

        with psycopg.connect(store.url) as conn:
            fetch = [
                r[0]
                for r in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = %s"
                    " AND indexname = 'jobs_hot_fetch'",
                    (store.schema,),
                )
            ]
    assert len(fetch) == 1
    assert re.search(r"WHERE \(?status = 0\)?", fetch[0])

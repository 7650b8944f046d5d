"""The CLI in scripts (issue 18): whole lines when piped, ``--json`` on the read commands,
``--log-level``, the environment variables in ``--help`` and the Deck API's bulk cap."""

from __future__ import annotations

import asyncio
from typing import Any

from click.testing import CliRunner

from chokaq.cli import main
from chokaq.errors import FatalError

from .conftest import Cli, until
from .ops_app import build

LONG = "e" * 200


async def seed_long_error(store: Any) -> None:
    """One DLQ job whose error is 200 characters long, on a type with a long name too."""
    app = build(store.url, store.schema)

    @app.job(name="t" * 120, queue="default", max_attempts=1)
    async def long_error() -> None:
        raise FatalError(LONG)

    await app.enqueue_many([long_error.prepare()])
    await app.open()

    async def drained() -> bool:
        await app.create_worker(burst=True).run()
        summary = await app.backend.stats_summary()
        return summary.pending + summary.fetched + summary.processing == 0

    await until(drained, timeout=30)
    await app.close()


def piped(store: Any, *args: str) -> str:
    """``chokaq ARGS`` with stdout not a terminal and no $COLUMNS, as under ``| grep``."""
    runner = CliRunner(env={"COLUMNS": None, "NO_COLOR": "1"})
    argv = [*args, "--database", store.url, "--schema", store.schema]
    result = runner.invoke(main, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_piped_tables_are_not_cut_to_80_columns(store: Any) -> None:
    asyncio.run(seed_long_error(store))
    out = piped(store, "dlq", "list")
    [row] = [line for line in out.splitlines() if LONG in line]
    assert "t" * 120 in row and f"FatalError: {LONG}" in row


def test_help_shows_the_environment_variables() -> None:
    for command in (["dlq", "list"], ["stats"], ["migrate"]):
        out = CliRunner().invoke(main, [*command, "--help"]).output
        assert "CHOKAQ_DATABASE_URL" in out and "CHOKAQ_SCHEMA" in out, command
    out = CliRunner().invoke(main, ["deck", "--help"]).output
    for name in ("TOKEN", "READONLY_TOKEN", "USERS", "SECRET"):
        assert f"CHOKAQ_DECK_{name}" in out


def test_dlq_caps_are_the_deck_apis(cli: Cli) -> None:
    from chokaq.deck import api
    from chokaq.limits import MAX_BULK_CAP

    assert MAX_BULK_CAP == 10_000 and "MAX_BULK_CAP" in vars(api)
    cli("migrate")
    for verb in ("requeue", "purge"):
        out = cli("dlq", verb, "--queue", "nowhere", "--cap", "10000", "--yes").output
        assert "cap" in out and "10000" in out and f"{verb}d 0 job(s)" in out
        refused = cli("dlq", verb, "--queue", "nowhere", "--cap", "10001", "--yes", expect=2)
        assert "--cap" in refused.output and "1<=x<=10000" in refused.output

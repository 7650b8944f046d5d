"""The CLI in scripts (issue 18): whole lines when piped, ``--json`` on the read commands,
``--log-level``, the environment variables in ``--help`` and the Deck API's bulk cap."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from click.testing import CliRunner

from chokaq.cli import main
from chokaq.errors import FatalError

from .conftest import Cli, seed, until
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


def test_log_level_option_and_environment_variable(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=1, poison=0, flaky=0))
    assert "admin_completed" in cli("queue", "pause", "default").stderr
    quiet = cli("--log-level", "warning", "queue", "resume", "default")
    assert "queue default resumed" in quiet.stdout and "admin_completed" not in quiet.stderr
    cli.runner.env["CHOKAQ_LOG_LEVEL"] = "ERROR"
    try:
        assert "admin_completed" not in cli("queue", "pause", "default").stderr
    finally:
        del cli.runner.env["CHOKAQ_LOG_LEVEL"]
    assert "admin_completed" in cli("queue", "resume", "default").stderr  # back to info
    bad = cli("--log-level", "loud", "stats", expect=2)
    assert "debug" in bad.output and "error" in bad.output


def test_configure_logging_honours_the_cli_level() -> None:
    # What `chokaq --log-level debug worker` does: the group sets the default, the worker
    # calls configure_logging() without a level. In a subprocess: it changes global logging.
    script = (
        "import logging\n"
        "from chokaq.logs import configure_logging, logger, set_default_level\n"
        "set_default_level('debug'); configure_logging()\n"
        "assert logger.level == logging.DEBUG, logger.level\n"
        "set_default_level('Error'); configure_logging(json_lines=True)\n"
        "assert logger.level == logging.ERROR, logger.level\n"
        "configure_logging(level=logging.INFO)\n"
        "assert logger.level == logging.INFO, logger.level\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

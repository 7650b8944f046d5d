"""The CLI in scripts (issue 18): whole lines when piped, ``--json`` on the read commands,
``--log-level``, the environment variables in ``--help`` and the Deck API's bulk cap."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

import pytest
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
    argv = [sys.executable, "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


Z_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def test_stats_and_queue_list_print_json(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=3, poison=2, flaky=1))
    overview = json.loads(cli("stats", "--json").stdout)
    assert Z_TIME.match(overview["at"]) and overview["workers"] >= 0
    summary = overview["summary"]
    assert (summary["pending"], summary["succeeded_total"], summary["failed_total"]) == (0, 3, 3)
    assert summary["retried_total"] == 1 and "jobs_per_second_1m" in overview["throughput"]
    by_name = {q["name"]: q for q in overview["queues"]}
    assert set(by_name) >= {"default", "mail"} and by_name["mail"]["failed_total"] == 1
    cli("queue", "limit", "mail", "--max-workers", "2", "--rate", "5/s")
    cli("queue", "pause", "mail")
    queues = json.loads(cli("queue", "list", "--json").stdout)
    assert isinstance(queues, list)
    mail = next(q for q in queues if q["name"] == "mail")
    assert mail["paused"] is True and mail["max_workers"] == 2 and mail["rate_limit"] == "5/s"
    assert mail["lag_level"] == "ok" and mail["pending"] == 0
    assert next(q for q in queues if q["name"] == "default")["rate_limit"] is None


def test_stats_json_watch_prints_one_line_per_refresh(
    cli: Cli, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(seed(store, ok=1, poison=0, flaky=0))
    import chokaq.cli.stats as stats_module

    calls = {"n": 0}
    real = stats_module._snapshot_json

    async def counting(app: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= 4:
            raise KeyboardInterrupt  # the operator's Ctrl-C after three refreshes
        return await real(app)

    monkeypatch.setattr(stats_module, "_snapshot_json", counting)
    out = cli("stats", "--json", "--watch", "--interval", "0.1").stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and all(line["summary"]["succeeded_total"] == 1 for line in lines)


def test_dlq_list_and_show_print_json(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=1, poison=2, flaky=1))
    listed = json.loads(cli("dlq", "list", "--json").stdout)
    assert isinstance(listed, list) and len(listed) == 3
    assert {j["failure_reason"] for j in listed} == {"fatal_error", "transient"}
    assert all(j["state"] == "failed" and j["pillar"] == "dlq" for j in listed)
    assert all(Z_TIME.match(j["failed_at"]) for j in listed)
    [flaky] = [j for j in listed if j["queue"] == "mail"]
    assert flaky["payload"] == {"n": 0} and "ConnectionError: flaky 0" in flaky["error"]
    page = json.loads(cli("dlq", "list", "--json", "--reason", "fatal_error").stdout)
    assert len(page) == 2
    assert json.loads(cli("dlq", "list", "--json", "--page", "2").stdout) == []
    shown = json.loads(cli("dlq", "show", flaky["id"], "--json").stdout)
    # A listing carries the end of a long error (its traceback's last line), named in
    # ``truncated``; show prints all of it.
    assert flaky["truncated"] == ["error"] and shown["truncated"] == []
    assert shown["error"].endswith(flaky["error"]) and len(shown["error"]) > len(flaky["error"])
    assert {**shown, "error": "", "truncated": []} == {**flaky, "error": "", "truncated": []}
    missing = cli("dlq", "show", "01890000-0000-7000-8000-000000000000", "--json", expect=1)
    assert missing.output.startswith("error: no job")

"""A store that cannot be reached fails at once with its real cause: a refused PostgreSQL
port, a missing PostgreSQL database, a missing SQLite directory; and read-only CLI commands
never create a database file."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import PG_URL, require_postgres

from chokaq import App
from chokaq.cli import main
from chokaq.errors import ConfigurationError, StorageUnavailableError

# The pool's own wait was 30 s; the first direct connection fails in well under that.
FAST_SECONDS = 15.0


def _pg_url(*, port: int | None = None, database: str | None = None) -> str:
    head, _, db = PG_URL.rpartition("/")
    if port is not None:
        host = head.rsplit(":", 1)[0]
        head = f"{host}:{port}"
    return f"{head}/{database or db}"


async def _open_fails(url: str, caplog: pytest.LogCaptureFixture) -> tuple[str, float]:
    app = App(url, auto_migrate=False)
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="psycopg"),
        pytest.raises(StorageUnavailableError) as info,
    ):
        await app.open()
    elapsed = time.monotonic() - started
    await app.close()
    pool_lines = [r for r in caplog.records if r.name.startswith("psycopg")]
    assert not pool_lines, [r.getMessage() for r in pool_lines]
    return str(info.value), elapsed


async def test_a_refused_postgres_port_fails_at_once_naming_the_cause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    require_postgres()
    message, elapsed = await _open_fails(_pg_url(port=1), caplog)
    assert "Connection refused" in message.splitlines()[0], message
    assert "pool initialization incomplete" not in message
    assert elapsed < FAST_SECONDS


async def test_a_missing_postgres_database_fails_at_once_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    require_postgres()
    message, elapsed = await _open_fails(_pg_url(database="chokaq_no_such_db"), caplog)
    assert 'database "chokaq_no_such_db" does not exist' in message.splitlines()[0], message
    assert elapsed < FAST_SECONDS


async def test_a_missing_sqlite_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    app = App(f"sqlite:///{missing / 'jobs.db'}")
    with pytest.raises(ConfigurationError) as info:
        await app.open()
    await app.close()
    assert str(missing) in str(info.value) and "does not exist" in str(info.value)
    assert not missing.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["queue", "list"],
        ["dlq", "list"],
        ["dlq", "show", "0" * 8 + "-0000-0000-0000-" + "0" * 12],
        ["dlq", "requeue", "--reason", "timeout", "--yes"],
        ["dlq", "purge", "--all", "--yes"],
        ["purge"],
    ],
    ids=["stats", "queue-list", "dlq-list", "dlq-show", "dlq-requeue", "dlq-purge", "purge"],
)
def test_commands_on_what_a_store_holds_refuse_a_missing_database_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHOKAQ_DATABASE_URL", raising=False)
    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
    result = runner.invoke(main, argv)  # neither --app nor --database: ./chokaq.db
    assert result.exit_code == 2, result.output
    assert "chokaq.db does not exist" in result.output, result.output
    assert "Traceback" not in result.output
    elsewhere = tmp_path / "elsewhere.db"
    result = runner.invoke(main, [*argv, "--database", f"sqlite:///{elsewhere}"])
    assert result.exit_code == 2 and "elsewhere.db does not exist" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was created


def test_read_only_commands_still_read_an_existing_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert runner.invoke(main, ["migrate", "--database", url]).exit_code == 0
    result = runner.invoke(main, ["stats", "--database", url])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("port", "database", "cause"),
    [(1, None, "Connection refused"), (None, "chokaq_no_such_db", "does not exist")],
    ids=["refused-port", "missing-database"],
)
def test_the_cli_prints_the_cause_in_one_line(
    port: int | None, database: str | None, cause: str
) -> None:
    require_postgres()
    url = _pg_url(port=port, database=database)
    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
    started = time.monotonic()
    result = runner.invoke(main, ["stats", "--database", url])
    assert time.monotonic() - started < FAST_SECONDS
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and cause in lines[0], lines
    assert "pool initialization incomplete" not in result.output

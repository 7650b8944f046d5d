"""A store that cannot be reached fails at once with its real cause: a refused PostgreSQL
port, a missing PostgreSQL database, a missing SQLite directory; read-only CLI commands never
create a database file; and an empty database URL (given, or set in ``CHOKAQ_DATABASE_URL``) is
an error naming where it came from, never the default ``./chokaq.db``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import PG_URL, require_postgres

from chokaq import App
from chokaq.cli import main
from chokaq.errors import ConfigurationError, StorageUnavailableError
from chokaq.storage import create_backend

REPO = Path(__file__).resolve().parents[2]

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


def test_an_empty_database_url_is_an_error_naming_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 32: CHOKAQ_DATABASE_URL= (set but empty) made App() write to a new ./chokaq.db.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHOKAQ_DATABASE_URL", raising=False)
    for url, said in (("", "empty"), ("  ", "blank")):
        with pytest.raises(ConfigurationError) as info:
            App(url)
        assert str(info.value).startswith(f"url: must not be {said}: give a database URL")
        with pytest.raises(ConfigurationError) as info:
            create_backend(url)
        assert str(info.value).startswith(f"url: must not be {said}")
        monkeypatch.setenv("CHOKAQ_DATABASE_URL", url)
        with pytest.raises(ConfigurationError) as info:
            App()
        assert str(info.value).startswith(f"CHOKAQ_DATABASE_URL: must not be {said}")
        assert str(info.value).endswith("or unset it for the default sqlite:///chokaq.db")
        monkeypatch.delenv("CHOKAQ_DATABASE_URL")
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    with pytest.raises(ConfigurationError, match=r"^url: must not be empty"):
        app.configure(url="")
    assert app.url == f"sqlite:///{tmp_path / 'jobs.db'}"
    monkeypatch.setenv("CHOKAQ_DATABASE_URL", "")
    assert App("sqlite:///given.db").url == "sqlite:///given.db"  # the variable is not read
    monkeypatch.delenv("CHOKAQ_DATABASE_URL")
    assert App().url == "sqlite:///chokaq.db"  # unset: the default, as documented
    assert list(tmp_path.iterdir()) == []  # nothing was created


@pytest.mark.parametrize(
    ("env", "args", "named"),
    [
        ("", ["enqueue", "t", "{}"], "CHOKAQ_DATABASE_URL: must not be empty"),
        (" ", ["migrate"], "CHOKAQ_DATABASE_URL: must not be blank"),
        ("", ["worker", "--app", "tests.ops.ops_app:app", "--burst"], "CHOKAQ_DATABASE_URL"),
        (None, ["enqueue", "t", "{}", "--database", ""], "'--database'"),
        (None, ["stats", "--database", " "], "'--database'"),
        (None, ["demo", "--postgres", ""], "'--postgres'"),
    ],
    ids=["enqueue-env", "migrate-env", "worker-env", "enqueue-option", "stats-option", "demo"],
)
def test_the_cli_refuses_an_empty_database_url_as_a_usage_error(
    tmp_path: Path, env: str | None, args: list[str], named: str
) -> None:
    environment = {key: value for key, value in os.environ.items() if key != "CHOKAQ_DATABASE_URL"}
    environment["PYTHONPATH"] = os.pathsep.join((str(REPO / "src"), str(REPO)))
    if env is not None:
        environment["CHOKAQ_DATABASE_URL"] = env
    done = subprocess.run(
        [sys.executable, "-m", "chokaq", *args],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "Invalid value for '--" in done.stderr and named in done.stderr, done.stderr
    assert "give a database URL" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # no ./chokaq.db (nor any other file) was created

"""The pytest plugin in a pytest of its own (a subprocess, as a user's project runs it): its
fixtures run each test on a SQLite file and, with ``CHOKAQ_TEST_DATABASE_URL``, on a private
PostgreSQL schema that is dropped after."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from tests.conftest import PG_URL, require_postgres

SRC = Path(__file__).resolve().parents[2] / "src"

USER_TESTS = """
import pytest

from chokaq import App
from chokaq.testing import run_until_idle

app = App()  # the project's app, pointed elsewhere by default


@app.job()
async def double(n: int) -> int:
    return 2 * n


@pytest.mark.asyncio
async def test_on_a_fresh_app(chokaq_app, chokaq_database):
    @chokaq_app.job()
    async def triple(n: int) -> int:
        return 3 * n

    job_id = await triple.enqueue(n=2)
    assert (await run_until_idle(chokaq_app)).succeeded == 1
    assert await chokaq_app.result(job_id) == 6
    assert chokaq_app.url == chokaq_database.url
    print("BACKEND", chokaq_database.backend, chokaq_database.schema)


@pytest.mark.asyncio
async def test_on_the_projects_app(chokaq_database):
    chokaq_database.bind(app)
    job_id = await double.enqueue(n=21)
    await run_until_idle(app)
    assert await app.result(job_id) == 42
"""


def run_pytest(
    directory: Path, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """pytest in ``directory`` with chokaq's plugin, through its entry point once installed."""
    installed = any(
        ep.value == "chokaq.testing.pytest_plugin" for ep in entry_points(group="pytest11")
    )
    plugin = [] if installed else ["-p", "chokaq.testing.pytest_plugin"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *plugin, *args],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": str(SRC), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.postgres
def test_fixtures_run_each_test_on_sqlite_and_on_postgres_in_its_own_schema(tmp_path: Path) -> None:
    require_postgres()
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS), encoding="utf-8")
    result = run_pytest(tmp_path, env={"CHOKAQ_TEST_DATABASE_URL": PG_URL})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout
    backends = [line.split()[1:] for line in result.stdout.splitlines() if "BACKEND" in line]
    assert sorted(b for b, _ in backends) == ["postgres", "sqlite"]
    [schema] = [s for b, s in backends if b == "postgres"]
    import psycopg

    with psycopg.connect(PG_URL) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
    assert row == (0,)  # dropped after the test


def test_without_a_url_the_fixtures_run_on_sqlite_only(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS), encoding="utf-8")
    result = run_pytest(tmp_path, env={"CHOKAQ_TEST_DATABASE_URL": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout, result.stdout

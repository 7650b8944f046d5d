"""The example shop (examples/django_shop) as the Django tests drive it: its environment on
either store, its manage.py under a chosen Python (Django 5.2 with the django-tasks backport in
the suite's own venv, Django 6 in .venv-django6), runserver, and plain reads of both stores."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest
from psycopg import sql
from tests.conftest import PG_URL, drop_schema, require_postgres

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "django_shop"
SRC = ROOT / "src"
T = TypeVar("T")


def django6_python() -> str:
    """The Python 3.12 of .venv-django6 (``./dev test`` makes it; ``CHOKAQ_DJANGO6_PYTHON``
    names another). Missing, the test fails saying so: Django 6 is never skipped."""
    python = os.environ.get("CHOKAQ_DJANGO6_PYTHON") or str(ROOT / ".venv-django6/bin/python")
    if not Path(python).exists():
        pytest.fail(f"no Django 6 Python at {python}: run ./dev test, which creates .venv-django6")
    return python


def pythons() -> dict[str, str]:
    """The interpreter of each Django the suite runs: "5" (this one) and "6"."""
    return {"5": sys.executable, "6": django6_python()}


@contextmanager
def site_env(store: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The shop's environment: on PostgreSQL, Django's tables and chokaq's in two private
    schemas of the test database; on SQLite, two files."""
    chokaq_schema = f"t_{uuid.uuid4().hex[:16]}"
    env = {
        **os.environ,
        "CHOKAQ_SCHEMA": chokaq_schema,
        "PYTHONPATH": f"{SHOP}{os.pathsep}{SRC}",
        "DJANGO_SETTINGS_MODULE": "shop_site.settings",
    }
    if store == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'django.db'}"
        env["CHOKAQ_DATABASE_URL"] = f"sqlite:///{tmp_path / 'jobs.db'}"
        yield env
        return
    require_postgres()
    django_schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(django_schema)))
    env.update(DATABASE_URL=PG_URL, DJANGO_DB_SCHEMA=django_schema, CHOKAQ_DATABASE_URL=PG_URL)
    try:
        yield env
    finally:
        drop_schema(django_schema)
        drop_schema(chokaq_schema)


def manage(
    env: dict[str, str], *args: str, python: str = sys.executable, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``python manage.py <args>`` in the shop; with ``check``, a non-zero exit fails."""
    done = subprocess.run(
        [python, "manage.py", *args],
        cwd=SHOP,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def background(
    env: dict[str, str], log: Path, *args: str, python: str = sys.executable
) -> Iterator[subprocess.Popen[bytes]]:
    """``manage.py <args>`` running until the block ends (then SIGTERM), its output in
    ``log``."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [python, "manage.py", *args], cwd=SHOP, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            process.terminate()
            process.wait(timeout=60)


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 90) -> T:
    """``probe()``'s first value that is not None, polled until ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (value := probe()) is None:
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)
    return value


@contextmanager
def runserver(env: dict[str, str], log: Path, python: str = sys.executable) -> Iterator[str]:
    """``manage.py runserver`` on a free port until the block ends; yields its base URL once
    it answers."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with background(
        env, log, "runserver", f"127.0.0.1:{port}", "--noreload", python=python
    ) as server:

        def serving() -> bool | None:
            try:
                httpx.get(f"{base}/orders/")  # 405: it serves
                return True
            except httpx.TransportError:
                assert server.poll() is None, log.read_text()
                return None

        wait_for(serving, "runserver answers", timeout=60)
        yield base


@contextmanager
def worker(env: dict[str, str], log: Path, python: str = sys.executable) -> Iterator[None]:
    """``manage.py chokaq_worker`` running until the block ends."""
    with background(env, log, "chokaq_worker", python=python):
        yield


def django_rows(env: dict[str, str], query: str) -> list[tuple[Any, ...]]:
    """Rows of Django's own tables."""
    if env["DATABASE_URL"].startswith("sqlite"):
        with sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite:///")) as conn:
            return conn.execute(query).fetchall()
    with psycopg.connect(PG_URL) as conn:
        conn.execute(
            sql.SQL("SET search_path = {}").format(sql.Identifier(env["DJANGO_DB_SCHEMA"]))
        )
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


def chokaq_rows(env: dict[str, str], table: str, columns: str) -> list[tuple[Any, ...]]:
    """``columns`` of every row of chokaq's ``table`` (jobs_hot, jobs_archive, ...), sorted."""
    schema = env["CHOKAQ_SCHEMA"]
    url = env["CHOKAQ_DATABASE_URL"]
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute(f"SELECT {columns} FROM {schema}_{table}").fetchall()
        return sorted(rows, key=repr)
    with psycopg.connect(PG_URL) as conn:
        query = sql.SQL("SELECT {} FROM {}.{}").format(
            sql.SQL(columns), sql.Identifier(schema), sql.Identifier(table)
        )
        return sorted(conn.execute(query).fetchall(), key=repr)

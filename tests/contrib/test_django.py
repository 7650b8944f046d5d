"""chokaq.contrib.django: the example shop (examples/django_shop) with its own settings on
PostgreSQL, through real processes: Django's migrate, chokaq_migrate, runserver answering
requests whose order and job commit together or not at all (and the on_commit path), then
chokaq_worker running the jobs through the Django ORM."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from tests.conftest import PG_URL, drop_schema, require_postgres

SHOP = Path(__file__).resolve().parents[2] / "examples" / "django_shop"
SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.postgres


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def shop() -> Iterator[dict[str, str]]:
    """The shop's environment: Django's tables in one private schema, chokaq's in another."""
    require_postgres()
    django_schema, chokaq_schema = (f"t_{uuid.uuid4().hex[:16]}" for _ in range(2))
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(django_schema)))
    env = {
        **os.environ,
        "DATABASE_URL": PG_URL,
        "DJANGO_DB_SCHEMA": django_schema,
        "CHOKAQ_DATABASE_URL": PG_URL,
        "CHOKAQ_SCHEMA": chokaq_schema,
        "PYTHONPATH": f"{SHOP}{os.pathsep}{SRC}",
        "DJANGO_SETTINGS_MODULE": "shop_site.settings",
    }
    try:
        yield env
    finally:
        drop_schema(django_schema)
        drop_schema(chokaq_schema)


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=SHOP,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def rows(env: dict[str, str], query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(PG_URL) as conn:
        conn.execute(
            sql.SQL("SET search_path = {}").format(sql.Identifier(env["DJANGO_DB_SCHEMA"]))
        )
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


def test_the_shop_commits_an_order_and_its_job_together_and_its_worker_runs_them(
    shop: dict[str, str], tmp_path: Path
) -> None:
    manage(shop, "migrate", "--noinput")
    assert "applied migrations" in manage(shop, "chokaq_migrate")
    port = _free_port()
    log = (tmp_path / "runserver.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=SHOP,
        env=shop,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/orders/")  # 405: it serves
                break
            except httpx.TransportError:
                assert server.poll() is None, (tmp_path / "runserver.log").read_text()
                assert time.monotonic() < deadline, "runserver did not start"
                time.sleep(0.1)
        book = httpx.post(f"{base}/orders/", params={"item": "book"})
        assert book.status_code == 200, book.text
        failed = httpx.post(f"{base}/orders/", params={"item": "fail"})
        assert failed.status_code == 500
        later = httpx.post(f"{base}/orders/later/", params={"item": "pen"})
        assert later.status_code == 200, later.text
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    assert rows(shop, "SELECT item, receipt_sent FROM shop_order ORDER BY id") == [
        ("book", False),
        ("pen", False),
    ]
    manage(shop, "chokaq_worker", "--burst")
    assert rows(shop, "SELECT item, receipt_sent FROM shop_order ORDER BY id") == [
        ("book", True),
        ("pen", True),
    ]
    with psycopg.connect(PG_URL) as conn:
        schema = sql.Identifier(shop["CHOKAQ_SCHEMA"])
        hot = conn.execute(sql.SQL("SELECT count(*) FROM {}.jobs_hot").format(schema)).fetchone()
        done = conn.execute(
            sql.SQL("SELECT type, queue FROM {}.jobs_archive").format(schema)
        ).fetchall()
    assert hot == (0,) and done == [("send_receipt", "receipts")] * 2  # fail's job rolled back


def test_enqueue_outside_postgresql_says_to_use_on_commit(tmp_path: Path) -> None:
    settings = {
        "DATABASES": {
            "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "d.db")}
        },
        "INSTALLED_APPS": ["chokaq.contrib.django"],
        "CHOKAQ_APP": "nowhere:app",
    }
    script = f"""
import django
from django.conf import settings
settings.configure(**{settings!r})
django.setup()
from chokaq import App
from chokaq.contrib.django import enqueue
app = App({f"sqlite:///{tmp_path / 'jobs.db'}"!r})
@app.job()
def ping(n: int) -> None: ...
try:
    enqueue(ping, n=1)
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.startswith("ConfigurationError enqueue needs Django's 'default' database")
    assert "use enqueue_on_commit" in out.stdout, out.stdout + out.stderr

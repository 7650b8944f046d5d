"""chokaq.contrib.django: the example shop (examples/django_shop) with its own settings on
PostgreSQL, through real processes: Django's migrate, chokaq_migrate, runserver answering
requests whose order and job commit together or not at all (and the on_commit path), then
chokaq_worker running the jobs through the Django ORM."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.contrib.djangosite import SRC, chokaq_rows, django_rows, manage, runserver, site_env

pytestmark = pytest.mark.postgres


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The shop's environment: Django's tables in one private schema, chokaq's in another."""
    with site_env("postgres", tmp_path) as env:
        yield env


def test_the_shop_commits_an_order_and_its_job_together_and_its_worker_runs_them(
    shop: dict[str, str], tmp_path: Path
) -> None:
    manage(shop, "migrate", "--noinput")
    migrated = manage(shop, "chokaq_migrate")
    assert "applied migrations" in migrated.stdout + migrated.stderr
    with runserver(shop, tmp_path / "runserver.log") as base:
        book = httpx.post(f"{base}/orders/", params={"item": "book"})
        assert book.status_code == 200, book.text
        failed = httpx.post(f"{base}/orders/", params={"item": "fail"})
        assert failed.status_code == 500
        later = httpx.post(f"{base}/orders/later/", params={"item": "pen"})
        assert later.status_code == 200, later.text
    assert django_rows(shop, "SELECT item, receipt_sent FROM shop_order ORDER BY id") == [
        ("book", False),
        ("pen", False),
    ]
    manage(shop, "chokaq_worker", "--burst")
    assert django_rows(shop, "SELECT item, receipt_sent FROM shop_order ORDER BY id") == [
        ("book", True),
        ("pen", True),
    ]
    hot = chokaq_rows(shop, "jobs_hot", "id")
    done = chokaq_rows(shop, "jobs_archive", "type, queue")
    assert hot == [] and done == [("send_receipt", "receipts")] * 2  # fail's job rolled back


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

"""failmap-shaped Celery code on ``chokaq.compat.celery``, for worker subprocess tests.

Below the marked line it is Celery code as a Django + Celery scanner writes it (failmap:
scan a list of URLs as a group of ``scan.si(url) | store.s(endpoint)`` chains, a chord that
sums them up, a bound task that calls ``self.retry``, an ``autoretry_for`` task with backoff,
beat entries with options); porting it changed only its imports and the two lines that make
the app. Handlers leave marker files in ``CHOKAQ_TEST_DIR`` so that the test counts runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from chokaq import App, CircuitPolicy, WorkerSettings
from chokaq.compat.celery import Celery, chord, crontab, group, shared_task

MARKERS = Path(os.environ.get("CHOKAQ_TEST_DIR", "/tmp"))

app = App(
    os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///celeryish.db"),
    schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
    auto_migrate=True,
    worker=WorkerSettings(
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.3,
        rescue_interval_seconds=0.3,
        leadership_lease_seconds=float(os.environ.get("CHOKAQ_LEASE", "2")),
        leadership_renew_seconds=float(os.environ.get("CHOKAQ_LEASE_RENEW", "0.5")),
        schedule_tick_seconds=0.2,
        poll_interval_seconds=0.05,
        worker_beat_interval_seconds=0.3,
        shutdown_grace_seconds=2.0,
        circuit=CircuitPolicy(threshold=50),
    ),
)
celery_app = Celery(app)

# ---- Celery code from here on: only the imports above changed -------------------------


def marker(name: str) -> Path:
    """The marker file of ``name`` (a URL's slashes and colons made safe)."""
    return MARKERS / name.replace("/", "_").replace(":", "_")


def mark(name: str) -> None:
    with open(marker(name), "a") as f:
        f.write(f"{os.getpid()}\n")


def runs(name: str) -> int:
    path = marker(name)
    return len(path.read_text().split()) if path.exists() else 0


@shared_task(queue="scanners", rate_limit="100/s", time_limit=60, soft_time_limit=30)
def scan(url):
    mark(f"scan-{url}")
    return {"url": url, "rating": len(url)}


@shared_task(queue="storage", expires=3600)
def store(result, endpoint):
    mark(f"store-{result['url']}")
    return {**result, "endpoint": endpoint}


@shared_task
def rescan(urls):
    """Sends a task per URL from inside a task, as failmap's planners do."""
    return [scan.delay(url).id for url in urls]


@shared_task(ignore_result=False, acks_late=True)
def summarize(results):
    return {"scanned": len(results), "total": sum(r["rating"] for r in results)}


@celery_app.task(bind=True, max_retries=3, default_retry_delay=0)
def poll_export(self, key, not_ready_for):
    """Retries itself (``self.retry``) until the export is ready."""
    mark(f"poll-{key}")
    if self.request.retries < not_ready_for:
        raise self.retry(exc=LookupError(f"{key} not ready"), countdown=0.1)
    return {"key": key, "retries": self.request.retries, "id": self.request.id}


@shared_task(
    autoretry_for=(ConnectionError,),
    retry_backoff=True,
    retry_backoff_max=1,
    retry_jitter=False,
    max_retries=2,
    priority=5,
)
def upload(key, failures):
    """Fails ``failures`` times with a ConnectionError, retried with backoff."""
    mark(f"upload-{key}")
    if runs(f"upload-{key}") <= failures:
        raise ConnectionError(f"{key}: upstream down")
    return key


@shared_task
def rebuild_report(kind, week=None):
    mark(f"report-{kind}")
    return kind


celery_app.conf.beat_schedule = {
    "rebuild-often": {
        "task": "tests.apps.celeryish.rebuild_report",
        "schedule": 1.0,
        "args": ("often",),
        "options": {"queue": "scanners", "priority": 7, "expires": 30},
    },
    "rebuild-weekly": {
        "task": "tests.apps.celeryish.rebuild_report",
        "schedule": crontab(minute=0, hour=3, day_of_week="mon"),
        "kwargs": {"kind": "weekly", "week": True},
        "options": {"queue": "storage"},
    },
}


def scan_all(urls, endpoint):
    """failmap's shape: one chain per URL, run as a group."""
    return group(scan.si(url) | store.s(endpoint) for url in urls)


def scan_and_summarize(urls):
    return chord(scan.s(url) for url in urls)(summarize.s())

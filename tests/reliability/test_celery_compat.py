"""failmap-shaped Celery code (``tests/apps/celeryish.py``) on ``chokaq.compat.celery``, with
only its imports changed, run by two ``chokaq worker`` processes on both backends: a group of
``scan.si(url) | store.s(endpoint)`` chains, a chord, ``bind=True`` with ``self.retry``,
``autoretry_for`` with backoff, and beat entries with options. The producer calls are Celery's
sync calls, run off the test's loop (``asyncio.to_thread``) as a web request would make them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import Proc
from tests.runtime.conftest import until

from chokaq import App, FailureReason, JobFailedError
from chokaq.compat.celery import AsyncResult

APP = "tests.apps.celeryish:app"
URLS = ["https://a.example", "https://bb.example", "https://ccc.example"]


@pytest.fixture
def celeryish(store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The ported module, its App pointed at this test's store (the producer's side)."""
    monkeypatch.setenv("CHOKAQ_TEST_DIR", str(tmp_path))
    from tests.apps import celeryish

    monkeypatch.setattr(celeryish, "MARKERS", tmp_path)
    celeryish.app.configure(url=store.url, schema=store.schema)
    yield celeryish
    celeryish.app.close_sync()


@pytest.fixture
async def workers(
    celeryish: Any, client: App, spawn: Callable[..., Proc]
) -> AsyncIterator[list[Proc]]:
    """Two worker processes of the ported app, after the schema exists (``client``)."""
    yield [spawn(app=APP), spawn(app=APP)]


async def blocking(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


def runs(tmp_path: Path, name: str) -> int:
    path = tmp_path / name.replace("/", "_").replace(":", "_")
    return len(path.read_text().split()) if path.exists() else 0


async def test_a_group_of_chains_and_a_chord_run_on_two_workers(
    celeryish: Any, workers: list[Proc], client: App, tmp_path: Path
) -> None:
    results = await blocking(lambda: celeryish.scan_all(URLS, "db").apply_async())
    values = await blocking(results.get, timeout=60)
    assert values == [{"url": u, "rating": len(u), "endpoint": "db"} for u in URLS]
    chord_result = await blocking(celeryish.scan_and_summarize, URLS)
    summary = await blocking(chord_result.get, timeout=60)
    assert summary == {"scanned": 3, "total": sum(len(u) for u in URLS)}
    assert chord_result.successful() and chord_result.state == "SUCCESS"
    planned = await blocking(celeryish.rescan.delay, URLS)
    sent = await blocking(planned.get, timeout=60)
    assert [await blocking(AsyncResult(i).get, timeout=60) for i in sent] == [
        {"url": u, "rating": len(u)} for u in URLS
    ]
    for url in URLS:  # once per chain, per chord member and per rescan; each store once
        assert runs(tmp_path, f"scan-{url}") == 3
        assert runs(tmp_path, f"store-{url}") == 1
    # The task options became the jobs' own: queue, and expiry per enqueue.
    stored = await client.get_job(results.results[0].id)
    assert stored is not None and stored.queue == "storage"
    scanned = await client.get_job(results.results[0].parent.id)
    assert scanned is not None and scanned.queue == "scanners"


async def test_self_retry_and_autoretry_with_backoff(
    celeryish: Any, workers: list[Proc], client: App, tmp_path: Path
) -> None:
    polled = await blocking(celeryish.poll_export.delay, "exp", 2)
    value = await blocking(polled.get, timeout=60)
    assert value == {"key": "exp", "retries": 2, "id": polled.id}
    assert runs(tmp_path, "poll-exp") == 3

    # Past max_retries=3, self.retry raises: the job fails at once, naming the last error.
    exhausted = await blocking(celeryish.poll_export.delay, "never", 10)
    failure = await blocking(exhausted.get, timeout=60, propagate=False)
    assert isinstance(failure, JobFailedError)
    assert failure.reason is FailureReason.FATAL_ERROR and "not ready" in (failure.error or "")
    assert runs(tmp_path, "poll-never") == 4 and exhausted.failed()

    uploaded = await blocking(celeryish.upload.delay, "u1", 2)  # two failures, then success
    assert await blocking(uploaded.get, timeout=60) == "u1"
    assert runs(tmp_path, "upload-u1") == 3
    view = await client.get_job(uploaded.id)
    assert view is not None and view.priority == 5

    doomed = await blocking(celeryish.upload.delay, "u2", 10)  # max_retries=2: three runs
    with pytest.raises(JobFailedError) as failed:
        await blocking(doomed.get, timeout=60)
    assert failed.value.reason is FailureReason.TRANSIENT
    assert "upstream down" in (failed.value.error or "")
    assert runs(tmp_path, "upload-u2") == 3
    assert await blocking(lambda: AsyncResult(doomed.id).state) == "FAILURE"


async def test_beat_entries_become_schedules_with_their_options(
    celeryish: Any, workers: list[Proc], client: App, tmp_path: Path
) -> None:
    async def declared() -> bool:
        return len(await client.backend.schedules_list()) == 2

    await until(declared, timeout=60)
    schedules = {s.name: s for s in await client.backend.schedules_list()}
    often, weekly = schedules["rebuild-often"], schedules["rebuild-weekly"]
    assert (often.queue, often.priority, often.every_seconds) == ("scanners", 7, 1.0)
    assert often.expires_after_seconds == 30 and weekly.expires_after_seconds is None
    assert (weekly.queue, weekly.cron) == ("storage", "0 3 * * mon")
    assert json.loads(weekly.kwargs) == {"args": [], "kwargs": {"kind": "weekly", "week": True}}

    async def fired() -> bool:
        return runs(tmp_path, "report-often") >= 1

    await until(fired, timeout=60)
    history = await client.backend.schedule_history("rebuild-often")
    job = await client.get_job(next(r.job_id for r in history if r.job_id))
    assert job is not None and (job.queue, job.priority) == ("scanners", 7)

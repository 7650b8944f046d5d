"""Real worker subprocesses on both backends: kill -9, SIGTERM, cross-process cancel, burst."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chokaq import App, FailureReason
from chokaq.models import JobFilter, JobStatus, Pillar

from .conftest import until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def spawn(store: Any, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start ``chokaq worker --app tests.apps.sample:app`` on this test's store."""
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def start(*args: str, **env: str) -> subprocess.Popen[bytes]:
        environment = {
            **os.environ,
            "CHOKAQ_DATABASE_URL": store.url,
            "CHOKAQ_SCHEMA": store.schema,
            "CHOKAQ_TEST_DIR": str(tmp_path),
            # This checkout's sources first: the venv's editable install may be another's.
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
            **env,
        }
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "chokaq", "worker", "--app", "tests.apps.sample:app", *args],
            cwd=REPO,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        logs.append(log)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for log in logs:
        log.close()


@pytest.fixture
async def client(store: Any) -> Any:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    import tests.apps.sample as sample  # noqa: F401  (the handlers, for prepare)

    await app.open()
    yield app
    await app.close()


def sample_job(name: str, **kwargs: Any) -> Any:
    from tests.apps import sample

    return sample.app.handlers[name].prepare(**kwargs)


def marker(tmp_path: Path, name: str) -> Callable[[], Any]:
    async def exists() -> bool:
        return (tmp_path / name).exists()

    return exists


async def test_kill_9_mid_job_makes_a_zombie_and_frees_the_prefetched_jobs(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    [hang_id] = await client.enqueue_many([sample_job("hang", tag="victim", priority=100)])
    quick_ids = await client.enqueue_many([sample_job("quick", tag=f"q{i}") for i in range(3)])
    first = spawn("--concurrency", "1", "--prefetch", "3")
    await until(marker(tmp_path, "started-victim"), timeout=30)

    async def prefetched() -> bool:
        page = await client.backend.jobs_page(
            pillar=Pillar.HOT, filter=JobFilter(status=JobStatus.FETCHED)
        )
        return page.total == 3

    await until(prefetched)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    spawn("--concurrency", "2")

    async def recovered() -> bool:
        views = [await client.backend.job_get(i) for i in [hang_id, *quick_ids]]
        return all(v is not None and v.pillar is not Pillar.HOT for v in views)

    await until(recovered, timeout=30)
    victim = await client.backend.job_get(hang_id)
    assert victim is not None and victim.failure_reason is FailureReason.ZOMBIE
    for job_id in quick_ids:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.ARCHIVE
        assert view.attempt_count == 1  # released, not counted, then run once
    assert all((tmp_path / f"done-q{i}").exists() for i in range(3))


async def test_sigterm_lets_running_jobs_finish_and_releases_prefetched_ones(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    [running_id] = await client.enqueue_many(
        [sample_job("sleepy", tag="finishing", seconds=0.8, priority=100)]
    )
    waiting = await client.enqueue_many([sample_job("quick", tag=f"w{i}") for i in range(2)])
    worker = spawn("--concurrency", "1", "--prefetch", "2")
    await until(marker(tmp_path, "started-finishing"), timeout=30)

    async def buffered() -> bool:
        page = await client.backend.jobs_page(
            pillar=Pillar.HOT, filter=JobFilter(status=JobStatus.FETCHED)
        )
        return page.total == 2

    await until(buffered)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    done = await client.backend.job_get(running_id)
    assert done is not None and done.pillar is Pillar.ARCHIVE
    for job_id in waiting:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.status is JobStatus.PENDING
        assert view.attempt_count == 0 and view.worker_id is None


async def test_sigterm_past_the_grace_period_requeues_the_running_job(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    [job_id] = await client.enqueue_many([sample_job("hang", tag="stuck")])
    worker = spawn(CHOKAQ_GRACE="0.5")
    await until(marker(tmp_path, "started-stuck"), timeout=30)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    view = await client.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.HOT and view.status is JobStatus.PENDING
    assert view.attempt_count == 1 and "Shutdown" in (view.last_error or "")


async def test_cancel_from_another_process_reaches_the_running_job(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    [job_id] = await client.enqueue_many([sample_job("hang", tag="cancel-me")])
    spawn()
    await until(marker(tmp_path, "started-cancel-me"), timeout=30)
    result = await client.backend.jobs_cancel(ids=[job_id], actor="carol")
    assert result.requested == (job_id,)

    async def cancelled() -> bool:
        view = await client.backend.job_get(job_id)
        return view is not None and view.pillar is Pillar.DLQ

    await until(cancelled, timeout=10)
    view = await client.backend.job_get(job_id)
    assert view is not None and view.failure_reason is FailureReason.CANCELLED
    assert view.cancelled_by == "carol"


async def test_burst_worker_exits_zero_when_the_work_is_done(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    await client.enqueue_many([sample_job("quick", tag=f"b{i}") for i in range(20)])
    worker = spawn("--burst", "--concurrency", "4")
    assert worker.wait(timeout=60) == 0
    assert (await client.backend.stats_summary()).succeeded_total == 20

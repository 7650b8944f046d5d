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
            # This checkout's sources first: an installed chokaq (say an editable install of
            # another checkout) must not be what the subprocess runs.
            "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO))),
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


async def test_a_second_sigterm_during_the_grace_period_cuts_it_short(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    [job_id] = await client.enqueue_many([sample_job("hang", tag="long")])
    worker = spawn(CHOKAQ_GRACE="60")
    await until(marker(tmp_path, "started-long"), timeout=30)
    worker.send_signal(signal.SIGTERM)

    async def draining() -> bool:
        return "[1012 shutdown_drain_started]" in _log(tmp_path)

    await until(draining, timeout=30)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0  # well before the 60 s grace
    view = await client.backend.job_get(job_id)
    assert view is not None and view.status is JobStatus.PENDING
    assert "Shutdown" in (view.last_error or "")


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


@pytest.mark.parametrize("watch", ["inotify", "poll"])
async def test_an_idle_worker_hears_an_enqueue_from_another_process(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path, watch: str
) -> None:
    # A 30 s poll: only a wake-up can start the jobs in time. On SQLite that is the signal file,
    # heard through inotify or the stat loop (``watch``); PostgreSQL ignores it and LISTENs.
    spawn(CHOKAQ_POLL_INTERVAL="30", CHOKAQ_SQLITE_WATCH=watch)
    await client.enqueue_many([sample_job("quick", tag="first")])
    await until(marker(tmp_path, "done-first"), timeout=30)
    for n in range(3):  # the worker is idle again after each: woken each time
        await client.enqueue_many([sample_job("quick", tag=f"again-{n}")])
        await until(marker(tmp_path, f"done-again-{n}"), timeout=5)


async def test_burst_worker_exits_zero_when_the_work_is_done(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    await client.enqueue_many([sample_job("quick", tag=f"b{i}") for i in range(20)])
    worker = spawn("--burst", "--concurrency", "4")
    assert worker.wait(timeout=60) == 0
    assert (await client.backend.stats_summary()).succeeded_total == 20


def _log(tmp_path: Path, n: int = 0) -> str:
    return (tmp_path / f"worker-{n}.log").read_text(errors="replace")


async def test_burst_waits_for_a_retry_that_falls_due_soon(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    ids = await client.enqueue_many([sample_job("flaky_once", tag="r")])
    worker = spawn("--burst", CHOKAQ_RETRY_DELAY="1.5")
    assert worker.wait(timeout=60) == 0, _log(tmp_path)
    view = await client.backend.job_get(ids[0])
    assert view is not None and view.pillar is Pillar.ARCHIVE, _log(tmp_path)
    assert (await client.backend.stats_summary()).pending == 0


async def test_burst_exits_75_naming_a_retry_due_past_the_horizon(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    await client.enqueue_many([sample_job("flaky_once", tag="r"), sample_job("quick", tag="q")])
    worker = spawn("--burst", CHOKAQ_RETRY_DELAY="600", CHOKAQ_BURST_HORIZON="1")
    assert worker.wait(timeout=60) == 75, _log(tmp_path)
    log = _log(tmp_path)
    assert "1 job of flaky_once on default waiting to run again (next due" in log, log
    assert "[1021 worker_burst_work_left]" in log and "burst: work left" in log, log
    assert (await client.backend.stats_summary()).pending == 1


async def test_burst_exits_75_naming_jobs_held_by_an_open_circuit(
    spawn: Callable[..., subprocess.Popen[bytes]], client: App, tmp_path: Path
) -> None:
    await client.enqueue_many([sample_job("down", tag=f"d{i}") for i in range(6)])
    worker = spawn(
        "--burst",
        "--concurrency",
        "1",
        CHOKAQ_CIRCUIT_THRESHOLD="2",
        CHOKAQ_RETRY_DELAY="0.05",
        CHOKAQ_BURST_HORIZON="2",
    )
    assert worker.wait(timeout=60) == 75, _log(tmp_path)
    log = _log(tmp_path)
    assert "of down on default held by an open circuit" in log, log
    summary = await client.backend.stats_summary()
    assert summary.pending == 6 and summary.failed_total == 0


def test_worker_help_names_the_burst_exit_codes() -> None:
    from click.testing import CliRunner

    from chokaq.cli import main

    text = " ".join(CliRunner().invoke(main, ["worker", "--help"]).output.split())
    assert "75" in text and "burst_horizon_seconds" in text
    assert "'*' for every queue" in text and "Default: the queues the app's" in text

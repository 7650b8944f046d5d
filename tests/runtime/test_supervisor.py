"""``chokaq worker --processes N``: a real supervisor with real children, on both backends: a
SIGKILLed child is restarted and no job is lost, SIGTERM drains every child, children recycle
after ``--max-jobs-per-child``, burst children make the supervisor exit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chokaq import App, FailureReason
from chokaq.cli.supervisor import EXIT_RECYCLED, worst_exit
from chokaq.models import JobStatus, Pillar, WorkerInfo

from .conftest import until
from .test_worker_process import _log, client, marker, sample_job, spawn

__all__ = ["client", "spawn"]  # fixtures, imported to be shared with test_worker_process

Spawn = Callable[..., subprocess.Popen[bytes]]
# An event line of a worker's plain-text log: "[1032 worker_child_crashed] ...".
EVENT = re.compile(r"\[(\d{4}) [a-z_]+\]")


@pytest.fixture(autouse=True)
def _record_events(
    tmp_path: Path, emitted_events: Any, request: pytest.FixtureRequest
) -> Iterator[None]:
    """The events the supervisors and children of each test logged count as emitted by it
    (the whole suite's check that every catalogued event is: tests/ops/test_events.py)."""
    yield
    for log in tmp_path.glob("worker-*.log"):
        found = [int(m) for m in EVENT.findall(log.read_text(errors="replace"))]
        emitted_events.add(found, request.node.nodeid)


async def live_workers(app: App) -> list[WorkerInfo]:
    return await app.backend.workers_list(alive_within_seconds=5)


def wait_exit(proc: subprocess.Popen[bytes], tmp_path: Path, timeout: float = 30) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the supervisor did not exit in {timeout} s\n{_log(tmp_path)}")


async def all_out_of_hot(app: App, ids: list[str]) -> bool:
    views = [await app.backend.job_get(i) for i in ids]
    return all(v is not None and v.pillar is not Pillar.HOT for v in views)


async def test_a_sigkilled_child_is_restarted_and_no_job_is_lost(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    supervisor = spawn("--processes", "2", "--concurrency", "2")

    async def two_workers() -> bool:
        return len(await live_workers(client)) == 2

    await until(two_workers, timeout=30)
    first = await live_workers(client)
    assert len({w.pid for w in first}) == 2 and supervisor.pid not in {w.pid for w in first}
    ids = await client.enqueue_many([sample_job("quick", tag=f"a{i}") for i in range(30)])
    victim = first[0]
    os.kill(victim.pid, signal.SIGKILL)

    async def replaced() -> bool:
        return bool({w.id for w in await live_workers(client)} - {w.id for w in first})

    await until(replaced, timeout=30)
    ids += await client.enqueue_many([sample_job("quick", tag=f"b{i}") for i in range(30)])

    async def done() -> bool:
        return await all_out_of_hot(client, ids)

    await until(done, timeout=30)
    for job_id in ids:
        view = await client.backend.job_get(job_id)
        assert view is not None
        # Killed mid-job, a job is a zombie (its side effects unknown); every other one ran.
        assert view.pillar is Pillar.ARCHIVE or view.failure_reason is FailureReason.ZOMBIE
    assert "[1032 worker_child_crashed] worker process" in _log(tmp_path)
    assert "exited with 137; restarting it in 0.5 s" in _log(tmp_path)
    supervisor.send_signal(signal.SIGTERM)
    assert wait_exit(supervisor, tmp_path) == 0, _log(tmp_path)
    # Clean exits remove their rows; only the killed child's may linger until it ages out.
    assert {w.id for w in await live_workers(client)} <= {victim.id}


async def test_sigterm_drains_every_child_and_exits_zero(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    supervisor = spawn("--processes", "2", "--concurrency", "2")

    async def two_workers() -> bool:
        return len(await live_workers(client)) == 2

    await until(two_workers, timeout=30)  # then neither can take more than its two jobs
    ids = await client.enqueue_many(
        [sample_job("sleepy", tag=f"s{i}", seconds=2.0) for i in range(4)]
    )

    async def all_started() -> bool:
        return all([await marker(tmp_path, f"started-s{i}")() for i in range(4)])

    await until(all_started, timeout=30)
    pids = {(tmp_path / f"started-s{i}").read_text() for i in range(4)}
    assert len(pids) == 2  # two jobs in each child
    supervisor.send_signal(signal.SIGTERM)
    assert wait_exit(supervisor, tmp_path) == 0, _log(tmp_path)
    for job_id in ids:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.ARCHIVE, _log(tmp_path)
    assert await live_workers(client) == []
    log = _log(tmp_path)
    assert log.count("[1001 worker_stopped]") == 2 and "1032 worker_child_crashed" not in log


async def test_a_second_sigterm_makes_the_children_skip_their_grace(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    supervisor = spawn("--processes", "2", "--concurrency", "1", CHOKAQ_GRACE="60")

    async def two_workers() -> bool:
        return len(await live_workers(client)) == 2

    await until(two_workers, timeout=30)
    ids = await client.enqueue_many([sample_job("hang", tag=f"h{i}") for i in range(2)])

    async def both_started() -> bool:
        return all([await marker(tmp_path, f"started-h{i}")() for i in range(2)])

    await until(both_started, timeout=30)
    supervisor.send_signal(signal.SIGTERM)

    async def both_draining() -> bool:
        return _log(tmp_path).count("[1012 shutdown_drain_started]") == 2

    await until(both_draining, timeout=30)
    supervisor.send_signal(signal.SIGTERM)
    assert wait_exit(supervisor, tmp_path) == 0, _log(tmp_path)  # not the 60 s grace
    for job_id in ids:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.status is JobStatus.PENDING, _log(tmp_path)
        assert "Shutdown" in (view.last_error or "")


async def test_children_recycle_after_max_jobs_and_every_job_runs(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    ids = await client.enqueue_many([sample_job("quick", tag=f"r{i}") for i in range(20)])
    supervisor = spawn("--processes", "2", "--concurrency", "2", "--max-jobs-per-child", "5")

    async def done() -> bool:
        return await all_out_of_hot(client, ids)

    await until(done, timeout=40)
    for job_id in ids:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.ARCHIVE
    pids = {(tmp_path / f"done-r{i}").read_text() for i in range(20)}
    assert len(pids) > 2, pids  # no child ran more than its five
    log = _log(tmp_path)
    assert log.count("[1033 worker_child_recycled]") >= 2, log
    assert "1032 worker_child_crashed" not in log, log
    supervisor.send_signal(signal.SIGTERM)
    assert wait_exit(supervisor, tmp_path) == 0, _log(tmp_path)


async def test_a_child_above_its_memory_limit_is_replaced_after_each_job(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    ids = await client.enqueue_many([sample_job("quick", tag=f"m{i}") for i in range(4)])
    supervisor = spawn("--concurrency", "1", "--max-memory-per-child", "1")

    async def done() -> bool:
        return await all_out_of_hot(client, ids)

    await until(done, timeout=40)
    assert len({(tmp_path / f"done-m{i}").read_text() for i in range(4)}) == 4
    log = _log(tmp_path)
    assert "above max_memory_mib 1" in log and "1 worker process(es)" in log, log
    supervisor.send_signal(signal.SIGTERM)
    assert wait_exit(supervisor, tmp_path) == 0, _log(tmp_path)


async def test_children_stop_cleanly_when_the_supervisor_is_killed(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    supervisor = spawn("--processes", "2")

    async def two_workers() -> bool:
        return len(await live_workers(client)) == 2

    await until(two_workers, timeout=30)
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait(timeout=10)

    async def all_gone() -> bool:  # a clean stop removes the worker's row
        return await live_workers(client) == []

    await until(all_gone, timeout=30)
    assert _log(tmp_path).count("the supervisor is gone; stopping") == 2


async def test_burst_children_make_the_supervisor_exit_when_all_finished(
    spawn: Spawn, client: App, tmp_path: Path
) -> None:
    await client.enqueue_many([sample_job("quick", tag=f"b{i}") for i in range(12)])
    supervisor = spawn("--processes", "2", "--burst", "--max-jobs-per-child", "4")
    assert wait_exit(supervisor, tmp_path, timeout=60) == 0, _log(tmp_path)
    assert (await client.backend.stats_summary()).succeeded_total == 12


def test_the_worst_child_exit_code_wins() -> None:
    assert worst_exit([0, 0]) == 0
    assert worst_exit([0, 75]) == 75
    assert worst_exit([75, 1, 0]) == 1
    assert worst_exit([137, 75]) == 137
    assert EXIT_RECYCLED not in (0, 1, 2, 75)


def test_processes_must_be_a_number_or_auto() -> None:
    from click.testing import CliRunner

    from chokaq.cli import main

    result = CliRunner().invoke(main, ["worker", "--app", "x:y", "--processes", "zero"])
    assert result.exit_code == 2 and "neither a number nor 'auto'" in result.output
    help_text = " ".join(CliRunner().invoke(main, ["worker", "--help"]).output.split())
    assert "--max-jobs-per-child" in help_text and "'auto': one per CPU core" in help_text

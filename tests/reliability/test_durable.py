"""Durable jobs across real worker processes (both backends): a worker SIGKILLed inside step 2
of a three-step job is resumed by another worker after the zombie timeout (step 1 and step 3
ran once, step 2 twice); 200 sleeping jobs on one worker of concurrency 2 hold no slot and use
no attempt; an event sent from this process wakes a job waiting in a worker process."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.runtime.conftest import until

from chokaq import App
from chokaq.logs import Event
from chokaq.models import JobStatus, NewJob, Pillar

from .conftest import Proc

DURABLE_APP = "tests.apps.durable:app"


def _runs(tmp_path: Path, tag: str, step: str) -> list[int]:
    path = tmp_path / f"{tag}-{step}"
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


async def test_a_durable_job_resumes_on_another_worker_after_a_crash(
    client: App, spawn: Callable[..., Proc], tmp_path: Path, emitted_events: Any, request: Any
) -> None:
    workers = [spawn(app=DURABLE_APP), spawn(app=DURABLE_APP)]
    job_id = await client.enqueue_many([NewJob(type="three_steps", payload='{"tag": "crash"}')])

    async def in_step_two() -> bool:
        return len(_runs(tmp_path, "crash", "step2")) == 1

    await until(in_step_two, timeout=60)
    [victim_pid] = _runs(tmp_path, "crash", "step2")
    [victim] = [proc for proc in workers if proc.pid == victim_pid]
    os.kill(victim.pid, signal.SIGKILL)
    victim.popen.wait(timeout=10)

    async def finished() -> bool:
        view = await client.backend.job_get(job_id[0])
        return view is not None and view.pillar is not Pillar.HOT

    await until(finished, timeout=90)
    view = await client.backend.job_get(job_id[0])
    assert view.pillar is Pillar.ARCHIVE, view.error
    result = await client.result(job_id[0], timeout_seconds=5)
    [survivor] = [proc for proc in workers if proc is not victim]
    assert result == {"total": 6, "pid": survivor.pid}
    assert _runs(tmp_path, "crash", "step1") == [victim.pid]
    assert _runs(tmp_path, "crash", "step2") == [victim.pid, survivor.pid]
    assert _runs(tmp_path, "crash", "step3") == [survivor.pid]
    assert view.attempt_count == 2  # the attempt the dead worker ran, and the one that finished
    assert survivor.events(Event.ZOMBIES_RESUMED) or victim.events(Event.ZOMBIES_RESUMED)
    emitted_events.add([Event.ZOMBIES_RESUMED], request.node.nodeid)
    assert [s.name for s in await client.backend.steps_list(job_id=job_id[0])] == [
        "one",
        "two",
        "three",
    ]


async def test_sleeping_jobs_hold_no_slot_and_use_no_attempt(
    client: App, spawn: Callable[..., Proc]
) -> None:
    spawn("--concurrency", "2", app=DURABLE_APP)
    count, seconds = 200, 3.0
    jobs = [NewJob(type="nap", payload=f'{{"seconds": {seconds}}}') for _ in range(count)]
    ids = await client.enqueue_many(jobs)

    async def all_done() -> bool:
        return (await client.backend.stats_summary()).succeeded_total == count

    await until(all_done, timeout=180)
    views = [await client.backend.job_get(job_id) for job_id in ids]
    assert {view.pillar for view in views} == {Pillar.ARCHIVE}
    assert {view.attempt_count for view in views} == {1}
    assert (await client.backend.stats_summary()).retried_total == 0
    finished = sorted(view.finished_at for view in views)
    # Had each sleep held one of the two slots, the last job would finish (200 / 2 - 1) * 3 s
    # = 297 s after the first; with the slots free, the spread is that of the first runs.
    spread = (finished[-1] - finished[0]).total_seconds()
    assert spread < 60, spread


async def test_an_event_from_another_process_wakes_the_waiting_job(
    client: App, spawn: Callable[..., Proc]
) -> None:
    spawn(app=DURABLE_APP)
    [job_id] = await client.enqueue_many(
        [NewJob(type="await_event", payload='{"key": "approved-7"}')]
    )

    async def suspended() -> bool:
        view = await client.backend.job_get(job_id)
        return view is not None and view.status is JobStatus.SUSPENDED

    await until(suspended, timeout=60)
    sent = time.monotonic()
    assert await client.send_event("approved-7", {"by": "ops"}) == job_id
    assert await client.result(job_id, timeout_seconds=30) == {"by": "ops"}
    assert time.monotonic() - sent < 10


async def test_a_parent_gathers_100_children_across_a_worker_crash(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    workers = [spawn(app=DURABLE_APP), spawn(app=DURABLE_APP)]
    [parent_id] = await client.enqueue_many(
        [NewJob(type="parent", payload='{"tag": "fan", "count": 100}')]
    )

    def completed() -> dict[int, list[int]]:
        return {n: _runs(tmp_path, "fan", f"child-{n}") for n in range(100)}

    async def half_done_and_rest_running() -> bool:
        # Children 0-49 finish at once; 50-99 wait for the go marker: 20 of them fill the
        # ten slots of each worker, so the killed one is running some.
        started = [n for n in range(50, 100) if _runs(tmp_path, "fan", f"started-{n}")]
        return sum(1 for runs in completed().values() if runs) >= 50 and len(started) >= 20

    await until(half_done_and_rest_running, timeout=90)
    victim = workers[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.popen.wait(timeout=10)
    (tmp_path / "fan-go").write_text("go")

    async def finished() -> bool:
        view = await client.backend.job_get(parent_id)
        return view is not None and view.pillar is not Pillar.HOT

    await until(finished, timeout=120)
    assert await client.result(parent_id, timeout_seconds=5) == sum(range(100))
    children = (await client.backend.job_get_related(id=parent_id)).children
    assert len(children) == 100  # spawned once: a replay enqueued none again
    assert {link.state for link in children} == {"succeeded"}
    runs = completed()
    numbers = []
    for link in children:
        view = await client.backend.job_get(link.id)
        n = json.loads(view.payload)["n"]
        numbers.append(n)
        # Ran to completion once per attempt at most: a run killed after completing but
        # before its move was written ran again; none ran more often than it was attempted.
        assert 1 <= len(runs[n]) <= view.attempt_count, (n, runs[n], view.attempt_count)
    assert sorted(numbers) == list(range(100))
    assert any(len(_runs(tmp_path, "fan", f"started-{n}")) > 1 for n in range(50, 100)), (
        "no child was running on the killed worker"
    )

"""Debounce, throttle and latest wins (``on_conflict``, issue 36) end to end, on both backends:
real worker subprocesses run what the enqueues leave (tests/apps/conflicts.py), and twenty
producer processes race on one key."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.apps.conflicts import KEY, publish, reindex

from chokaq import App, FailureReason, Pillar
from chokaq.models import JobStatus

from .conftest import REPO, Proc

APP = "tests.apps.conflicts:app"
DEADLINE = 60.0


def runs(tmp_path: Path, type: str) -> list[dict[str, Any]]:
    path = tmp_path / "runs.jsonl"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if line["type"] == type]


async def until(condition: Callable[[], Any], what: str, timeout: float = DEADLINE) -> None:
    """Poll ``condition`` (sync or async) until true, or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.05)


async def enqueue(client: App, options: Any, **arguments: Any) -> Any:
    """Enqueue through the test's own App (the handle's app is the workers' configuration)."""
    [job_id] = await client.enqueue_many([options.prepare(**arguments)])
    return job_id


async def idle(client: App) -> bool:
    summary = await client.backend.stats_summary()
    return summary.pending + summary.fetched + summary.processing == 0


async def test_debounce_runs_once_with_the_last_payload(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    spawn(app=APP)
    delay = 1.0
    handle = reindex.options(idempotency_key=KEY, on_conflict="replace", delay_seconds=delay)
    calls = []  # (job id, outcome, version, when the call began, when it returned)
    start = time.monotonic()
    for version in range(100):  # 100 enqueues over 2 s, each pushing the due time 1 s on
        target = start + version * 0.02
        await asyncio.sleep(max(0.0, target - time.monotonic()))
        began = time.monotonic()
        job_id = await enqueue(client, handle, doc="d", version=version)
        calls.append((str(job_id), job_id.outcome, version, began, time.monotonic()))
    await until(lambda: idle(client), "nothing left to run")
    done = runs(tmp_path, "reindex")
    # Each enqueue writes the job's due time inside its call, so the job cannot come due
    # between two calls that ended less than the delay after the earlier one began. On a
    # machine that stalled the test longer than that, the pending job may have run, and the
    # next enqueue then says so (inserted or superseded: a new job with the key): what the
    # outcomes say is what must have run, each job once with the last version written to it.
    tight = all(b[4] - a[3] < delay for a, b in itertools.pairwise(calls))
    if tight:
        assert [c[1] for c in calls] == ["inserted"] + ["replaced"] * 99
    last: dict[str, int] = {}
    for job_id, outcome, version, _, _ in calls:
        assert (job_id in last) == (outcome == "replaced"), (job_id, outcome)
        last[job_id] = version
    assert sorted(r["version"] for r in done) == sorted(last.values())  # 99 among them
    for job_id in last:
        assert (await client.get_job(job_id)).pillar == Pillar.ARCHIVE
    [queue] = [q for q in await client.backend.stats_queues() if q.queue.name == "default"]
    replaced = sum(1 for c in calls if c[1] == "replaced")
    superseded = sum(1 for c in calls if c[1] == "superseded")
    assert (queue.replaced_total, queue.superseded_total) == (replaced, superseded)


async def test_throttle_runs_at_most_once_per_window_with_the_newest_payload(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    window = 1.0
    spawn(app=APP)
    handle = reindex.options(
        idempotency_key=KEY, on_conflict="replace_payload", delay_seconds=window
    )
    written: dict[str, list[int]] = {}  # job id -> versions written to it, in order
    opened: dict[str, float] = {}  # job id -> when the enqueue that wrote it started
    version = 0
    deadline = time.monotonic() + DEADLINE
    # Enqueue a version every 50 ms until three windows have run (a busy machine only makes
    # the windows fewer per second, never more).
    while len(runs(tmp_path, "reindex")) < 3:
        assert time.monotonic() < deadline, "three windows did not run in time"
        began = time.time()
        job_id = await enqueue(client, handle, doc="d", version=version)
        if job_id.outcome != "replaced":
            assert job_id.outcome in ("inserted", "superseded")
            opened[str(job_id)] = began
        written.setdefault(str(job_id), []).append(version)
        version += 1
        await asyncio.sleep(0.05)
    await until(lambda: idle(client), "the last window ran")
    done = runs(tmp_path, "reindex")
    # One execution per window: one per job the stream opened, each with the newest version
    # written to that job, none before its window's delay had passed.
    assert len(done) == len(opened) >= 3
    assert [r["version"] for r in done] == [written[j][-1] for j in opened]
    for run, job_id in zip(done, opened, strict=True):
        assert run["at"] >= opened[job_id] + window
    assert done[-1]["version"] == version - 1  # the newest payload of all ran last


async def test_latest_wins_cancels_the_running_job_and_runs_the_new_one(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    spawn(app=APP)
    handle = publish.options(idempotency_key=KEY, on_conflict="cancel_running")
    first = await enqueue(client, handle, doc="d", version=1)
    assert first.outcome == "inserted"
    await until(lambda: (tmp_path / "started-1").exists(), "version 1 started")
    second = await enqueue(client, handle, doc="d", version=2)
    assert (second.outcome, second.duplicate) == ("superseded", False)
    await until(lambda: runs(tmp_path, "publish"), "version 2 ran")
    assert [r["version"] for r in runs(tmp_path, "publish")] == [2]

    async def first_cancelled() -> bool:
        job = await client.get_job(first)
        return job is not None and job.pillar == Pillar.DLQ

    await until(first_cancelled, "version 1 was cancelled")
    old = await client.get_job(first)
    assert old is not None
    assert old.failure_reason == FailureReason.CANCELLED
    assert old.cancelled_by == f"superseded by {second}"
    new = await client.get_job(second)
    assert new is not None and new.pillar == Pillar.ARCHIVE


async def test_twenty_processes_racing_on_one_key_leave_one_pending_job(
    client: App, store: Any, tmp_path: Path
) -> None:
    producers, each = 20, 10
    environment = {
        **os.environ,
        "CHOKAQ_DATABASE_URL": store.url,
        "CHOKAQ_SCHEMA": store.schema,
        "CHOKAQ_TEST_DIR": str(tmp_path),
        "CHOKAQ_BUSY_TIMEOUT": "60",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    procs = [
        await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", "tests.apps.conflicts", "race", str(each), f"p{n}"],
            cwd=REPO,
            env=environment,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for n in range(producers)
    ]
    try:
        (tmp_path / "go").write_text("go")
        finished = [await asyncio.wait_for(p.communicate(), timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
    for p, (_, err) in zip(procs, finished, strict=True):
        assert p.returncode == 0, err.decode()
    results = [json.loads(out) for out, _ in finished]
    outcomes = [outcome for done in results for _, outcome in done]
    assert len(outcomes) == producers * each  # no enqueue was lost or failed
    assert outcomes.count("inserted") == 1
    assert outcomes.count("replaced") == producers * each - 1
    ids = {job_id for done in results for job_id, _ in done}
    assert len(ids) == 1
    [job_id] = ids
    summary = await client.backend.stats_summary()
    assert summary.pending == 1
    job = await client.get_job(job_id)
    assert job is not None and job.status == JobStatus.PENDING
    # The last write committed is some producer's last: one of theirs is what the job holds.
    lasts = [{"doc": f"p{n}", "version": each - 1} for n in range(producers)]
    assert json.loads(job.payload) in lasts

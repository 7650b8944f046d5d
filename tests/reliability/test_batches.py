"""Batch handlers across a real worker process (both backends, through ``chokaq worker``):
1,000 jobs with batch_size=100 take at most 12 calls and each job keeps its own result; a
poisoned item fails alone, to the DLQ with its own error; a worker SIGKILLed mid-batch leaves
every job of that batch to be rescued like any running job; a batch never mixes tenants."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.runtime.conftest import until

from chokaq import App
from chokaq.models import FailureReason, NewJob, Pillar

from .conftest import Proc

BATCH_APP = "tests.apps.batches:app"


def _calls(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "embed-calls"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


async def _enqueue(client: App, items: list[tuple[str, str]], **options: Any) -> list[str]:
    """Enqueue an ``embed`` job per (tenant, text) (the client declares no handler)."""
    jobs = [
        NewJob(type="embed", payload=json.dumps({"tenant": t, "text": x}), **options)
        for t, x in items
    ]
    return [str(job_id) for job_id in await client.enqueue_many(jobs)]


async def _settled(client: App, count: int) -> None:
    """Wait until ``count`` jobs left hot (archived or dead-lettered)."""

    async def done() -> bool:
        summary = await client.backend.stats_summary()
        return summary.succeeded_total + summary.failed_total >= count

    await until(done, timeout=120)


async def test_a_thousand_jobs_take_at_most_twelve_calls_each_with_its_own_result(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    ids = await _enqueue(client, [("t1", "x" * (i % 17)) for i in range(1000)])
    spawn(app=BATCH_APP)
    await _settled(client, 1000)
    calls = _calls(tmp_path)
    assert len(calls) <= 12, [len(c["ids"]) for c in calls]
    assert sorted(i for c in calls for i in c["ids"]) == sorted(ids)  # each job ran once
    for i in (0, 16, 999):
        assert await client.result(ids[i], timeout_seconds=5) == {"tenant": "t1", "length": i % 17}
    assert (await client.backend.stats_summary()).succeeded_total == 1000


async def test_a_poisoned_item_fails_alone_to_the_dlq_with_its_own_error(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    items = [("t1", "poison" if i == 37 else "fine") for i in range(150)]
    ids = await _enqueue(client, items, max_attempts=1)
    spawn(app=BATCH_APP)
    await _settled(client, 150)
    poisoned = await client.backend.job_get(ids[37])
    assert poisoned is not None and poisoned.pillar is Pillar.DLQ
    assert poisoned.failure_reason is FailureReason.TRANSIENT
    assert f"ValueError: poisoned item {ids[37]}" in (poisoned.error or "")
    summary = await client.backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (149, 1)
    # It ran in a batch with others, and they succeeded.
    [batch] = await client.backend.job_batches(id=ids[37])
    assert len(batch.job_ids) > 1
    for sibling in batch.job_ids:
        if sibling != ids[37]:
            view = await client.backend.job_get(sibling)
            assert view is not None and view.pillar is Pillar.ARCHIVE


async def test_a_worker_killed_mid_batch_leaves_every_job_of_the_batch_rescued(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    ids = await _enqueue(client, [("t1", "hang" if i == 0 else "x") for i in range(40)])
    victim = spawn(app=BATCH_APP)
    marker = tmp_path / "hang-started"

    async def hanging() -> bool:
        return marker.exists()

    await until(hanging, timeout=60)
    in_batch = json.loads(marker.read_text())
    assert sorted(in_batch) == sorted(ids)
    summary = await client.backend.stats_summary()
    assert summary.processing == 40  # every job of the batch Processing under its own lease
    os.kill(victim.pid, signal.SIGKILL)
    victim.popen.wait(timeout=10)
    spawn(app=BATCH_APP)  # the elected worker's rescue finds the batch's zombies
    await _settled(client, 40)
    for job_id in ids:
        view = await client.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.DLQ
        assert view.failure_reason is FailureReason.ZOMBIE


async def test_a_batch_never_mixes_tenants(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    await _enqueue(client, [(f"tenant-{i % 3}", "x") for i in range(300)])
    spawn(app=BATCH_APP)
    await _settled(client, 300)
    calls = _calls(tmp_path)
    assert all(len(call["tenants"]) == 1 for call in calls), calls
    per_tenant: dict[str, int] = {}
    for call in calls:
        per_tenant[call["tenants"][0]] = per_tenant.get(call["tenants"][0], 0) + len(call["ids"])
    assert per_tenant == {"tenant-0": 100, "tenant-1": 100, "tenant-2": 100}

"""The store's times of a run tell when it ran, on both backends: a job's ``started_at`` and
``finished_at`` hold its handler's run (the claim that began it, and the handler's return), so
the jobs of a partition capped at one never overlap in the archive, as they never overlap in
their handlers; ``duration_seconds`` is the handler's own.

The handlers read ``time.time()``; the database's clock is this host's (SQLite reads the
process clock, and the test's PostgreSQL runs on this host)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

from chokaq import App
from chokaq.models import JobFilter, Pillar

from .conftest import running, until

PARTITIONS = 3
PER_PARTITION = 10
HANDLER_SECONDS = 0.2
CLOCK = 0.002  # seconds: rounding of stored times and of float sums, not a speed


async def test_a_partition_capped_at_one_never_overlaps_in_the_archive(
    make_app: Callable[..., App],
) -> None:
    apps = [make_app() for _ in range(3)]
    ran: dict[str, tuple[float, float]] = {}

    for app in apps:

        @app.job(partition_concurrency=1)
        async def serial(ctx_id: str) -> None:
            start = time.time()
            await asyncio.sleep(HANDLER_SECONDS)
            ran[ctx_id] = (start, time.time())

    producer = apps[0]
    await producer.open()
    handle = producer.handlers["serial"]
    jobs = [
        handle.prepare(ctx_id=f"{p}-{n}", partition=f"tenant:{p}")
        for n in range(PER_PARTITION)
        for p in range(PARTITIONS)
    ]
    await producer.enqueue_many(jobs)

    async def all_archived() -> bool:
        page = await producer.backend.jobs_page(
            pillar=Pillar.ARCHIVE, filter=JobFilter(type="serial"), page_size=1
        )
        return page.total == len(jobs)

    async with running(apps[0]), running(apps[1]), running(apps[2]):
        await until(all_archived, timeout=60)

    page = await producer.backend.jobs_page(
        pillar=Pillar.ARCHIVE, filter=JobFilter(type="serial"), page_size=100
    )
    views = {view.id: view for view in page.items}
    for p in range(PARTITIONS):
        runs = []
        for job in jobs:
            if job.partition != f"tenant:{p}":
                continue
            view = views[str(job.id)]
            assert view.started_at is not None and view.finished_at is not None
            assert view.duration_seconds is not None
            start, end = ran[_label(view.payload)]
            began, ended = view.started_at.timestamp(), view.finished_at.timestamp()
            # The claim that began the run comes before the handler starts, and the end is the
            # claim's time plus the time the worker measured from before the handler's call to
            # its return: never after the return, and at least the handler's own time after the
            # claim (how much earlier than the return is the time from the claim to the call,
            # which a busy machine stretches: no bound on it). CLOCK allows for the stored
            # times' rounding (microseconds) and float sums.
            assert began <= start + CLOCK, (view.id, began, start)
            assert ended <= end + CLOCK, (view.id, ended, end)
            assert ended >= began + (end - start) - CLOCK, (view.id, began, ended, start, end)
            assert ended - began >= view.duration_seconds - CLOCK
            # The duration is timed around the handler: at least what the handler saw.
            assert view.duration_seconds >= (end - start) - CLOCK, (view.id, view.duration_seconds)
            runs.append((began, ended, view.id))
        runs.sort()
        for (_, first_end, first), (second_start, _, second) in itertools.pairwise(runs):
            assert first_end <= second_start, f"tenant:{p}: {first} overlaps {second}"


def _label(payload: str) -> str:
    import json

    label: str = json.loads(payload)["ctx_id"]
    return label

"""A worker recycles itself: after ``max_jobs`` (it starts no more, lets the running ones
finish) or once its memory is above ``max_memory_mib``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from chokaq import App, ConfigurationError, WorkerSettings
from chokaq.runtime.recycle import Recycle, rss_mib

from .conftest import until


async def test_max_jobs_starts_that_many_lets_them_finish_and_stops_recycled(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    finished: list[int] = []

    @app.job()
    async def work(i: int) -> None:
        await asyncio.sleep(0.05)
        finished.append(i)

    await app.open()
    await work.enqueue_many([{"i": i} for i in range(10)])
    worker = app.create_worker(concurrency=3, max_jobs=4)
    await asyncio.wait_for(worker.run(), timeout=30)
    assert worker.recycled == "ran 4 jobs (max_jobs 4)"
    assert len(finished) == 4  # none cut short, none started past the budget
    summary = await app.backend.stats_summary()
    assert (summary.succeeded_total, summary.pending, summary.processing) == (4, 6, 0)


async def test_a_stop_while_recycling_is_a_plain_stop(make_app: Callable[..., App]) -> None:
    app = make_app()
    release = asyncio.Event()

    @app.job()
    async def slow() -> None:
        await release.wait()

    await app.open()
    await slow.enqueue_many([{}])
    worker = app.create_worker(max_jobs=1)
    task = asyncio.create_task(worker.run())

    async def launched() -> bool:  # the fetch loop has launched it, and so recycles
        return bool(worker.running)

    await until(launched)
    worker.stop()
    release.set()
    await asyncio.wait_for(task, timeout=30)
    assert worker.recycled is None


def test_memory_is_read_at_most_once_a_second() -> None:
    now = [0.0]
    reads: list[float] = []

    def memory() -> float:
        reads.append(now[0])
        return 300.0 if now[0] >= 2 else 100.0

    rule = Recycle(None, 200, memory=memory, clock=lambda: now[0])
    assert rule.reason(1) is None
    now[0] = 0.5
    assert rule.reason(1) is None and reads == [0.0]
    now[0] = 2.0
    assert rule.reason(1) == "resident memory 300 MiB above max_memory_mib 200"
    assert rule.budget(1, 7) == 7


def test_memory_is_not_a_reason_before_the_first_job() -> None:
    rule = Recycle(None, 1, memory=lambda: 500.0)
    assert rule.reason(0) is None and rule.reason(1) is not None


def test_the_budget_caps_the_free_slots() -> None:
    rule = Recycle(5, None)
    assert (rule.budget(0, 10), rule.budget(3, 10), rule.budget(5, 10)) == (5, 2, 0)
    assert rule.reason(4) is None and rule.reason(5) == "ran 5 jobs (max_jobs 5)"
    assert not Recycle(None, None).active


def test_this_process_has_a_resident_size() -> None:
    assert 5 < rss_mib() < 100_000


@pytest.mark.parametrize("field", ["max_jobs", "max_memory_mib"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        WorkerSettings(**{field: 0})  # type: ignore[arg-type]

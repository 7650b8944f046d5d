"""Concurrent claimers and finalizers: every job goes to one worker, every move applies once.

Each backend opened by ``open_backend`` has its own connections (PostgreSQL pool, SQLite
connection on the same file), so ``asyncio.gather`` over several of them races real sessions.
"""

from __future__ import annotations

import asyncio

from conformance import T0, at, claim, enqueue

from chokaq.models import FailMove, FailureReason, NewJob, Pillar, RetryMove, SucceedMove

JOBS = 5000
FETCHERS = 8


async def _drain(backend, worker, *, start):
    got = []
    while True:
        batch = await backend.jobs_fetch(worker_id=worker, limit=50, start=start, now=at(1))
        if not batch:
            return got
        got += [c.id for c in batch]


async def _load(backend, count):
    ids = []
    for first in range(0, count, 1000):
        jobs = [NewJob(type="t", priority=i % 7) for i in range(first, min(count, first + 1000))]
        ids += [r.id for r in await backend.jobs_enqueue(jobs, now=T0)]
    return ids


async def test_concurrent_fetchers_never_share_a_job(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(FETCHERS)]
    ids = await _load(backends[0], JOBS)
    results = await asyncio.gather(
        *(_drain(b, f"w{i}", start=(i % 2 == 0)) for i, b in enumerate(backends))
    )
    claimed = [jid for worker in results for jid in worker]
    assert len(claimed) == len(set(claimed)) == JOBS
    assert set(claimed) == set(ids)
    summary = await backends[0].stats_summary()
    assert summary.pending == 0
    assert summary.fetched + summary.processing == JOBS
    # Each row is owned by the worker that received it.
    for worker, got in enumerate(results):
        for jid in got[:3]:
            assert (await backends[0].job_get(jid)).worker_id == f"w{worker}"


async def test_concurrent_fetchers_respect_max_workers(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(FETCHERS)]
    await enqueue(backends[0], 200, queue="tight")
    await backends[0].queue_configure(name="tight", max_workers=5)
    results = await asyncio.gather(
        *(claim(b, 3, worker=f"w{i}", start=False) for i, b in enumerate(backends))
    )
    assert sum(len(r) for r in results) == 5
    assert (await backends[0].stats_summary()).fetched == 5


async def test_concurrent_finalizers_apply_once(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(FETCHERS)]
    await enqueue(backends[0])
    [c] = await claim(backends[0])
    move = SucceedMove(lease=c.lease, duration_seconds=1.0)
    results = await asyncio.gather(*(b.jobs_finalize(moves=[move], now=at(1)) for b in backends))
    assert sorted(r[0] for r in results) == [False] * (FETCHERS - 1) + [True]
    summary = await backends[0].stats_summary()
    assert (summary.succeeded_total, summary.processing) == (1, 0)
    assert (await backends[0].stats_throughput(now=at(10))).processed_1m == 1


async def test_racing_different_moves_of_one_job_apply_exactly_one(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(6)]
    await enqueue(backends[0], 20)
    claimed = await claim(backends[0], 20)

    def moves(i, c):
        kind = i % 3
        if kind == 0:
            return SucceedMove(lease=c.lease, duration_seconds=1.0)
        if kind == 1:
            return FailMove(lease=c.lease, reason=FailureReason.TRANSIENT, error="x")
        return RetryMove(lease=c.lease, error="x", delay_seconds=3600)

    results = await asyncio.gather(
        *(
            b.jobs_finalize(moves=[moves(i, c) for c in claimed], now=at(1))
            for i, b in enumerate(backends)
        )
    )
    for j in range(len(claimed)):
        assert sum(r[j] for r in results) == 1
    summary = await backends[0].stats_summary()
    assert summary.succeeded_total + summary.failed_total + summary.retried_total == 20
    pillars = [(await backends[0].job_get(c.id)).pillar for c in claimed]
    assert pillars.count(Pillar.ARCHIVE) == summary.succeeded_total
    assert pillars.count(Pillar.DLQ) == summary.failed_total
    assert pillars.count(Pillar.HOT) == summary.retried_total == summary.pending


async def test_concurrent_rescue_and_succeed_apply_once(open_backend):
    one, two = await open_backend(), await open_backend()
    await enqueue(one, 50)
    claimed = await claim(one, 50)
    moves = [SucceedMove(lease=c.lease, duration_seconds=1.0) for c in claimed]
    finalized, rescued = await asyncio.gather(
        one.jobs_finalize(moves=moves, now=at(1000)),
        two.jobs_rescue(fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(1000)),
    )
    assert set(rescued.zombies).isdisjoint(
        {c.id for c, ok in zip(claimed, finalized, strict=True) if ok}
    )
    assert sum(finalized) + len(rescued.zombies) == 50
    summary = await one.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (sum(finalized), len(rescued.zombies))


async def test_cancel_racing_a_fetch_wins_and_fences_the_fetcher(open_backend):
    one, two = await open_backend(), await open_backend()
    ids = await enqueue(one, 100)
    fetched, cancelled = await asyncio.gather(
        claim(two, 100, start=False), one.jobs_cancel(ids=ids, actor="ops", now=at(1))
    )
    # Pending and Fetched jobs are both cancelled at once, whichever side won the race.
    assert sorted(cancelled.cancelled) == sorted(ids)
    assert cancelled.requested == cancelled.not_found == ()
    moves = [SucceedMove(lease=c.lease, duration_seconds=1.0) for c in fetched]
    assert await two.jobs_finalize(moves=moves, now=at(2)) == [False] * len(fetched)
    summary = await one.stats_summary()
    assert (summary.pending, summary.fetched, summary.failed_total) == (0, 0, 100)


async def test_concurrent_queue_ensure_is_race_safe(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(FETCHERS)]
    infos = await asyncio.gather(*(b.queue_ensure("raced") for b in backends))
    assert {i.name for i in infos} == {"raced"}
    assert [q.name for q in await backends[0].queue_list()].count("raced") == 1


async def test_concurrent_enqueues_into_a_new_queue_create_it_once(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(FETCHERS)]
    await asyncio.gather(*(enqueue(b, 10, queue="brand-new") for b in backends))
    assert [q.name for q in await backends[0].queue_list()].count("brand-new") == 1
    [stats] = [s for s in await backends[0].stats_queues(now=T0) if s.queue.name == "brand-new"]
    assert stats.pending == 10 * FETCHERS

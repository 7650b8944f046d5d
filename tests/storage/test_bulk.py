"""Bulk actions by filter over hot and archive, and run-now, on both backends.

An action by filter acts on the set its preview showed: the filter's upper date bound is pinned
at preview time, so jobs that arrive afterwards are not swept up; the cap bounds it and picks the
newest rows, in the preview's order. Cancel by filter takes the single cancel's path (a running
job gets the durable request its worker hears); requeue as new keeps the archived row; nothing
rewrites a lifetime counter or a metric bucket. Run-now makes a delayed job claimable at once and
wakes the workers of other processes.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from conformance import T0, at, claim, counters, enqueue, job, succeed

from chokaq.models import JobFilter, JobStatus, Pillar


async def _archived(backend, count, *, finished, queue="reports", **fields):
    """``count`` jobs succeeded at ``finished`` (seconds after T0); their ids."""
    ids = await enqueue(backend, count, queue=queue, now=T0, **fields)
    claimed = await claim(backend, count, queues=[queue], now=at(finished))
    assert await succeed(backend, claimed, now=at(finished)) == [True] * count
    return ids


async def test_cancel_by_filter_acts_on_the_previewed_set_and_asks_running_jobs(backend):
    first = await enqueue(backend, 5, queue="mail", now=T0)
    other = await enqueue(backend, 2, queue="other", now=T0)
    [running] = await claim(backend, 1, queues=["mail"], now=at(1))
    pinned = JobFilter(queue="mail", until=at(1))
    preview = await backend.jobs_preview(pillar=Pillar.HOT, filter=pinned, cap=100)
    assert (preview.matched, preview.will_affect) == (5, 5)
    assert set(preview.sample_ids) == set(first)
    late = await enqueue(backend, 3, queue="mail", now=at(2))  # after the preview
    before = await counters(backend, now=at(5))

    result = await backend.jobs_cancel_by_filter(filter=pinned, actor="alice", cap=100, now=at(3))

    assert result.requested == (running.id,)
    assert sorted(result.cancelled) == sorted(set(first) - {running.id})
    assert result.not_found == ()
    view = await backend.job_get(running.id)
    assert (view.pillar, view.cancelled_by, view.cancel_requested_at) == (
        Pillar.HOT,
        "alice",
        at(3),
    )
    for job_id in late + other:
        assert (await backend.job_get(job_id)).status is JobStatus.PENDING
    gone = await backend.job_get(result.cancelled[0])
    assert (gone.pillar, gone.cancelled_by) == (Pillar.DLQ, "alice")
    after = await counters(backend, now=at(5))
    # A cancel is a failure that happened: counted once per job, as the cancel by id counts it.
    assert after.summary.failed_total == before.summary.failed_total + 4


async def test_the_cap_acts_on_the_newest_rows_in_the_previews_order(backend):
    ids = []
    for second in range(1, 6):
        ids += await _archived(backend, 1, finished=second)
    pinned = JobFilter(queue="reports", until=at(10))
    preview = await backend.jobs_preview(pillar=Pillar.ARCHIVE, filter=pinned, cap=2, sample=10)
    assert (preview.matched, preview.will_affect, preview.cap) == (5, 2, 2)
    assert preview.sample_ids == (ids[4], ids[3])
    made = await backend.archive_requeue_by_filter(filter=pinned, actor="alice", cap=2, now=at(20))
    assert [m.archived_id for m in made] == [ids[4], ids[3]]
    deleted = await backend.archive_delete_by_filter(filter=pinned, actor="alice", cap=3)
    assert deleted == [ids[4], ids[3], ids[2]]


async def test_requeue_as_new_makes_a_fresh_job_and_keeps_the_archived_one(backend):
    [old] = await _archived(
        backend,
        1,
        finished=2,
        type="report.build",
        payload='{"month": 11}',
        tags=("monthly", "eu"),
        priority=7,
        max_attempts=4,
        timeout_seconds=30.0,
        partition="acme",
    )
    before = await counters(backend, now=at(30))
    pinned = JobFilter(type="report.build", until=at(10))
    [made] = await backend.archive_requeue_by_filter(
        filter=pinned, actor="alice", cap=10, now=at(20)
    )
    assert made.archived_id == old and made.new_id != old
    new = await backend.job_get(made.new_id)
    kept = await backend.job_get(old)
    assert (new.pillar, new.status, new.attempt_count) == (Pillar.HOT, JobStatus.PENDING, 0)
    same = ("type", "queue", "payload", "tags", "priority", "max_attempts", "timeout_seconds")
    assert [getattr(new, f) for f in same] == [getattr(kept, f) for f in same]
    assert new.partition == "acme" and new.idempotency_key is None
    assert (new.created_by, new.last_modified_by) == (f"requeue:{old}", "alice")
    assert (new.created_at, new.scheduled_at) == (at(20), at(20))
    assert (kept.pillar, kept.attempt_count, kept.finished_at) == (Pillar.ARCHIVE, 1, at(2))
    after = await counters(backend, now=at(30))
    assert after.lifetime() == before.lifetime() and after.series == before.series
    [claimed] = await claim(backend, 5, queues=["reports"], now=at(21))
    assert claimed.id == made.new_id


async def test_delete_by_filter_spares_later_arrivals_and_every_counter(backend):
    doomed = await _archived(backend, 3, finished=1)
    preview_at = at(1)
    pinned = JobFilter(queue="reports", until=preview_at)
    preview = await backend.jobs_preview(pillar=Pillar.ARCHIVE, filter=pinned, cap=100)
    assert preview.matched == 3
    late = await _archived(backend, 2, finished=5)  # finished after the preview
    before = await counters(backend, now=at(30))
    assert before.summary.succeeded_total == 5

    deleted = await backend.archive_delete_by_filter(filter=pinned, actor="alice", cap=100)

    assert sorted(deleted) == sorted(doomed)
    for job_id in doomed:
        assert await backend.job_get(job_id) is None
    for job_id in late:
        assert (await backend.job_get(job_id)).pillar is Pillar.ARCHIVE
    after = await counters(backend, now=at(30))
    assert after.lifetime() == before.lifetime()
    assert after.series == before.series and after.throughput == before.throughput


async def test_run_now_makes_a_delayed_job_claimable_and_refuses_the_others(backend):
    [delayed] = await enqueue(backend, 1, queue="later", delay_seconds=3600, now=T0)
    [due] = await enqueue(backend, 1, queue="later", now=T0)
    [running] = await enqueue(backend, 1, queue="busy", now=T0)
    await claim(backend, 1, queues=["busy"], now=at(1))
    [first] = await claim(backend, 5, queues=["later"], now=at(1))
    assert first.id == due  # the delayed one is not due yet
    moved = await backend.jobs_run_now(ids=[delayed, due, running], actor="alice", now=at(2))
    assert moved == [delayed]
    view = await backend.job_get(delayed)
    assert (view.scheduled_at, view.last_modified_by) == (at(2), "alice")
    [claimed] = await claim(backend, 5, queues=["later"], now=at(2))
    assert claimed.id == delayed
    assert await backend.jobs_run_now(ids=[delayed], actor="alice", now=at(3)) == []


async def test_run_now_wakes_the_workers_of_other_backends(open_backend):
    operator, worker = await open_backend(), await open_backend()
    [delayed] = await enqueue(operator, 1, queue="later", delay_seconds=3600, now=None)
    woken: asyncio.Queue[str] = asyncio.Queue()
    notifier = worker.notifier()
    await notifier.start(woken.put_nowait, lambda job_id: None)
    try:
        while not woken.empty():
            woken.get_nowait()
        assert await operator.jobs_run_now(ids=[delayed], actor="alice") == [delayed]
        assert await asyncio.wait_for(woken.get(), timeout=5) in ("later", "")
    finally:
        await notifier.stop()


async def test_requeue_as_new_wakes_the_workers_of_other_backends(open_backend):
    operator, worker = await open_backend(), await open_backend()
    await _archived(operator, 1, finished=1)  # T0 is long past: due at once
    woken: asyncio.Queue[str] = asyncio.Queue()
    notifier = worker.notifier()
    await notifier.start(woken.put_nowait, lambda job_id: None)
    try:
        while not woken.empty():
            woken.get_nowait()
        made = await operator.archive_requeue_by_filter(
            filter=JobFilter(queue="reports"), actor="alice", cap=10
        )
        assert len(made) == 1
        assert await asyncio.wait_for(woken.get(), timeout=5) in ("reports", "")
    finally:
        await notifier.stop()


async def test_jobs_arriving_while_a_pinned_cancel_runs_are_not_swept(open_backend):
    # Real clocks on both sides (the database's on PostgreSQL): the filter is pinned once the
    # first jobs exist, then jobs keep arriving from another backend while the cancel runs.
    operator, producer = await open_backend(), await open_backend()
    first = [
        r.id for r in await operator.jobs_enqueue([job(queue="mail", delay_seconds=3600)] * 20)
    ]
    pinned = JobFilter(queue="mail", until=datetime.now(UTC))

    async def arrive() -> list[str]:
        ids = []
        for _ in range(20):
            [r] = await producer.jobs_enqueue([job(queue="mail", delay_seconds=3600)])
            ids.append(r.id)
        return ids

    result, late = await asyncio.gather(
        operator.jobs_cancel_by_filter(filter=pinned, actor="alice", cap=1000), arrive()
    )
    assert sorted(result.cancelled) == sorted(first)
    for job_id in late:
        assert (await operator.job_get(job_id)).status is JobStatus.PENDING

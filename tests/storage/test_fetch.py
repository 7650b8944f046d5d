"""Fetch eligibility and order: priority, due time, paused/inactive queues, filters, bulkheads."""

from __future__ import annotations

from conformance import T0, at, claim, enqueue, succeed

from chokaq.models import JobStatus


async def test_order_is_priority_then_due_time_then_created(backend):
    [low] = await enqueue(backend, priority=1, now=T0)
    [high_late] = await enqueue(backend, priority=50, now=at(3))
    [high_early] = await enqueue(backend, priority=50, now=at(2))
    # Created first but due later than high_early: coalesce(scheduled_at, created_at) decides.
    [high_scheduled] = await enqueue(backend, priority=50, now=T0, run_at=at(2.5))
    [top] = await enqueue(backend, priority=1000, now=at(4))
    claimed = await claim(backend, now=at(10))
    assert [c.id for c in claimed] == [top, high_early, high_scheduled, high_late, low]


async def test_created_at_breaks_ties(backend):
    ids = []
    for i in range(5):
        ids += await enqueue(backend, now=at(i))
    claimed = await claim(backend, 3, now=at(10))
    assert [c.id for c in claimed] == ids[:3]
    rest = await claim(backend, 10, now=at(10))
    assert [c.id for c in rest] == ids[3:]


async def test_negative_priorities_run_last(backend):
    [neg] = await enqueue(backend, priority=-5)
    [zero] = await enqueue(backend, priority=0, now=at(1))
    assert [c.id for c in await claim(backend, now=at(2))] == [zero, neg]


async def test_delayed_jobs_wait_until_due(backend):
    [later] = await enqueue(backend, delay_seconds=60)
    [now_job] = await enqueue(backend)
    assert [c.id for c in await claim(backend, now=at(59))] == [now_job]
    assert [c.id for c in await claim(backend, now=at(60))] == [later]


async def test_limit_is_honoured(backend):
    await enqueue(backend, 10)
    assert len(await claim(backend, 4)) == 4
    assert len(await claim(backend, 100)) == 6
    assert await claim(backend, 100) == []


async def test_paused_queue_is_skipped_and_resumes(backend):
    [a] = await enqueue(backend, queue="a")
    [b] = await enqueue(backend, queue="b")
    await backend.queue_pause(name="a", paused=True, actor="ops")
    assert [c.id for c in await claim(backend, start=False)] == [b]
    await backend.queue_pause(name="a", paused=False, actor="ops")
    assert [c.id for c in await claim(backend, start=False)] == [a]


async def test_inactive_queue_is_skipped(backend):
    [a] = await enqueue(backend, queue="a")
    [b] = await enqueue(backend, queue="b")
    await backend.queue_activate(name="a", active=False)
    assert [c.id for c in await claim(backend, start=False)] == [b]
    await backend.queue_activate(name="a", active=True)
    assert [c.id for c in await claim(backend, start=False)] == [a]


async def test_queue_list_is_honoured(backend):
    await enqueue(backend, 2, queue="a")
    [b] = await enqueue(backend, queue="b")
    [c] = await enqueue(backend, queue="c")
    claimed = await claim(backend, queues=["b", "c"])
    assert {j.id for j in claimed} == {b, c}
    assert await claim(backend, queues=["nope"]) == []
    assert {j.queue for j in await claim(backend, queues=None)} == {"a"}


async def test_exclude_types_is_honoured(backend):
    await enqueue(backend, 2, type="broken")
    [ok] = await enqueue(backend, type="fine")
    claimed = await claim(backend, exclude_types=["broken"])
    assert [c.id for c in claimed] == [ok]
    assert len(await claim(backend, exclude_types=[])) == 2


async def test_max_workers_is_enforced_inside_one_batch(backend):
    await enqueue(backend, 20, queue="tight", priority=100)
    [other] = await enqueue(backend, queue="free", priority=1)
    await backend.queue_configure(name="tight", max_workers=2)
    claimed = await claim(backend, 10, start=False)
    assert sorted(c.queue for c in claimed) == ["free", "tight", "tight"]
    assert other in {c.id for c in claimed}


async def test_max_workers_counts_fetched_and_processing_across_fetches(backend):
    await enqueue(backend, 10, queue="tight")
    await backend.queue_configure(name="tight", max_workers=3)
    first = await claim(backend, 1, worker="w1", start=False)
    second = await claim(backend, 1, worker="w2", start=True)
    assert len(first) == len(second) == 1
    assert len(await claim(backend, 10, worker="w3")) == 1
    assert await claim(backend, 10, worker="w4") == []
    # Finishing one frees one slot.
    assert await succeed(backend, second, now=at(1)) == [True]
    assert len(await claim(backend, 10, worker="w4", now=at(2))) == 1
    assert await claim(backend, 10, worker="w5", now=at(2)) == []


async def test_max_workers_cleared_lifts_the_bulkhead(backend):
    await enqueue(backend, 5, queue="tight")
    await backend.queue_configure(name="tight", max_workers=1)
    assert len(await claim(backend, 5)) == 1
    await backend.queue_configure(name="tight", max_workers=None)
    assert len(await claim(backend, 5)) == 4


async def test_claimed_job_carries_the_row(backend):
    [jid] = await enqueue(
        backend,
        type="t",
        payload='{"a": [1, 2]}',
        queue="q",
        priority=3,
        tags=("x", "y"),
        idempotency_key="key",
        created_by="me",
        max_attempts=4,
        timeout_seconds=9.0,
        trace_context="tc",
    )
    [c] = await claim(backend, start=False, now=at(1))
    assert (c.id, c.queue, c.type, c.payload, c.tags) == (
        jid,
        "q",
        "t",
        '{"a": [1, 2]}',
        ("x", "y"),
    )
    assert (c.priority, c.max_attempts, c.timeout_seconds) == (3, 4, 9.0)
    assert (c.idempotency_key, c.created_by, c.trace_context) == ("key", "me", "tc")
    assert (c.created_at, c.scheduled_at, c.last_error, c.status) == (
        T0,
        T0,  # the due time is always stored: at once means created_at
        None,
        JobStatus.FETCHED,
    )

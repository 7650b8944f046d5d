"""Rate limits and partitions, on every backend: what a claim may take, in which order, and
how declarations, operators' settings and rescue change it."""

from __future__ import annotations

import asyncio

import pytest
from conformance import T0, at, claim, enqueue, succeed

from chokaq.errors import NotFoundError, ValidationError
from chokaq.models import TypeLimit


async def test_a_type_rate_lets_its_burst_start_then_one_per_interval(backend):
    await enqueue(backend, 20, type="partner.call", now=T0)
    await enqueue(backend, 3, type="other", now=T0)
    await backend.limits_declare(limits=[TypeLimit("partner.call", "20/s")])
    first = await backend.jobs_claim(worker_id="w1", limit=10, start=True, now=at(1))
    # 20/s: a burst of 2, and the unlimited jobs behind it are not hidden by it.
    assert sorted(j.type for j in first.jobs) == ["other"] * 3 + ["partner.call"] * 2
    assert first.retry_at == at(1.05)
    assert [j.type for j in await claim(backend, 10, now=at(1.02))] == []
    assert len(await claim(backend, 10, now=at(1.05))) == 1
    # Idle for a while: the burst again, never more.
    assert len(await claim(backend, 10, now=at(5))) == 2


async def test_a_held_job_is_not_claimed_and_spends_no_attempt(backend):
    [a, b] = await enqueue(backend, 2, type="slow", now=T0)
    await backend.limits_declare(limits=[TypeLimit("slow", "1/m")])
    [first] = await claim(backend, 10, now=at(1))
    assert first.id == a
    assert await claim(backend, 10, now=at(30)) == []
    view = await backend.job_get(b)
    assert view is not None and view.attempt_count == 0 and view.state == "pending"
    [second] = await claim(backend, 10, now=at(61))
    assert second.id == b and second.attempt_count == 1


async def test_a_queue_rate_applies_on_top_and_can_be_cleared(backend):
    await enqueue(backend, 10, queue="partner", now=T0)
    info = await backend.limit_set(scope="queue", name="partner", rate_limit="1/s", actor="ops")
    assert (info.rate_limit, info.rate_set, info.last_modified_by) == ("1/s", True, "ops")
    assert len(await claim(backend, 10, now=at(1))) == 1
    assert len(await claim(backend, 10, now=at(1.5))) == 0
    assert len(await claim(backend, 10, now=at(2))) == 1
    await backend.limit_set(scope="queue", name="partner", rate_limit=None, actor="ops")
    assert len(await claim(backend, 10, now=at(2.1))) == 8


async def test_partition_concurrency_caps_each_partition_until_a_slot_frees(backend):
    await backend.limits_declare(limits=[TypeLimit("sync", None, 1)])
    for account in ("a", "b", "c"):
        await enqueue(backend, 3, type="sync", partition=f"account:{account}", now=T0)
    running = await claim(backend, 10, now=at(1))
    assert sorted(j.partition for j in running) == ["account:a", "account:b", "account:c"]
    assert await claim(backend, 10, now=at(2)) == []
    await succeed(backend, [j for j in running if j.partition == "account:b"], now=at(3))
    [next_b] = await claim(backend, 10, now=at(4))
    assert next_b.partition == "account:b"


async def test_a_rescued_zombie_frees_its_partition_slot(backend):
    await backend.limits_declare(limits=[TypeLimit("sync", None, 1)])
    await enqueue(backend, 2, type="sync", partition="p", now=T0)
    [zombie] = await claim(backend, 10, now=at(1))
    assert await claim(backend, 10, now=at(2)) == []
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(100)
    )
    assert zombie.id in rescued.zombies
    [successor] = await claim(backend, 10, now=at(101))
    assert successor.partition == "p" and successor.id != zombie.id


async def test_tidy_forgets_only_keys_whose_next_start_is_past(backend):
    await backend.limits_declare(limits=[TypeLimit("sync", "1/m")])
    for account in ("a", "b"):
        await enqueue(backend, 2, type="sync", partition=account, now=T0)
    assert sorted(j.partition for j in await claim(backend, 10, now=at(1))) == ["a", "b"]
    # Both keys' next start is at(61): a tidy before then keeps them, and they still hold.
    assert await backend.limits_tidy(older_than=at(30)) == 0
    assert await claim(backend, 10, now=at(30)) == []
    assert await backend.limits_tidy(older_than=at(62)) == 2
    assert sorted(j.partition for j in await claim(backend, 10, now=at(62))) == ["a", "b"]
    assert await claim(backend, 10, now=at(63)) == []


async def test_one_hot_partition_does_not_starve_the_others(backend):
    hot = await enqueue(backend, 90, type="report", partition="tenant:hot", now=T0)
    quiet = []
    for i in range(9):
        quiet += await enqueue(backend, 1, type="report", partition=f"tenant:{i}", now=at(1))
    # No limit at all: partitioned jobs are still served partition by partition, in turn.
    first = await claim(backend, 10, now=at(2))
    assert sorted({j.partition for j in first}) == sorted(
        ["tenant:hot", *(f"tenant:{i}" for i in range(9))]
    )
    assert {j.id for j in first} >= set(quiet) and len({j.id for j in first} & set(hot)) == 1


async def test_the_walk_goes_on_after_the_partition_served_last(backend):
    await backend.limits_declare(limits=[TypeLimit("sync", None, 5)])
    for name in ("a", "b", "c"):
        await enqueue(backend, 5, type="sync", partition=name, now=T0)
    order = [j.partition for _ in range(6) for j in await claim(backend, 1, now=at(1))]
    assert order == ["a", "b", "c", "a", "b", "c"]


async def test_every_limit_change_wakes_the_workers_of_other_backends(open_backend):
    # A worker held by a rate waits until the rate allows a start or its poll comes round
    # (a second by default wherever wake-ups cross processes): a limit raised or cleared
    # must wake it, as new work does, or held jobs wait for nothing. Found by the reliability
    # test of limits: on SQLite, clearing a 1/m limit started nothing for a whole poll.
    operator, worker = await open_backend(), await open_backend()
    await enqueue(operator, 1, type="slow", queue="partner", now=T0)  # the queue exists
    woken = asyncio.Event()
    notifier = worker.notifier()
    await notifier.start(lambda queue: woken.set(), lambda job_id: None)
    try:
        changes = [
            lambda: operator.limits_declare(limits=[TypeLimit("slow", "1/m")]),
            lambda: operator.limit_set(scope="type", name="slow", rate_limit=None),
            lambda: operator.limit_reset(scope="type", name="slow"),
        ]
        for change in changes:
            woken.clear()
            await change()
            await asyncio.wait_for(woken.wait(), timeout=5)
    finally:
        await notifier.stop()


async def test_a_rescue_wakes_the_workers_of_other_backends(open_backend):
    # A worker held by a partition cap has no time to wait for: the rescue that frees the
    # slot must wake it, or the partition waits for its poll.
    leader, worker = await open_backend(), await open_backend()
    await leader.limits_declare(limits=[TypeLimit("sync", None, 1)])
    await enqueue(leader, 2, type="sync", partition="p", now=T0)
    assert len(await claim(leader, 10, now=at(1))) == 1
    woken = asyncio.Event()
    notifier = worker.notifier()
    await notifier.start(lambda queue: woken.set(), lambda job_id: None)
    try:
        woken.clear()
        rescued = await leader.jobs_rescue(
            fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(100)
        )
        assert len(rescued.zombies) == 1
        await asyncio.wait_for(woken.wait(), timeout=5)
    finally:
        await notifier.stop()


async def test_an_operator_setting_outlives_declarations_until_reset(backend):
    await backend.limits_declare(limits=[TypeLimit("t", "10/s", 2)])
    set_ = await backend.limit_set(scope="type", name="t", rate_limit="1/m", actor="alice")
    assert (set_.rate_limit, set_.partition_concurrency) == ("1/m", 2)
    await backend.limits_declare(limits=[TypeLimit("t", "20/s", 3)])
    [info] = [i for i in await backend.limits_list() if i.name == "t"]
    assert (info.rate_limit, info.declared_rate_limit) == ("1/m", "20/s")
    assert info.partition_concurrency == 3 and not info.concurrency_set
    reset = await backend.limit_reset(scope="type", name="t", actor="alice")
    assert (reset.rate_limit, reset.rate_set) == ("20/s", False)
    with pytest.raises(NotFoundError):
        await backend.limit_reset(scope="type", name="nothing-here")


async def test_the_list_counts_held_jobs_and_the_busiest_partitions(backend):
    await backend.limits_declare(limits=[TypeLimit("sync", None, 1)])
    await enqueue(backend, 4, type="sync", partition="big")
    await enqueue(backend, 1, type="sync", partition="small")
    await claim(backend, 10)
    [info] = [i for i in await backend.limits_list() if i.name == "sync"]
    assert (info.running, info.pending, info.held, info.partitions) == (2, 3, 3, 2)
    assert [(p.partition, p.waiting, p.running) for p in info.top_partitions] == [
        ("big", 3, 1),
        ("small", 0, 1),
    ]


@pytest.mark.parametrize("rate", ["10", "10/d", "0/s", "-1/s", "ten/s", "1000000/s", ""])
async def test_a_bad_rate_is_refused_naming_the_field(backend, rate):
    with pytest.raises(ValidationError, match="rate_limit"):
        await backend.limit_set(scope="type", name="t", rate_limit=rate)
    with pytest.raises(ValidationError, match="rate_limit"):
        await backend.limits_declare(limits=[TypeLimit("t", rate)])
    assert await backend.limits_list() == []


async def test_limits_are_checked_before_anything_is_written(backend):
    with pytest.raises(ValidationError, match="partition_concurrency"):
        await backend.limit_set(scope="queue", name="q", partition_concurrency=2)
    with pytest.raises(ValidationError, match="partition_concurrency"):
        await backend.limit_set(scope="type", name="t", partition_concurrency=0)
    with pytest.raises(ValidationError, match="scope"):
        await backend.limit_set(scope="job", name="t", rate_limit="1/s")
    with pytest.raises(ValidationError, match="partition"):
        await enqueue(backend, type="t", partition="")
    with pytest.raises(ValidationError, match="partition"):
        await enqueue(backend, type="t", partition="x" * 300)
    assert await backend.limits_list() == []

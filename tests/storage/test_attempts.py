"""Per-attempt error history on every backend: each failed attempt of a job (a retry, and the
final failure) is kept with its error, number, time, worker and duration, newest first, at most
``ATTEMPTS_KEPT`` per job; it stays while the job lives in hot, the DLQ or the archive, survives a
resurrection, and goes with the job when it is purged."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from conformance import at, claim, enqueue, fail, succeed

from chokaq.errors import ValidationError
from chokaq.models import FailureReason, JobFilter, RetryMove
from chokaq.storage.checks import ATTEMPTS_KEPT


async def retry(backend, claimed, *, now, error="boom", duration=0.25, refund=False):
    moves = [
        RetryMove(lease=c.lease, error=error, refund_attempt=refund, duration_seconds=duration)
        for c in claimed
    ]
    return await backend.jobs_finalize(moves=moves, now=now)


async def test_retries_and_the_final_failure_are_kept_newest_first(backend):
    [job_id] = await enqueue(backend)
    first = await claim(backend, worker="w1", now=at(1))
    assert await retry(backend, first, now=at(2), error="ValueError: card 1 declined") == [True]
    second = await claim(backend, worker="w2", now=at(3))
    assert await retry(backend, second, now=at(5), error="ValueError: card 2 declined", duration=2)
    third = await claim(backend, worker="w3", now=at(6))
    await fail(backend, third, now=at(9), error="ValueError: card 3 declined")
    attempts = await backend.job_attempts(id=job_id)
    assert [(a.seq, a.attempt, a.worker_id) for a in attempts] == [
        (3, 3, "w3"),
        (2, 2, "w2"),
        (1, 1, "w1"),
    ]
    assert [a.failure_reason for a in attempts] == [FailureReason.TRANSIENT, None, None]
    assert [a.error for a in attempts] == [f"ValueError: card {n} declined" for n in (3, 2, 1)]
    assert [a.failed_at for a in attempts] == [at(9), at(5), at(2)]
    assert [a.started_at for a in attempts] == [at(6), at(3), at(1)]
    assert [a.duration_seconds for a in attempts] == [None, 2.0, 0.25]
    inspected = await backend.job_get_related(id=job_id)
    assert inspected is not None and inspected.attempts == tuple(attempts)


async def test_a_job_that_never_failed_has_no_attempts(backend):
    [job_id] = await enqueue(backend)
    await succeed(backend, await claim(backend))
    assert await backend.job_attempts(id=job_id) == []
    assert await backend.job_attempts(id="0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77") == []


async def test_a_refunded_retry_and_a_job_that_never_started_record_nothing(backend):
    [deferred, unstarted] = await enqueue(backend, 2)
    claimed = {c.id: c for c in await claim(backend, 1, start=True)}
    claimed |= {c.id: c for c in await claim(backend, 1, start=False)}
    assert set(claimed) == {deferred, unstarted}
    await retry(backend, [claimed[deferred]], now=at(1), refund=True)  # a circuit deferral
    await fail(backend, [claimed[unstarted]], now=at(1), reason=FailureReason.EXPIRED)
    assert await backend.job_attempts(id=deferred) == []
    assert await backend.job_attempts(id=unstarted) == []


async def test_a_stale_lease_records_no_attempt(backend):
    [job_id] = await enqueue(backend)
    [claimed] = await claim(backend, worker="w1", now=at(1))
    stale = replace(claimed, lease=replace(claimed.lease, token=str(uuid.uuid4())))
    assert await retry(backend, [stale], now=at(2)) == [False]
    assert await fail(backend, [stale], now=at(2)) == [False]
    assert await backend.job_attempts(id=job_id) == []
    await fail(backend, [claimed], now=at(3))
    assert [a.worker_id for a in await backend.job_attempts(id=job_id)] == ["w1"]


async def test_only_the_newest_attempts_are_kept(backend):
    total = ATTEMPTS_KEPT + 3
    [job_id] = await enqueue(backend, max_attempts=total + 1)
    for n in range(1, total + 1):
        claimed = await claim(backend, worker=f"w{n}", now=at(2 * n))
        assert await retry(backend, claimed, now=at(2 * n + 1), error=f"boom {n}") == [True]
    attempts = await backend.job_attempts(id=job_id)
    assert len(attempts) == ATTEMPTS_KEPT
    assert [a.attempt for a in attempts] == list(range(total, 3, -1))
    assert [a.error for a in await backend.job_attempts(id=job_id, limit=2)] == [
        f"boom {total}",
        f"boom {total - 1}",
    ]


async def test_attempts_stay_in_the_archive_and_go_with_its_purge(backend):
    [job_id] = await enqueue(backend)
    await retry(backend, await claim(backend, now=at(1)), now=at(2))
    await succeed(backend, await claim(backend, now=at(3)), now=at(4))
    assert [a.attempt for a in await backend.job_attempts(id=job_id)] == [1]
    assert await backend.archive_purge(older_than=at(100)) == 1
    assert await backend.job_attempts(id=job_id) == []


async def test_attempts_go_with_an_archive_delete_by_filter(backend):
    [job_id] = await enqueue(backend)
    await retry(backend, await claim(backend, now=at(1)), now=at(2))
    await succeed(backend, await claim(backend, now=at(3)), now=at(4))
    assert len(await backend.job_attempts(id=job_id)) == 1
    pinned = JobFilter(until=at(10))
    deleted = await backend.archive_delete_by_filter(filter=pinned, actor="ops", cap=10)
    assert deleted == [job_id]
    assert await backend.job_attempts(id=job_id) == []


async def test_attempts_survive_a_resurrection_and_go_with_a_dlq_purge(backend):
    [job_id] = await enqueue(backend, max_attempts=5)
    await fail(backend, await claim(backend, worker="w1", now=at(1)), now=at(2), error="first")
    assert await backend.dlq_resurrect(ids=[job_id], actor="ops", now=at(3)) == [job_id]
    await fail(backend, await claim(backend, worker="w2", now=at(4)), now=at(5), error="second")
    attempts = await backend.job_attempts(id=job_id)
    # The attempt count restarts after a resurrection; seq keeps the order.
    assert [(a.seq, a.attempt, a.error) for a in attempts] == [(2, 1, "second"), (1, 1, "first")]
    assert await backend.dlq_purge(ids=[job_id], actor="ops") == [job_id]
    assert await backend.job_attempts(id=job_id) == []


async def test_attempts_go_with_a_dlq_age_purge_and_a_purge_by_filter(backend):
    old, new = await enqueue(backend, 2)
    by_id = {c.id: c for c in await claim(backend, 2, now=at(1))}
    await fail(backend, [by_id[old]], now=at(2))
    await fail(backend, [by_id[new]], now=at(200))
    assert await backend.dlq_purge_older(older_than=at(100)) == 1
    assert await backend.job_attempts(id=old) == []
    assert len(await backend.job_attempts(id=new)) == 1
    purged = await backend.dlq_purge_by_filter(filter=JobFilter(), actor="ops", cap=10)
    assert purged == [new]
    assert await backend.job_attempts(id=new) == []


async def test_job_attempts_checks_its_arguments(backend):
    with pytest.raises(ValidationError, match="limit"):
        await backend.job_attempts(id="0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77", limit=0)
    with pytest.raises(ValidationError, match="id"):
        await backend.job_attempts(id="not-an-id")


async def test_a_zombies_last_attempt_is_kept(backend):
    [job_id] = await enqueue(backend, max_attempts=5)
    await retry(backend, await claim(backend, worker="w1", now=at(1)), now=at(2))
    await claim(backend, worker="w2", now=at(3))  # then w2 dies: no heartbeat, no finalize
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(1000)
    )
    assert rescued.zombies == (job_id,)
    attempts = await backend.job_attempts(id=job_id)
    assert [(a.seq, a.attempt, a.worker_id, a.failure_reason) for a in attempts] == [
        (2, 2, "w2", FailureReason.ZOMBIE),
        (1, 1, "w1", None),
    ]
    assert attempts[0].error.startswith("Zombie: heartbeat expired")
    assert attempts[0].failed_at == at(1000) and attempts[0].started_at == at(3)

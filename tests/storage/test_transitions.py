"""The worker path: start, heartbeat, progress, release and the three finalize moves."""

from __future__ import annotations

import pytest
from conformance import T0, at, claim, counters, enqueue

from chokaq.models import (
    FailMove,
    FailureReason,
    Heartbeat,
    JobStatus,
    Lease,
    Pillar,
    RetryMove,
    SucceedMove,
)


async def test_fetch_without_start_leaves_rows_fetched(backend):
    [jid] = await enqueue(backend)
    [c] = await claim(backend, start=False, worker="w1")
    assert (c.id, c.status, c.attempt_count, c.started_at) == (jid, JobStatus.FETCHED, 0, None)
    assert c.lease.job_id == jid and c.lease.worker_id == "w1" and c.lease.token
    view = await backend.job_get(jid)
    assert (view.status, view.worker_id, view.attempt_count) == (JobStatus.FETCHED, "w1", 0)
    assert (await backend.stats_summary()).fetched == 1


async def test_fetch_with_start_counts_the_attempt(backend):
    [jid] = await enqueue(backend)
    [c] = await claim(backend, start=True, now=at(5))
    assert (c.status, c.attempt_count, c.started_at) == (JobStatus.PROCESSING, 1, at(5))
    view = await backend.job_get(jid)
    assert (view.status, view.attempt_count) == (JobStatus.PROCESSING, 1)
    assert view.started_at == at(5) and view.heartbeat_at == at(5)
    assert (await backend.stats_summary()).processing == 1


async def test_each_claim_gets_a_fresh_lease_token(backend):
    await enqueue(backend)
    [first] = await claim(backend, start=False)
    assert await backend.jobs_release(leases=[first.lease], now=at(1)) == [first.id]
    [second] = await claim(backend, start=False, now=at(2))
    assert second.id == first.id and second.lease.token != first.lease.token


async def test_start_and_start_many(backend):
    await enqueue(backend, 3)
    claimed = await claim(backend, start=False)
    started = await backend.jobs_start(lease=claimed[0].lease, now=at(3))
    assert (started.attempt_count, started.started_at) == (1, at(3))
    assert await backend.jobs_start(lease=claimed[0].lease, now=at(4)) is None  # not Fetched now
    many = await backend.jobs_start_many(leases=[c.lease for c in claimed], now=at(5))
    assert set(many) == {claimed[1].id, claimed[2].id}
    assert all(s.attempt_count == 1 and s.started_at == at(5) for s in many.values())
    view = await backend.job_get(claimed[1].id)
    assert (view.status, view.heartbeat_at) == (JobStatus.PROCESSING, at(5))


async def test_start_with_a_forged_token_is_refused(backend):
    await enqueue(backend)
    [c] = await claim(backend, start=False)
    forged = Lease(c.id, c.lease.worker_id, "00000000-0000-4000-8000-000000000000")
    assert await backend.jobs_start(lease=forged, now=at(1)) is None
    assert await backend.jobs_start_many(leases=[forged], now=at(1)) == {}
    other_worker = Lease(c.id, "w2", c.lease.token)
    assert await backend.jobs_start(lease=other_worker, now=at(1)) is None
    assert (await backend.job_get(c.id)).status == JobStatus.FETCHED


async def test_heartbeat_refreshes_and_stores_progress(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend)
    acks = await backend.jobs_heartbeat(
        beats=[Heartbeat(a.lease, progress=40), Heartbeat(b.lease)], now=at(10)
    )
    assert [(k.job_id, k.owned, k.cancel_requested) for k in acks] == [
        (a.id, True, False),
        (b.id, True, False),
    ]
    view = await backend.job_get(a.id)
    assert (view.heartbeat_at, view.progress) == (at(10), 40)
    assert (await backend.job_get(b.id)).heartbeat_at == at(10)


async def test_heartbeat_reports_a_cancel_request(backend):
    await enqueue(backend)
    [c] = await claim(backend)
    result = await backend.jobs_cancel(ids=[c.id], actor="ops", now=at(1))
    assert result.requested == (c.id,)
    [ack] = await backend.jobs_heartbeat(beats=[Heartbeat(c.lease)], now=at(2))
    assert (ack.owned, ack.cancel_requested, ack.cancel_requested_by) == (True, True, "ops")


async def test_heartbeat_of_a_fetched_job_is_not_owned(backend):
    await enqueue(backend)
    [c] = await claim(backend, start=False)
    [ack] = await backend.jobs_heartbeat(beats=[Heartbeat(c.lease)], now=at(1))
    assert ack.owned is False


async def test_progress_is_clamped(backend):
    await enqueue(backend)
    [c] = await claim(backend)
    assert await backend.jobs_progress(lease=c.lease, progress=150, now=at(1)) is True
    assert (await backend.job_get(c.id)).progress == 100
    assert await backend.jobs_progress(lease=c.lease, progress=-5, now=at(2)) is True
    assert (await backend.job_get(c.id)).progress == 0


async def test_release_puts_fetched_back_without_an_attempt(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend, start=False)
    assert await backend.jobs_release(leases=[a.lease], now=at(1)) == [a.id]
    view = await backend.job_get(a.id)
    assert (view.status, view.worker_id, view.attempt_count) == (JobStatus.PENDING, None, 0)
    # A started job cannot be released.
    await backend.jobs_start(lease=b.lease, now=at(1))
    assert await backend.jobs_release(leases=[b.lease], now=at(2)) == []
    assert (await backend.job_get(b.id)).status == JobStatus.PROCESSING


async def test_succeed_moves_to_archive_with_counters(backend):
    [jid] = await enqueue(backend, queue="q")
    [c] = await claim(backend, now=at(1))
    moves = [SucceedMove(lease=c.lease, duration_seconds=2.5)]
    assert await backend.jobs_finalize(moves=moves, now=at(4)) == [True]
    view = await backend.job_get(jid)
    assert view.pillar == Pillar.ARCHIVE
    assert (view.finished_at, view.duration_seconds, view.attempt_count) == (at(4), 2.5, 1)
    assert (view.created_at, view.started_at, view.worker_id) == (T0, at(1), "w1")
    got = await counters(backend, now=at(30))
    assert (got.summary.succeeded_total, got.summary.processing) == (1, 0)
    assert got.summary.last_activity_at == at(4)
    [q] = [q for q in got.queues if q.queue.name == "q"]
    assert (q.succeeded_total, q.last_activity_at) == (1, at(4))
    assert (got.throughput.processed_1m, got.throughput.failed_1m) == (1, 0)
    [point] = got.series
    assert (point.bucket_start, point.succeeded, point.failed) == (at(4), 1, 0)
    assert point.total_duration_seconds == 2.5 and point.max_duration_seconds == 2.5


async def test_fail_moves_to_dlq_with_reason_and_error(backend):
    [jid] = await enqueue(backend, queue="q")
    [c] = await claim(backend, now=at(1))
    move = FailMove(
        lease=c.lease, reason=FailureReason.FATAL_ERROR, error="Boom\ntrace", actor=None
    )
    assert await backend.jobs_finalize(moves=[move], now=at(3)) == [True]
    view = await backend.job_get(jid)
    assert view.pillar == Pillar.DLQ
    assert (view.failure_reason, view.error, view.failed_at) == (
        FailureReason.FATAL_ERROR,
        "Boom\ntrace",
        at(3),
    )
    assert view.attempt_count == 1 and view.payload == "{}"
    got = await counters(backend, now=at(30))
    assert (got.summary.failed_total, got.summary.succeeded_total) == (1, 0)
    assert (got.throughput.processed_1m, got.throughput.failed_1m) == (1, 1)
    assert got.throughput.failure_rate_1m == 100.0


async def test_an_attempt_ends_at_its_start_plus_the_workers_elapsed_time(backend):
    # The end of a run is its start plus the time the worker measured, on the store's clock,
    # not when the move is written: a batch recorded late (batching, an outage) keeps it.
    ids = await enqueue(backend, 4, queue="q")
    claimed = {c.id: c for c in await claim(backend, 4, queues=["q"], now=at(1))}
    ok, dead, retried, late = (claimed[i] for i in ids)
    moves = [
        SucceedMove(ok.lease, 0.2, elapsed_seconds=0.25),
        FailMove(
            dead.lease, FailureReason.TIMEOUT, "Timeout", duration_seconds=1.0, elapsed_seconds=1.5
        ),
        RetryMove(
            retried.lease, "flaky", delay_seconds=5, duration_seconds=0.1, elapsed_seconds=0.75
        ),
        SucceedMove(late.lease, 0.2),  # no elapsed time: it finished when it was recorded
    ]
    assert await backend.jobs_finalize(moves=moves, now=at(60)) == [True] * 4
    archived = await backend.job_get(ok.id)
    assert (archived.started_at, archived.finished_at) == (at(1), at(1.25))
    assert archived.duration_seconds == 0.2
    failed = await backend.job_get(dead.id)
    assert (failed.started_at, failed.failed_at, failed.duration_seconds) == (at(1), at(2.5), 1.0)
    [attempt] = await backend.job_attempts(id=dead.id)
    assert (attempt.started_at, attempt.failed_at) == (at(1), at(2.5))
    [attempt] = await backend.job_attempts(id=retried.id)
    assert (attempt.started_at, attempt.failed_at) == (at(1), at(1.75))
    assert (await backend.job_get(late.id)).finished_at == at(60)


async def test_every_move_stores_its_times_alike_whatever_numbers_they_came_as(backend):
    # A duration or elapsed time given as an int, NaN, infinity or below zero is normalised
    # once, in the seam, for every kind of move: each backend stores the same (an unknown
    # time is None, an int its float), and nothing else of the move is lost.
    ids = await enqueue(backend, 3, queue="q")
    claimed = {c.id: c for c in await claim(backend, 3, queues=["q"], now=at(1))}
    ok, dead, retried = (claimed[i] for i in ids)
    moves = [
        SucceedMove(ok.lease, 2, result='"kept"', elapsed_seconds=3),
        FailMove(
            dead.lease,
            FailureReason.TIMEOUT,
            "Timeout",
            duration_seconds=float("nan"),
            elapsed_seconds=float("inf"),
        ),
        RetryMove(
            retried.lease,
            "flaky",
            delay_seconds=5,
            duration_seconds=float("inf"),
            elapsed_seconds=-1.0,
        ),
    ]
    assert await backend.jobs_finalize(moves=moves, now=at(60)) == [True] * 3
    archived = await backend.job_get(ok.id)
    assert (archived.duration_seconds, archived.finished_at) == (2.0, at(4))
    assert archived.result == '"kept"'
    failed = await backend.job_get(dead.id)
    assert (failed.duration_seconds, failed.failed_at) == (None, at(60))
    [attempt] = await backend.job_attempts(id=retried.id)
    assert (attempt.duration_seconds, attempt.failed_at) == (None, at(60))


async def test_fail_records_the_cancelling_actor(backend):
    [jid] = await enqueue(backend)
    [c] = await claim(backend)
    move = FailMove(lease=c.lease, reason=FailureReason.CANCELLED, error="cancelled", actor="bob")
    assert await backend.jobs_finalize(moves=[move], now=at(1)) == [True]
    view = await backend.job_get(jid)
    assert (view.failure_reason, view.cancelled_by) == (FailureReason.CANCELLED, "bob")


async def test_retry_goes_back_to_pending_with_the_error(backend):
    [jid] = await enqueue(backend, queue="q")
    [c] = await claim(backend, now=at(1))
    move = RetryMove(lease=c.lease, error="flaky", delay_seconds=30)
    assert await backend.jobs_finalize(moves=[move], now=at(2)) == [True]
    view = await backend.job_get(jid)
    assert (view.pillar, view.status, view.scheduled_at) == (Pillar.HOT, JobStatus.PENDING, at(32))
    assert (view.last_error, view.worker_id, view.attempt_count) == ("flaky", None, 1)
    assert await claim(backend, now=at(31)) == []  # not due yet
    [again] = await claim(backend, now=at(32))
    assert again.attempt_count == 2 and again.last_error == "flaky"
    got = await counters(backend, now=at(40))
    [q] = [q for q in got.queues if q.queue.name == "q"]
    assert q.retried_total == 1 and got.summary.retried_total == 1
    assert got.throughput.processed_1m == 0  # a retry is not an outcome


async def test_a_retry_without_an_error_keeps_the_last_one(backend):
    # A circuit deferral (or a start refused) carries no error of its own: the error of the
    # attempt before it is what the next attempt's handler reads as its previous error.
    [jid] = await enqueue(backend)
    [c] = await claim(backend, now=at(1))
    assert await backend.jobs_finalize(moves=[RetryMove(c.lease, "timeout")], now=at(2)) == [True]
    [c] = await claim(backend, now=at(3))
    deferral = RetryMove(c.lease, None, refund_attempt=True, count_retry=False)
    assert await backend.jobs_finalize(moves=[deferral], now=at(3)) == [True]
    [c] = await claim(backend, now=at(4))
    assert (c.id, c.attempt_count, c.last_error) == (jid, 2, "timeout")


async def test_retry_at_a_time_with_refund_and_without_counting(backend):
    [jid] = await enqueue(backend)
    [c] = await claim(backend, now=at(1))
    move = RetryMove(
        lease=c.lease, error=None, run_at=at(500), refund_attempt=True, count_retry=False
    )
    assert await backend.jobs_finalize(moves=[move], now=at(2)) == [True]
    view = await backend.job_get(jid)
    assert (view.scheduled_at, view.attempt_count) == (at(500), 0)
    assert (await backend.stats_summary()).retried_total == 0


async def test_finalize_applies_a_mixed_batch_in_one_call(backend):
    await enqueue(backend, 4)
    a, b, c, d = await claim(backend, now=at(1))
    stale = Lease(d.id, "w1", "00000000-0000-4000-8000-000000000000")
    applied = await backend.jobs_finalize(
        moves=[
            SucceedMove(lease=a.lease, duration_seconds=1.0),
            FailMove(lease=b.lease, reason=FailureReason.TRANSIENT, error="x"),
            RetryMove(lease=c.lease, error="y"),
            SucceedMove(lease=stale, duration_seconds=1.0),
        ],
        now=at(2),
    )
    assert applied == [True, True, True, False]
    assert [(await backend.job_get(j.id)).pillar for j in (a, b, c, d)] == [
        Pillar.ARCHIVE,
        Pillar.DLQ,
        Pillar.HOT,
        Pillar.HOT,
    ]
    summary = await backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total, summary.retried_total) == (1, 1, 1)


async def test_fetched_job_can_be_finalized_directly(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend, start=False)
    assert await backend.jobs_finalize(
        moves=[
            SucceedMove(lease=a.lease, duration_seconds=None),
            FailMove(lease=b.lease, reason=FailureReason.REJECTED, error="unknown type"),
        ],
        now=at(1),
    ) == [True, True]
    assert (await backend.job_get(a.id)).pillar == Pillar.ARCHIVE
    assert (await backend.job_get(b.id)).failure_reason == FailureReason.REJECTED


async def test_finalize_twice_applies_once(backend):
    await enqueue(backend)
    [c] = await claim(backend)
    move = SucceedMove(lease=c.lease, duration_seconds=1.0)
    assert await backend.jobs_finalize(moves=[move], now=at(1)) == [True]
    assert await backend.jobs_finalize(moves=[move], now=at(2)) == [False]
    assert (await backend.stats_summary()).succeeded_total == 1


@pytest.mark.parametrize("kind", ["succeed", "fail", "retry", "heartbeat", "release", "progress"])
async def test_a_stale_lease_changes_nothing(backend, kind):
    """After rescue put the job back and another worker claimed it, the first worker is fenced."""
    [jid] = await enqueue(backend)
    [old] = await claim(backend, worker="w1", start=(kind != "release"))
    if kind == "release":
        await backend.jobs_rescue(
            fetched_timeout_seconds=60, processing_timeout_seconds=600, now=at(120)
        )
    else:
        # Processing rows are only dead-lettered by rescue, so hand the job over via retry.
        await backend.jobs_finalize(moves=[RetryMove(lease=old.lease, error="x")], now=at(1))
    [new] = await claim(backend, worker="w2", start=(kind != "release"), now=at(121))
    assert new.id == jid and new.lease.worker_id == "w2"
    before = await backend.job_get(jid)
    summary = await backend.stats_summary()
    if kind == "succeed":
        moves = [SucceedMove(lease=old.lease, duration_seconds=1.0)]
        assert await backend.jobs_finalize(moves=moves, now=at(122)) == [False]
    elif kind == "fail":
        moves = [FailMove(lease=old.lease, reason=FailureReason.TRANSIENT, error="x")]
        assert await backend.jobs_finalize(moves=moves, now=at(122)) == [False]
    elif kind == "retry":
        moves = [RetryMove(lease=old.lease, error="x")]
        assert await backend.jobs_finalize(moves=moves, now=at(122)) == [False]
    elif kind == "heartbeat":
        [ack] = await backend.jobs_heartbeat(beats=[Heartbeat(old.lease, 50)], now=at(122))
        assert ack.owned is False
    elif kind == "progress":
        assert await backend.jobs_progress(lease=old.lease, progress=50, now=at(122)) is False
    else:
        assert await backend.jobs_release(leases=[old.lease], now=at(122)) == []
    assert await backend.job_get(jid) == before
    assert await backend.stats_summary() == summary


async def test_a_lease_with_the_same_worker_but_old_token_is_stale(backend):
    """The token, not just the worker id, fences: the same worker re-claiming gets a new one."""
    await enqueue(backend)
    [old] = await claim(backend, start=False)
    await backend.jobs_release(leases=[old.lease], now=at(1))
    [new] = await claim(backend, start=False, now=at(2))
    moves = [SucceedMove(lease=old.lease, duration_seconds=1.0)]
    assert await backend.jobs_finalize(moves=moves, now=at(3)) == [False]
    assert (await backend.job_get(new.id)).status == JobStatus.FETCHED

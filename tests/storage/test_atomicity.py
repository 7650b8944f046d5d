"""A move whose destination insert fails changes nothing, and the rest of its batch still applies.

The failure is planted through the interface itself: a job is archived (or dead-lettered) under
an explicit id, then a second job is enqueued into hot under that same id. Moving the second job
must hit the destination's primary key in the middle of the move. Every counter of the job's
queue is compared before and after; the other move of the batch lives in another queue so its
own counters do not hide a change.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance import at, claim, counters, enqueue, fail, succeed

from chokaq.errors import StorageError
from chokaq.ids import new_job_id
from chokaq.models import FailMove, FailureReason, JobFilter, JobStatus, Pillar, SucceedMove


async def _queue_view(backend, queue, now):
    """Every number a dashboard shows for ``queue``."""
    [stats] = [q for q in await backend.stats_queues(now=now) if q.queue.name == queue]
    series = await backend.stats_series(since=now - timedelta(hours=1), until=now, queue=queue)
    return (
        stats.succeeded_total,
        stats.failed_total,
        stats.retried_total,
        stats.last_activity_at,
        tuple(series),
    )


async def _plant(backend, pillar, jid):
    """Put a row with id ``jid`` into the archive or the DLQ of queue ``q``, at T0."""
    await enqueue(backend, id=jid, queue="q", payload='{"planted": true}')
    claimed = await claim(backend, queues=["q"])
    assert [c.id for c in claimed] == [jid]
    if pillar == Pillar.ARCHIVE:
        assert await succeed(backend, claimed) == [True]
    else:
        assert await fail(backend, claimed, error="planted") == [True]


async def _pillar_row(backend, pillar, jid):
    page = await backend.jobs_page(pillar=pillar, filter=JobFilter(ids=(jid,)))
    assert page.total == 1
    return page.items[0]


async def test_archive_conflict_leaves_the_job_and_counters_alone(backend):
    clash = new_job_id()
    await _plant(backend, Pillar.ARCHIVE, clash)
    planted = await _pillar_row(backend, Pillar.ARCHIVE, clash)
    await enqueue(backend, id=clash, queue="q", now=at(10))
    [other] = await enqueue(backend, queue="other", now=at(10))
    claimed = {c.id: c for c in await claim(backend, now=at(11))}
    hot_before = await backend.job_get(clash)
    queue_before = await _queue_view(backend, "q", at(30))
    summary_before = await backend.stats_summary()
    rates_before = await backend.stats_throughput(now=at(30))

    moves = [SucceedMove(lease=claimed[i].lease, duration_seconds=1.0) for i in (clash, other)]
    assert await backend.jobs_finalize(moves=moves, now=at(12)) == [False, True]

    assert await backend.job_get(clash) == hot_before  # still Processing in hot, same lease
    assert hot_before.status == JobStatus.PROCESSING
    assert await _pillar_row(backend, Pillar.ARCHIVE, clash) == planted
    assert await _queue_view(backend, "q", at(30)) == queue_before
    assert (await backend.job_get(other)).pillar == Pillar.ARCHIVE
    summary = await backend.stats_summary()
    assert summary.succeeded_total == summary_before.succeeded_total + 1  # only the other move
    assert (summary.processing, summary.failed_total) == (1, summary_before.failed_total)
    rates = await backend.stats_throughput(now=at(30))
    assert rates.processed_1m == rates_before.processed_1m + 1
    assert rates.failed_1m == rates_before.failed_1m


async def test_dlq_conflict_leaves_the_job_and_counters_alone(backend):
    clash = new_job_id()
    await _plant(backend, Pillar.DLQ, clash)
    planted = await _pillar_row(backend, Pillar.DLQ, clash)
    await enqueue(backend, id=clash, queue="q", now=at(10))
    [other] = await enqueue(backend, queue="other", now=at(10))
    claimed = {c.id: c for c in await claim(backend, now=at(11))}
    hot_before = await backend.job_get(clash)
    queue_before = await _queue_view(backend, "q", at(30))
    summary_before = await backend.stats_summary()
    rates_before = await backend.stats_throughput(now=at(30))

    moves = [
        FailMove(lease=claimed[i].lease, reason=FailureReason.TRANSIENT, error="late")
        for i in (clash, other)
    ]
    assert await backend.jobs_finalize(moves=moves, now=at(12)) == [False, True]

    assert await backend.job_get(clash) == hot_before
    assert await _pillar_row(backend, Pillar.DLQ, clash) == planted
    assert await _queue_view(backend, "q", at(30)) == queue_before
    assert (await backend.job_get(other)).pillar == Pillar.DLQ
    summary = await backend.stats_summary()
    assert summary.failed_total == summary_before.failed_total + 1
    assert summary.succeeded_total == summary_before.succeeded_total
    rates = await backend.stats_throughput(now=at(30))
    assert (rates.processed_1m, rates.failed_1m) == (
        rates_before.processed_1m + 1,
        rates_before.failed_1m + 1,
    )


async def test_cancel_with_a_dlq_conflict_leaves_the_job_alone(backend):
    clash = new_job_id()
    await _plant(backend, Pillar.DLQ, clash)
    await enqueue(backend, id=clash, queue="q", now=at(10))
    [other] = await enqueue(backend, queue="other", now=at(10))
    hot_before = await backend.job_get(clash)
    queue_before = await _queue_view(backend, "q", at(30))

    result = await backend.jobs_cancel(ids=[clash, other], actor="ops", now=at(12))

    assert result.cancelled == (other,)
    assert clash not in result.requested
    assert await backend.job_get(clash) == hot_before
    assert await _queue_view(backend, "q", at(30)) == queue_before
    assert (await backend.job_get(other)).failure_reason == FailureReason.CANCELLED


async def test_rescue_with_a_dlq_conflict_leaves_the_zombie_alone(backend):
    clash = new_job_id()
    await _plant(backend, Pillar.DLQ, clash)
    await enqueue(backend, id=clash, queue="q", now=at(10))
    [other] = await enqueue(backend, queue="other", now=at(10))
    await claim(backend, now=at(11))
    hot_before = await backend.job_get(clash)
    queue_before = await _queue_view(backend, "q", at(30))

    result = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(1000)
    )

    assert result.zombies == (other,)
    assert await backend.job_get(clash) == hot_before
    assert await _queue_view(backend, "q", at(30)) == queue_before
    assert (await backend.job_get(other)).failure_reason == FailureReason.ZOMBIE


async def test_resurrect_with_a_hot_conflict_leaves_the_dlq_row_alone(backend):
    clash = new_job_id()
    await _plant(backend, Pillar.DLQ, clash)
    [other] = await enqueue(backend, queue="other")
    assert await fail(backend, await claim(backend, queues=["other"])) == [True]
    planted = await _pillar_row(backend, Pillar.DLQ, clash)
    await enqueue(backend, id=clash, queue="q", payload='{"hot": true}', now=at(10))
    hot_before = await backend.job_get(clash)
    before = await counters(backend, now=at(30))

    moved = await backend.dlq_resurrect(ids=[clash, other], actor="ops", now=at(12))

    assert moved == [other]
    assert await backend.job_get(clash) == hot_before
    assert await _pillar_row(backend, Pillar.DLQ, clash) == planted
    assert (await backend.job_get(other)).pillar == Pillar.HOT
    after = await counters(backend, now=at(30))
    assert after.lifetime() == before.lifetime()
    assert after.throughput == before.throughput
    assert after.series == before.series


_REFUSE_BUCKETS = {
    "sqlite": [
        "CREATE TRIGGER refuse_insert BEFORE INSERT ON {metric_buckets}"
        " BEGIN SELECT RAISE(ABORT, 'counters are down'); END",
        "CREATE TRIGGER refuse_update BEFORE UPDATE ON {metric_buckets}"
        " BEGIN SELECT RAISE(ABORT, 'counters are down'); END",
    ],
    "postgres": [
        "CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'counters are down'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON {metric_buckets}"
        " FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()",
    ],
}
_ALLOW_BUCKETS = {
    "sqlite": ["DROP TRIGGER refuse_insert", "DROP TRIGGER refuse_update"],
    "postgres": ["DROP TRIGGER refuse ON {metric_buckets}"],
}


async def test_a_finalize_whose_counters_cannot_be_written_raises_and_changes_nothing(backend, raw):
    """A storage fault in the counters is not a lost lease: the call raises StorageError on
    every backend, the whole batch is left as it was, and it applies once the fault is gone."""
    await enqueue(backend, 2, queue="q")
    claimed = await claim(backend, queues=["q"])
    before = (await counters(backend), await _queue_view(backend, "q", at(1)))
    schema = f'"{raw.schema}"'
    for statement in _REFUSE_BUCKETS[raw.dialect]:
        raw.rows(statement.replace("{schema}", schema))
    with pytest.raises(StorageError):
        await succeed(backend, claimed, now=at(1))
    assert (await counters(backend), await _queue_view(backend, "q", at(1))) == before
    page = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(queue="q"))
    assert {job.status for job in page.items} == {JobStatus.PROCESSING}
    for statement in _ALLOW_BUCKETS[raw.dialect]:
        raw.rows(statement)
    assert await succeed(backend, claimed, now=at(1)) == [True, True]

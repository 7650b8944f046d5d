"""Maintenance and operator actions: rescue, cancel, edits, resurrection, purges and retention.

Lifetime counters and rolling rates record what happened; nothing an operator does afterwards
(resurrect, purge, retention) may rewrite them.
"""

from __future__ import annotations

from datetime import timedelta

from conformance import T0, at, claim, counters, enqueue, fail, succeed, totals

from chokaq.models import FailureReason, Heartbeat, JobFilter, JobStatus, Pillar

FAR = timedelta(days=365)


async def _dead(backend, count, *, now=T0, error="boom", **fields):
    """``count`` jobs straight into the DLQ (failed at ``now``); returns their ids."""
    ids = await enqueue(backend, count, now=now, **fields)
    claimed = await claim(backend, count, now=now, queues=[fields.get("queue", "default")])
    assert sorted(c.id for c in claimed) == sorted(ids)
    assert await fail(backend, claimed, now=now, error=error) == [True] * count
    return ids


async def test_rescue_requeues_stale_fetched_rows(backend):
    await enqueue(backend, 2)
    stale = await claim(backend, 1, start=False, now=T0)
    fresh = await claim(backend, 1, start=False, now=at(50))
    result = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=600, now=at(90)
    )
    assert result.requeued == (stale[0].id,) and result.zombies == ()
    view = await backend.job_get(stale[0].id)
    assert (view.status, view.worker_id, view.attempt_count) == (JobStatus.PENDING, None, 0)
    assert (await backend.job_get(fresh[0].id)).status == JobStatus.FETCHED
    assert (await backend.stats_summary()).failed_total == 0


async def test_rescue_dead_letters_zombies_with_counters(backend):
    await enqueue(backend, 2, queue="q")
    [zombie] = await claim(backend, 1, now=T0)
    [alive] = await claim(backend, 1, now=T0)
    await backend.jobs_heartbeat(beats=[Heartbeat(alive.lease)], now=at(500))
    result = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=300, now=at(600)
    )
    assert result.zombies == (zombie.id,) and result.requeued == ()
    view = await backend.job_get(zombie.id)
    assert (view.pillar, view.failure_reason, view.failed_at) == (
        Pillar.DLQ,
        FailureReason.ZOMBIE,
        at(600),
    )
    got = await counters(backend, now=at(620))
    assert got.summary.failed_total == 1
    assert (got.throughput.processed_1m, got.throughput.failed_1m) == (1, 1)
    [q] = [q for q in got.queues if q.queue.name == "q"]
    assert q.failed_total == 1
    assert (await backend.job_get(alive.id)).status == JobStatus.PROCESSING


async def test_rescue_honours_the_queue_zombie_timeout(backend):
    await enqueue(backend, queue="short")
    await enqueue(backend, queue="long")
    await backend.queue_configure(name="short", zombie_timeout_seconds=30)
    await backend.queue_configure(name="long", zombie_timeout_seconds=3000)
    claimed = {c.queue: c for c in await claim(backend, now=T0)}
    result = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=300, now=at(400)
    )
    assert result.zombies == (claimed["short"].id,)
    assert (await backend.job_get(claimed["long"].id)).status == JobStatus.PROCESSING


async def test_rescue_counts_no_heartbeat_as_missed_before_the_store_was_regained(backend):
    # The rescuer regained the store at 400 s after an outage; every job last beat at 0 s.
    await enqueue(backend, 2, queue="q")
    await enqueue(backend, queue="short")
    await backend.queue_configure(name="short", zombie_timeout_seconds=30)
    held, finished = await claim(backend, 2, now=T0, queues=["q"])
    [short] = await claim(backend, 1, now=T0, queues=["short"])

    async def rescue(now, since):
        result = await backend.jobs_rescue(
            fetched_timeout_seconds=60,
            processing_timeout_seconds=300,
            now=now,
            reachable_since=since,
        )
        return result.zombies

    # The 300 s timeout counts from 400 s, not from the heartbeat; the queue's 30 s runs out.
    assert await rescue(at(600), at(400)) == (short.id,)
    assert await rescue(at(700), at(400)) == ()
    # The outcome decided during the outage is recorded: its lease still matches, however late.
    assert await succeed(backend, [finished], now=at(650)) == [True]
    assert await rescue(at(701), at(400)) == (held.id,)
    assert await rescue(at(701), None) == ()  # nothing left; None judges by heartbeats alone
    assert (await backend.job_get(finished.id)).pillar is Pillar.ARCHIVE


async def test_cancel_pending_fetched_processing_and_unknown(backend):
    first, second, pending = await enqueue(backend, 3, queue="q")
    [f] = await claim(backend, 1, start=False)
    [r] = await claim(backend, 1, start=True, worker="w2")
    assert (f.id, r.id) == (first, second)  # claimed in order
    unknown = "01900000-0000-7000-8000-000000000000"
    result = await backend.jobs_cancel(ids=[pending, f.id, r.id, unknown], actor="ops", now=at(5))
    assert set(result.cancelled) == {pending, f.id}
    assert result.requested == (r.id,)
    assert result.not_found == (unknown,)
    for jid in (pending, f.id):
        view = await backend.job_get(jid)
        assert (view.pillar, view.failure_reason, view.cancelled_by) == (
            Pillar.DLQ,
            FailureReason.CANCELLED,
            "ops",
        )
    view = await backend.job_get(r.id)
    assert (view.status, view.cancel_requested_at, view.cancelled_by) == (
        JobStatus.PROCESSING,
        at(5),
        "ops",
    )
    got = await counters(backend, now=at(30))
    assert got.summary.failed_total == 2 and got.throughput.failed_1m == 2


async def test_edit_only_touches_pending_jobs(backend):
    [jid] = await enqueue(backend, tags=("a",), priority=1)
    assert await backend.jobs_edit(id=jid, actor="ops", payload='{"v": 2}', now=at(1))
    view = await backend.job_get(jid)
    assert (view.payload, view.tags, view.priority) == ('{"v": 2}', ("a",), 1)
    assert view.last_modified_by == "ops"
    assert await backend.jobs_edit(id=jid, actor="ops", tags=("b", "c"), priority=9, now=at(2))
    view = await backend.job_get(jid)
    assert (view.payload, view.tags, view.priority) == ('{"v": 2}', ("b", "c"), 9)
    await claim(backend, start=False)
    assert await backend.jobs_edit(id=jid, actor="ops", priority=1, now=at(3)) is False
    assert (await backend.job_get(jid)).priority == 9
    missing = "01900000-0000-7000-8000-000000000000"
    assert await backend.jobs_edit(id=missing, actor="ops", priority=1) is False


async def test_dlq_edit(backend):
    [jid] = await _dead(backend, 1, tags=("x",))
    assert await backend.dlq_edit(id=jid, actor="fixer", payload='{"fixed": 1}', tags=("y",))
    view = await backend.job_get(jid)
    assert (view.pillar, view.payload, view.tags) == (Pillar.DLQ, '{"fixed": 1}', ("y",))
    assert view.last_modified_by == "fixer"
    [live] = await enqueue(backend)
    assert await backend.dlq_edit(id=live, actor="fixer", priority=1) is False


async def test_resurrect_resets_the_job(backend):
    [jid] = await _dead(backend, 1, priority=7, idempotency_key="k", created_by="alice")
    moved = await backend.dlq_resurrect(ids=[jid], actor="ops", now=at(100))
    assert moved == [jid]
    view = await backend.job_get(jid)
    assert (view.pillar, view.status, view.attempt_count) == (Pillar.HOT, JobStatus.PENDING, 0)
    assert (view.idempotency_key, view.priority, view.created_at) == (None, 7, T0)
    assert (view.created_by, view.last_modified_by) == ("alice", "ops")
    assert view.scheduled_at in (None, at(100))
    assert (await totals(backend))[Pillar.DLQ] == 0
    [again] = await claim(backend, now=at(100))
    assert again.id == jid and again.attempt_count == 1


async def test_a_requeued_job_is_claimed_with_its_requeues_and_its_dlq_error(backend):
    [jid] = await _dead(backend, 1, error="card declined")
    assert await backend.dlq_resurrect(ids=[jid], actor="ops", now=at(100)) == [jid]
    [again] = await claim(backend, now=at(100))
    assert (again.attempt_count, again.requeues, again.last_error) == (1, 1, "card declined")
    # It fails again and is requeued again by filter: the count goes with it through the DLQ.
    assert await fail(backend, [again], now=at(101), error="declined again") == [True]
    flt = JobFilter(queue="default")
    moved = await backend.dlq_resurrect_by_filter(filter=flt, actor="ops", cap=5, now=at(150))
    assert moved == [jid]
    [third] = await claim(backend, now=at(200))
    assert (third.attempt_count, third.requeues, third.last_error) == (1, 2, "declined again")
    [fresh] = await enqueue(backend, now=at(200))
    [first] = await claim(backend, now=at(200))
    assert (first.id, first.requeues, first.last_error) == (fresh, 0, None)


async def test_repair_and_requeue_in_one_call(backend):
    ids = await _dead(backend, 2, priority=1)
    missing = "01900000-0000-7000-8000-000000000000"
    moved = await backend.dlq_resurrect(
        ids=[*ids, missing], actor="ops", payload='{"ok": 1}', tags=("fixed",), priority=99
    )
    assert sorted(moved) == sorted(ids)
    for jid in ids:
        view = await backend.job_get(jid)
        assert (view.payload, view.tags, view.priority) == ('{"ok": 1}', ("fixed",), 99)


async def test_resurrect_and_purge_leave_counters_and_rates_alone(backend):
    await enqueue(backend, 3)
    await succeed(backend, await claim(backend, 3))
    dead = await _dead(backend, 4)
    before = await counters(backend, now=at(30))
    assert before.throughput.failed_1m == 4 and before.throughput.processed_5m == 7
    assert await backend.dlq_resurrect(ids=dead[:2], actor="ops", now=at(10)) == dead[:2]
    assert sorted(await backend.dlq_purge(ids=dead[2:], actor="ops")) == sorted(dead[2:])
    after = await counters(backend, now=at(30))
    assert after.lifetime() == before.lifetime()
    assert after.throughput == before.throughput
    assert after.throughput.failure_rate_1m == before.throughput.failure_rate_1m
    assert after.throughput.failure_rate_5m == before.throughput.failure_rate_5m
    assert after.series == before.series
    assert after.summary.pending == 2


async def test_preview_then_act_by_filter_touches_exactly_the_preview(backend):
    old = await _dead(backend, 3, queue="a", error="timeout talking to db", now=T0)
    new = await _dead(backend, 4, queue="a", error="timeout again", now=at(60))
    await _dead(backend, 2, queue="b", error="timeout elsewhere", now=at(60))
    flt = JobFilter(queue="a", search="timeout")
    preview = await backend.dlq_preview(filter=flt, cap=5, sample=3)
    assert (preview.matched, preview.will_affect, preview.cap) == (7, 5, 5)
    assert len(preview.sample_ids) == 3 and set(preview.sample_ids) <= set(new)
    full = await backend.dlq_preview(filter=flt, cap=5, sample=10)
    assert len(full.sample_ids) == 5
    moved = await backend.dlq_resurrect_by_filter(filter=flt, actor="ops", cap=5, now=at(100))
    assert sorted(moved) == sorted(full.sample_ids)
    assert set(new) <= set(moved)  # newest failures first
    left = await backend.dlq_preview(filter=flt, cap=100, sample=100)
    assert left.matched == 2 and set(left.sample_ids) <= set(old)
    purged = await backend.dlq_purge_by_filter(filter=flt, actor="ops", cap=100)
    assert sorted(purged) == sorted(left.sample_ids)
    assert (await backend.dlq_preview(filter=JobFilter(), cap=10)).matched == 2  # queue b


async def test_archive_purge_in_small_batches_keeps_counters(backend):
    await enqueue(backend, 7)
    await succeed(backend, await claim(backend, 7), now=T0)
    await enqueue(backend, 2, now=at(1000))
    await succeed(backend, await claim(backend, 2, now=at(1000)), now=at(1000))
    before = await counters(backend, now=at(1010))
    assert await backend.archive_purge(older_than=at(500), batch_size=3) == 7
    assert (await totals(backend))[Pillar.ARCHIVE] == 2
    after = await counters(backend, now=at(1010))
    assert (after.lifetime(), after.throughput, after.series) == (
        before.lifetime(),
        before.throughput,
        before.series,
    )
    assert await backend.archive_purge(older_than=at(500), batch_size=3) == 0


async def test_archive_purge_limit(backend):
    await enqueue(backend, 5)
    await succeed(backend, await claim(backend, 5))
    assert await backend.archive_purge(older_than=at(10), batch_size=2, limit=3) == 3
    assert (await totals(backend))[Pillar.ARCHIVE] == 2


async def test_dlq_purge_older_in_batches_keeps_counters(backend):
    await _dead(backend, 5, now=T0)
    [young] = await _dead(backend, 1, now=at(1000))
    before = await counters(backend, now=at(1010))
    assert await backend.dlq_purge_older(older_than=at(500), batch_size=2) == 5
    assert [v.id for v in (await backend.jobs_page(pillar=Pillar.DLQ)).items] == [young]
    after = await counters(backend, now=at(1010))
    assert (after.lifetime(), after.throughput) == (before.lifetime(), before.throughput)


async def test_metrics_prune(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend, 2)
    await succeed(backend, [a], now=T0)
    await succeed(backend, [b], now=at(100))
    assert await backend.metrics_prune(older_than=at(50)) == 1
    series = await backend.stats_series(since=T0 - FAR, until=at(200))
    assert [p.bucket_start for p in series] == [at(100)]
    assert (await backend.stats_summary()).succeeded_total == 2


async def test_metrics_rollup_preserves_totals(backend):
    await enqueue(backend, 6, queue="q")
    claimed = await claim(backend, 6)
    for i, c in enumerate(claimed[:4]):
        await succeed(backend, [c], now=at(i * 10), duration=float(i + 1))
    await fail(backend, claimed[4:], now=at(70))
    before = await backend.stats_series(since=T0 - FAR, until=at(200))
    assert sum(p.succeeded for p in before) == 4 and sum(p.failed for p in before) == 2
    folded = await backend.metrics_rollup(older_than=at(120))
    assert folded == 5  # 4 success seconds and 1 failure second
    # The seconds are gone: the series (which reads every stored width) finds the minutes.
    seconds = await backend.stats_series(since=T0 - FAR, until=at(200))
    assert [(p.bucket_start, p.succeeded, p.failed) for p in seconds] == [
        (T0, 4, 0),
        (at(60), 0, 2),
    ]
    minutes = await backend.stats_series(since=T0 - FAR, until=at(200), width_seconds=60)
    assert [(p.bucket_start, p.succeeded, p.failed) for p in minutes] == [
        (T0, 4, 0),
        (at(60), 0, 2),
    ]
    assert minutes[0].total_duration_seconds == 10.0
    assert minutes[0].max_duration_seconds == 4.0
    # Rolling up twice folds nothing more and keeps the minute buckets.
    assert await backend.metrics_rollup(older_than=at(120)) == 0
    again = await backend.stats_series(since=T0 - FAR, until=at(200), width_seconds=60)
    assert again == minutes
    summary = await backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (4, 2)

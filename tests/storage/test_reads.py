"""Reads: the summary, per-queue stats and lag, rolling rates, chart series, error families,
paged listings with filters and sorting, and single-job lookups across the pillars."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conformance import T0, at, claim, enqueue, fail, succeed

from chokaq.models import FailureReason, JobFilter, JobStatus, Pillar

DAY = timedelta(days=1)


async def test_summary_counts_hot_and_lifetime(backend):
    await enqueue(backend, 5)
    await claim(backend, 1, start=False)
    processing = await claim(backend, 2, start=True)
    await succeed(backend, processing[:1], now=at(1))
    await fail(backend, processing[1:], now=at(2))
    summary = await backend.stats_summary()
    assert (summary.pending, summary.fetched, summary.processing) == (2, 1, 0)
    assert (summary.succeeded_total, summary.failed_total, summary.retried_total) == (1, 1, 0)
    assert summary.last_activity_at == at(2)


async def test_summary_of_an_empty_store(backend):
    summary = await backend.stats_summary()
    assert (summary.pending, summary.fetched, summary.processing) == (0, 0, 0)
    assert (summary.succeeded_total, summary.failed_total, summary.retried_total) == (0, 0, 0)


async def test_stats_queues_lag(backend):
    await enqueue(backend, queue="lagging", now=T0)
    await enqueue(backend, queue="lagging", now=at(20))
    await enqueue(backend, queue="lagging", now=at(20), delay_seconds=1000)  # not yet due
    await enqueue(backend, queue="idle", now=T0)
    await claim(backend, queues=["idle"])
    stats = {q.queue.name: q for q in await backend.stats_queues(now=at(40))}
    lag = stats["lagging"]
    assert (lag.pending, lag.lag_count) == (3, 2)
    assert lag.lag_max_seconds == pytest.approx(40)
    assert lag.lag_avg_seconds == pytest.approx(30)
    idle = stats["idle"]
    assert (idle.pending, idle.processing, idle.lag_count) == (0, 1, 0)
    assert (idle.lag_avg_seconds, idle.lag_max_seconds) == (0, 0)
    assert "default" in stats  # every queue row, even unused ones
    # Lag of a delayed job counts from when it became due.
    later = {q.queue.name: q for q in await backend.stats_queues(now=at(1030))}["lagging"]
    assert later.lag_count == 3
    assert later.lag_max_seconds == pytest.approx(1030)


async def test_throughput_windows(backend):
    await enqueue(backend, 6)
    claimed = await claim(backend, 6)
    await succeed(backend, claimed[:2], now=T0)
    await fail(backend, claimed[2:3], now=T0)
    await succeed(backend, claimed[3:5], now=at(200))
    await fail(backend, claimed[5:], now=at(250))
    now = await backend.stats_throughput(now=at(270))
    assert (now.processed_1m, now.failed_1m) == (1, 1)  # only the failure at +250
    assert (now.processed_5m, now.failed_5m) == (6, 2)
    assert now.failure_rate_1m == 100.0
    later = await backend.stats_throughput(now=at(400))
    assert (later.processed_1m, later.processed_5m, later.failed_5m) == (0, 3, 1)
    empty = await backend.stats_throughput(now=at(10_000))
    assert (empty.processed_5m, empty.failure_rate_5m) == (0, 0.0)


async def test_stats_series_points_and_queue_filter(backend):
    await enqueue(backend, 2, queue="a")
    await enqueue(backend, 1, queue="b")
    claimed = {c.queue: c for c in await claim(backend, 1, queues=["b"])}
    a_jobs = await claim(backend, 2, queues=["a"])
    await succeed(backend, a_jobs, now=at(5), duration=2.0)
    await fail(backend, [claimed["b"]], now=at(7))
    series = await backend.stats_series(since=T0, until=at(60))
    assert [(p.bucket_start, p.succeeded, p.failed) for p in series] == [
        (at(5), 2, 0),
        (at(7), 0, 1),
    ]
    assert series[0].total_duration_seconds == 4.0 and series[0].max_duration_seconds == 2.0
    only_b = await backend.stats_series(since=T0, until=at(60), queue="b")
    assert [(p.bucket_start, p.failed) for p in only_b] == [(at(7), 1)]
    assert await backend.stats_series(since=at(6), until=at(6.5)) == []


async def test_stats_series_sums_into_wider_buckets_and_reads_minute_rollups(backend):
    await enqueue(backend, 5)
    jobs = await claim(backend, 5)
    await succeed(backend, jobs[:2], now=at(61), duration=1.0)
    await fail(backend, jobs[2:3], now=at(64))
    await succeed(backend, jobs[3:], now=at(125), duration=3.0)
    wide = await backend.stats_series(since=T0, width_seconds=5)
    # Chart buckets are aligned to the epoch (T0 is on a minute): +61 and +64 share one.
    assert [(p.bucket_start, p.succeeded, p.failed) for p in wide] == [
        (at(60), 2, 1),
        (at(125), 2, 0),
    ]
    assert (wide[0].duration_count, wide[0].total_duration_seconds) == (2, 2.0)
    assert (wide[1].duration_count, wide[1].max_duration_seconds) == (2, 3.0)
    # Upkeep folds the first minute's seconds into a minute bucket: the series still counts
    # them (on the minute's start) beside the seconds not rolled up yet.
    assert await backend.metrics_rollup(older_than=at(120)) >= 2
    mixed = await backend.stats_series(since=T0, width_seconds=1)
    assert [(p.bucket_start, p.succeeded, p.failed) for p in mixed] == [
        (at(60), 2, 1),
        (at(125), 2, 0),
    ]
    hour = await backend.stats_series(since=T0, width_seconds=3600)
    assert [(p.bucket_start, p.succeeded, p.failed, p.duration_count) for p in hour] == [
        (T0, 4, 1, 4)
    ]


async def test_failures_with_different_reasons_in_one_second_are_one_point(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend, 2)
    await fail(backend, [a], now=at(3), reason=FailureReason.TIMEOUT)
    await fail(backend, [b], now=at(3), reason=FailureReason.FATAL_ERROR)
    [point] = await backend.stats_series(since=T0, until=at(60))
    assert (point.bucket_start, point.failed) == (at(3), 2)


async def test_dlq_top_errors_groups_families(backend):
    await enqueue(backend, 6)
    claimed = await claim(backend, 6)
    long_a = "ConnectionError: " + "x" * 200 + " tail one"
    long_b = "ConnectionError: " + "x" * 200 + " tail two"
    await fail(backend, claimed[:2], error=long_a, now=at(1))
    await fail(backend, claimed[2:3], error=long_b, now=at(2))
    await fail(backend, claimed[3:4], error="KeyError:   'id'", now=at(3))
    await fail(backend, claimed[4:5], error="KeyError: 'sku'\nTraceback ...", now=at(4))
    await fail(backend, claimed[5:], error="KeyError: 'id'", reason=FailureReason.FATAL_ERROR)
    groups = await backend.dlq_top_errors(limit=5)
    top = groups[0]
    assert (top.failure_reason, top.count, top.latest_at) == (FailureReason.TRANSIENT, 3, at(2))
    assert top.family == long_a[:160]
    second = groups[1]
    assert (second.count, second.family, second.latest_at) == (2, "KeyError: <str>", at(4))
    assert len(groups) == 3 and groups[2].failure_reason == FailureReason.FATAL_ERROR
    assert len(await backend.dlq_top_errors(limit=1)) == 1


FAMILY_ERRORS = [
    ("card 4242 declined", "card <n> declined"),
    ("card 1111 declined", "card <n> declined"),
    ("  card 99 declined\n  File 'x.py', line 3", "card <n> declined"),
    ("job 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 lost", "job <id> lost"),
    ("job 0190F1C2-7D4E-7C3A-9A51-3F8E2B1D9C00 lost", "job <id> lost"),
    ("object 507f1f77bcf86cd799439011 at 0xDEADbeef", "object <id> at <id>"),
    ("object 6f1e2d3c4b5a69788796a5b4 at 0x1f", "object <id> at <id>"),
    ("can't reach \"db-1\" for 'alice'", "can't reach <str> for <str>"),
    ("can't reach 'db-2' for \"bob\"", "can't reach <str> for <str>"),
    ("took 1.5s after   3 tries", "took <n>s after <n> tries"),
    ("Error404 from v2", "Error404 from v2"),
    ("", "(empty error details)"),
]


async def test_error_families_fold_numbers_ids_and_quoted_values(backend):
    await enqueue(backend, len(FAMILY_ERRORS))
    claimed = await claim(backend, len(FAMILY_ERRORS))
    for i, (job, (error, _)) in enumerate(zip(claimed, FAMILY_ERRORS, strict=True)):
        await fail(backend, [job], error=error, now=at(i))
    groups = {g.family: g.count for g in await backend.dlq_top_errors(limit=50)}
    expected: dict[str, int] = {}
    for _, family in FAMILY_ERRORS:
        expected[family] = expected.get(family, 0) + 1
    assert groups == expected


async def test_the_dlq_filters_on_an_error_family(backend):
    ids = await enqueue(backend, 4)
    by_id = {c.id: c for c in await claim(backend, 4)}
    await fail(backend, [by_id[ids[0]]], error="card 4242 declined", now=at(1))
    await fail(backend, [by_id[ids[1]]], error="card 1111 declined", now=at(2))
    await fail(backend, [by_id[ids[2]]], error="card declined", now=at(3))
    await fail(backend, [by_id[ids[3]]], error="card 7 declined for 'bob'", now=at(4))
    [family] = [g for g in await backend.dlq_top_errors() if g.count == 2]
    page = await backend.jobs_page(
        pillar=Pillar.DLQ, filter=JobFilter(error_family=family.family), page_size=50
    )
    assert {job.id for job in page.items} == set(ids[:2]) and page.total == 2
    preview = await backend.dlq_preview(filter=JobFilter(error_family=family.family), cap=10)
    assert preview.matched == 2
    nothing = JobFilter(error_family="card <n> declined for <n>")
    assert (await backend.jobs_page(pillar=Pillar.DLQ, filter=nothing)).total == 0


async def test_jobs_page_filters(backend):
    mail = await enqueue(backend, 3, queue="mail", type="email.send", tags=("vip",), now=T0)
    pdf = await enqueue(backend, 2, queue="pdf", type="pdf.render", now=T0 + DAY)
    await claim(backend, 1, start=False, queues=["pdf"], now=T0 + DAY)

    async def hot(**kw):
        page = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(**kw))
        return page.total, {v.id for v in page.items}

    assert await hot() == (5, set(mail) | set(pdf))
    assert await hot(queue="mail") == (3, set(mail))
    assert await hot(type="pdf.render") == (2, set(pdf))
    assert (await hot(status=JobStatus.FETCHED))[0] == 1
    assert (await hot(status=JobStatus.PENDING))[0] == 4
    assert await hot(since=T0 + DAY / 2) == (2, set(pdf))
    assert await hot(until=T0) == (3, set(mail))  # inclusive
    assert await hot(since=T0, until=T0 + DAY) == (5, set(mail) | set(pdf))
    assert await hot(search="vip") == (3, set(mail))
    assert await hot(search="render") == (2, set(pdf))
    assert await hot(search=mail[0]) == (1, {mail[0]})
    assert await hot(ids=(mail[0], pdf[1])) == (2, {mail[0], pdf[1]})
    listing = await backend.jobs_page(pillar=Pillar.HOT)
    assert all(v.payload is None for v in listing.items)  # hot listings carry no payload


async def test_jobs_page_search_is_literal(backend):
    [percent] = await enqueue(backend, type="rate.100%")
    [underscore] = await enqueue(backend, type="snake_case")
    await enqueue(backend, type="rate.100x")
    await enqueue(backend, type="snakeXcase")

    async def found(term):
        page = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(search=term))
        return {v.id for v in page.items}

    assert await found("100%") == {percent}
    assert await found("e_c") == {underscore}
    assert await found("%") == {percent}
    assert await found("_") == {underscore}
    assert await found("\\") == set()


async def test_search_finds_an_id_by_its_end_in_every_pillar(backend):
    """A whole id or its tail (what The Deck shows) matches, in any case; a piece from the
    middle of an id does not (the archive finds ids by their end off a b-tree: migration 9)."""
    await enqueue(backend, 4)
    done, dead, _ = await claim(backend, 3)
    await succeed(backend, [done])
    await fail(backend, [dead], error="boom", reason=FailureReason.FATAL_ERROR)
    [pending] = [
        v.id
        for v in (await backend.jobs_page(pillar=Pillar.HOT)).items
        if v.status is JobStatus.PENDING
    ]

    async def found(pillar, term):
        page = await backend.jobs_page(pillar=pillar, filter=JobFilter(search=term))
        return [v.id for v in page.items]

    for pillar, job_id in ((Pillar.ARCHIVE, done.id), (Pillar.DLQ, dead.id), (Pillar.HOT, pending)):
        assert await found(pillar, job_id) == [job_id]
        assert await found(pillar, job_id[-12:].upper()) == [job_id]
        assert await found(pillar, job_id[-5:]) == [job_id]
        assert await found(pillar, job_id[9:18]) == []
        assert await found(pillar, job_id[:-1]) == []


async def test_jobs_page_searches_error_text_in_the_dlq(backend):
    await enqueue(backend, 2)
    a, b = await claim(backend, 2)
    await fail(backend, [a], error="disk 100% full", reason=FailureReason.FATAL_ERROR)
    await fail(backend, [b], error="network down", reason=FailureReason.TIMEOUT)

    async def dlq(**kw):
        page = await backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(**kw))
        return [v.id for v in page.items]

    assert await dlq(search="100% full") == [a.id]
    assert await dlq(failure_reason=FailureReason.TIMEOUT) == [b.id]
    assert await dlq(since=at(1)) == []
    assert len(await dlq(until=T0)) == 2


async def test_jobs_page_sorting_and_paging(backend):
    ids = []
    for i in range(7):
        ids += await enqueue(backend, priority=i, now=at(i))
    page1 = await backend.jobs_page(pillar=Pillar.HOT, sort="date", page_size=3)
    assert (page1.total, page1.page, page1.pages) == (7, 1, 3)
    assert [v.id for v in page1.items] == ids[::-1][:3]
    page3 = await backend.jobs_page(pillar=Pillar.HOT, sort="date", page_size=3, page=3)
    assert [v.id for v in page3.items] == [ids[0]]
    ascending = await backend.jobs_page(pillar=Pillar.HOT, sort="priority", descending=False)
    assert [v.priority for v in ascending.items] == list(range(7))
    beyond = await backend.jobs_page(pillar=Pillar.HOT, page=9, page_size=3)
    assert (beyond.items, beyond.total) == ((), 7)
    for sort in ("date", "id", "queue", "type", "priority", "attempts", "created", "worker"):
        page = await backend.jobs_page(pillar=Pillar.HOT, sort=sort)
        assert page.total == 7
    for pillar, sort in ((Pillar.ARCHIVE, "duration"), (Pillar.DLQ, "reason")):
        for name in ("date", "id", sort):
            assert (await backend.jobs_page(pillar=pillar, sort=name)).total == 0


async def test_jobs_page_puts_jobs_without_a_value_last_when_sorting_down(backend):
    # worker_id is one of the sort columns that may be NULL (pending jobs have no worker).
    await enqueue(backend, 4)
    await claim(backend, 1, worker="w1")
    await claim(backend, 1, worker="w2")
    page = await backend.jobs_page(pillar=Pillar.HOT, sort="worker")
    assert [v.worker_id for v in page.items] == ["w2", "w1", None, None]


async def test_jobs_page_archive_listing(backend):
    await enqueue(backend, 3, queue="a")
    claimed = await claim(backend, 3)
    for i, c in enumerate(claimed):
        await succeed(backend, [c], now=at(i), duration=float(10 - i))
    page = await backend.jobs_page(pillar=Pillar.ARCHIVE, sort="duration", descending=False)
    assert [v.duration_seconds for v in page.items] == [8.0, 9.0, 10.0]
    assert all(v.pillar == Pillar.ARCHIVE and v.finished_at is not None for v in page.items)
    assert (
        await backend.jobs_page(pillar=Pillar.ARCHIVE, filter=JobFilter(since=at(1)))
    ).total == 2


async def test_job_get_finds_each_pillar(backend):
    hot, done, dead = await enqueue(backend, 3)
    claimed = {c.id: c for c in await claim(backend, 3)}
    await succeed(backend, [claimed[done]])
    await fail(backend, [claimed[dead]])
    assert (await backend.job_get(hot)).pillar == Pillar.HOT
    assert (await backend.job_get(done)).pillar == Pillar.ARCHIVE
    assert (await backend.job_get(dead)).pillar == Pillar.DLQ
    assert (await backend.job_get(done)).payload == "{}"
    assert await backend.job_get("01900000-0000-7000-8000-000000000000") is None


async def test_pending_groups_split_due_waiting_later_and_no_handler(backend):
    from chokaq.models import NO_HANDLER_ERROR, RetryMove

    await enqueue(backend, 2, queue="mail", type="send", now=T0)  # due
    await enqueue(backend, 1, queue="mail", type="send", now=T0, delay_seconds=600)  # later
    await enqueue(backend, 1, queue="mail", type="new.kind", now=T0)
    await enqueue(backend, 1, queue="other", type="send", now=T0)
    [retry] = await claim(backend, 1, queues=["mail"], now=at(1))
    [unknown] = await claim(backend, 5, queues=["mail"], exclude_types=["send"], now=at(1))
    assert unknown.type == "new.kind"
    await backend.jobs_finalize(
        moves=[
            RetryMove(retry.lease, "boom", run_at=at(100)),
            RetryMove(
                unknown.lease,
                f"{NO_HANDLER_ERROR} since x: no handler",
                delay_seconds=30,
                refund_attempt=True,
                count_retry=False,
            ),
        ],
        now=at(2),
    )
    groups = await backend.jobs_pending_groups(queues=["mail"], now=at(3))
    assert [(g.queue, g.type) for g in groups] == [("mail", "new.kind"), ("mail", "send")]
    kind, send = groups
    assert (kind.due, kind.waiting, kind.later, kind.no_handler) == (0, 1, 0, 1)
    assert kind.next_due_at == at(32)
    assert (send.due, send.waiting, send.later, send.no_handler) == (1, 1, 1, 0)
    assert send.next_due_at == at(100) and send.pending == 3
    every = await backend.jobs_pending_groups(now=at(3))
    assert ("other", "send") in [(g.queue, g.type) for g in every]
    assert await backend.jobs_pending_groups(queues=[], now=at(3)) == []

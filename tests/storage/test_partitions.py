"""Partitions on PostgreSQL: a job's partition is stored at enqueue, comes back with its claim,
is kept by every move between the pillars (and back to hot), shows in each pillar's view, and
filters each pillar's listing by exact match. Partition values are checked before anything is
written, in a job and in a filter.

PostgreSQL only for now: the SQLite driver's partitions are plumbed separately. The claims here
go through the plain fetch (no rate limit or partition walk), which still claims partitioned
jobs.
"""

from __future__ import annotations

import pytest
from conformance import T0, at, claim, enqueue, fail, job, succeed

from chokaq.errors import ValidationError
from chokaq.ids import new_job_ids
from chokaq.models import FailureReason, JobFilter, NewJob, Pillar
from chokaq.storage import Backend

P = "account:42"


@pytest.fixture
def store(pg_store):
    """The PostgreSQL driver's store only (see the module docstring)."""
    return pg_store


async def test_a_partitioned_job_is_claimed_with_its_partition(backend: Backend) -> None:
    # A first enqueue ensures its queue (jobs_enqueue); later ones into the known queue take
    # the keyed (jobs_enqueue_known) and the plain (jobs_enqueue_plain) statements.
    ensured = [r.id for r in await backend.jobs_enqueue([job(partition=P), job()], now=T0)]
    keyed = await backend.jobs_enqueue(
        [job(partition="account:7", idempotency_key="k1"), job(idempotency_key="k2")], now=T0
    )
    plain = await backend.jobs_enqueue([job(partition=P), job(partition=None)], now=T0)
    claimed = {c.id: c.partition for c in await claim(backend, 10)}
    assert claimed == {
        ensured[0]: P,
        ensured[1]: None,
        keyed[0].id: "account:7",
        keyed[1].id: None,
        plain[0].id: P,
        plain[1].id: None,
    }


async def test_a_job_with_parents_keeps_its_partition(backend: Backend) -> None:
    parent, child = new_job_ids(2)
    await backend.jobs_enqueue(
        [
            NewJob(type="t", id=parent, partition="account:1"),
            NewJob(type="t", id=child, after=(parent,), partition=P),
        ],
        now=T0,
    )
    [first] = await claim(backend, 10, now=at(1))
    assert (first.id, first.partition) == (parent, "account:1")
    await succeed(backend, [first], now=at(1))
    [second] = await claim(backend, 10, now=at(2))
    assert (second.id, second.partition, second.has_parents) == (child, P, True)


async def test_each_pillar_shows_the_partition_in_its_views(backend: Backend) -> None:
    hot, done, dead = await enqueue(backend, 3, partition=P)
    [plain] = await enqueue(backend)
    claimed = {c.id: c for c in await claim(backend, 10)}
    await succeed(backend, [claimed[done]], now=at(1))
    await fail(backend, [claimed[dead]], now=at(2))
    # The single-job views (hot_get, archive_get, dlq_get).
    for job_id, pillar in ((hot, Pillar.HOT), (done, Pillar.ARCHIVE), (dead, Pillar.DLQ)):
        view = await backend.job_get(job_id)
        assert view is not None and (view.pillar, view.partition) == (pillar, P)
    view = await backend.job_get(plain)
    assert view is not None and (view.pillar, view.partition) == (Pillar.HOT, None)
    # The listings (hot_page, archive_page, dlq_page).
    listed = {
        pillar: {(v.id, v.partition) for v in (await backend.jobs_page(pillar=pillar)).items}
        for pillar in Pillar
    }
    assert listed == {
        Pillar.HOT: {(hot, P), (plain, None)},
        Pillar.ARCHIVE: {(done, P)},
        Pillar.DLQ: {(dead, P)},
    }


async def test_the_partition_filters_each_pillar_by_exact_match(backend: Backend) -> None:
    values = ("a", "b", None)
    ids: dict[str | None, list[str]] = {}
    for value in values:
        ids[value] = await enqueue(backend, 3, partition=value)
    claimed = {c.id: c for c in await claim(backend, 100)}
    where: dict[Pillar, dict[str | None, str]] = {pillar: {} for pillar in Pillar}
    for value in values:
        kept, archived, failed = ids[value]
        await succeed(backend, [claimed[archived]], now=at(1))
        await fail(backend, [claimed[failed]], now=at(2))
        where[Pillar.HOT][value] = kept
        where[Pillar.ARCHIVE][value] = archived
        where[Pillar.DLQ][value] = failed
    for pillar in Pillar:
        for value in ("a", "b"):
            page = await backend.jobs_page(pillar=pillar, filter=JobFilter(partition=value))
            assert page.total == 1, (pillar, value)
            assert [(v.id, v.partition) for v in page.items] == [(where[pillar][value], value)]
        # Exact match: no prefix, no case folding; no partition filter lists them all.
        for other in ("A", "a%", "account"):
            page = await backend.jobs_page(pillar=pillar, filter=JobFilter(partition=other))
            assert page.total == 0 and page.items == (), (pillar, other)
        assert (await backend.jobs_page(pillar=pillar)).total == 3
        page = await backend.jobs_page(pillar=pillar, filter=JobFilter(partition="a", type="x"))
        assert page.total == 0
    # The DLQ's bulk actions by filter read the same filter.
    preview = await backend.dlq_preview(filter=JobFilter(partition="b"), cap=10)
    assert (preview.matched, preview.sample_ids) == (1, (where[Pillar.DLQ]["b"],))


async def test_every_move_out_of_hot_and_back_keeps_the_partition(backend: Backend) -> None:
    # A zombie: rescued to the DLQ.
    [zombie] = await enqueue(backend, queue="z", partition=P)
    await claim(backend, 1, queues=["z"], now=T0)
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=300, now=at(600)
    )
    assert rescued.zombies == (zombie,)
    # A cancelled pending job.
    [cancelled] = await enqueue(backend, queue="c", partition="account:9", now=at(600))
    assert (await backend.jobs_cancel(ids=[cancelled], actor="ops", now=at(601))).cancelled == (
        cancelled,
    )
    # A child failed with its workflow (blocked on a parent in the DLQ, then cancelled), and
    # one whose dead parent was purged.
    parent, blocked, orphan_parent, orphan = new_job_ids(4)
    await backend.jobs_enqueue(
        [
            NewJob(type="t", queue="w", id=parent),
            NewJob(type="t", queue="w", id=blocked, after=(parent,), partition="account:5"),
            NewJob(type="t", queue="o", id=orphan_parent),
            NewJob(type="t", queue="o", id=orphan, after=(orphan_parent,), partition="x"),
        ],
        now=at(602),
    )
    for queue in ("w", "o"):
        [running] = await claim(backend, 10, queues=[queue], now=at(603))
        await fail(backend, [running], now=at(603))
    related = await backend.job_get_related(id=blocked)
    assert related is not None and related.workflow_id is not None
    result = await backend.workflow_cancel(id=related.workflow_id, actor="ops", now=at(604))
    assert blocked in result.cancelled
    assert await backend.dlq_purge(ids=[orphan_parent], actor="ops") == [orphan_parent]

    expected = {
        zombie: (P, FailureReason.ZOMBIE),
        cancelled: ("account:9", FailureReason.CANCELLED),
        blocked: ("account:5", FailureReason.DEPENDENCY_FAILED),
        orphan: ("x", FailureReason.DEPENDENCY_FAILED),
    }
    for job_id, (partition, reason) in expected.items():
        view = await backend.job_get(job_id)
        assert view is not None
        assert (view.pillar, view.partition, view.failure_reason) == (Pillar.DLQ, partition, reason)

    # Back to hot: a resurrected job keeps its partition, and is claimed with it.
    assert await backend.dlq_resurrect(ids=[zombie, cancelled], actor="ops", now=at(700)) == [
        zombie,
        cancelled,
    ]
    again = {c.id: c.partition for c in await claim(backend, 10, queues=["z", "c"], now=at(701))}
    assert again == {zombie: P, cancelled: "account:9"}


@pytest.mark.parametrize(
    ("partition", "limit"),
    [("", "must not be empty"), ("p" * 300, "at most 255 characters"), (42, "must be text")],
)
async def test_a_bad_partition_is_refused_before_anything_is_written(
    backend: Backend, partition: object, limit: str
) -> None:
    with pytest.raises(ValidationError, match=limit) as refused:
        await backend.jobs_enqueue([job(partition=partition)], now=T0)
    assert refused.value.field == "partition"
    with pytest.raises(ValidationError, match=limit) as refused:
        await backend.jobs_enqueue([job(), job(partition=partition)], now=T0)
    assert refused.value.field == "jobs[1].partition"
    bad_filter = JobFilter(partition=partition)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=limit) as refused:
        await backend.jobs_page(pillar=Pillar.DLQ, filter=bad_filter)
    assert refused.value.field == "filter.partition"
    assert (await backend.jobs_page(pillar=Pillar.HOT)).total == 0
    # The longest allowed partition is stored whole.
    [stored] = await enqueue(backend, partition="p" * 255)
    view = await backend.job_get(stored)
    assert view is not None and view.partition == "p" * 255

"""Enqueue: what a new job looks like in hot, bulk order, queue creation and idempotency keys."""

from __future__ import annotations

import asyncio

import pytest
from conformance import T0, at, claim, enqueue, fail, job, succeed

from chokaq.errors import StorageError, ValidationError
from chokaq.ids import is_job_id, new_job_id, new_job_ids
from chokaq.limits import JsonText
from chokaq.models import JobStatus, Pillar


async def test_enqueue_stores_every_field(backend):
    jid = new_job_id()
    [result] = await backend.jobs_enqueue(
        [
            job(
                "report.build",
                id=jid,
                payload='{"n": 1}',
                queue="reports",
                priority=42,
                tags=("a", " b ", "a"),
                idempotency_key="key 1",
                created_by="alice",
                max_attempts=7,
                timeout_seconds=12.5,
                trace_context="00-abc-def-01",
            )
        ],
        now=T0,
    )
    assert result.id == jid
    assert result.duplicate is False
    view = await backend.job_get(jid)
    assert view.pillar == Pillar.HOT
    assert view.status == JobStatus.PENDING
    assert (view.queue, view.type, view.payload) == ("reports", "report.build", '{"n": 1}')
    assert view.tags == ("a", "b")  # trimmed and de-duplicated
    assert view.idempotency_key == "key 1"  # kept as given
    assert (view.priority, view.max_attempts, view.timeout_seconds) == (42, 7, 12.5)
    assert view.created_by == "alice"
    assert view.created_at == T0
    assert view.attempt_count == 0
    assert view.scheduled_at == T0  # due at once: the due time is always stored
    assert view.worker_id is None


async def test_enqueue_generates_uuid_ids_in_input_order(backend):
    jobs = [job(payload=f'{{"i": {i}}}') for i in range(50)]
    results = await backend.jobs_enqueue(jobs, now=T0)
    assert len(results) == 50
    assert all(is_job_id(r.id) and not r.duplicate for r in results)
    assert len({r.id for r in results}) == 50
    for i, r in enumerate(results[:5]):
        assert (await backend.job_get(r.id)).payload == f'{{"i": {i}}}'
    assert (await backend.stats_summary()).pending == 50


async def test_options_set_on_some_jobs_of_a_batch_stay_with_those_jobs(backend):
    # Columns no job sets travel as NULL; columns some jobs set must line up with those jobs.
    results = await backend.jobs_enqueue(
        [
            job(payload='{"i": 0}'),
            job(payload='{"i": 1}', tags=("t",), created_by="bob", max_attempts=3),
            job(payload='{"i": 2}', idempotency_key="k2", delay_seconds=30),
            job(payload='{"i": 3}', queue="other", priority=-5, timeout_seconds=9.0),
        ],
        now=T0,
    )
    views = [await backend.job_get(r.id) for r in results]
    assert [v.payload for v in views] == [f'{{"i": {i}}}' for i in range(4)]
    assert [v.tags for v in views] == [(), ("t",), (), ()]
    assert [v.created_by for v in views] == [None, "bob", None, None]
    assert [v.max_attempts for v in views] == [None, 3, None, None]
    assert [v.idempotency_key for v in views] == [None, None, "k2", None]
    assert [v.scheduled_at for v in views] == [T0, T0, at(30), T0]
    assert [(v.queue, v.priority) for v in views][3] == ("other", -5)
    assert [v.timeout_seconds for v in views] == [None, None, None, 9.0]


async def test_text_posing_as_our_own_json_is_still_checked(backend):
    # JsonText skips the JSON parse only while it shows no raw control character.
    for bad in ('{"a":"\x1f"}', '{"a":1}\x1f'):
        try:
            await backend.jobs_enqueue([job(payload=JsonText(bad))], now=T0)
        except ValidationError as exc:
            assert exc.field == "payload"
        else:
            raise AssertionError(f"{bad!r} was accepted")
    assert (await backend.stats_summary()).pending == 0


def test_ids_of_one_call_are_distinct_and_in_order():
    ids = new_job_ids(10_000)  # more than one millisecond's counter can hold
    assert len(set(ids)) == 10_000
    assert ids == sorted(ids)
    assert all(is_job_id(i) for i in ids[:100])
    assert new_job_ids(0) == []
    assert new_job_id() > ids[-1]


async def test_enqueue_of_nothing_is_a_no_op(backend):
    assert await backend.jobs_enqueue([], now=T0) == []
    assert (await backend.stats_summary()).pending == 0


async def test_enqueue_creates_the_queue_and_its_counters(backend):
    await enqueue(backend, 2, queue="fresh")
    names = [q.name for q in await backend.queue_list()]
    assert "fresh" in names
    [info] = [q for q in await backend.queue_list() if q.name == "fresh"]
    assert (info.paused, info.active, info.max_workers) == (False, True, None)
    [stats] = [q for q in await backend.stats_queues(now=T0) if q.queue.name == "fresh"]
    assert (stats.pending, stats.succeeded_total, stats.failed_total) == (2, 0, 0)


async def test_delay_and_run_at_set_scheduled_at(backend):
    [delayed] = await enqueue(backend, delay_seconds=90)
    [timed] = await enqueue(backend, run_at=at(3600))
    [zero] = await enqueue(backend, delay_seconds=0)
    assert (await backend.job_get(delayed)).scheduled_at == at(90)
    assert (await backend.job_get(timed)).scheduled_at == at(3600)
    assert (await backend.job_get(zero)).scheduled_at in (None, T0)


async def test_duplicate_key_while_in_hot_returns_the_existing_id(backend):
    [first] = await enqueue(backend, idempotency_key="k")
    [again] = await backend.jobs_enqueue([job(idempotency_key="k", payload='{"x": 2}')], now=T0)
    assert (again.id, again.duplicate) == (first, True)
    assert (await backend.job_get(first)).payload == "{}"  # the first job is not overwritten
    # Still a duplicate while it runs.
    await claim(backend)
    [running] = await backend.jobs_enqueue([job(idempotency_key="k")], now=T0)
    assert (running.id, running.duplicate) == (first, True)
    assert (await backend.stats_summary()).pending == 0


async def test_duplicate_key_inside_one_batch_first_wins(backend):
    results = await backend.jobs_enqueue(
        [job(idempotency_key="k"), job(), job(idempotency_key="k"), job(idempotency_key="K")],
        now=T0,
    )
    assert [r.duplicate for r in results] == [False, False, True, False]
    assert results[2].id == results[0].id != results[3].id  # a key is compared as given
    assert (await backend.stats_summary()).pending == 3


async def test_key_is_free_again_once_archived_or_dead_lettered(backend):
    [first] = await enqueue(backend, idempotency_key="k")
    assert await succeed(backend, await claim(backend)) == [True]
    [second] = await backend.jobs_enqueue([job(idempotency_key="k")], now=at(1))
    assert second.duplicate is False and second.id != first
    assert await fail(backend, await claim(backend, now=at(2)), now=at(2)) == [True]
    [third] = await backend.jobs_enqueue([job(idempotency_key="k")], now=at(3))
    assert third.duplicate is False and third.id not in (first, second.id)


async def test_twenty_concurrent_enqueues_of_one_key_give_one_job(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(20)]
    results = await asyncio.gather(
        *(b.jobs_enqueue([job(idempotency_key="once")], now=T0) for b in backends)
    )
    ids = {r[0].id for r in results}
    assert len(ids) == 1
    assert sum(not r[0].duplicate for r in results) == 1
    assert (await backends[0].stats_summary()).pending == 1


async def test_concurrent_bulk_enqueues_with_overlapping_keys(open_backend):
    backends = [await open_backend(pool_max_size=2) for _ in range(5)]
    batches = [[job(idempotency_key=f"k{i}") for i in range(50)] for _ in backends]
    results = await asyncio.gather(
        *(b.jobs_enqueue(batch, now=T0) for b, batch in zip(backends, batches, strict=True))
    )
    for i in range(50):
        assert len({r[i].id for r in results}) == 1
    assert (await backends[0].stats_summary()).pending == 50


async def test_a_batch_larger_than_one_statement_resolves_keys_in_every_part(backend):
    # PostgreSQL sends big batches as several statements (1,000 jobs each) in one transaction.
    [taken] = await enqueue(backend, idempotency_key="taken")
    jobs = [job(payload=f'{{"i": {i}}}') for i in range(2_500)]
    jobs[1_800] = job(idempotency_key="taken")
    jobs[2_100] = job(idempotency_key="new")
    jobs[2_400] = job(idempotency_key="new")
    results = await backend.jobs_enqueue(jobs, now=T0)
    assert (results[1_800].id, results[1_800].duplicate) == (taken, True)
    assert results[2_400].id == results[2_100].id and results[2_400].duplicate
    assert sum(r.duplicate for r in results) == 2
    assert len({r.id for r in results}) == 2_499
    assert (await backend.job_get(results[2_499].id)).payload == '{"i": 2499}'
    assert (await backend.stats_summary()).pending == 1 + 2_498


async def test_a_batch_larger_than_one_statement_is_all_or_nothing(backend):
    [existing] = await enqueue(backend)
    jobs = [job() for _ in range(2_500)]
    jobs[2_300] = job(id=existing)  # refused by the last statement, after two went through
    with pytest.raises(StorageError):
        await backend.jobs_enqueue(jobs, now=T0)
    assert (await backend.stats_summary()).pending == 1
    # The connection is usable afterwards.
    assert len(await backend.jobs_enqueue([job() for _ in range(1_500)], now=T0)) == 1_500

"""Enqueue conflicts (``on_conflict``): what an enqueue with a held idempotency key does to the
hot job holding it, on both backends: keep it, replace its payload (and due time) in place while
it is Pending, or supersede it (a new job after it, and a cancel request with cancel_running)
once it is past Pending; the outcome each enqueue reports and the queue's counters."""

from __future__ import annotations

import pytest
from conformance import T0, at, claim, job, succeed

from chokaq.errors import ValidationError
from chokaq.models import JobStatus, Pillar


def keyed(payload: str, mode: str, **fields: object) -> object:
    return job(payload=payload, idempotency_key="doc-1", on_conflict=mode, **fields)


async def queue_counts(backend, name: str = "default") -> tuple[int, int]:
    [stats] = [s for s in await backend.stats_queues(now=T0) if s.queue.name == name]
    return stats.replaced_total, stats.superseded_total


async def test_no_holder_inserts(backend):
    [result] = await backend.jobs_enqueue([keyed('{"v": 1}', "replace")], now=T0)
    assert (result.outcome, result.duplicate) == ("inserted", False)
    view = await backend.job_get(result.id)
    assert (view.payload, view.idempotency_key) == ('{"v": 1}', "doc-1")
    assert await queue_counts(backend) == (0, 0)


@pytest.mark.parametrize("mode", ["replace", "cancel_running"])
async def test_replace_gives_a_pending_holder_the_new_payload_and_due_time(backend, mode):
    [first] = await backend.jobs_enqueue([keyed('{"v": 1}', mode, delay_seconds=5)], now=T0)
    [second] = await backend.jobs_enqueue([keyed('{"v": 2}', mode, delay_seconds=5)], now=at(3))
    assert (second.outcome, second.id, second.duplicate) == ("replaced", first.id, True)
    view = await backend.job_get(first.id)
    assert view.payload == '{"v": 2}'
    assert view.scheduled_at == at(8)  # debounced: due 5 s after the last enqueue
    assert (await backend.stats_summary()).pending == 1
    assert await queue_counts(backend) == (1, 0)


async def test_replace_payload_keeps_the_due_time(backend):
    [first] = await backend.jobs_enqueue(
        [keyed('{"v": 1}', "replace_payload", delay_seconds=10)], now=T0
    )
    [second] = await backend.jobs_enqueue(
        [keyed('{"v": 2}', "replace_payload", delay_seconds=10)], now=at(4)
    )
    assert (second.outcome, second.id) == ("replaced", first.id)
    view = await backend.job_get(first.id)
    assert (view.payload, view.scheduled_at) == ('{"v": 2}', at(10))  # throttled: first's time


async def test_keep_returns_the_holder_untouched(backend):
    [first] = await backend.jobs_enqueue([keyed('{"v": 1}', "keep")], now=T0)
    [second] = await backend.jobs_enqueue([keyed('{"v": 2}', "keep")], now=at(1))
    assert (second.outcome, second.id, second.duplicate) == ("kept", first.id, True)
    assert (await backend.job_get(first.id)).payload == '{"v": 1}'


@pytest.mark.parametrize("mode", ["replace", "replace_payload"])
async def test_a_running_holder_is_superseded_not_changed(backend, mode):
    [first] = await backend.jobs_enqueue([keyed('{"v": 1}', mode)], now=T0)
    [claimed] = await claim(backend)
    [second] = await backend.jobs_enqueue([keyed('{"v": 2}', mode)], now=at(1))
    assert second.outcome == "superseded"
    assert second.id != first.id and second.duplicate is False
    running = await backend.job_get(first.id)
    assert (running.status, running.payload) == (JobStatus.PROCESSING, '{"v": 1}')
    assert running.idempotency_key is None  # given up to the new job
    assert running.cancel_requested_at is None  # replace never stops it
    new = await backend.job_get(second.id)
    assert (new.status, new.payload, new.idempotency_key) == (
        JobStatus.PENDING,
        '{"v": 2}',
        "doc-1",
    )
    assert await queue_counts(backend) == (0, 1)
    # The next enqueue with the key replaces the new Pending job, not the running one.
    [third] = await backend.jobs_enqueue([keyed('{"v": 3}', mode)], now=at(2))
    assert (third.outcome, third.id) == ("replaced", second.id)
    assert await succeed(backend, [claimed], now=at(3)) == [True]
    assert (await backend.job_get(first.id)).pillar == Pillar.ARCHIVE


async def test_cancel_running_asks_the_running_holder_to_stop(backend):
    [first] = await backend.jobs_enqueue([keyed('{"v": 1}', "cancel_running")], now=T0)
    await claim(backend)
    [second] = await backend.jobs_enqueue([keyed('{"v": 2}', "cancel_running")], now=at(1))
    assert second.outcome == "superseded"
    running = await backend.job_get(first.id)
    assert running.cancel_requested_at == at(1)
    assert running.cancelled_by == f"superseded by {second.id}"
    assert (await backend.job_get(second.id)).status == JobStatus.PENDING


async def test_the_supersession_is_recorded_both_ways(backend):
    [first] = await backend.jobs_enqueue([keyed('{"v": 1}', "cancel_running")], now=T0)
    await claim(backend)
    [second] = await backend.jobs_enqueue([keyed('{"v": 2}', "cancel_running")], now=at(1))
    old = await backend.job_supersession(id=first.id)
    assert (old.superseded_by, old.superseded_at, old.cancel_requested) == (second.id, at(1), True)
    assert old.supersedes is None
    new = await backend.job_supersession(id=second.id)
    assert (new.supersedes, new.superseded_by) == (first.id, None)
    assert (await backend.job_supersession(id=second.id.replace(second.id[-4:], "0000"))) == (
        type(new)()
    )


async def test_later_jobs_of_one_batch_act_on_earlier_ones(backend):
    results = await backend.jobs_enqueue(
        [keyed('{"v": 1}', "replace"), keyed('{"v": 2}', "replace"), job(payload="{}")],
        now=T0,
    )
    assert [r.outcome for r in results] == ["inserted", "replaced", "inserted"]
    assert results[0].id == results[1].id
    assert (await backend.job_get(results[0].id)).payload == '{"v": 2}'
    assert (await backend.stats_summary()).pending == 2


async def test_a_new_queue_is_created_by_a_conflicting_enqueue(backend):
    [result] = await backend.jobs_enqueue([keyed("{}", "replace", queue="fresh")], now=T0)
    assert result.outcome == "inserted"
    assert await queue_counts(backend, "fresh") == (0, 0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"on_conflict": "merge", "idempotency_key": "k"}, "must be one of keep, replace"),
        ({"on_conflict": "replace"}, "needs an idempotency_key"),
        (
            {"on_conflict": "replace", "idempotency_key": "k", "unique_for_seconds": 5.0},
            "cannot be combined with unique_for_seconds",
        ),
    ],
)
async def test_bad_on_conflict_is_refused_naming_the_field(backend, fields, message):
    with pytest.raises(ValidationError) as info:
        await backend.jobs_enqueue([job(**fields)], now=T0)
    assert info.value.field == "on_conflict"
    assert message in str(info.value)
    assert (await backend.stats_summary()).pending == 0

"""Batch claims on both backends (``jobs_claim_batch``, docs/batches.md): a batch waits until it
is full or its oldest job has waited, never mixes two values of the key or two queues, stays
within a bulkhead, skips paused queues, starts each job under its own lease, and is recorded
for the inspector (``job_batches``) and the type's page (``batch_sizes``)."""

from __future__ import annotations

import json

import pytest
from conformance import at

from chokaq.errors import ValidationError
from chokaq.models import JobStatus, NewJob, SucceedMove
from chokaq.storage import Backend


async def _put(
    backend: Backend, tenants: list[str], *, queue: str = "bq", start: int = 0
) -> list[str]:
    """One ``bt`` job per tenant, each enqueued a second after the one before."""
    ids = []
    for i, tenant in enumerate(tenants):
        [result] = await backend.jobs_enqueue(
            [NewJob("bt", json.dumps({"tenant": tenant}), queue=queue)], now=at(start + i)
        )
        ids.append(result.id)
    return ids


async def _claim(backend: Backend, when: float, **options: object):
    call = {"worker_id": "w1", "type": "bt", "limit": 3, "wait_seconds": 60.0, "key": "tenant"}
    return await backend.jobs_claim_batch(**{**call, **options}, now=at(when))


async def test_a_batch_waits_to_fill_then_is_claimed_whole(backend: Backend) -> None:
    ids = await _put(backend, ["a", "a"])
    waiting = await _claim(backend, 10)
    assert waiting.jobs == [] and waiting.batch_id is None
    assert waiting.retry_at == at(60)  # the oldest became due at 0, waits 60 s
    [third] = await _put(backend, ["a"], start=11)
    full = await _claim(backend, 12)
    assert [job.id for job in full.jobs] == [*ids, third]
    assert all(job.status is JobStatus.PROCESSING and job.attempt_count == 1 for job in full.jobs)
    assert len({job.lease.token for job in full.jobs}) == 3  # a lease each
    assert full.batch_id is not None


async def test_a_batch_that_waited_is_claimed_part_full(backend: Backend) -> None:
    ids = await _put(backend, ["a"])
    assert (await _claim(backend, 59)).jobs == []
    assert [job.id for job in (await _claim(backend, 60)).jobs] == ids


async def test_a_batch_never_mixes_keys_or_queues(backend: Backend) -> None:
    a1, b1, a2 = await _put(backend, ["a", "b", "a"])
    [a3] = await _put(backend, ["a"], queue="other", start=3)
    first = await _claim(backend, 100, limit=10)
    assert {job.id for job in first.jobs} == {a1, a2}  # the oldest job's tenant and queue
    second = await _claim(backend, 100, limit=10)
    assert [job.id for job in second.jobs] == [b1]
    third = await _claim(backend, 100, limit=10)
    assert [job.id for job in third.jobs] == [a3]


async def test_without_a_key_any_jobs_of_the_type_go_together(backend: Backend) -> None:
    ids = await _put(backend, ["a", "b", "c"])
    claim = await _claim(backend, 5, key=None)
    assert [job.id for job in claim.jobs] == ids


async def test_a_batch_keeps_to_its_bulkhead_and_skips_paused_queues(backend: Backend) -> None:
    await backend.queue_configure(name="bq", max_workers=2)
    ids = await _put(backend, ["a", "a", "a"])
    first = await _claim(backend, 5)  # room for 2: a full batch of 2
    assert [job.id for job in first.jobs] == ids[:2]
    assert (await _claim(backend, 500)).jobs == []  # no room left
    await backend.queue_configure(name="bq", max_workers=None)
    await backend.queue_pause(name="bq", paused=True)
    assert (await _claim(backend, 500)).jobs == []
    await backend.queue_pause(name="bq", paused=False)
    assert [job.id for job in (await _claim(backend, 500)).jobs] == ids[2:]


async def test_batches_are_recorded_for_the_inspector_and_the_type_page(backend: Backend) -> None:
    ids = await _put(backend, ["a", "a", "a"])
    claim = await _claim(backend, 5)
    [batch] = await backend.job_batches(id=ids[1])
    assert batch.batch_id == claim.batch_id
    assert sorted(batch.job_ids) == sorted(ids)
    assert (batch.type, batch.queue, batch.attempt, batch.worker_id) == ("bt", "bq", 1, "w1")
    applied = await backend.jobs_finalize(
        moves=[SucceedMove(job.lease, 0.1) for job in claim.jobs], now=at(6)
    )
    assert applied == [True] * 3
    assert len(await backend.job_batches(id=ids[0])) == 1  # kept once the job is archived
    [size] = await backend.batch_sizes(type="bt", since=at(0))
    assert (size.batch_id, size.size) == (claim.batch_id, 3)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 10_001}, "limit"),
        ({"wait_seconds": float("nan")}, "wait_seconds"),
        ({"wait_seconds": -0.5}, "wait_seconds"),
        ({"wait_seconds": 3601}, "wait_seconds"),
        ({"key": "not a name"}, "key"),
        ({"type": ""}, "type"),
        ({"queues": [""]}, "queues[0]"),
    ],
)
async def test_bad_batch_claims_are_refused_naming_the_field(
    backend: Backend, options: dict[str, object], field: str
) -> None:
    await _put(backend, ["a"])
    with pytest.raises(ValidationError) as caught:
        await _claim(backend, 100, **options)
    assert caught.value.field == field
    assert (await backend.stats_summary()).pending == 1  # nothing claimed

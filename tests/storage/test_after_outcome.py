"""Children released on any outcome (``after_outcome="any"``) and results passed as arguments
(``pass_results``) on every backend: such a child runs once every parent has finished, in the
archive or the DLQ, released by the last parent's move whatever it is (a failure, a cancel, a
zombie or an expiry), also when it is attached while that parent moves; a parent already
finished at enqueue counts; a requeue or a purge of a parent that released it leaves it alone;
the default still blocks; bad inputs are refused before anything is written.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conformance import at, claim

from chokaq.errors import ValidationError
from chokaq.ids import new_job_ids
from chokaq.models import (
    FailMove,
    FailureReason,
    JobOutcome,
    JobStatus,
    NewJob,
    Pillar,
    SucceedMove,
)
from chokaq.storage import Backend

ROUNDS = 25


def _job(job_id: str, *after: str, queue: str = "wf", **fields: Any) -> NewJob:
    return NewJob(type="t", queue=queue, id=job_id, after=after, **fields)


def _any(job_id: str, *after: str, **fields: Any) -> NewJob:
    return _job(job_id, *after, after_outcome="any", **fields)


async def _state(backend: Backend, job_id: str) -> str | None:
    view = await backend.job_get_related(id=job_id)
    return None if view is None else view.state


async def _chord(backend: Backend, outcome: str) -> tuple[str, str, str, str]:
    """Three parents and a callback after them: the first succeeds, the second fails, the
    third is still pending. Returns (ok, bad, last, callback)."""
    ok, bad, last, callback = new_job_ids(4)
    await backend.jobs_enqueue(
        [
            _job(ok),
            _job(bad),
            _job(last, queue="later"),
            _job(callback, ok, bad, last, queue="cb", after_outcome=outcome),
        ],
        now=at(0),
    )
    running = {job.id: job for job in await claim(backend, 10, queues=["wf"], now=at(1))}
    await backend.jobs_finalize(
        moves=[
            SucceedMove(running[ok].lease, 0.1, result='{"n": 1}'),
            FailMove(running[bad].lease, FailureReason.FATAL_ERROR, "boom"),
        ],
        now=at(1),
    )
    return ok, bad, last, callback


async def test_a_chord_with_a_failing_member_runs_its_callback_on_any_outcome(
    backend: Backend,
) -> None:
    ok, bad, last, callback = await _chord(backend, "any")
    # One parent is still to finish: the callback waits, and is not blocked by the failure.
    assert await _state(backend, callback) == "waiting"
    outcome = await backend.job_outcome(id=callback)
    assert outcome is not None and outcome.blocked_by is None
    [queue] = [q for q in await backend.stats_queues(now=at(2)) if q.queue.name == "cb"]
    assert (queue.waiting, queue.blocked) == (1, 0)

    [third] = await claim(backend, 10, queues=["later"], now=at(2))
    await backend.jobs_finalize(
        moves=[FailMove(third.lease, FailureReason.TRANSIENT, "late")], now=at(2)
    )
    # The last parent's move released it, in that move.
    [released] = await claim(backend, 10, queues=["cb"], now=at(3))
    assert released.id == callback and released.has_parents
    parents = await backend.job_parent_outcomes(id=callback)
    assert all(p.argument is None for p in parents)
    outcomes = {p.id: p.outcome for p in parents if p.outcome is not None}
    assert (outcomes[ok].pillar, outcomes[ok].result) == (Pillar.ARCHIVE, '{"n": 1}')
    assert (outcomes[bad].pillar, outcomes[bad].failure_reason, outcomes[bad].error) == (
        Pillar.DLQ,
        FailureReason.FATAL_ERROR,
        "boom",
    )
    assert outcomes[last].failure_reason is FailureReason.TRANSIENT
    view = await backend.job_get_related(id=callback)
    assert view is not None and view.after_outcome == "any"
    assert all(p.any_outcome for p in view.parents)


async def test_the_default_still_blocks_on_a_failed_parent(backend: Backend) -> None:
    _, bad, _, callback = await _chord(backend, "success")
    [third] = await claim(backend, 10, queues=["later"], now=at(2))
    await backend.jobs_finalize(moves=[SucceedMove(third.lease, 0.1)], now=at(2))
    assert await claim(backend, 10, queues=["cb"], now=at(3)) == []
    assert await _state(backend, callback) == "blocked"
    outcome = await backend.job_outcome(id=callback)
    assert outcome is not None and outcome.blocked_by == bad
    view = await backend.job_get_related(id=callback)
    assert view is not None and view.after_outcome == "success"


@pytest.mark.parametrize("ending", ["cancel", "zombie", "expiry"])
async def test_every_move_to_the_dlq_releases_a_child_on_any_outcome(
    backend: Backend, ending: str
) -> None:
    parent, child, plain = new_job_ids(3)
    fields = {"expires_after_seconds": 5.0} if ending == "expiry" else {}
    await backend.jobs_enqueue(
        [_job(parent, queue="p", **fields), _any(child, parent), _job(plain, parent)], now=at(0)
    )
    if ending == "cancel":
        await backend.jobs_cancel(ids=[parent], actor="ops", now=at(1))
    else:
        if ending == "zombie":
            await claim(backend, 1, queues=["p"], now=at(1))
        result = await backend.jobs_rescue(
            fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(1000)
        )
        assert parent in (result.zombies if ending == "zombie" else result.expired)
    assert (await backend.job_outcome(id=parent)).pillar is Pillar.DLQ  # type: ignore[union-attr]
    assert await _state(backend, child) == "pending"
    assert await _state(backend, plain) == "blocked"


async def test_a_parent_finished_before_the_enqueue_counts_as_finished(backend: Backend) -> None:
    good, dead, child, plain = new_job_ids(4)
    await backend.jobs_enqueue([_job(good), _job(dead)], now=at(0))
    running = {job.id: job for job in await claim(backend, 10, queues=["wf"], now=at(1))}
    await backend.jobs_finalize(
        moves=[
            SucceedMove(running[good].lease, 0.1),
            FailMove(running[dead].lease, FailureReason.FATAL_ERROR, "x"),
        ],
        now=at(1),
    )
    await backend.jobs_enqueue([_any(child, good, dead), _job(plain, good, dead)], now=at(2))
    assert await _state(backend, child) == "pending"
    assert await _state(backend, plain) == "blocked"


async def test_a_child_attached_while_its_parent_fails_is_released(backend: Backend) -> None:
    """The enqueue of a child on any outcome races its parent's move to the DLQ: whichever
    commits first, the child ends Pending, never stuck waiting (PostgreSQL finishes the release
    the move's snapshot missed right after the finalize)."""
    for _ in range(ROUNDS):
        parent, child = new_job_ids(2)
        await backend.jobs_enqueue([_job(parent, queue="p")], now=at(0))
        [running] = await claim(backend, 1, queues=["p"])
        await asyncio.gather(
            backend.jobs_finalize(moves=[FailMove(running.lease, FailureReason.FATAL_ERROR, "x")]),
            backend.jobs_enqueue([_any(child, parent, queue="c")], now=at(0)),
        )
        assert (await backend.job_outcome(id=parent)).pillar is Pillar.DLQ  # type: ignore[union-attr]
        assert await _state(backend, child) == "pending"


async def test_requeue_or_purge_of_a_parent_that_released_its_child_leaves_the_child(
    backend: Backend,
) -> None:
    first, second, child = new_job_ids(3)
    await backend.jobs_enqueue(
        [_job(first), _job(second), _any(child, first, second, queue="c")], now=at(0)
    )
    for job in await claim(backend, 10, queues=["wf"], now=at(1)):
        move = FailMove(job.lease, FailureReason.FATAL_ERROR, "x")
        await backend.jobs_finalize(moves=[move], now=at(1))
    assert await _state(backend, child) == "pending"
    # A requeued parent runs again on its own; the child already had its release.
    assert await backend.dlq_resurrect(ids=[first], actor="ops", now=at(2)) == [first]
    assert await _state(backend, child) == "pending"
    outcomes = {p.id: p.outcome for p in await backend.job_parent_outcomes(id=child)}
    assert outcomes[first] == JobOutcome(Pillar.HOT, JobStatus.PENDING)
    # A purged parent is gone from its outcomes; the child is not failed for it.
    assert await backend.dlq_purge(ids=[second], actor="ops") == [second]
    assert await _state(backend, child) == "pending"
    outcomes = {p.id: p.outcome for p in await backend.job_parent_outcomes(id=child)}
    assert outcomes[second] is None
    [again] = await claim(backend, 10, queues=["wf"], now=at(3))
    assert again.id == first
    await backend.jobs_finalize(moves=[SucceedMove(again.lease, 0.1)], now=at(3))
    assert await _state(backend, child) == "pending"


async def test_cancelling_a_parent_with_its_child_cancels_both(backend: Backend) -> None:
    parent, child = new_job_ids(2)
    await backend.jobs_enqueue([_job(parent), _any(child, parent)], now=at(0))
    result = await backend.jobs_cancel(ids=[parent, child], actor="ops", now=at(1))
    assert set(result.cancelled) == {parent, child}
    outcome = await backend.job_outcome(id=child)
    assert outcome is not None and outcome.failure_reason is FailureReason.CANCELLED


async def test_results_are_passed_in_the_order_of_after(backend: Backend) -> None:
    a, b, c, child = new_job_ids(4)
    await backend.jobs_enqueue(
        [_job(a), _job(b), _job(c), _job(child, c, a, b, pass_results=True)], now=at(0)
    )
    parents = await backend.job_parent_outcomes(id=child)
    assert [(p.id, p.argument) for p in parents] == [(c, 0), (a, 1), (b, 2)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"after_outcome": "all"}, "jobs[1].after_outcome"),
        ({"after_outcome": "ANY"}, "jobs[1].after_outcome"),
        ({"after_outcome": None}, "jobs[1].after_outcome"),
        ({"pass_results": "yes"}, "jobs[1].pass_results"),
        ({"pass_results": True, "after": ()}, "jobs[1].pass_results"),
    ],
)
async def test_bad_outcome_options_are_refused_before_anything_is_written(
    backend: Backend, fields: dict[str, object], field: str
) -> None:
    parent, child = new_job_ids(2)
    bad = NewJob(**{"type": "t", "queue": "wf", "id": child, "after": (parent,), **fields})  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as caught:
        await backend.jobs_enqueue([_job(parent), bad], now=at(0))
    assert caught.value.field == field
    assert await backend.job_get(parent) is None
    with pytest.raises(ValidationError) as alone:
        await backend.jobs_enqueue([bad], now=at(0))
    assert alone.value.field == field.removeprefix("jobs[1].")

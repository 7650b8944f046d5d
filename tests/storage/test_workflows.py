"""Dependencies (``after=``) and results on every backend: a child waits outside the fetch path
until its last parent succeeds and is released by that parent's move, even when the child is
attached while the parent finishes or two parents finish at once; the graph is checked before
anything is written; waiters hear a job leave the hot table.
"""

from __future__ import annotations

import asyncio
import uuid

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
from chokaq.storage.graph import plan

ROUNDS = 25


def _job(job_id: str, *after: str, queue: str = "wf") -> NewJob:
    return NewJob(type="t", queue=queue, id=job_id, after=after)


async def _status(backend: Backend, job_id: str) -> tuple[Pillar, JobStatus | None] | None:
    view = await backend.job_get(job_id)
    return None if view is None else (view.pillar, view.status)


async def test_a_child_attached_while_its_parent_finishes_is_released(backend: Backend) -> None:
    """The enqueue of a child after a running parent races the parent's move to the archive:
    whichever commits first, the child ends Pending, never stuck waiting."""
    for _ in range(ROUNDS):
        parent, child = new_job_ids(2)
        await backend.jobs_enqueue([_job(parent, queue="p")], now=at(0))
        [running] = await claim(backend, 1, queues=["p"])
        await asyncio.gather(
            backend.jobs_finalize(moves=[SucceedMove(running.lease, 0.1)]),
            backend.jobs_enqueue([_job(child, parent, queue="c")], now=at(0)),
        )
        assert await _status(backend, parent) == (Pillar.ARCHIVE, None)
        assert await _status(backend, child) == (Pillar.HOT, JobStatus.PENDING)


async def test_two_parents_finishing_at_once_release_their_child(backend: Backend) -> None:
    for _ in range(ROUNDS):
        left, right, child = new_job_ids(3)
        await backend.jobs_enqueue([_job(left), _job(right), _job(child, left, right)], now=at(0))
        running = {job.id: job for job in await claim(backend, 10, queues=["wf"])}
        assert set(running) == {left, right}
        await asyncio.gather(
            backend.jobs_finalize(moves=[SucceedMove(running[left].lease, 0.1)]),
            backend.jobs_finalize(moves=[SucceedMove(running[right].lease, 0.1)]),
        )
        [released] = await claim(backend, 10, queues=["wf"])
        assert released.id == child and released.has_parents
        await backend.jobs_finalize(moves=[SucceedMove(released.lease, 0.1)])


async def test_a_child_waits_outside_the_fetch_path_until_every_parent_succeeded(
    backend: Backend,
) -> None:
    a, b, c, d = new_job_ids(4)
    await backend.jobs_enqueue([_job(a), _job(b, a), _job(c, a), _job(d, b, c)], now=at(0))
    [first] = await claim(backend, 10, queues=["wf"], now=at(1))
    assert first.id == a and not first.has_parents
    await backend.jobs_finalize(moves=[SucceedMove(first.lease, 0.1, result='"A"')], now=at(1))
    middle = {job.id: job for job in await claim(backend, 10, queues=["wf"], now=at(2))}
    assert set(middle) == {b, c}
    await backend.jobs_finalize(
        moves=[
            SucceedMove(middle[b].lease, 0.1, result="[1, 2]"),
            FailMove(middle[c].lease, FailureReason.FATAL_ERROR, "no"),
        ],
        now=at(2),
    )
    assert await claim(backend, 10, queues=["wf"], now=at(3)) == []
    view = await backend.job_get_related(id=d)
    assert view is not None and view.state == "blocked" and view.parents_left == 1
    assert {(p.id, p.state) for p in view.parents} == {(b, "succeeded"), (c, "failed")}
    [queue] = [q for q in await backend.stats_queues(now=at(3)) if q.queue.name == "wf"]
    assert (queue.waiting, queue.blocked, queue.pending) == (1, 1, 0)

    # The operator repairs and requeues the failed parent: the workflow goes on.
    assert await backend.dlq_resurrect(ids=[c], actor="ops", now=at(4)) == [c]
    [again] = await claim(backend, 10, queues=["wf"], now=at(5))
    assert again.id == c
    await backend.jobs_finalize(moves=[SucceedMove(again.lease, 0.1)], now=at(5))
    [last] = await claim(backend, 10, queues=["wf"], now=at(6))
    assert last.id == d and last.has_parents
    assert await backend.job_parent_results(id=d) == {b: ("[1, 2]", None), c: (None, None)}


async def test_purging_a_dead_parent_fails_its_waiting_children(backend: Backend) -> None:
    a, b, c = new_job_ids(3)
    await backend.jobs_enqueue([_job(a), _job(b, a), _job(c, b)], now=at(0))
    [first] = await claim(backend, 10, queues=["wf"], now=at(1))
    await backend.jobs_finalize(
        moves=[FailMove(first.lease, FailureReason.TRANSIENT, "x")], now=at(1)
    )
    assert await backend.dlq_purge(ids=[a], actor="ops") == [a]
    failed = await backend.job_outcome(id=b)
    assert failed is not None and failed.failure_reason is FailureReason.DEPENDENCY_FAILED
    assert failed.error == f"Dependency failed: parent {a} was purged from the DLQ"
    # Its own child now waits on a job in the DLQ: blocked, not failed with it.
    grandchild = await backend.job_get_related(id=c)
    assert grandchild is not None and grandchild.state == "blocked"
    for watch in (True, False):  # a waiter sees it blocked, naming the job to repair
        outcome = await backend.job_outcome(id=c, watch=watch)
        assert outcome is not None and outcome.pillar is Pillar.HOT
        assert (outcome.blocked_by, outcome.blocked_reason) == (
            b,
            FailureReason.DEPENDENCY_FAILED,
        )
        assert outcome.failure_reason is None and outcome.status is JobStatus.WAITING


async def test_a_job_waiting_behind_a_blocked_parent_names_the_job_in_the_dlq(
    backend: Backend,
) -> None:
    # a -> b -> c and a -> d: a fails, so b is blocked and c waits on b, which can never run
    # until a is repaired; d's other parent x is still pending, so d is blocked too.
    a, b, c, d, x = new_job_ids(5)
    await backend.jobs_enqueue([_job(a), _job(x), _job(b, a), _job(c, b), _job(d, a, x)], now=at(0))
    assert (await backend.job_outcome(id=c)) == JobOutcome(Pillar.HOT, JobStatus.WAITING)
    for job in await claim(backend, 10, queues=["wf"], now=at(1)):
        if job.id == a:
            move = FailMove(job.lease, FailureReason.FATAL_ERROR, "bad")
            await backend.jobs_finalize(moves=[move], now=at(1))
    for job_id in (b, c, d):
        outcome = await backend.job_outcome(id=job_id)
        assert outcome is not None and outcome.blocked_by == a, job_id
        assert outcome.blocked_reason is FailureReason.FATAL_ERROR
    # Repaired and requeued: nothing is blocked any more.
    assert await backend.dlq_resurrect(ids=[a], actor="ops", now=at(2)) == [a]
    for job_id in (b, c, d):
        outcome = await backend.job_outcome(id=job_id)
        assert outcome is not None and outcome.blocked_by is None, job_id


async def test_a_workflow_of_ten_thousand_jobs_enqueues_in_one_call(backend: Backend) -> None:
    children = new_job_ids(10_000)
    callback = new_job_ids(1)[0]
    jobs = [_job(i) for i in children] + [_job(callback, *children)]
    results = await backend.jobs_enqueue(jobs, now=at(0))
    assert len(results) == 10_001
    workflow = await backend.workflow_get(id=children[0], limit=20_000)
    assert workflow is not None and len(workflow.jobs) == 10_001
    assert workflow.jobs[-1].id == callback and workflow.jobs[-1].state == "waiting"
    for _ in range(10):
        batch = await claim(backend, 1000, queues=["wf"], now=at(1))
        assert callback not in {job.id for job in batch}
        await backend.jobs_finalize(moves=[SucceedMove(job.lease, 0.0) for job in batch], now=at(1))
    [last] = await claim(backend, 1000, queues=["wf"], now=at(2))
    assert last.id == callback


async def test_nothing_is_written_for_a_bad_graph(backend: Backend) -> None:
    a, b = new_job_ids(2)
    unknown = str(uuid.UUID(int=7))
    with pytest.raises(ValidationError) as caught:
        await backend.jobs_enqueue([_job(a), _job(b, a, unknown)])
    assert caught.value.field == "jobs[1].after" and unknown in caught.value.limit
    assert await backend.job_get(a) is None
    with pytest.raises(ValidationError, match="cycle"):
        await backend.jobs_enqueue([_job(a, b), _job(b, a)])
    assert await backend.job_get(a) is None


async def test_a_waiter_hears_its_job_leave_hot(backend: Backend) -> None:
    heard: list[str] = []
    got = asyncio.Event()

    def done(job_id: str) -> None:
        heard.append(job_id)
        got.set()

    notifier = backend.notifier()
    await notifier.start(lambda q: None, lambda j: None, done)
    try:
        jobs = [_job(new_job_ids(1)[0])]
        [job_id] = [r.id for r in await backend.jobs_enqueue(jobs, now=at(0))]
        outcome = await backend.job_outcome(id=job_id, watch=True)
        assert outcome is not None and outcome.status is JobStatus.PENDING
        [running] = await claim(backend, 1, queues=["wf"])
        await backend.jobs_finalize(moves=[SucceedMove(running.lease, 0.1, result="7")])
        await asyncio.wait_for(got.wait(), 10)
        # SQLite's signal file may also report "some waited job" (""), from this process's own
        # touch of it; the id itself always comes.
        assert job_id in heard
        final = await backend.job_outcome(id=job_id)
        assert final is not None and (final.pillar, final.result) == (Pillar.ARCHIVE, "7")
    finally:
        await notifier.stop()


def test_the_plan_orders_parents_first_and_names_workflows() -> None:
    a, b, c, d = (str(uuid.UUID(int=n)) for n in range(1, 5))
    stored = str(uuid.UUID(int=9))
    jobs, graph = plan([_job(d, b, c), _job(c, a), _job(b, a, stored), _job(a)])
    assert graph is not None and [j.id for j in jobs] == [d, c, b, a]
    order = list(graph.order)
    assert order.index(b) < order.index(d) and order.index(c) < order.index(d)
    assert graph.stored == (stored,)
    assert graph.child_counts() == {a: 2, b: 1, c: 1, stored: 1}
    assert graph.waiting({stored}) == {d: 2, c: 1, b: 1}
    assert graph.workflows({}) == {b: stored, c: stored, d: stored}  # linked through b
    # Two roots of one batch joined by a child are one workflow, named by the first of them.
    e, f, g, h = (str(uuid.UUID(int=n)) for n in range(5, 9))
    _, joined = plan([_job(e), _job(f), _job(g, e), _job(h, f, g)])
    assert joined is not None and joined.workflows({}) == {g: e, h: e}
    _, fan_in = plan([_job(e), _job(f), _job(g, f, e)])
    assert fan_in is not None and fan_in.workflows({}) == {g: e}
    _, parted = plan([_job(g, e), _job(h, f)])
    assert parted is not None and parted.workflows({e: "w", f: f}) == {g: "w", h: f}
    assert plan([_job(a)]) == ([_job(a)], None)


def test_a_job_with_after_and_no_id_gets_one() -> None:
    parent = str(uuid.UUID(int=1))
    jobs, graph = plan([NewJob(type="t", after=(parent,))])
    assert graph is not None and jobs[0].id is not None and graph.stored == (parent,)

"""Celery calls sent through ``chokaq.compat.celery`` and run by a chokaq worker, on SQLite and
PostgreSQL: canvases (the parent's value first for a ``.s()`` child), links, results and their
states, and Celery's "a raising task has failed" unless it asks for retries."""

from __future__ import annotations

from typing import Any

import pytest
from tests.compat.conftest import work

from chokaq import FailureReason, JobFailedError
from chokaq.compat.celery import AsyncResult, Celery, chain, chord, group


def tasks(celery: Celery) -> dict[str, Any]:
    @celery.task(name="add")
    def add(x: int, y: int) -> int:
        return x + y

    @celery.task(name="tsum")
    def tsum(values: list[int], offset: int = 0) -> int:
        return sum(values) + offset

    @celery.task(name="boom")
    def boom(message: str) -> None:
        raise RuntimeError(message)

    @celery.task(name="echo", bind=True)
    def echo(self: Any, *args: Any) -> dict[str, Any]:
        return {"args": list(args), "id": self.request.id}

    return {"add": add, "tsum": tsum, "boom": boom, "echo": echo}


def test_chains_pass_each_value_on_and_si_takes_none(celery: Celery) -> None:
    t = tasks(celery)
    piped = (t["add"].s(1, 2) | t["add"].s(10) | t["add"].s(100)).apply_async()
    called = chain(t["add"].s(1, 1), t["echo"].si("fixed"), t["echo"].s("own"))()
    work(celery)
    assert piped.get(timeout=10) == 113
    assert piped.parent is not None and piped.parent.get(timeout=10) == 13
    assert piped.parent.parent is not None and piped.parent.parent.get(timeout=10) == 3
    value = called.get(timeout=10)
    assert value["args"][1] == "own" and value["args"][0]["args"] == ["fixed"]
    assert value["id"] == called.id
    view = celery.job_view(piped.id)
    assert view is not None and [p.id for p in view.parents] == [piped.parent.id]


def test_groups_and_chords_give_values_in_order(celery: Celery) -> None:
    t = tasks(celery)
    together = group(t["add"].si(i, i) for i in range(4)).apply_async()
    listed = group([t["add"].s(1, 2), t["add"].s(3, 4)]).delay()
    summed = chord((t["add"].s(i, 1) for i in range(3)), t["tsum"].s(offset=100)).apply_async()
    called = chord([t["add"].s(5, 5), t["add"].s(1, 1)])(t["echo"].s())
    after_group = (group(t["add"].si(1, 1), t["add"].si(2, 2)) | t["tsum"].s()).apply_async()
    work(celery)
    assert together.get(timeout=10) == [0, 2, 4, 6] and len(together) == 4
    assert listed.get(timeout=10) == [3, 7] and listed.successful()
    assert summed.get(timeout=10) == 106
    assert called.get(timeout=10)["args"] == [[10, 2]]
    assert after_group.get(timeout=10) == 6


def test_link_runs_after_with_the_value(celery: Celery) -> None:
    t = tasks(celery)
    first = t["add"].apply_async((2, 3), link=t["echo"].s("then"))
    work(celery)
    assert first.get(timeout=10) == 5
    view = celery.job_view(first.id)
    assert view is not None and len(view.children) == 1
    linked = AsyncResult(view.children[0].id, app=celery)
    assert linked.get(timeout=10)["args"] == [5, "then"]


def test_states_and_get(celery: Celery) -> None:
    t = tasks(celery)
    assert AsyncResult("01a252e5-fa81-73cb-91e9-ef7ea237db42").state == "PENDING"
    ok = t["add"].delay(1, 2)
    failed = t["boom"].delay("bad input")
    revoked = t["add"].apply_async((0, 0), countdown=3600)
    assert ok.state == "PENDING" and not ok.ready()
    with pytest.raises(TimeoutError):
        ok.get(timeout=0.1)
    revoked.revoke()
    work(celery)
    assert (ok.state, ok.ready(), ok.successful(), ok.result) == ("SUCCESS", True, True, 3)
    assert failed.state == "FAILURE" and failed.failed() and failed.ready()
    assert "bad input" in (failed.traceback or "")
    with pytest.raises(JobFailedError) as raised:
        failed.get(timeout=10)
    # Celery's semantics: a task that raises has failed, once, unless it asks for retries.
    assert raised.value.reason is FailureReason.FATAL_ERROR
    view = celery.job_view(failed.id)
    assert view is not None and view.attempt_count == 1
    assert isinstance(failed.get(timeout=10, propagate=False), JobFailedError)
    assert isinstance(failed.result, JobFailedError)
    assert revoked.state == "REVOKED"
    with pytest.raises(Exception, match="no_ack"):
        ok.get(no_ack=True)


def test_send_task_by_name(celery: Celery) -> None:
    tasks(celery)
    known = celery.send_task("add", (20, 22))
    unknown = celery.send_task("elsewhere.task", (1,), queue="other")
    work(celery)
    assert known.get(timeout=10) == 42
    view = celery.job_view(unknown.id)
    assert view is not None and (view.type, view.queue) == ("elsewhere.task", "other")
    assert view.payload == '{"args":[1],"kwargs":{}}'


def test_link_error_runs_the_errback_when_the_task_fails(celery: Celery) -> None:
    t = tasks(celery)

    @celery.task(name="report")
    def report(request: Any, exc: Any, traceback: str, where: str) -> dict[str, Any]:
        return {"id": request.id, "type": exc.error_type, "text": traceback, "where": where}

    failed = t["boom"].apply_async(("disk full",), link_error=report.s("ops"))
    fine = t["add"].apply_async((1, 2), link_error=[report.s("ops")])
    work(celery)
    view = celery.job_view(failed.id)
    assert view is not None and len(view.children) == 1
    handled = AsyncResult(view.children[0].id, app=celery).get(timeout=10)
    assert handled["id"] == failed.id and handled["where"] == "ops"
    assert handled["type"] == "builtins.RuntimeError" and "disk full" in handled["text"]
    assert fine.get(timeout=10) == 3
    spared = celery.job_view(fine.id)
    assert spared is not None and len(spared.children) == 1
    # The errback of a task that succeeded finishes without calling the function.
    assert AsyncResult(spared.children[0].id, app=celery).get(timeout=10) is None

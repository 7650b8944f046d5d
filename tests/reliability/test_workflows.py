"""Workflows across worker processes, on both backends.

Two ``chokaq worker`` processes of ``tests/apps/workflows.py`` run the diamond
``a -> (b, c) -> d``: ``d`` sees both results and ``result(d)`` is its value; a failing ``b``
keeps ``d`` blocked until ``b`` is repaired and requeued; purging ``b`` sends ``d`` to the DLQ as
DEPENDENCY_FAILED. A SIGKILL of the process running a parent leaves the parent to rescue (a
zombie, in the DLQ: never retried by itself, its side effects unknown); requeued, it succeeds
and its child runs exactly once after it. Executions are counted from the marker files each
one appends to.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import Proc
from tests.runtime.conftest import until

from chokaq import App, FailureReason, JobFailedError
from chokaq.models import Pillar

APP = "tests.apps.workflows:app"


@pytest.fixture
async def client(store: Any) -> AsyncIterator[App]:
    from tests.apps import workflows

    app = App(store.url, schema=store.schema, auto_migrate=True)
    app.handlers = workflows.app.handlers  # the same handles, to prepare jobs with
    await app.open()
    await app.backend.migrate()
    yield app
    await app.close()


def runs(tmp_path: Path, job_id: str) -> list[str]:
    path = tmp_path / f"runs-{job_id}"
    return path.read_text().split() if path.exists() else []


def diamond(app: App, *, fail_b: bool = False) -> tuple[Any, Any, Any, Any]:
    from tests.apps.workflows import fetch, parse, report

    a = fetch.prepare(url="https://example.com/data")
    b = parse.prepare(part="b", fail=fail_b, after=[a])
    c = parse.prepare(part="c", after=[a])
    d = report.prepare(after=[b, c])
    return a, b, c, d


async def test_the_diamond_runs_on_two_processes(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    a, b, c, d = diamond(client)
    await client.enqueue_many([a, b, c, d])
    spawn(app=APP)
    spawn(app=APP)
    value = await client.result(d.id, timeout=60)
    assert value == {"parts": ["b", "c"], "parents": sorted([b.id, c.id])}
    assert await client.result(b.id, timeout=5) == {"part": "b", "size": 24}
    for job in (a, b, c, d):
        assert len(runs(tmp_path, job.id)) == 1


async def test_a_failed_parent_blocks_until_repaired_and_purging_it_fails_the_child(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    a, b, c, d = diamond(client, fail_b=True)
    await client.enqueue_many([a, b, c, d])
    spawn(app=APP)
    spawn(app=APP)
    with pytest.raises(JobFailedError) as failed:
        await client.result(b.id, timeout=60)
    assert failed.value.reason is FailureReason.FATAL_ERROR
    assert await client.result(c.id, timeout=60) == {"part": "c", "size": 24}
    view = await client.get_job(d.id)
    assert view is not None and view.state == "blocked"
    assert {p.id: p.state for p in view.parents} == {b.id: "failed", c.id: "succeeded"}

    # Repaired and requeued, b runs again and d goes on.
    repaired = await client.backend.dlq_resurrect(
        ids=[b.id], actor="ops", payload='{"part": "b", "fail": false}'
    )
    assert repaired == [b.id]
    assert (await client.result(d.id, timeout=60))["parts"] == ["b", "c"]
    assert len(runs(tmp_path, b.id)) == 2 and len(runs(tmp_path, d.id)) == 1

    # The same shape again, but b is purged instead: d fails, naming it.
    a, b, c, d = diamond(client, fail_b=True)
    await client.enqueue_many([a, b, c, d])
    with pytest.raises(JobFailedError):
        await client.result(b.id, timeout=60)
    await client.result(c.id, timeout=60)
    assert await client.backend.dlq_purge(ids=[b.id], actor="ops") == [b.id]
    with pytest.raises(JobFailedError) as orphaned:
        await client.result(d.id, timeout=10)
    assert orphaned.value.reason is FailureReason.DEPENDENCY_FAILED
    assert b.id in (orphaned.value.error or "")
    assert runs(tmp_path, d.id) == []


async def test_a_killed_parent_is_rescued_and_its_child_runs_once_after_it(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    from tests.apps.workflows import hold, report

    parent = hold.prepare(tag="p")
    child = report.prepare(after=[parent])
    await client.enqueue_many([parent, child])
    victim = spawn(app=APP)

    async def started() -> bool:
        return (tmp_path / "started-p").exists()

    await until(started, timeout=30)
    survivor = spawn(app=APP)
    os.kill(victim.pid, signal.SIGKILL)
    victim.popen.wait(timeout=10)

    # The survivor's rescue finds the zombie; it is not retried by itself.
    with pytest.raises(JobFailedError) as zombie:
        await client.result(parent.id, timeout=60)
    assert zombie.value.reason is FailureReason.ZOMBIE
    assert (await client.get_job(child.id)).state == "blocked"  # type: ignore[union-attr]
    assert runs(tmp_path, child.id) == []

    # Requeued by an operator, it runs on the survivor and the child runs once after it.
    (tmp_path / "release-p").write_text("go")
    assert await client.backend.dlq_resurrect(ids=[parent.id], actor="ops") == [parent.id]
    value = await client.result(child.id, timeout=60)
    assert value == {"parts": ["p"], "parents": [parent.id]}
    assert runs(tmp_path, parent.id) == [str(victim.pid), str(survivor.pid)]
    assert runs(tmp_path, child.id) == [str(survivor.pid)]
    archived = await client.backend.job_get(child.id)
    assert archived is not None and archived.pillar is Pillar.ARCHIVE


async def test_a_chord_with_a_failing_member_runs_its_callback_with_both_outcomes(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    """Celery's chord whose callback never runs when a member fails (celery#1881): with
    ``after_outcome="any"`` the callback runs once both members have finished, and reads how
    each ended; the same chord on success blocks, as before."""
    from tests.apps.workflows import member, summary

    good = member.prepare(n=1)
    bad = member.prepare(n=2, fail=True)
    callback = summary.options(after=[good, bad], after_outcome="any").prepare()
    blocked = summary.options(after=[good, bad]).prepare()
    await client.enqueue_many([good, bad, callback, blocked])
    spawn(app=APP)
    spawn(app=APP)
    value = await client.result(callback.id, timeout=60)
    assert value == {
        good.id: {"pillar": "archive", "result": "1", "reason": None, "error": None},
        bad.id: {
            "pillar": "dlq",
            "result": None,
            "reason": "FATAL_ERROR",
            "error": value[bad.id]["error"],
        },
    }
    assert "member 2 failed" in value[bad.id]["error"]
    assert len(runs(tmp_path, callback.id)) == 1
    view = await client.get_job(blocked.id)
    assert view is not None and view.state == "blocked" and view.after_outcome == "success"
    assert runs(tmp_path, blocked.id) == []


async def test_a_chain_of_three_passes_each_result_as_the_next_first_argument(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    """``scan.si(url) | store.s(endpoint) | notify.s(channel)``: each link gets its parent's
    return value as first argument; ``store`` is retried once and gets the same arguments."""
    from tests.apps.workflows import notify, scan, store

    first = scan.prepare(url="https://example.com")
    second = store.options(after=[first], pass_results=True).prepare(endpoint="db")
    third = notify.options(after=[second], pass_results=True).prepare(channel="ops")
    await client.enqueue_many([first, second, third])
    spawn(app=APP)
    spawn(app=APP)
    assert await client.result(third.id, timeout=60) == ["ops", "db:https://example.com:200"]
    assert len(runs(tmp_path, second.id)) == 2  # the retry ran with the same arguments

"""Leadership that expires and is fenced, with real worker processes on both backends.

Found by outside testing (issue 13): leadership was a session advisory lock, held as long as
the leader's session lived, so a frozen leader (SIGSTOP), a leader whose event loop a handler
blocked (``time.sleep`` in an async handler) or a partitioned one stopped rescue for the whole
cluster. Now it is a lease on the database's clock: these tests stop the leader, or block its
loop, with a job zombied on another worker, and measure how soon another worker rescues it;
then they resume the ex-leader where a zombie is waiting and check that it writes nothing on
its stale term.

The sample app (``tests/apps/sample.py``) runs with a zombie timeout of 2 s, a lease of 2 s
renewed every 0.5 s and a rescue pass every 0.3 s, so the bound on rescue after the leader
stops is zombie timeout + lease + one renewal interval of the successor + one rescue interval
(4.8 s), plus a margin of 5 s for a loaded machine (two cores shared with other test runs;
start-up of a Python process alone takes a second there). The blocked loop lasts 20 s, so a
rescue that waited for it could not pass.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scripts.torture_rig import freeze
from tests.reliability.conftest import LEASE, RENEW, ZOMBIE, Proc, leader_pid
from tests.runtime.conftest import until

from chokaq import App, FailureReason
from chokaq.logs import Event
from chokaq.models import JobStatus, Pillar

RESCUE = 0.3
MARGIN = 5.0
BOUND = ZOMBIE + LEASE + RENEW + RESCUE + MARGIN
BLOCKED = 20.0


@pytest.fixture
async def client(store: Any) -> Any:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    import tests.apps.sample as sample  # noqa: F401  (the handlers, for prepare)

    await app.open()
    yield app
    await app.close()


def sample_job(name: str, **kwargs: Any) -> Any:
    from tests.apps import sample

    return sample.app.handlers[name].prepare(**kwargs)


def stop(store: Any, proc: Proc) -> None:
    """SIGSTOP ``proc`` and wait until it has stopped; on SQLite outside a write transaction
    (``scripts.torture_rig.freeze`` says why)."""
    freeze(proc.pid, store.url.removeprefix("sqlite:///") if store.dialect == "sqlite" else None)


def marker(tmp_path: Path, name: str) -> Callable[[], Any]:
    async def exists() -> bool:
        return (tmp_path / name).exists()

    return exists


async def wait_for_leader(client: App, proc: Proc) -> None:
    async def leads() -> bool:
        return await leader_pid(client) == proc.pid

    await until(leads, timeout=60)


async def zombied(client: App, job_id: str) -> bool:
    view = await client.backend.job_get(job_id)
    return view is not None and view.failure_reason is FailureReason.ZOMBIE


async def running_hang(client: App, spawn: Callable[..., Proc], tmp_path: Path, tag: str) -> Any:
    """A worker on the ``default`` queue running a job that hangs; (its process, the job id)."""
    [job_id] = await client.enqueue_many([sample_job("hang", tag=tag)])
    victim = spawn("--queues", "default", "--concurrency", "1")
    await until(marker(tmp_path, f"started-{tag}"), timeout=60)
    return victim, job_id


async def test_a_stopped_leader_is_replaced_and_fenced_when_it_resumes(
    spawn: Callable[..., Proc], client: App, tmp_path: Path, store: Any
) -> None:
    leader = spawn("--queues", "idle")
    await wait_for_leader(client, leader)
    # The successor holds a long lease, so it can be stopped in its turn without losing it.
    successor = spawn("--queues", "idle", CHOKAQ_LEASE="60", CHOKAQ_LEASE_RENEW="0.5")
    victim, first = await running_hang(client, spawn, tmp_path, "first")
    stopped = time.monotonic()
    stop(store, leader)
    try:
        victim.popen.kill()
        await until(lambda: zombied(client, first), timeout=60)
        latency = time.monotonic() - stopped
        print(f"\nrescue {latency:.2f} s after the leader was stopped")
        assert await leader_pid(client) == successor.pid
        assert latency < BOUND, f"rescue {latency:.1f} s after the leader stopped"
        # A second zombie, left for the ex-leader: the successor is stopped with most of its
        # lease to run, so the only worker able to rescue it is the ex-leader on a stale term.
        victim, second = await running_hang(client, spawn, tmp_path, "second")
        stop(store, successor)
        victim.popen.kill()

        async def overdue() -> bool:
            view = await client.backend.job_get(second)
            assert view is not None and view.heartbeat_at is not None
            return (time.time() - view.heartbeat_at.timestamp()) > ZOMBIE + 1

        await until(overdue, timeout=60)
    finally:
        os.kill(leader.pid, signal.SIGCONT)

    async def noticed() -> bool:
        return bool(leader.events(Event.LEADERSHIP_LOST))

    try:
        await until(noticed, timeout=60)
        # Whatever it did first on waking (renew, or the overdue pass), it wrote nothing.
        view = await client.backend.job_get(second)
        assert view is not None and view.pillar is Pillar.HOT
        assert view.status is JobStatus.PROCESSING
        assert not leader.events(Event.ZOMBIES_DEAD_LETTERED)
        [lost] = leader.events(Event.LEADERSHIP_LOST)
        assert lost["reason"] in {"renewal refused", "renewal late", "write fenced"}
        assert await leader_pid(client) == successor.pid
    finally:
        os.kill(successor.pid, signal.SIGCONT)
    # The successor, resumed within its lease, rescues the zombie left behind.
    await until(lambda: zombied(client, second), timeout=60)
    assert len(leader.events(Event.LEADERSHIP_ACQUIRED)) == 1


async def test_a_leader_whose_loop_is_blocked_does_not_hold_rescue_hostage(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    leader = spawn("--queues", "block")
    await wait_for_leader(client, leader)
    successor = spawn("--queues", "idle")
    victim, job_id = await running_hang(client, spawn, tmp_path, "victim")
    await client.enqueue_many([sample_job("blocking", tag="block", seconds=BLOCKED, queue="block")])
    await until(marker(tmp_path, "started-block"), timeout=60)
    blocked = time.monotonic()
    victim.popen.kill()
    await until(lambda: zombied(client, job_id), timeout=60)
    latency = time.monotonic() - blocked
    print(f"\nrescue {latency:.2f} s after the leader's loop was blocked")
    assert latency < BOUND < BLOCKED, f"rescue {latency:.1f} s after the leader's loop blocked"
    assert await leader_pid(client) == successor.pid

    # When its loop runs again the ex-leader finds its term over and says so.
    async def noticed() -> bool:
        return bool(leader.events(Event.LEADERSHIP_LOST))

    await until(noticed, timeout=BLOCKED + 60)
    assert await leader_pid(client) == successor.pid

"""The control plane: queue rows (ensure, pause, activate, configure) and worker registrations."""

from __future__ import annotations

import asyncio

import pytest
from conformance import T0, at

from chokaq.errors import NotFoundError, ValidationError
from chokaq.models import NewJob, WorkerInfo
from chokaq.storage import UNSET


async def test_fresh_store_has_the_default_queue(backend):
    [default] = [q for q in await backend.queue_list() if q.name == "default"]
    assert (default.paused, default.active, default.max_workers) == (False, True, None)


async def test_queue_ensure_is_idempotent_and_listed_by_name(backend):
    first = await backend.queue_ensure("zeta")
    await backend.queue_ensure("alpha")
    again = await backend.queue_ensure("zeta")
    assert first == again
    names = [q.name for q in await backend.queue_list()]
    assert names == sorted(names)
    assert {"alpha", "zeta", "default"} <= set(names)


async def test_pause_and_resume(backend):
    info = await backend.queue_pause(name="new", paused=True, actor="ops")
    assert (info.name, info.paused, info.active) == ("new", True, True)
    info = await backend.queue_pause(name="new", paused=False, actor="ops")
    assert info.paused is False


async def test_activate_is_independent_of_pause(backend):
    await backend.queue_pause(name="q", paused=True)
    info = await backend.queue_activate(name="q", active=False)
    assert (info.paused, info.active) == (True, False)
    info = await backend.queue_pause(name="q", paused=False)
    assert (info.paused, info.active) == (False, False)
    info = await backend.queue_activate(name="q", active=True)
    assert (info.paused, info.active) == (False, True)


async def test_configure_unset_leaves_and_none_clears(backend):
    info = await backend.queue_configure(
        name="q", max_workers=4, zombie_timeout_seconds=120, execution_timeout_seconds=30
    )
    assert (info.max_workers, info.zombie_timeout_seconds, info.execution_timeout_seconds) == (
        4,
        120.0,
        30.0,
    )
    info = await backend.queue_configure(name="q", max_workers=None)
    assert (info.max_workers, info.zombie_timeout_seconds, info.execution_timeout_seconds) == (
        None,
        120.0,
        30.0,
    )
    info = await backend.queue_configure(
        name="q", zombie_timeout_seconds=UNSET, execution_timeout_seconds=None
    )
    assert (info.zombie_timeout_seconds, info.execution_timeout_seconds) == (120.0, None)
    info = await backend.queue_configure(name="q", max_workers=10_000, zombie_timeout_seconds=15)
    assert (info.max_workers, info.zombie_timeout_seconds) == (10_000, 15.0)
    [listed] = [q for q in await backend.queue_list() if q.name == "q"]
    assert listed == info


@pytest.mark.parametrize("timeout", [1, 5, 14.9])
async def test_a_zombie_timeout_below_the_heartbeat_floor_is_refused(backend, timeout):
    # Under three default heartbeat intervals (5 s at most each), a healthy running job could
    # be dead-lettered as a zombie and run twice once requeued.
    await backend.queue_configure(name="q", zombie_timeout_seconds=120)
    with pytest.raises(ValidationError) as caught:
        await backend.queue_configure(name="q", zombie_timeout_seconds=timeout)
    assert caught.value.field == "zombie_timeout_seconds"
    assert "15" in str(caught.value) and "heartbeat" in str(caught.value)
    [q] = [q for q in await backend.queue_list() if q.name == "q"]
    assert q.zombie_timeout_seconds == 120


UNKNOWN_QUEUE_CHANGES = {
    "pause": lambda b, create: b.queue_pause(name="emials", paused=True, create=create),
    "resume": lambda b, create: b.queue_pause(name="emials", paused=False, create=create),
    "hide": lambda b, create: b.queue_activate(name="emials", active=False, create=create),
    "limit": lambda b, create: b.queue_configure(name="emials", max_workers=2, create=create),
}


@pytest.mark.parametrize("change", sorted(UNKNOWN_QUEUE_CHANGES))
async def test_an_unknown_queue_is_refused_unless_asked_to_create_it(backend, change):
    act = UNKNOWN_QUEUE_CHANGES[change]
    with pytest.raises(NotFoundError) as caught:
        await act(backend, False)
    assert "emials" in str(caught.value) and "create" in str(caught.value)
    assert await backend.queue_get("emials") is None
    assert "emials" not in [q.name for q in await backend.queue_list()]
    created = await act(backend, True)
    assert created.name == "emials" and await backend.queue_get("emials") == created
    # Known now: the same change applies without create.
    assert (await act(backend, False)).name == "emials"


async def test_a_queue_that_has_had_jobs_is_known(backend):
    await backend.jobs_enqueue([NewJob(queue="reports", type="t", payload="{}")])
    info = await backend.queue_pause(name="reports", paused=True, create=False)
    assert info.paused is True


async def test_configure_keeps_pause_state(backend):
    await backend.queue_pause(name="q", paused=True)
    info = await backend.queue_configure(name="q", max_workers=2)
    assert info.paused is True


def _worker(worker_id, *, beat=T0, **fields):
    values = {
        "id": worker_id,
        "hostname": "host-a",
        "pid": 1234,
        "queues": ("default", "mail"),
        "concurrency": 8,
        "desired_concurrency": None,
        "running": 2,
        "state": "running",
        "started_at": T0,
        "heartbeat_at": beat,
        "circuits": '[{"type": "t", "state": "open"}]',
    }
    values.update(fields)
    return WorkerInfo(**values)


async def test_worker_beat_registers_and_lists(backend):
    control = await backend.worker_beat(_worker("w1"), now=at(10))
    assert (control.desired_concurrency, control.close_circuits) == (None, ())
    await backend.worker_beat(_worker("w2", running=5), now=at(20))
    listed = await backend.workers_list(alive_within_seconds=60, now=at(30))
    assert [w.id for w in listed] == ["w2", "w1"]  # newest heartbeat first
    w1 = listed[1]
    assert (w1.hostname, w1.pid, w1.queues, w1.concurrency, w1.running) == (
        "host-a",
        1234,
        ("default", "mail"),
        8,
        2,
    )
    assert (w1.state, w1.started_at, w1.heartbeat_at) == ("running", T0, at(10))
    assert w1.circuits == '[{"type": "t", "state": "open"}]'
    # Outside the window a worker is not listed.
    assert [w.id for w in await backend.workers_list(alive_within_seconds=15, now=at(30))] == ["w2"]


async def test_worker_beat_refreshes(backend):
    await backend.worker_beat(_worker("w1"), now=at(10))
    await backend.worker_beat(_worker("w1", running=7, state="draining"), now=at(40))
    [w] = await backend.workers_list(now=at(41))
    assert (w.running, w.state, w.heartbeat_at) == (7, "draining", at(40))


async def test_worker_requests_are_handed_over(backend):
    await backend.worker_beat(_worker("w1"), now=at(1))
    await backend.worker_beat(_worker("w2"), now=at(1))
    assert await backend.worker_request(worker_id="w1", concurrency=3) == 1
    assert await backend.worker_request(worker_id="w1", close_circuit="email.send") == 1
    assert await backend.worker_request(worker_id="w1", close_circuit="pdf.render") == 1
    control = await backend.worker_beat(_worker("w1"), now=at(2))
    assert control.desired_concurrency == 3
    assert sorted(control.close_circuits) == ["email.send", "pdf.render"]
    # Circuits are handed over once; desired concurrency stays until changed.
    again = await backend.worker_beat(_worker("w1"), now=at(3))
    assert again.close_circuits == ()
    assert (await backend.worker_beat(_worker("w2"), now=at(3))).close_circuits == ()


async def test_worker_request_to_everyone_and_to_nobody(backend):
    await backend.worker_beat(_worker("w1"), now=at(1))
    await backend.worker_beat(_worker("w2"), now=at(1))
    assert await backend.worker_request(worker_id=None, close_circuit="t") == 2
    assert await backend.worker_request(worker_id="ghost", concurrency=2) == 0
    for wid in ("w1", "w2"):
        assert (await backend.worker_beat(_worker(wid), now=at(2))).close_circuits == ("t",)


async def test_worker_remove(backend):
    await backend.worker_beat(_worker("w1"), now=at(1))
    await backend.worker_remove(worker_id="w1")
    assert await backend.workers_list(now=at(2)) == []
    await backend.worker_remove(worker_id="w1")  # removing twice is harmless


async def test_resuming_activating_or_resizing_a_queue_wakes_its_workers(open_backend):
    # Its pending jobs start now, not at the workers' next poll.
    operator, worker = await open_backend(), await open_backend()
    await operator.queue_ensure("mail")
    await operator.queue_pause(name="mail", paused=True)
    await operator.queue_activate(name="mail", active=False)
    woken: asyncio.Queue[str] = asyncio.Queue()
    notifier = worker.notifier()
    await notifier.start(woken.put_nowait, lambda job_id: None)
    try:
        changes = [
            lambda: operator.queue_pause(name="mail", paused=False),
            lambda: operator.queue_activate(name="mail", active=True),
            lambda: operator.queue_configure(name="mail", max_workers=3),
        ]
        for change in changes:
            while not woken.empty():
                woken.get_nowait()
            await change()
            assert await asyncio.wait_for(woken.get(), timeout=5) in ("mail", "")
    finally:
        await notifier.stop()

"""A store outage longer than the zombie timeout, under live worker processes, on both backends.

Found by outside testing (issue 32): PostgreSQL stopped for 15 s under three live workers (zombie
timeout 6 s). Jobs that finished during the outage could not record their outcomes, nor could
running jobs heartbeat; the moment the server came back the leader's rescue judged those
heartbeats, which could not have been written, and dead-lettered the jobs as ``ZOMBIE``; the
finalizer's retry was then refused by the lease fence (event 2100). Their side effects had
happened, and a workflow waiting on them stayed blocked.

Here three workers (zombie timeout 4 s, heartbeats every 1 to 1.5 s, rescue every 0.1 s) run
twelve jobs the test holds open, and the store goes away for 6 s: on PostgreSQL the workers
reach the server through a forwarder the test cuts (``proxy.Proxy``; the shared server stays
up), on SQLite another connection holds the file's write lock. During it nine jobs finish and a
fourth worker is SIGKILLed mid-job; after it, the other three run on until the killed worker's
job has been rescued, so that rescue has judged their heartbeats by then. Every job must end in
the archive, succeeded once, with no outcome refused; the killed worker's job must still be
rescued as a zombie.

Two cases. "lapses": a 2 s lease, shorter than the outage, so the term lapses and is taken again
as the store comes back and the new leader makes a pass at once (as in the report); on SQLite
the workers' writes fail at once on the locked file (a 0.1 s busy timeout), as PostgreSQL's do
while its server is away. "holds": a 10 s lease, so the leader keeps its term and its passes
sent before and during the outage run after it; SQLite's writes wait through the lock (the
default busy timeout). PostgreSQL's lane statements fail at once in both, and its pooled ones
wait for the pool to reconnect. The outage's length also puts that reconnection (psycopg retries
1, 2, 4 s after the first failure) just after the store comes back, ahead of the finalizer's
retry: before the fix, every case dead-lettered live jobs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import Proc, leader_pid
from tests.reliability.proxy import Proxy
from tests.runtime.conftest import until

from chokaq import App, FailureReason
from chokaq.logs import Event
from chokaq.models import Pillar

ZOMBIE = 4.0
# Heartbeats far enough apart that a live job's first one after the outage may come a second or
# more after a pass could judge it (as with the defaults: every 3-5 s), yet well inside a timeout.
HEARTBEAT = (1.0, 1.5)
OUTAGE = 6.0
DURING = [f"during-{i}" for i in range(9)]  # finish while the store is away
ACROSS = [f"across-{i}" for i in range(3)]  # still running when it comes back
DEADLINE = 60.0  # only a stalled run comes near it

pytestmark = pytest.mark.slow


def sample_job(name: str, **kwargs: Any) -> Any:
    from tests.apps import sample

    return sample.app.handlers[name].options(**kwargs.pop("options", {})).prepare(**kwargs)


def markers(tmp_path: Path, *names: str) -> Callable[[], Any]:
    async def exist() -> bool:
        return all((tmp_path / name).exists() for name in names)

    return exist


class Outage:
    """Takes the store away from the workers and gives it back: a cut forwarder on PostgreSQL,
    a held write lock on SQLite."""

    def __init__(self, store: Any, proxy: Proxy | None) -> None:
        self.store = store
        self.proxy = proxy
        self._lock: sqlite3.Connection | None = None

    @property
    def worker_url(self) -> str:
        return self.store.url if self.proxy is None else self.proxy.url_through

    async def begin(self) -> None:
        if self.proxy is not None:
            await self.proxy.cut()
            return
        path = self.store.url.removeprefix("sqlite:///")
        conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        # Waits for a worker's write transaction to end, then holds the write lock.
        await asyncio.to_thread(conn.execute, "BEGIN EXCLUSIVE")
        self._lock = conn

    async def end(self) -> None:
        if self.proxy is not None:
            await self.proxy.start()
            return
        conn, self._lock = self._lock, None
        if conn is not None:
            conn.execute("ROLLBACK")
            conn.close()


@pytest.fixture
async def outage(store: Any) -> AsyncIterator[Outage]:
    proxy = None
    if store.dialect == "postgres":
        proxy = Proxy(store.url)
        await proxy.start()
    taken = Outage(store, proxy)
    try:
        yield taken
    finally:
        if proxy is not None:
            await proxy.cut()
        else:
            await taken.end()  # a test that failed mid-outage must not leave the file locked


@pytest.mark.parametrize(
    ("lease", "busy_timeout"), [(2.0, 0.1), (10.0, 10.0)], ids=["lapses", "holds"]
)
async def test_jobs_that_finish_during_an_outage_are_archived_and_a_dead_worker_still_rescued(
    spawn: Callable[..., Proc],
    client: App,
    outage: Outage,
    tmp_path: Path,
    emitted_events: Any,
    request: pytest.FixtureRequest,
    lease: float,
    busy_timeout: float,
) -> None:
    env = {
        "CHOKAQ_DATABASE_URL": outage.worker_url,
        "CHOKAQ_BUSY_TIMEOUT": str(busy_timeout),
        "CHOKAQ_ZOMBIE_TIMEOUT": str(ZOMBIE),
        "CHOKAQ_RESCUE_INTERVAL": "0.1",
        "CHOKAQ_HEARTBEAT_MIN": str(HEARTBEAT[0]),
        "CHOKAQ_HEARTBEAT_MAX": str(HEARTBEAT[1]),
        "CHOKAQ_LEASE": str(lease),
    }
    live = [spawn(**env) for _ in range(3)]
    pids = {proc.pid for proc in live}

    async def led_by_a_live_worker() -> bool:
        return await leader_pid(client) in pids

    await until(led_by_a_live_worker, timeout=DEADLINE)
    # The fourth worker, started once a live one leads, serves a queue of its own, so that
    # killing it takes only its own job with it.
    victim = spawn("--queues", "victim", **env)
    [dead_id] = await client.enqueue_many(
        [sample_job("hang", tag="dead", options={"queue": "victim"})]
    )
    jobs = {
        tag: sample_job("gated", tag=tag, gate="go-during" if tag in DURING else "go-after")
        for tag in DURING + ACROSS
    }
    ids = dict(zip(jobs, await client.enqueue_many(list(jobs.values())), strict=True))
    started = [f"started-{tag}" for tag in [*jobs, "dead"]]
    await until(markers(tmp_path, *started), timeout=DEADLINE)

    await outage.begin()
    began = time.monotonic()
    (tmp_path / "go-during").touch()
    await until(markers(tmp_path, *[f"done-{tag}" for tag in DURING]), timeout=DEADLINE)
    os.kill(victim.pid, signal.SIGKILL)  # a worker that dies while the store is away
    victim.popen.wait(timeout=10)
    # The outage's length is the scenario itself (longer than the zombie timeout), not a wait
    # for something to happen.
    await asyncio.sleep(max(0.0, OUTAGE - (time.monotonic() - began)))
    await outage.end()
    back = time.monotonic()

    # The dead worker's job is rescued once the store is back, while the jobs that lived
    # through the outage still run: rescue has judged their heartbeats by then.
    async def rescued() -> bool:
        view = await client.backend.job_get(dead_id)
        return view is not None and view.pillar is Pillar.DLQ

    await until(rescued, timeout=DEADLINE)
    print(
        f"\n{request.node.name}: dead job rescued {time.monotonic() - back:.1f} s after the outage"
    )
    dead = await client.backend.job_get(dead_id)
    assert dead is not None and dead.failure_reason is FailureReason.ZOMBIE
    (tmp_path / "go-after").touch()

    async def settled() -> bool:
        views = [await client.backend.job_get(i) for i in ids.values()]
        return all(v is not None and v.pillar is not Pillar.HOT for v in views)

    await until(settled, timeout=DEADLINE)
    for tag, job_id in ids.items():
        view = await client.backend.job_get(job_id)
        assert view is not None, tag
        assert (tag, view.pillar, view.failure_reason) == (tag, Pillar.ARCHIVE, None)
        assert view.attempt_count == 1, tag
    summary = await client.backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (len(ids), 1)
    # No outcome was refused: nothing was taken from a live worker.
    assert [proc.events(Event.TRANSITION_NOT_APPLIED) for proc in live] == [[], [], []]

    # The worker whose rescue buried the dead job had seen the store come back (4008) at least
    # a zombie timeout before: it judged the heartbeats only from then. (Polled: the log line
    # follows the commit.)
    def buried() -> tuple[Proc, dict[str, Any]] | None:
        for proc in live:
            for line in proc.events(Event.ZOMBIES_DEAD_LETTERED):
                if dead_id in line["ids"]:
                    return proc, line
        return None

    async def logged() -> bool:
        return buried() is not None

    await until(logged, timeout=DEADLINE)
    found = buried()
    assert found is not None
    rescuer, line = found
    at = _time(line)
    back = [_time(e) for e in rescuer.events(Event.RESCUE_RESUMING) if _time(e) <= at]
    assert back, "the rescuer never logged that the store came back"
    assert at - max(back) >= ZOMBIE - 0.01  # log times count milliseconds
    emitted_events.add([Event.RESCUE_RESUMING], request.node.nodeid)


def _time(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(line["time"]).timestamp()

"""``eager(app)``: while it is active, an enqueue (async or sync) writes the job and then runs
it (and all else that is runnable, retries and delays included) before returning, for tests.

The job is stored and run by the app's real worker (``run_until_idle``), so handlers get a real
``JobContext`` and ``app.result(id)`` works afterwards. It owns only the swap of the app's
``enqueue_many`` for the block; it must not change what an enqueue writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..app import App, JobId
from ..errors import ConfigurationError
from ..models import NewJob, Pillar
from .drain import run_until_idle

__all__ = ["eager"]


@contextlib.contextmanager
def eager(app: App, *, propagate: bool = False, **drain_options: Any) -> Iterator[App]:
    """For the block, ``await handle.enqueue(...)``, ``handle.enqueue_sync(...)``,
    ``app.enqueue_many`` (and its ``_sync`` twin) and ``app.enqueue_raw`` write the jobs, then
    ``run_until_idle(app, **drain_options)`` before they return the ids: the jobs have run when
    ``enqueue`` returns, retries and delays included (the fake clock moves), and jobs enqueued
    with ``after=`` run once their parents have succeeded. A job a handler enqueues is run by
    the same drain. ``enqueue_sync`` drains on the sync client (its own loop and connections).

    ``propagate=True`` raises ``JobFailedError`` when a job just enqueued ended in the DLQ
    (otherwise ``await app.result(id)`` does). An enqueue with ``connection=`` is only written
    (the caller's transaction has not committed yet). Raises ``ConfigurationError`` when
    ``app`` is already eager."""
    if "enqueue_many" in vars(app) or "enqueue_many_sync" in vars(app):
        raise ConfigurationError("eager: this app is already eager (or its enqueue is replaced)")
    write = app.enqueue_many
    write_sync = app.enqueue_many_sync
    draining = False

    async def settle(target: App, ids: list[JobId]) -> None:
        """Drain ``target`` (this app, or the sync client's copy of it) and propagate."""
        nonlocal draining
        draining = True
        try:
            await run_until_idle(target, **drain_options)
        finally:
            draining = False
        if propagate:
            for job_id in ids:
                view = await target.get_job(job_id)
                if view is not None and view.pillar is Pillar.DLQ:
                    await target.result(job_id)  # raises JobFailedError naming reason and error

    async def enqueue_many(jobs: Sequence[NewJob], *, connection: Any = None) -> list[JobId]:
        ids = await write(jobs, connection=connection)
        if not draining and connection is None:
            await settle(app, ids)  # a running drain picks the jobs up itself
        return ids

    def enqueue_many_sync(jobs: Sequence[NewJob], *, connection: Any = None) -> list[JobId]:
        ids = write_sync(jobs, connection=connection)
        # In-memory SQLite: the sync client runs this very app, whose enqueue_many settled.
        shared = app.backend.capabilities.in_process
        if not draining and connection is None and not shared:
            app._sync_client().call(lambda copy: settle(copy, ids))
        return ids

    # Instance attributes shadow the methods for the block (mypy refuses assigning a method).
    setattr(app, "enqueue_many", enqueue_many)  # noqa: B010
    setattr(app, "enqueue_many_sync", enqueue_many_sync)  # noqa: B010
    try:
        yield app
    finally:
        del app.enqueue_many
        del app.enqueue_many_sync

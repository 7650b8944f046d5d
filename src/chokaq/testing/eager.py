"""``eager(app)``: while it is active, an enqueue writes the job and then runs it (and all else
that is runnable, retries and delays included) before returning, for unit tests.

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
    """For the block, ``await handle.enqueue(...)``, ``app.enqueue_many`` and
    ``app.enqueue_raw`` write the jobs, then ``run_until_idle(app, **drain_options)`` before
    they return the ids: the jobs have run when ``enqueue`` returns, retries and delays
    included (the fake clock moves), and jobs enqueued with ``after=`` run once their parents
    have succeeded. A job a handler enqueues is run by the same drain.

    ``propagate=True`` raises ``JobFailedError`` when a job just enqueued ended in the DLQ
    (otherwise ``await app.result(id)`` does). Not eager: ``enqueue_sync`` (it writes; run
    ``run_until_idle`` after it) and an enqueue with ``connection=`` (the caller's transaction
    has not committed yet). Raises ``ConfigurationError`` when ``app`` is already eager."""
    if "enqueue_many" in vars(app):
        raise ConfigurationError("eager: this app is already eager (or its enqueue is replaced)")
    write = app.enqueue_many
    draining = False

    async def enqueue_many(jobs: Sequence[NewJob], *, connection: Any = None) -> list[JobId]:
        nonlocal draining
        ids = await write(jobs, connection=connection)
        if draining or connection is not None:
            return ids  # a running drain picks these up; a caller's transaction is not ours
        draining = True
        try:
            await run_until_idle(app, **drain_options)
        finally:
            draining = False
        if propagate:
            for job_id in ids:
                view = await app.get_job(job_id)
                if view is not None and view.pillar is Pillar.DLQ:
                    await app.result(job_id)  # raises JobFailedError naming reason and error
        return ids

    setattr(app, "enqueue_many", enqueue_many)  # noqa: B010 (mypy refuses assigning a method)
    try:
        yield app
    finally:
        del app.enqueue_many

"""The storage seam's queues area (the control plane), checked once and observed once: queues
(list, get, ensure, pause, activate, configure) and worker processes (beat, remove, list,
requests from operators).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import NotFoundError
from ..limits import check_actor, check_name
from ..models import (
    QueueInfo,
    WorkerControl,
    WorkerInfo,
)
from . import checks
from .checks import UNSET
from .group import OperationGroup
from .observed import operation

__all__ = ["QueueOperations"]


class QueueOperations(OperationGroup):
    """The storage seam's control plane."""

    # -- queues -----------------------------------------------------------------------------

    @operation
    async def queue_list(self) -> list[QueueInfo]:
        """Every queue row, by name."""
        return await self.driver.queue_list()

    @operation
    async def queue_get(self, name: str) -> QueueInfo | None:
        """One queue's row, or None when there is none. A queue is *known* once it has a row:
        every enqueue creates its queue's row, and rows are never deleted, so a queue that ever
        held a job is known."""
        return await self.driver.queue_get(check_name("name", name))

    async def _known(self, name: str, create: bool) -> None:
        # Rows are never deleted, so a row seen here still exists when the change is applied;
        # a queue created meanwhile by another caller is simply known by then.
        if not create and await self.driver.queue_get(name) is None:
            raise NotFoundError(
                f"queue {name!r} does not exist (no queue row, and no job has used it); "
                "check the name, or ask to create it (create=True)"
            )

    @operation
    async def queue_ensure(self, name: str) -> QueueInfo:
        """Create the queue row if missing (race-safe) and return it."""
        return await self.driver.queue_ensure(check_name("name", name))

    @operation
    async def queue_pause(
        self, *, name: str, paused: bool, actor: str | None = None, create: bool = True
    ) -> QueueInfo:
        """Pause or resume a queue. Running jobs continue. A missing queue is created, or with
        ``create=False`` refused with ``NotFoundError`` (what operators' tools ask, so that a
        typo is not reported as a success)."""
        check_name("name", name)
        who = check_actor("actor", actor)
        await self._known(name, create)
        info = await self.driver.queue_pause(name, bool(paused), who)
        if not paused:
            await self.driver.jobs_wake([name])  # its pending jobs start now, not at a poll
        return info

    @operation
    async def queue_activate(
        self, *, name: str, active: bool, actor: str | None = None, create: bool = True
    ) -> QueueInfo:
        """Activate or deactivate a queue; ``create`` as for ``queue_pause``.

        Workers claim no job of an inactive queue: the same effect as ``queue_pause``, which is
        the one switch operators are offered (The Deck, ``chokaq queue pause``); this stays for
        compatibility. To leave a queue out of The Deck's list, use ``queue_hide``."""
        check_name("name", name)
        who = check_actor("actor", actor)
        await self._known(name, create)
        info = await self.driver.queue_activate(name, bool(active), who)
        if active:
            await self.driver.jobs_wake([name])
        return info

    @operation
    async def queue_hide(
        self, *, name: str, hidden: bool, actor: str | None = None, create: bool = True
    ) -> QueueInfo:
        """Hide a queue from The Deck's queue list, or show it again. Nothing else changes:
        workers keep claiming its jobs, and it stays in ``chokaq queue list``, the stats and the
        health check. ``create`` as for ``queue_pause``."""
        check_name("name", name)
        who = check_actor("actor", actor)
        await self._known(name, create)
        return await self.driver.queue_hide(name, bool(hidden), who)

    @operation
    async def queue_configure(
        self,
        *,
        name: str,
        max_workers: int | None = UNSET,
        zombie_timeout_seconds: float | None = UNSET,
        execution_timeout_seconds: float | None = UNSET,
        actor: str | None = None,
        create: bool = True,
    ) -> QueueInfo:
        """Set a queue's limits (``None`` clears one, ``UNSET`` leaves it alone). max_workers is
        1..10,000; zombie timeout 15..86,400 s (``checks.MIN_ZOMBIE_TIMEOUT_SECONDS``: three
        default heartbeat intervals); execution timeout 0 < t <= 7 days. ``create`` as for
        ``queue_pause``."""
        check_name("name", name)
        who = check_actor("actor", actor)
        limits = checks.queue_limits(
            max_workers=max_workers,
            zombie_timeout_seconds=zombie_timeout_seconds,
            execution_timeout_seconds=execution_timeout_seconds,
        )
        await self._known(name, create)
        info = await self.driver.queue_configure(name, limits, who)
        if limits.max_workers is not UNSET:
            await self.driver.jobs_wake([name])  # a bulkhead raised or lifted leaves room now
        return info

    # -- workers ----------------------------------------------------------------------------

    @operation
    async def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerControl:
        """Register or refresh a worker row (heartbeat_at = now) and return what operators have
        asked of it; close-circuit requests are handed over once and then cleared."""
        checked = checks.worker_info(info)
        return await self.driver.worker_beat(checked, checks.now(now))

    @operation
    async def worker_remove(self, *, worker_id: str) -> None:
        """Delete a worker's row (clean shutdown)."""
        await self.driver.worker_remove(check_name("worker_id", worker_id))

    @operation
    async def workers_list(
        self, *, alive_within_seconds: float = 60.0, now: datetime | None = None
    ) -> list[WorkerInfo]:
        """Workers whose heartbeat is within the window (0 < t <= 366 days), newest first."""
        window = checks.alive_within(alive_within_seconds)
        return await self.driver.workers_list(window, checks.now(now))

    @operation
    async def worker_request(
        self,
        *,
        worker_id: str | None,
        concurrency: int | None = None,
        close_circuit: str | None = None,
    ) -> int:
        """Ask one worker (or every worker, when ``worker_id`` is None) to change concurrency
        (1..1000) or force-close a circuit. Returns the number of workers asked."""
        checks.worker_request(worker_id, concurrency, close_circuit)
        return await self.driver.worker_request(worker_id, concurrency, close_circuit)

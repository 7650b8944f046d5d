"""The worker's registry row and what operators ask of it.

First it records the rate limits and partition caps its handlers declare (before the
worker's first claim). Every few seconds
the worker refreshes its row in the workers table (queues, concurrency,
running jobs, circuit snapshot), applies what operators asked (a new concurrency, circuits to
force-close), refreshes its view of the queues' settings (``queues``), and releases prefetched
jobs of queues that were paused or deactivated, and warns (once per queue and value) of a stored
zombie timeout that this worker's heartbeat interval makes unsafe. It reports storage trouble
and recovery to the outage state. It is given the backend, the settings, the slots, the outage
state, the circuit breakers and two callables of the worker (its row, and how to change its
concurrency), never the worker itself. Owns that loop and the queue view only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from ..errors import StorageError
from ..logs import Event, log_event
from ..models import ClaimedJob, QueueInfo, TypeLimit, WorkerInfo
from ..settings import WorkerSettings
from ..storage import Backend
from ..storage.checks import ZOMBIE_HEARTBEAT_MARGIN
from .circuit import CircuitBreakers
from .outage import Outage
from .slots import Slots, release

__all__ = ["Registry"]

WARNING = 30


@dataclass(eq=False)
class Registry:
    """The registry side task of one worker. ``row()`` describes the worker as it is now;
    ``resize(n)`` applies an operator's new concurrency. ``queues`` is the latest view of the
    queues' settings, by name (empty until the first beat)."""

    backend: Backend
    settings: WorkerSettings
    slots: Slots
    outage: Outage
    circuits: CircuitBreakers
    _: KW_ONLY
    worker_id: str
    row: Callable[[], WorkerInfo]
    resize: Callable[[int], None]
    # The handlers' declared limits, recorded once (retried with each beat until then).
    limits: list[TypeLimit] | None = None
    queues: dict[str, QueueInfo] = field(default_factory=dict, init=False)
    # Queue -> the unsafe timeout already warned of.
    _warned: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    async def run(self) -> None:
        backend = self.backend
        slots = self.slots
        while True:
            try:
                await self.declare_limits()
                control = await backend.worker_beat(self.row())
                if control.desired_concurrency and control.desired_concurrency != slots.concurrency:
                    self.resize(control.desired_concurrency)
                for key in control.close_circuits:
                    self.circuits.force_close(key)
                self.queues = {q.name: q for q in await backend.queue_list()}
                self._check_zombie_timeouts()
                if slots.buffer:
                    await self._release_paused()
                # This loop reports storage trouble too, so it must also report the recovery:
                # else a worker whose fetch loop never failed stays "storage unavailable" (in
                # its health check, and silent about the next outage) for ever.
                self.outage.recovered()
            except StorageError as exc:
                self.outage.trouble(exc)
            await asyncio.sleep(self.settings.worker_beat_interval_seconds)

    async def declare_limits(self) -> None:
        """Record the handlers' declared limits, once (a no-op after the first success). The
        fetch loop calls it before its first claim, so that no job of a newly limited type
        starts unlimited; this loop retries it after a failure."""
        if self.limits is not None:
            await self.backend.limits_declare(limits=self.limits)
            self.limits = None

    def _check_zombie_timeouts(self) -> None:
        """The seam refuses a stored zombie timeout under three *default* heartbeat intervals;
        a worker configured to beat less often can still find one too short for itself, and
        its healthy jobs would be dead-lettered as zombies. Say so, once per queue and value."""
        safe = ZOMBIE_HEARTBEAT_MARGIN * self.settings.heartbeat_max_seconds
        served = self.settings.queues
        for name, queue in self.queues.items():
            timeout = queue.zombie_timeout_seconds
            if timeout is None or timeout >= safe or (served is not None and name not in served):
                self._warned.pop(name, None)
                continue
            if self._warned.get(name) == timeout:
                continue
            self._warned[name] = timeout
            log_event(
                Event.WORKER_QUEUE_TIMEOUT_UNSAFE,
                f"queue {name!r} has a zombie timeout of {timeout:g} s, under "
                f"{ZOMBIE_HEARTBEAT_MARGIN} of this worker's heartbeat intervals "
                f"({self.settings.heartbeat_max_seconds:g} s at most): its healthy running jobs "
                "may be dead-lettered as zombies; raise the queue's timeout "
                "(chokaq queue limit) or the heartbeat rate",
                level=WARNING,
                worker_id=self.worker_id,
                queue=name,
                zombie_timeout_seconds=timeout,
                heartbeat_max_seconds=self.settings.heartbeat_max_seconds,
            )

    async def _release_paused(self) -> None:
        queues = self.queues

        def paused(job: ClaimedJob) -> bool:
            queue = queues.get(job.queue)
            return queue is not None and (queue.paused or not queue.active)

        jobs = self.slots.unbuffer(paused)
        if jobs:
            await release(self.backend, jobs, worker_id=self.worker_id)

"""When a burst worker may stop: what Pending work is left for it, and why.

A burst worker (``--burst``) stops once nothing is claimable, but only exits 0 when no
eligible work is left. Work that falls due soon (a retry's backoff, a circuit's re-probe, a
delayed job) is waited for, within ``burst_horizon_seconds`` of the last job it started under a
closed circuit (a probe counts only when it succeeds); what is still left after that (retries
due later, jobs held by an open circuit, due jobs it cannot claim, jobs of types it has no
handler for) makes it stop with ``EXIT_WORK_LEFT`` and a line naming counts and reasons.
Delayed jobs that were never tried and fall due past the horizon are not "left": they were
enqueued for later. Jobs of paused or inactive queues are not eligible.

Owns that assessment only (one storage read, no writes); the worker waits and stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..logs import Event, log_event
from ..models import PendingGroup, QueueInfo
from ..settings import WorkerSettings
from ..storage import Backend
from .circuit import CircuitBreakers, CircuitSnapshot, CircuitState
from .executor import Executor

__all__ = ["EXIT_WORK_LEFT", "BurstWatch", "Leftover", "Verdict", "assess", "describe"]

# The exit code of ``chokaq worker --burst`` that stopped with eligible work left (EX_TEMPFAIL
# of sysexits.h: "try again later"), distinct from 1 (an error) and 2 (bad usage or settings).
EXIT_WORK_LEFT = 75

# How soon to look again at due jobs that could not be claimed (a full bulkhead, or another
# worker's claim that may be given back).
_RECHECK_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class Leftover:
    """Pending jobs of one (queue, type) a burst worker leaves, and why."""

    queue: str
    type: str
    count: int
    reason: str  # "circuit_open", "no_handler", "waiting", "unclaimable"
    next_due_at: datetime | None = None


_WHY = {
    "circuit_open": "held by an open circuit",
    "no_handler": "of a type this worker has no handler for",
    "waiting": "waiting to run again",
    "unclaimable": "due but not claimable (queue at max_workers, or held by another worker)",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """``wait_seconds``: look again after that long (None: stop now). ``left``: what stays."""

    wait_seconds: float | None
    left: tuple[Leftover, ...]


async def assess(
    backend: Backend,
    *,
    queues: Sequence[str] | None,
    queue_info: Mapping[str, QueueInfo],
    circuits: Iterable[CircuitSnapshot],
    handles: Callable[[str, str], bool],
    may_wait_seconds: float,
    now: datetime,
) -> Verdict:
    """What is left in ``queues`` (None: all) for a worker whose circuits are ``circuits`` and
    that ``handles(queue, type)``; wait while something falls due within ``may_wait_seconds``."""
    groups = await backend.jobs_pending_groups(queues=queues, now=now)
    held = {c.key: c for c in circuits if c.state is not CircuitState.CLOSED}
    left: list[Leftover] = []
    wakes: list[float] = []
    for group in groups:
        info = queue_info.get(group.queue)
        if info is not None and (info.paused or not info.active):
            continue  # not eligible: an operator stopped the queue
        until_due = _seconds_until(group, now)
        circuit = held.get(group.type)
        if circuit is not None:
            left.append(Leftover(group.queue, group.type, group.pending, "circuit_open"))
            wakes.append(circuit.reset_in_seconds or _RECHECK_SECONDS)
        elif not handles(group.queue, group.type):
            left.append(Leftover(group.queue, group.type, group.pending, "no_handler"))
            if until_due is not None:
                wakes.append(until_due)
        else:
            if group.due:
                left.append(Leftover(group.queue, group.type, group.due, "unclaimable"))
                wakes.append(_RECHECK_SECONDS)
            if group.waiting:
                left.append(
                    Leftover(group.queue, group.type, group.waiting, "waiting", group.next_due_at)
                )
            if until_due is not None:
                wakes.append(until_due)
    soonest = min(wakes, default=None)
    if soonest is not None and soonest <= may_wait_seconds:
        return Verdict(max(soonest, 0.0), tuple(left))
    return Verdict(None, tuple(left))


def _seconds_until(group: PendingGroup, now: datetime) -> float | None:
    if group.next_due_at is None:
        return None
    return max(0.0, (group.next_due_at - now).total_seconds())


def describe(left: Sequence[Leftover]) -> str:
    """One line naming counts and reasons: ``3 jobs of charge on default held by ...; ...``."""
    parts = []
    for item in left:
        noun = "job" if item.count == 1 else "jobs"
        text = f"{item.count} {noun} of {item.type} on {item.queue} {_WHY[item.reason]}"
        if item.next_due_at is not None:
            text += f" (next due {item.next_due_at.isoformat(timespec='seconds')})"
        parts.append(text)
    return "; ".join(parts)


@dataclass(eq=False)
class BurstWatch:
    """A burst worker's view of its progress: ``progressed()`` when it starts a job it has a
    handler for under a closed circuit, or a circuit's probe succeeds; ``verdict()`` once
    nothing is claimable. It waits for work that falls due within ``burst_horizon_seconds`` of
    the last progress, so a circuit that keeps re-opening (its failed probes are not progress)
    or a type nobody handles cannot keep it running for ever."""

    backend: Backend
    settings: WorkerSettings
    circuits: CircuitBreakers
    executor: Executor
    _progress: float = field(default_factory=time.monotonic, init=False, repr=False)

    def progressed(self) -> None:
        self._progress = time.monotonic()

    def handles(self, queue: str, job_type: str) -> bool:
        """Whether this worker can run a job of ``job_type`` on ``queue`` (handler or pipe)."""
        return job_type in self.executor.handlers or queue in self.executor.pipes

    def report(self, left: Sequence[Leftover], worker_id: str) -> None:
        """The line that names what a burst left and why (when nothing is left, the worker's
        one ``worker_stopped`` line says so)."""
        if not left:
            return
        log_event(
            Event.WORKER_BURST_WORK_LEFT,
            f"burst stopped with work left: {describe(left)}",
            level=30,
            worker_id=worker_id,
            jobs=sum(item.count for item in left),
            reasons=",".join(sorted({item.reason for item in left})),
        )

    async def verdict(self) -> Verdict:
        horizon = self.settings.burst_horizon_seconds
        return await assess(
            self.backend,
            queues=self.settings.queues,
            # Read now, not the registry's view: that may predate a pause, or the first beat.
            queue_info={q.name: q for q in await self.backend.queue_list()},
            circuits=self.circuits.snapshot(),
            handles=self.handles,
            may_wait_seconds=self._progress + horizon - time.monotonic(),
            now=datetime.now(UTC),
        )

"""Why jobs wait: pending jobs by queue and type, each group with the reason its due jobs are not
running (no live worker serves the queue, the queue is paused, an open circuit defers the type,
a rate limit or partition concurrency holds them, or they simply wait for a free slot) and the
jobs not due yet (retrying later, delayed by design, waiting on parents).

Circuits live in each worker's memory; every worker publishes its breakers' snapshot in its
row of the workers table at each beat, which is where this reads them: a type counts as
deferred by its circuit when the circuit is open on every live worker serving the queue (a
worker that still runs the type would drain it). Limits are read as the Limits panel reads them
(``limits_list``: each limit's held jobs). Owns that composition only: it reads through the
backend (five reads, no writes) and is shared by The Deck and ``chokaq stats``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from .models import LagGroup, LimitInfo, QueueInfo, UnservedQueue, WorkerInfo
from .storage import Backend
from .storage.checks import MAX_LAG_GROUPS

__all__ = ["REASONS", "WaitRow", "Waits", "explain", "unserved_message"]

# Every reason a group can carry, the due ones first in the order they are decided.
REASONS = (
    "no_worker",
    "paused",
    "circuit",
    "limit",
    "capacity",
    "retrying",
    "delayed",
    "parents",
)


@dataclass(frozen=True, slots=True)
class WaitRow:
    """One (queue, type) and why its jobs wait. ``lag_seconds``: how long the oldest due job
    has been due (None when none is). ``reason``: one of ``REASONS`` (for due jobs, the first
    that applies); ``detail``: the operator's sentence. ``circuit``: the type's circuit key
    when a circuit is open on a worker serving the queue. ``held``: due jobs a limit holds."""

    queue: str
    type: str
    pending: int
    due: int
    retrying: int
    delayed: int
    on_parents: int
    lag_seconds: float | None
    next_due_at: datetime | None
    reason: str
    detail: str
    circuit: str | None = None
    held: int = 0


@dataclass(frozen=True, slots=True)
class Waits:
    """The groups (most due first, at most ``limit``; ``truncated`` when more exist), and the
    queues with due jobs no live worker serves."""

    at: datetime
    rows: tuple[WaitRow, ...]
    unserved: tuple[UnservedQueue, ...]
    truncated: bool

    def counts(self) -> dict[str, int]:
        """Due jobs per due reason, and jobs per not-due reason, over every row."""
        out = dict.fromkeys(REASONS, 0)
        for row in self.rows:
            out[row.reason] += row.due if row.due else 0
            out["retrying"] += row.retrying
            out["delayed"] += row.delayed
            out["parents"] += row.on_parents
        return out

    def as_json(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            # As the Deck's API and the CLI's --json write times: UTC, ending in Z.
            if value is None:
                return None
            return value.astimezone(UTC).isoformat().replace("+00:00", "Z")

        return {
            "at": iso(self.at),
            "rows": [{**asdict(r), "next_due_at": iso(r.next_due_at)} for r in self.rows],
            "unserved": [unserved_json(u) for u in self.unserved],
            "truncated": self.truncated,
            "counts": self.counts(),
        }


def unserved_json(queue: UnservedQueue) -> dict[str, Any]:
    return {**asdict(queue), "message": unserved_message(queue)}


def unserved_message(queue: UnservedQueue) -> str:
    """The banner's sentence: ``queue 'emails': 120 due jobs, no live worker serves it``."""
    count = f"{queue.due:,}{'+' if queue.more else ''}"
    noun = "job" if queue.due == 1 and not queue.more else "jobs"
    return f"queue {queue.queue!r}: {count} due {noun}, no live worker serves it"


async def explain(
    backend: Backend,
    *,
    limit: int = 200,
    alive_within_seconds: float = 60.0,
    now: datetime | None = None,
) -> Waits:
    """Why jobs wait now, as ``Waits``: ``limit`` (1..1000) groups at most."""
    at = now or datetime.now(UTC)
    # One more than asked tells whether more exist (at the read's own maximum, it cannot).
    groups = await backend.jobs_lag(limit=min(limit + 1, MAX_LAG_GROUPS), now=at)
    unserved = await backend.queues_unserved(alive_within_seconds=alive_within_seconds, now=at)
    workers = await backend.workers_list(alive_within_seconds=alive_within_seconds, now=at)
    queues = {q.name: q for q in await backend.queue_list()}
    limits = await backend.limits_list(now=at)
    judge = _Judge(queues, {u.queue for u in unserved}, workers, limits)
    rows = tuple(judge.row(group, at) for group in groups[:limit])
    return Waits(at, rows, tuple(unserved), truncated=len(groups) > limit)


def open_circuits(info: WorkerInfo) -> dict[str, float | None]:
    """The types whose circuit is open on this worker (and seconds until it may probe), from
    the snapshot it published; a malformed snapshot counts as none."""
    try:
        items = json.loads(info.circuits or "[]")
    except ValueError:
        return {}
    out: dict[str, float | None] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        if item.get("state") == "open":
            reset = item.get("reset_in_seconds")
            out[item["key"]] = float(reset) if isinstance(reset, int | float) else None
    return out


class _Judge:
    """Decides each group's reason from the queues, workers and limits read once."""

    def __init__(
        self,
        queues: dict[str, QueueInfo],
        unserved: set[str],
        workers: Sequence[WorkerInfo],
        limits: Iterable[LimitInfo],
    ) -> None:
        self.queues = queues
        self.unserved = unserved
        self.workers = [(w.queues, open_circuits(w)) for w in workers]
        self.limits = {(i.scope, i.name): i for i in limits}

    def row(self, group: LagGroup, at: datetime) -> WaitRow:
        lag = None
        if group.due and group.oldest_due_at is not None:
            lag = max(0.0, (at - group.oldest_due_at).total_seconds())
        reason, detail, circuit, held = self._due_reason(group) if group.due else self._later(group)
        return WaitRow(
            queue=group.queue,
            type=group.type,
            pending=group.pending,
            due=group.due,
            retrying=group.retrying,
            delayed=group.delayed,
            on_parents=group.on_parents,
            lag_seconds=lag,
            next_due_at=group.next_due_at,
            reason=reason,
            detail=detail,
            circuit=circuit,
            held=held,
        )

    def _due_reason(self, group: LagGroup) -> tuple[str, str, str | None, int]:
        queue = self.queues.get(group.queue)
        if queue is not None and not queue.active:
            return "paused", "the queue is hidden (inactive): nothing is claimed from it", None, 0
        if queue is not None and queue.paused:
            return "paused", "the queue is paused", None, 0
        if group.queue in self.unserved:
            return "no_worker", "no live worker serves this queue", None, 0
        serving = [c for qs, c in self.workers if not qs or group.queue in qs]
        opened = [c[group.type] for c in serving if group.type in c]
        if serving and len(opened) == len(serving):
            waits = [s for s in opened if s is not None]
            probe = f"; next probe in {max(waits):.0f} s" if waits else ""
            return (
                "circuit",
                f"deferred by the open circuit of {group.type!r} on every worker serving "
                f"the queue ({len(serving)}){probe}",
                group.type,
                0,
            )
        held, why = self._held(group)
        if held:
            return "limit", why, group.type if opened else None, held
        detail = "due, waiting for a free worker slot"
        if opened:
            detail += f" (circuit open on {len(opened)} of {len(serving)} workers)"
            return "capacity", detail, group.type, 0
        return "capacity", detail, None, 0

    def _held(self, group: LagGroup) -> tuple[int, str]:
        """Due jobs a limit holds back now: the type's (rate or partition concurrency), then
        the queue's rate. Counts are the limit's own (over every queue for a type's limit),
        capped at this group's due jobs."""
        kind = self.limits.get(("type", group.type))
        if kind is not None and kind.held:
            parts = []
            if kind.rate_limit:
                parts.append(f"rate {kind.rate_limit}")
            if kind.partition_concurrency is not None:
                parts.append(f"partition concurrency {kind.partition_concurrency}")
            return min(group.due, kind.held), f"held by the type's limit ({', '.join(parts)})"
        queue = self.limits.get(("queue", group.queue))
        if queue is not None and queue.held:
            return min(group.due, queue.held), f"held by the queue's rate ({queue.rate_limit})"
        return 0, ""

    @staticmethod
    def _later(group: LagGroup) -> tuple[str, str, str | None, int]:
        # The next due time is its own field (``next_due_at``): each reader shows it its way.
        if group.retrying:
            return "retrying", "run before, due again later", None, 0
        if group.delayed:
            return "delayed", "enqueued for later", None, 0
        return "parents", "waiting on parents (after=)", None, 0

"""What every request of one Deck shares (``DeckState``: the chokaq app, the authorizer, the
session signer and settings) and the live snapshot it caches for the event stream and the
overview (``snapshot``), the limited queues and types among it.

Owns that shared state and the one cached read; the HTTP side (routes, cookies, headers) is
``app``'s and the API handlers are ``api``'s. It reaches data only through the backend and must
not import either of those modules.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request

from ..app import App
from ..models import LimitInfo, PendingGroup
from ..views import circuits_of, dump, limit_json, queue_json, throughput_json
from .auth import (
    Authorizer,
    Credentials,
    Principal,
    Revocations,
    SessionSigner,
    resolve,
)
from .throttle import LoginThrottle
from .waits import WaitReads

__all__ = [
    "LIMITS_SECONDS",
    "SNAPSHOT_DUTY",
    "SNAPSHOT_MAX_AGE_SECONDS",
    "TOP_ERRORS_SECONDS",
    "DeckState",
    "snapshot",
]

TOP_ERRORS_SECONDS = 5.0
# The limits list counts each limit's load (its pending, running and recently started jobs):
# a few reads per limit, so the stream refreshes it at most this often, not every poll. Its
# current rate is taken over 10 s, so a 2 s old reading is still a fair one.
LIMITS_SECONDS = 2.0
# The live snapshot is read at most once per poll interval for all open streams, and no more
# often than its own cost allows: at most this share of the time is spent reading it (a
# snapshot that took 60 ms is reused for 1.2 s), so a bigger store slows the live view down
# instead of keeping a database connection busy, up to SNAPSHOT_MAX_AGE_SECONDS between reads.
SNAPSHOT_DUTY = 0.05
SNAPSHOT_MAX_AGE_SECONDS = 5.0


@dataclass
class DeckState:
    """What every request of one Deck shares: the chokaq app, the authorizer and settings."""

    app: App
    authorizer: Authorizer | None
    signer: SessionSigner
    credentials: Credentials | None
    poll_interval_seconds: float
    title: str
    # Failed logins per user and client, shared by the login form and Basic/Bearer auth.
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    # Sessions ended by a logout (until they would have expired anyway).
    revoked: Revocations = field(default_factory=Revocations)
    # Why jobs wait: the banner's read at every snapshot, the panel's every few seconds.
    waits: WaitReads = field(default_factory=WaitReads)

    # One snapshot is shared by every open stream of this Deck, and the (heavier) top-errors
    # scan is refreshed at most every TOP_ERRORS_SECONDS: ten operators watching must not mean
    # ten times the storage reads.
    _snapshot: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _snapshot_at: float = field(default=0.0, init=False, repr=False)
    _snapshot_seconds: float = field(default=0.0, init=False, repr=False)
    _errors: list[Any] | None = field(default=None, init=False, repr=False)
    _errors_at: float = field(default=0.0, init=False, repr=False)
    _notices: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)
    _notices_at: float = field(default=0.0, init=False, repr=False)
    _limits: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)
    _limits_at: float = field(default=0.0, init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)

    async def principal(self, request: Request) -> Principal | None:
        return await resolve(self.authorizer, request)

    async def live_snapshot(self) -> dict[str, Any]:
        """The current snapshot, read from storage at most once per poll interval and at most
        ``SNAPSHOT_DUTY`` of the time (see there)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            age = time.monotonic() - self._snapshot_at
            if self._snapshot is None or age >= self.snapshot_interval():
                started = time.monotonic()
                self._snapshot = await snapshot(self)
                self._snapshot_at = time.monotonic()
                self._snapshot_seconds = self._snapshot_at - started
            return self._snapshot

    def snapshot_interval(self) -> float:
        """How long a snapshot is reused: the poll interval, or longer when reading it took
        more than ``SNAPSHOT_DUTY`` of that (at most ``SNAPSHOT_MAX_AGE_SECONDS``)."""
        by_cost = min(self._snapshot_seconds / SNAPSHOT_DUTY, SNAPSHOT_MAX_AGE_SECONDS)
        return max(self.poll_interval_seconds * 0.9, by_cost)

    async def top_errors(self) -> list[Any]:
        if self._errors is None or time.monotonic() - self._errors_at >= TOP_ERRORS_SECONDS:
            self._errors = await self.app.backend.dlq_top_errors(limit=5)
            self._errors_at = time.monotonic()
        return self._errors

    async def notices(self) -> list[dict[str, Any]]:
        """Lines an operator should see, refreshed like the top errors: pending jobs that
        workers released because none of them has a handler for their type."""
        if self._notices is None or time.monotonic() - self._notices_at >= TOP_ERRORS_SECONDS:
            groups = await self.app.backend.jobs_pending_groups()
            self._notices = [no_handler_notice(g) for g in groups if g.no_handler]
            self._notices_at = time.monotonic()
        return self._notices

    async def limits(self) -> list[dict[str, Any]]:
        """Every limited queue and type with its load (``limit_json`` rows), refreshed at most
        every ``LIMITS_SECONDS``."""
        if self._limits is None or time.monotonic() - self._limits_at >= LIMITS_SECONDS:
            self._limits = [self.limit_json(i) for i in await self.app.backend.limits_list()]
            self._limits_at = time.monotonic()
        return self._limits

    def limit_json(self, info: LimitInfo) -> dict[str, Any]:
        """A limit's row, with the queue its type's handler is registered on when this Deck's
        app registers the type (the store keeps no queue per type: jobs of one type may be
        enqueued on any queue)."""
        handler = self.app.handlers.get(info.name) if info.scope == "type" else None
        return limit_json(info, handler.queue if handler is not None else None)

    def invalidate(self) -> None:
        """Forget cached reads after a mutation, so the next snapshot shows its effect."""
        self._snapshot = None
        self._errors = None
        self._notices = None
        self._limits = None
        self.waits.forget()

    async def ensure_open(self) -> None:
        await self.app.open()


async def snapshot(state: DeckState) -> dict[str, Any]:
    """Everything the live panels show, in one compact document (also the SSE payload)."""
    backend = state.app.backend
    now = datetime.now(UTC)
    summary = await backend.stats_summary()
    throughput = await backend.stats_throughput()
    queues = await backend.stats_queues()
    workers = await backend.workers_list()
    series = await backend.stats_series(since=now - timedelta(seconds=15), width_seconds=1)
    errors = await state.top_errors()
    limits = await state.limits()
    rates = {row["name"]: row for row in limits if row["scope"] == "queue"}
    return {
        "at": dump(now),
        "summary": dump(summary),
        "throughput": throughput_json(throughput),
        "queues": [with_rate(queue_json(q), rates.get(q.queue.name)) for q in queues],
        "workers": [{k: v for k, v in dump(w).items() if k != "circuits"} for w in workers],
        "circuits": circuits_of([(w.id, w.circuits) for w in workers]),
        "series_tail": dump(series),
        "top_errors": dump(errors),
        "notices": await state.notices(),
        "limits": limits,
        **await state.waits.snapshot(state.app),
    }


def with_rate(queue: dict[str, Any], limit: dict[str, Any] | None) -> dict[str, Any]:
    """A queue row with the rate in force for it (``rate_limit``, None when it has none)."""
    return {**queue, "rate_limit": limit["rate_limit"] if limit is not None else None}


def no_handler_notice(group: PendingGroup) -> dict[str, Any]:
    """The notice of pending jobs of one (queue, type) released for want of a handler."""
    n = group.no_handler
    jobs = "1 pending job" if n == 1 else f"{n} pending jobs"
    return {
        "kind": "no_handler",
        "queue": group.queue,
        "type": group.type,
        "count": n,
        "message": (
            f"{jobs} of type {group.type!r} on queue {group.queue!r}: no worker that claimed "
            f"{'it' if n == 1 else 'them'} has a handler for the type. Released and retried; "
            "rejected after unknown_type_grace_seconds unless a worker with the handler starts."
        ),
    }

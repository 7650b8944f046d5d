"""The conformance suite's shared vocabulary: a fixed clock and short ways to move jobs around.

Every test injects ``now=`` from this clock (``T0`` plus seconds), so nothing here or in the
suite sleeps. The helpers go through the public ``Backend`` interface only; raw SQL lives in the
``raw`` fixture of ``conftest.py`` and is used only where a test must plant or inspect rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from chokaq.models import (
    ClaimedJob,
    FailMove,
    FailureReason,
    NewJob,
    Pillar,
    QueueStats,
    SucceedMove,
    Summary,
    Throughput,
)
from chokaq.storage import Backend

# A fixed instant in the past: run_at validation compares with the real clock, so a past T0 keeps
# "at most 366 days ahead" true for every injected time the suite uses.
T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """T0 plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def job(type: str = "email.send", **fields: Any) -> NewJob:
    return NewJob(type=type, **fields)


async def enqueue(
    backend: Backend, count: int = 1, *, now: datetime = T0, **fields: Any
) -> list[str]:
    """Enqueue ``count`` identical jobs; returns their ids in order."""
    results = await backend.jobs_enqueue([job(**fields) for _ in range(count)], now=now)
    return [r.id for r in results]


async def claim(
    backend: Backend,
    limit: int = 100,
    *,
    worker: str = "w1",
    start: bool = True,
    now: datetime = T0,
    **options: Any,
) -> list[ClaimedJob]:
    return await backend.jobs_fetch(worker_id=worker, limit=limit, start=start, now=now, **options)


async def succeed(
    backend: Backend, claimed: list[ClaimedJob], *, now: datetime = T0, duration: float = 0.5
) -> list[bool]:
    moves = [SucceedMove(lease=c.lease, duration_seconds=duration) for c in claimed]
    return await backend.jobs_finalize(moves=moves, now=now)


async def fail(
    backend: Backend,
    claimed: list[ClaimedJob],
    *,
    now: datetime = T0,
    reason: FailureReason = FailureReason.TRANSIENT,
    error: str = "boom",
) -> list[bool]:
    moves = [FailMove(lease=c.lease, reason=reason, error=error) for c in claimed]
    return await backend.jobs_finalize(moves=moves, now=now)


@dataclass(frozen=True)
class Counters:
    """Everything an outcome is recorded in: lifetime counters, per-queue rows, rolling rates."""

    summary: Summary
    queues: tuple[QueueStats, ...]
    throughput: Throughput
    series: tuple[Any, ...]

    def lifetime(self) -> tuple[Any, ...]:
        """The never-decremented part: totals overall and per queue."""
        per_queue = tuple(
            (q.queue.name, q.succeeded_total, q.failed_total, q.retried_total) for q in self.queues
        )
        s = self.summary
        return (s.succeeded_total, s.failed_total, s.retried_total, per_queue)


async def counters(backend: Backend, *, now: datetime = T0) -> Counters:
    """Read every counter as of ``now`` (rates over the minute before it)."""
    return Counters(
        summary=await backend.stats_summary(),
        queues=tuple(await backend.stats_queues(now=now)),
        throughput=await backend.stats_throughput(now=now),
        series=tuple(await backend.stats_series(since=now - timedelta(hours=1), until=now)),
    )


async def totals(backend: Backend) -> dict[Pillar, int]:
    """How many rows each pillar holds."""
    out = {}
    for pillar in Pillar:
        out[pillar] = (await backend.jobs_page(pillar=pillar, page_size=1)).total
    return out

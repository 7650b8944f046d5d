"""Conversions between SQLite values and chokaq's values: timestamps, tags, rows to dataclasses.

Timestamps are stored as REAL Unix seconds (UTC) and come back as aware UTC datetimes; tags are
stored comma-joined (a tag cannot hold a comma). Owns mapping only; it must not run statements.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...models import (
    ClaimedJob,
    FailureReason,
    JobStatus,
    JobView,
    Lease,
    Pillar,
    QueueInfo,
    WorkerInfo,
)

__all__ = [
    "claimed_job",
    "from_ts",
    "job_view",
    "queue_info",
    "tags_in",
    "tags_out",
    "to_ts",
    "ts_now",
    "worker_info",
]


def ts_now(now: datetime | None) -> float:
    """``now`` (aware: the seam checked it) as Unix seconds, or the process clock when None."""
    return time.time() if now is None else now.timestamp()


def to_ts(value: datetime) -> float:
    """An aware time (the seam checked it) as Unix seconds."""
    return value.timestamp()


def from_ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def tags_in(tags: Sequence[str] | None) -> str | None:
    return ",".join(tags) if tags else None


def tags_out(text: str | None) -> tuple[str, ...]:
    return tuple(text.split(",")) if text else ()


def claimed_job(row: sqlite3.Row) -> ClaimedJob:
    return ClaimedJob(
        id=row["id"],
        queue=row["queue"],
        type=row["type"],
        payload=row["payload"],
        tags=tags_out(row["tags"]),
        priority=row["priority"],
        status=JobStatus(row["status"]),
        attempt_count=row["attempt_count"],
        max_attempts=row["max_attempts"],
        timeout_seconds=row["timeout_seconds"],
        idempotency_key=row["idempotency_key"],
        created_at=_dt(row["created_at"]),
        scheduled_at=from_ts(row["scheduled_at"]),
        started_at=from_ts(row["started_at"]),
        created_by=row["created_by"],
        last_error=row["last_error"],
        trace_context=row["trace_context"],
        lease=Lease(job_id=row["id"], worker_id=row["worker_id"], token=row["lease_token"]),
    )


_TIMES = (
    "scheduled_at",
    "started_at",
    "heartbeat_at",
    "updated_at",
    "finished_at",
    "failed_at",
    "cancel_requested_at",
)
_PLAIN = (
    "max_attempts",
    "timeout_seconds",
    "idempotency_key",
    "worker_id",
    "created_by",
    "last_modified_by",
    "duration_seconds",
    "error",
    "last_error",
    "progress",
    "cancelled_by",
)


def job_view(pillar: Pillar, row: sqlite3.Row) -> JobView:
    """A row of any pillar as a ``JobView``; columns the pillar lacks stay None."""
    keys = set(row.keys())
    extra: dict[str, object] = {}
    for name in _TIMES:
        if name in keys:
            extra[name] = from_ts(row[name])
    for name in _PLAIN:
        if name in keys:
            extra[name] = row[name]
    if "status" in keys and row["status"] is not None:
        extra["status"] = JobStatus(row["status"])
    if "failure_reason" in keys and row["failure_reason"] is not None:
        extra["failure_reason"] = FailureReason(row["failure_reason"])
    return JobView(
        pillar=pillar,
        id=row["id"],
        queue=row["queue"],
        type=row["type"],
        payload=row["payload"],
        tags=tags_out(row["tags"]),
        priority=row["priority"],
        attempt_count=row["attempt_count"],
        created_at=_dt(row["created_at"]),
        **extra,  # type: ignore[arg-type]
    )


def queue_info(row: sqlite3.Row | tuple[Any, ...]) -> QueueInfo:
    values: tuple[Any, ...] = tuple(row)
    name, paused, active, max_workers, zombie, execution, updated_at = values[:7]
    return QueueInfo(
        name=str(name),
        paused=bool(paused),
        active=bool(active),
        max_workers=max_workers,
        zombie_timeout_seconds=zombie,
        execution_timeout_seconds=execution,
        updated_at=_dt(updated_at),
    )


def worker_info(row: sqlite3.Row) -> WorkerInfo:
    return WorkerInfo(
        id=row["id"],
        hostname=row["hostname"],
        pid=row["pid"],
        queues=tuple(json.loads(row["queues"])) if row["queues"] else (),
        concurrency=row["concurrency"],
        desired_concurrency=row["desired_concurrency"],
        running=row["running"],
        state=row["state"],
        started_at=_dt(row["started_at"]),
        heartbeat_at=_dt(row["heartbeat_at"]),
        circuits=row["circuits"],
    )

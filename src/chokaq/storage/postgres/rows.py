"""Turns the PostgreSQL driver's result rows into the frozen dataclasses of ``chokaq.models``.

Owns the column order of each ``SELECT`` / ``RETURNING`` list in ``queries.sql`` (kept in step
with it by hand) and the small conversions: comma-joined tags to tuples, ints to enums. It must
not run queries.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    "job_view",
    "join_tags",
    "queue_info",
    "split_tags",
    "worker_info",
]

Row = Sequence[Any]

_STATUSES = {s.value: s for s in JobStatus}


def join_tags(tags: Sequence[str]) -> str | None:
    """Tags as stored: comma-joined text, or NULL when there are none."""
    return ",".join(tags) if tags else None


def split_tags(text: str | None) -> tuple[str, ...]:
    return tuple(text.split(",")) if text else ()


def claimed_job(row: Row) -> ClaimedJob:
    """A row of ``jobs_fetch``."""
    return ClaimedJob(
        id=row[0],
        queue=row[1],
        type=row[2],
        payload=row[3],
        tags=tuple(row[4].split(",")) if row[4] else (),
        priority=row[5],
        status=_STATUSES[row[6]],
        attempt_count=row[7],
        max_attempts=row[8],
        timeout_seconds=row[9],
        idempotency_key=row[10],
        created_at=row[11],
        scheduled_at=row[12],
        started_at=row[13],
        created_by=row[14],
        last_error=row[15],
        trace_context=row[16],
        lease=Lease(job_id=row[0], worker_id=row[17], token=row[18]),
    )


# The columns of each pillar's ``*_get`` / ``*_page`` statements, in order, named as the
# ``JobView`` fields they fill (a column a pillar lacks stays None in the view).
_SHARED = ("id", "queue", "type", "payload", "tags", "priority", "attempt_count", "created_at")
_DONE = (
    "max_attempts",
    "timeout_seconds",
    "worker_id",
    "created_by",
    "last_modified_by",
    "started_at",
)
_VIEW_COLUMNS: dict[Pillar, tuple[str, ...]] = {
    Pillar.HOT: (
        *_SHARED,
        "status",
        "max_attempts",
        "timeout_seconds",
        "idempotency_key",
        "worker_id",
        "created_by",
        "last_modified_by",
        "scheduled_at",
        "started_at",
        "heartbeat_at",
        "updated_at",
        "last_error",
        "progress",
        "cancel_requested_at",
        "cancelled_by",
    ),
    Pillar.ARCHIVE: (*_SHARED, *_DONE, "finished_at", "duration_seconds"),
    Pillar.DLQ: (
        *_SHARED,
        *_DONE,
        "failed_at",
        "duration_seconds",
        "failure_reason",
        "error",
        "cancelled_by",
    ),
}


def job_view(pillar: Pillar, row: Row) -> JobView:
    """A row of ``{pillar}_get`` / ``{pillar}_page``."""
    fields: dict[str, Any] = dict(zip(_VIEW_COLUMNS[pillar], row, strict=True))
    fields["tags"] = split_tags(fields["tags"])
    if "status" in fields:
        fields["status"] = JobStatus(fields["status"])
    if "failure_reason" in fields:
        fields["failure_reason"] = FailureReason(fields["failure_reason"])
    return JobView(pillar=pillar, **fields)


def queue_info(row: Row) -> QueueInfo:
    """A row of the ``queue_*`` statements."""
    return QueueInfo(
        name=row[0],
        paused=row[1],
        active=row[2],
        max_workers=row[3],
        zombie_timeout_seconds=row[4],
        execution_timeout_seconds=row[5],
        updated_at=row[6],
    )


def worker_info(row: Row) -> WorkerInfo:
    """A row of ``workers_list``."""
    return WorkerInfo(
        id=row[0],
        hostname=row[1],
        pid=row[2],
        queues=split_tags(row[3]),
        concurrency=row[4],
        desired_concurrency=row[5],
        running=row[6],
        state=row[7],
        started_at=row[8],
        heartbeat_at=row[9],
        circuits=row[10],
    )

"""Turns the PostgreSQL backend's result rows into the frozen dataclasses of ``chokaq.models``.

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
    "archive_view",
    "claimed_job",
    "dlq_view",
    "hot_view",
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


def hot_view(row: Row) -> JobView:
    """A row of ``hot_get`` / ``hot_page``."""
    return JobView(
        pillar=Pillar.HOT,
        id=row[0],
        queue=row[1],
        type=row[2],
        payload=row[3],
        tags=split_tags(row[4]),
        priority=row[5],
        attempt_count=row[6],
        created_at=row[7],
        status=JobStatus(row[8]),
        max_attempts=row[9],
        timeout_seconds=row[10],
        idempotency_key=row[11],
        worker_id=row[12],
        created_by=row[13],
        last_modified_by=row[14],
        scheduled_at=row[15],
        started_at=row[16],
        heartbeat_at=row[17],
        updated_at=row[18],
        last_error=row[19],
        progress=row[20],
        cancel_requested_at=row[21],
        cancelled_by=row[22],
    )


def archive_view(row: Row) -> JobView:
    """A row of ``archive_get`` / ``archive_page``."""
    return JobView(
        pillar=Pillar.ARCHIVE,
        id=row[0],
        queue=row[1],
        type=row[2],
        payload=row[3],
        tags=split_tags(row[4]),
        priority=row[5],
        attempt_count=row[6],
        created_at=row[7],
        max_attempts=row[8],
        timeout_seconds=row[9],
        worker_id=row[10],
        created_by=row[11],
        last_modified_by=row[12],
        started_at=row[13],
        finished_at=row[14],
        duration_seconds=row[15],
    )


def dlq_view(row: Row) -> JobView:
    """A row of ``dlq_get`` / ``dlq_page``."""
    return JobView(
        pillar=Pillar.DLQ,
        id=row[0],
        queue=row[1],
        type=row[2],
        payload=row[3],
        tags=split_tags(row[4]),
        priority=row[5],
        attempt_count=row[6],
        created_at=row[7],
        max_attempts=row[8],
        timeout_seconds=row[9],
        worker_id=row[10],
        created_by=row[11],
        last_modified_by=row[12],
        started_at=row[13],
        failed_at=row[14],
        duration_seconds=row[15],
        failure_reason=FailureReason(row[16]),
        error=row[17],
        cancelled_by=row[18],
    )


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

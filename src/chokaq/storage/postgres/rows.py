"""Turns the PostgreSQL driver's result rows into the frozen dataclasses of ``chokaq.models``.

Owns the column order of each ``SELECT`` / ``RETURNING`` list in ``sql/*.sql`` (kept in step
with it by hand), the small conversions (comma-joined tags to tuples, ints to enums), and the
slow path for a result psycopg cannot load as a whole (a timestamp before year 1 or after 9999,
or infinite, which PostgreSQL stores and Python cannot represent): each row loaded on its own
from the result already received, so one such row is identified (the claim) or shown with its
nearest representable value (the reads) instead of failing the whole statement. It must not
run queries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import pq

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
from ..driver import UndecodableRow

__all__ = [
    "claimed_job",
    "claimed_rows",
    "finite",
    "job_view",
    "join_tags",
    "lenient_rows",
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
        has_parents=row[19],
        partition=row[20],
        expires_at=row[21],
        requeues=row[22],
    )


# The columns of a ``jobs_fetch`` row that make its lease (all text: they always load).
_LEASE_COLUMNS = (0, 17, 18)


async def claimed_rows(cur: psycopg.AsyncCursor[Any]) -> list[ClaimedJob | UndecodableRow]:
    """The jobs a ``jobs_fetch`` cursor returned, in order; a row psycopg cannot load comes
    back as an ``UndecodableRow`` naming the column. The common path is one ``fetchall``; the
    slow one reads the result already received, with no round trip."""
    try:
        return [claimed_job(row) for row in await cur.fetchall()]
    except psycopg.DataError:
        pass
    jobs: list[ClaimedJob | UndecodableRow] = []
    for i, loaded in enumerate(_load_each(cur)):
        if isinstance(loaded, str):
            job_id, worker_id, token = (_text(cur, i, c) or "" for c in _LEASE_COLUMNS)
            lease = Lease(job_id=job_id, worker_id=worker_id, token=token)
            jobs.append(UndecodableRow(lease=lease, error=loaded))
        else:
            jobs.append(claimed_job(loaded))
    return jobs


async def lenient_rows(cur: psycopg.AsyncCursor[Any], *, one: bool = False) -> list[Row]:
    """Every row of the cursor (or the next one, with ``one``), where a timestamp psycopg
    cannot load reads as the nearest it can (year 1 or 9999, UTC): a listing or a detail view
    shows such a row instead of failing."""
    position = cur.rownumber or 0
    try:
        if one:
            row = await cur.fetchone()
            return [] if row is None else [row]
        return list(await cur.fetchall())
    except psycopg.DataError:
        pass
    result = cur.pgresult
    assert result is not None
    last = position + 1 if one else result.ntuples
    loaders = _loaders(cur)
    rows: list[Row] = []
    for i in range(position, min(last, result.ntuples)):
        values: list[Any] = []
        for c, loader in enumerate(loaders):
            raw = result.get_value(i, c)
            try:
                values.append(None if raw is None else loader.load(raw))
            except psycopg.DataError:
                values.append(_nearest_time(bytes(raw or b"")))
        rows.append(tuple(values))
    return rows


def _loaders(cur: psycopg.AsyncCursor[Any]) -> list[Any]:
    result = cur.pgresult
    assert result is not None
    loaders = []
    for c in range(result.nfields):
        oid, fmt = result.ftype(c), pq.Format(result.fformat(c))
        loaders.append(cur.adapters.get_loader(oid, fmt)(oid, cur))  # type: ignore[misc]
    return loaders


def _load_each(cur: psycopg.AsyncCursor[Any]) -> list[Row | str]:
    """Each row of the result loaded on its own: a tuple, or "column: why" for the first
    column of it that cannot be loaded."""
    result = cur.pgresult
    assert result is not None
    loaders = _loaders(cur)
    rows: list[Row | str] = []
    for i in range(result.ntuples):
        values: list[Any] = []
        error: str | None = None
        for c, loader in enumerate(loaders):
            raw = result.get_value(i, c)
            try:
                values.append(None if raw is None else loader.load(raw))
            except psycopg.DataError as exc:
                error = f"{(result.fname(c) or b'?').decode()}: {exc}"
                break
        rows.append(tuple(values) if error is None else error)
    return rows


def _text(cur: psycopg.AsyncCursor[Any], row: int, column: int) -> str | None:
    result = cur.pgresult
    assert result is not None
    raw = result.get_value(row, column)
    return None if raw is None else bytes(raw).decode()


_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def _nearest_time(raw: bytes) -> datetime:
    """The representable time nearest to a timestamp text Python cannot hold."""
    text = raw.decode(errors="replace")
    return _EARLIEST if text.endswith("BC") or text == "-infinity" else _LATEST


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
        "parents_left",
        "partition",
        "expires_at",
    ),
    Pillar.ARCHIVE: (
        *_SHARED,
        *_DONE,
        "finished_at",
        "duration_seconds",
        "result",
        "result_error",
        "partition",
    ),
    Pillar.DLQ: (
        *_SHARED,
        *_DONE,
        "failed_at",
        "duration_seconds",
        "failure_reason",
        "error",
        "cancelled_by",
        "partition",
        "error_type",
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
        hidden=row[7],
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


def finite(value: float | None) -> float | None:
    """A finite float, or None (JSON has no NaN or infinity)."""
    return None if value is None or not math.isfinite(value) else float(value)

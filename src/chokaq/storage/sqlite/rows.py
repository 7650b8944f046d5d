"""Conversions between SQLite values and chokaq's values: timestamps, tags, rows to dataclasses.

Timestamps are stored as REAL Unix seconds (UTC) and come back as aware UTC datetimes; tags are
stored comma-joined (a tag cannot hold a comma). SQLite keeps any value in any column, so a row
written by hand or by another client can hold text where a number belongs, or a time Python
cannot represent: the claim checks each value's type and names the first bad column
(``UndecodableRow``), and the reads show such a value as the nearest they can instead of
failing. Owns mapping only; it must not run statements.
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
from ..driver import UndecodableRow

__all__ = [
    "claimed_job",
    "claimed_or_undecodable",
    "from_ts",
    "given_ts",
    "job_view",
    "order_key",
    "queue_info",
    "tags_in",
    "tags_out",
    "to_ts",
    "tolerant_text",
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


class _Bad(Exception):
    """A column whose value the decoder refuses: ``str(exc)`` is "column: why"."""


_TEXT = (str,)
_INT = (int,)
_NUMBER = (int, float)


def _value(row: sqlite3.Row, name: str, kinds: tuple[type, ...], required: bool = False) -> Any:
    value = row[name]
    if value is None:
        if required:
            raise _Bad(f"{name}: is NULL")
        return None
    if not isinstance(value, kinds):
        raise _Bad(f"{name}: expected {kinds[0].__name__}, got {type(value).__name__} "
                   f"{value!r:.60}")  # fmt: skip
    return value


def _time(row: sqlite3.Row, name: str, required: bool = False) -> datetime | None:
    value = _value(row, name, _NUMBER, required)
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise _Bad(f"{name}: {exc} ({value!r})") from None


def claimed_job(row: sqlite3.Row) -> ClaimedJob:
    """A row of ``jobs_fetch``; raises ``_Bad`` naming the first column of the wrong type."""
    job_id = _value(row, "id", _TEXT, True)
    return ClaimedJob(
        id=job_id,
        queue=_value(row, "queue", _TEXT, True),
        type=_value(row, "type", _TEXT, True),
        payload=_value(row, "payload", _TEXT, True),
        tags=tags_out(_value(row, "tags", _TEXT)),
        priority=_value(row, "priority", _INT, True),
        status=JobStatus(row["status"]),
        attempt_count=_value(row, "attempt_count", _INT, True),
        max_attempts=_value(row, "max_attempts", _INT),
        timeout_seconds=_value(row, "timeout_seconds", _NUMBER),
        idempotency_key=_value(row, "idempotency_key", _TEXT),
        created_at=_time(row, "created_at", True),  # type: ignore[arg-type]
        scheduled_at=_time(row, "scheduled_at"),
        started_at=_time(row, "started_at"),
        created_by=_value(row, "created_by", _TEXT),
        last_error=_value(row, "last_error", _TEXT),
        trace_context=_value(row, "trace_context", _TEXT),
        lease=Lease(job_id=job_id, worker_id=row["worker_id"], token=row["lease_token"]),
        has_parents=row["parents_left"] is not None,
        partition=_value(row, "partition_key", _TEXT),
        expires_at=_time(row, "expires_at"),
        requeues=_value(row, "requeues", _INT, True),
    )


def tolerant_text(raw: bytes) -> str:
    """A ``text_factory`` for the slow paths: bytes that are not UTF-8 become lone surrogates
    (``surrogateescape``) instead of an error, so a row holding them can be found out."""
    return raw.decode("utf-8", "surrogateescape")


def _not_utf8(row: sqlite3.Row) -> str | None:
    """The first column of ``row`` read by ``tolerant_text`` that was not UTF-8, as an error."""
    for name, value in zip(row.keys(), tuple(row), strict=True):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"{name}: not valid UTF-8 text"
    return None


def claimed_or_undecodable(
    row: sqlite3.Row, *, check_text: bool = False
) -> ClaimedJob | UndecodableRow:
    """The claimed job, or its lease and why it cannot be decoded. ``check_text``: the row was
    read with ``tolerant_text``, so its text is checked for bytes that were not UTF-8."""
    try:
        bad = _not_utf8(row) if check_text else None
        if bad is not None:
            raise _Bad(bad)
        return claimed_job(row)
    except _Bad as exc:
        lease = Lease(job_id=str(row["id"]), worker_id=row["worker_id"], token=row["lease_token"])
        return UndecodableRow(lease=lease, error=str(exc))


def order_key(row: sqlite3.Row) -> tuple[float, float, float]:
    """A fetch candidate's claim order (priority DESC, due, created); a value that is not a
    number sorts first, so that its row is claimed (and rejected) instead of blocking."""
    return (-_number(row["priority"]), _number(row["sort_at"]), _number(row["created_at"]))


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else float("-inf")


_TIMES = (
    "expires_at",
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
    "error_type",
    "last_error",
    "progress",
    "cancelled_by",
    "result",
    "result_error",
    "parents_left",
)


def job_view(pillar: Pillar, row: sqlite3.Row) -> JobView:
    """A row of any pillar as a ``JobView``; columns the pillar lacks stay None. A value of
    the wrong type (written outside chokaq) is shown as the nearest it can be, never raised."""
    try:
        return _job_view(pillar, row, from_ts, _dt, lambda name, value: value)
    except (TypeError, ValueError, OverflowError, OSError):
        return _job_view(pillar, row, _lenient_ts, _lenient_ts, _lenient)


def _job_view(
    pillar: Pillar,
    row: sqlite3.Row,
    time_of: Any,
    required_time: Any,
    plain: Any,
) -> JobView:
    keys = set(row.keys())
    extra: dict[str, object] = {}
    for name in _TIMES:
        if name in keys:
            extra[name] = time_of(row[name])
    for name in _PLAIN:
        if name in keys:
            extra[name] = plain(name, row[name])
    if "status" in keys and row["status"] is not None:
        extra["status"] = JobStatus(row["status"])
    if "failure_reason" in keys and row["failure_reason"] is not None:
        extra["failure_reason"] = FailureReason(row["failure_reason"])
    if "partition_key" in keys:
        extra["partition"] = plain("partition", row["partition_key"])
    return JobView(
        pillar=pillar,
        id=row["id"],
        queue=row["queue"],
        type=row["type"],
        payload=plain("payload", row["payload"]),
        tags=tags_out(plain("tags", row["tags"])),
        priority=plain("priority", row["priority"]),
        attempt_count=plain("attempt_count", row["attempt_count"]),
        created_at=required_time(row["created_at"]),
        **extra,  # type: ignore[arg-type]
    )


_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_INT_FIELDS = {"priority", "attempt_count", "max_attempts", "progress"}
_NUMBER_FIELDS = {"timeout_seconds", "duration_seconds"}


def _lenient_ts(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, int | float):
        return _EARLIEST
    try:
        return datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        return _EARLIEST if value < 0 else _LATEST


def _lenient(name: str, value: object) -> object:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if name in _INT_FIELDS and value is not None and not isinstance(value, int):
        return 0 if name in ("priority", "attempt_count") else None
    if name in _NUMBER_FIELDS and value is not None and not isinstance(value, int | float):
        return None
    return value


def queue_info(row: sqlite3.Row | tuple[Any, ...]) -> QueueInfo:
    values: tuple[Any, ...] = tuple(row)
    name, paused, active, max_workers, zombie, execution, updated_at, hidden = values[:8]
    return QueueInfo(
        name=str(name),
        paused=bool(paused),
        active=bool(active),
        max_workers=max_workers,
        zombie_timeout_seconds=zombie,
        execution_timeout_seconds=execution,
        updated_at=_dt(updated_at),
        hidden=bool(hidden),
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


def given_ts(now: datetime | None) -> float | None:
    """An injected clock as Unix seconds; None when the statement is to read the clock itself
    (under the write lock: a claim's start is then never earlier than the moment it could see
    the slot it took free, though it waited for the lock)."""
    return None if now is None else now.timestamp()

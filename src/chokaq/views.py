"""How storage values become JSON for The Deck and the CLI, and how query strings become
filters.

Pure functions: dataclasses of ``chokaq.models`` in, plain JSON-ready dicts out; request
parameters in, validated ``JobFilter`` values out (``ValidationError`` naming the field). This
module must not do I/O; neither face owns it, so both render the same shapes.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ValidationError
from .limits import MAX_SEARCH_LENGTH, check_name, check_partition, check_text
from .models import (
    BatchSize,
    FailureReason,
    JobBatch,
    JobFilter,
    JobStatus,
    JobView,
    LimitInfo,
    Pillar,
    QueueStats,
    Schedule,
    SlotRecord,
    StepRecord,
    StreamItem,
    Throughput,
    Workflow,
)
from .storage.families import FAMILY_CHARS

__all__ = [
    "SOURCES",
    "batch_json",
    "batch_sizes_json",
    "circuits_of",
    "dump",
    "job_json",
    "limit_json",
    "parse_bool",
    "parse_datetime",
    "parse_filter",
    "parse_int",
    "queue_json",
    "schedule_json",
    "slot_json",
    "step_json",
    "stream_json",
    "throughput_json",
    "workflow_json",
]

# How many of a job's last stream items the inspector shows (``chokaq job stream`` has them all).
STREAM_TAIL = 20

SOURCES: dict[str, Pillar] = {"active": Pillar.HOT, "archive": Pillar.ARCHIVE, "dlq": Pillar.DLQ}
LAG_WARNING_SECONDS = 5.0
LAG_CRITICAL_SECONDS = 10.0


def dump(value: Any) -> Any:
    """A dataclass (or list of them) as JSON-ready data: datetimes ISO 8601, enums by name."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, enum.IntEnum):
        return value.name.lower()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [dump(v) for v in value]
    return value


def job_json(view: JobView) -> dict[str, Any]:
    """A job with its relatives for the inspector: every field, ``state`` (pending, fetched,
    processing, waiting, blocked, succeeded or failed) and its ``parents`` and ``children``,
    each with its own state (the storage seam says ``blocked`` of a waiting one whose parent
    is in the DLQ)."""
    data: dict[str, Any] = dump(view)
    data["state"] = view.state
    return data


def step_json(step: StepRecord) -> dict[str, Any]:
    """A durable job's recorded step for the faces: name, kind, state (done, failed,
    pending), start, end and duration in seconds, its value's size in UTF-8 bytes (the value
    itself too), its error, and a sleep's or wait's wake time and event key."""
    data: dict[str, Any] = dump(step)
    data["value_bytes"] = None if step.value is None else len(step.value.encode("utf-8"))
    data["duration_seconds"] = (
        None
        if step.started_at is None or step.finished_at is None
        else round((step.finished_at - step.started_at).total_seconds(), 6)
    )
    return data


def batch_json(batch: JobBatch, job_id: str, limit: int) -> dict[str, Any]:
    """A batch a job ran in, for the inspector: its id, the job's attempt in it, when and by
    which worker it was claimed, its ``size`` and up to ``limit`` of its other jobs'
    ``siblings`` (ids)."""
    siblings = [other for other in batch.job_ids if other != job_id]
    return {
        "batch_id": batch.batch_id,
        "attempt": batch.attempt,
        "claimed_at": dump(batch.claimed_at),
        "worker_id": batch.worker_id,
        "size": len(batch.job_ids),
        "siblings": siblings[:limit],
    }


def batch_sizes_json(type: str, sizes: list[BatchSize], recent: int) -> dict[str, Any]:
    """A batch type's batches over a window, for its page: how many, their mean and largest
    size, and the ``recent`` newest (id, claim time, size), newest first."""
    counts = [size.size for size in sizes]
    return {
        "type": type,
        "batches": len(counts),
        "jobs": sum(counts),
        "mean_size": round(sum(counts) / len(counts), 2) if counts else None,
        "max_size": max(counts, default=None),
        "recent": [dump(size) for size in sizes[:recent]],
    }


def stream_json(length: int, items: list[StreamItem]) -> dict[str, Any]:
    """A job's stream for the faces: how many items it holds (``length``) and the ``items``
    given (the last ones, for The Deck), each with its index, when it was written and the item
    as JSON text (shown as text, never markup)."""
    return {
        "length": length,
        "items": [
            {"index": i.index, "created_at": dump(i.created_at), "item": i.item} for i in items
        ],
    }


def workflow_json(workflow: Workflow, limit: int) -> dict[str, Any]:
    """A workflow for the Deck: every job (parents first) with its ``state``, its ``parents``
    and its ``depth`` (0 for a job with no parent in the workflow, else one more than its
    deepest parent), the ``counts`` per state and whether it has ``finished``, for its first
    ``limit`` jobs; ``truncated`` says there were more (read ``limit + 1`` to know). A waiting
    job with a parent in the DLQ is ``blocked`` (the storage seam says so of its members)."""
    jobs: list[dict[str, Any]] = []
    depth: dict[str, int] = {}
    counts: dict[str, int] = {}
    for job in workflow.jobs[:limit]:  # parents first, so every parent's depth is known already
        level = 1 + max((depth[p] for p in job.parents if p in depth), default=-1)
        depth[job.id] = level
        state = job.state
        counts[state] = counts.get(state, 0) + 1
        jobs.append({**dump(job), "state": state, "depth": level})
    return {
        "id": workflow.id,
        "jobs": jobs,
        "counts": counts,
        "total": len(jobs),
        "depth": 1 + max(depth.values(), default=-1),
        "finished": len(workflow.jobs) <= limit
        and all(j["state"] in ("succeeded", "failed", "purged") for j in jobs),
        "truncated": len(workflow.jobs) > limit,
    }


def throughput_json(t: Throughput) -> dict[str, Any]:
    return {
        **dump(t),
        "jobs_per_second_1m": round(t.jobs_per_second_1m, 3),
        "jobs_per_second_5m": round(t.jobs_per_second_5m, 3),
        "failure_rate_1m": round(t.failure_rate_1m, 2),
        "failure_rate_5m": round(t.failure_rate_5m, 2),
    }


def queue_json(q: QueueStats) -> dict[str, Any]:
    """A queue row with its lag level: ``ok``, ``warning`` (>= 5 s) or ``critical`` (>= 10 s)."""
    data = dump(q)
    info = data.pop("queue")
    level = "ok"
    if q.lag_count and q.lag_max_seconds >= LAG_CRITICAL_SECONDS:
        level = "critical"
    elif q.lag_count and q.lag_max_seconds >= LAG_WARNING_SECONDS:
        level = "warning"
    return {**info, **data, "lag_level": level}


def limit_json(info: LimitInfo, queue: str | None = None) -> dict[str, Any]:
    """A limited queue or job type for the Deck: every field of ``LimitInfo`` (its top
    partitions as ``partition``, ``waiting``, ``running``), where the rate and the partition
    concurrency in force come from (``rate_source`` / ``concurrency_source``: ``operator`` when
    an operator set it, ``code`` when it is what the code declares, None when there is none),
    and ``queue``: the queue a type's handler is registered on, when the Deck's app knows it."""
    data: dict[str, Any] = dump(info)

    def source(operator: bool, value: object) -> str | None:
        if operator:
            return "operator"
        return "code" if value is not None else None

    data["rate_source"] = source(info.rate_set, info.rate_limit)
    data["concurrency_source"] = source(info.concurrency_set, info.partition_concurrency)
    data["limited"] = info.limited
    data["queue"] = queue
    return data


def expression(cron: str | None, every_seconds: float | None) -> str:
    """A timing as one line: the cron expression, or ``every 60 s``."""
    if cron is not None:
        return cron
    return f"every {every_seconds or 0:g} s"


def _in_zone(moment: datetime | None, zone: str) -> str | None:
    """``moment`` as ISO 8601 in the IANA ``zone``, with its offset (``...T07:00:00+01:00``)."""
    if moment is None:
        return None
    try:
        return moment.astimezone(ZoneInfo(zone)).isoformat()
    except (ZoneInfoNotFoundError, ValueError):
        return None  # storage checks every zone it writes; a row it did not write shows none


def schedule_json(s: Schedule, now: datetime) -> dict[str, Any]:
    """A schedule row for the Deck: its timing in force (``expression``, an operator's edit
    while ``edited_by`` is set) beside what the code ``declared``, its next run in UTC and in
    its own zone, its last run, and ``lag_seconds``: how long its next slot is overdue at
    ``now`` (0 while it is still ahead)."""
    lag = 0.0
    if s.next_slot is not None and s.next_slot <= now:
        lag = (now - s.next_slot).total_seconds()
    return {
        "name": s.name,
        "type": s.type,
        "queue": s.queue,
        "priority": s.priority,
        "expires_after_seconds": s.expires_after_seconds,
        "expression": expression(s.cron, s.every_seconds),
        "cron": s.cron,
        "every_seconds": s.every_seconds,
        "timezone": s.timezone,
        "kwargs": s.kwargs,
        "next_run_utc": dump(s.next_slot),
        "next_run_local": _in_zone(s.next_slot, s.timezone),
        "last_run_at": dump(s.last_run_at),
        "last_job_id": s.last_job_id,
        "last_outcome": s.last_outcome,
        "paused": s.paused,
        "orphaned": s.orphaned,
        "edited": s.edited_by is not None,
        "edited_by": s.edited_by,
        "edited_at": dump(s.edited_at),
        "declared": {
            "expression": expression(s.declared_cron, s.declared_every_seconds),
            "cron": s.declared_cron,
            "every_seconds": s.declared_every_seconds,
            "timezone": s.declared_timezone,
            "kwargs": s.declared_kwargs,
        },
        "misfire": s.misfire,
        "overlap": s.overlap,
        "lag_seconds": round(lag, 3),
        "seen_at": dump(s.seen_at),
        "last_modified_by": s.last_modified_by,
    }


def slot_json(r: SlotRecord) -> dict[str, Any]:
    """One line of a schedule's history: ``slot`` (its due time), ``outcome`` (``enqueued``,
    ``triggered``, ``skipped`` or ``missed``), ``job_id``, ``detail`` and ``recorded_at``."""
    data: dict[str, Any] = dump(r)
    return data


def circuits_of(workers_circuits: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Merge the circuit snapshots workers published (``(worker_id, json)`` pairs) into one row
    per job type: the worst state wins (open > half_open > closed), failures are the most any
    worker counted, reset is the longest wait. Malformed snapshots are skipped."""
    rank = {"closed": 0, "half_open": 1, "open": 2}
    merged: dict[str, dict[str, Any]] = {}
    for worker_id, text in workers_circuits:
        try:
            items = json.loads(text or "[]")
        except ValueError:
            continue
        if not isinstance(items, list):
            continue
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                continue
            state = str(item.get("state"))
            if state not in rank:
                state = "closed"
            failures = item.get("failures") if isinstance(item.get("failures"), int) else 0
            reset = item.get("reset_in_seconds")
            reset = float(reset) if isinstance(reset, int | float) else None
            row = merged.setdefault(
                item["key"],
                {
                    "key": item["key"],
                    "state": "closed",
                    "failures": 0,
                    "reset_in_seconds": None,
                    "workers": [],
                },
            )
            if rank[state] > rank[row["state"]]:
                row["state"] = state
            row["failures"] = max(row["failures"], failures)
            if reset is not None:
                row["reset_in_seconds"] = max(row["reset_in_seconds"] or 0.0, reset)
            row["workers"].append(worker_id)
    return sorted(merged.values(), key=lambda r: (-rank[r["state"]], r["key"]))


def parse_datetime(field: str, value: str | None) -> datetime | None:
    """ISO 8601; a value without an offset is taken as UTC."""
    if value is None or value == "":
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field, "must be an ISO 8601 date-time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_int(field: str, value: Any, *, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ValidationError(field, "must be an integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(field, "must be an integer") from None
    if not low <= number <= high:
        raise ValidationError(field, f"must be between {low} and {high}")
    return number


def parse_bool(field: str, value: Any) -> bool | None:
    """``true``/``false`` (JSON booleans, or ``true``, ``false``, ``1``, ``0`` in a query
    string); None when absent or empty."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
        return value.lower() in ("true", "1")
    raise ValidationError(field, "must be true or false")


def _enum_by_name(field: str, value: str | None, kind: type[enum.IntEnum]) -> Any:
    if value is None or value == "":
        return None
    try:
        return kind[value.upper()]
    except KeyError:
        names = ", ".join(m.name.lower() for m in kind)
        raise ValidationError(field, f"must be one of {names}") from None


# The most job ids one request may name (a selection, a filter's ids).
MAX_IDS = 1000


def parse_filter(params: Mapping[str, Any]) -> JobFilter:
    """A ``JobFilter`` from query parameters or a JSON object (``queue``, ``type``, ``status``,
    ``reason``, ``since``, ``until``, ``search``, ``ids``, ``blocked``, ``partition``, and
    ``family``: a DLQ error family as the top-errors panel names it)."""

    def text(name: str) -> str | None:
        value = params.get(name)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ValidationError(name, "must be a string")
        return value

    queue = text("queue")
    type_ = text("type")
    since = parse_datetime("since", text("since"))
    until = parse_datetime("until", text("until"))
    if since and until and since > until:
        raise ValidationError("since", "must not be after until")
    ids = params.get("ids")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise ValidationError("ids", "must be a list of job ids")
    if ids is not None and len(ids) > MAX_IDS:
        raise ValidationError("ids", f"must hold at most {MAX_IDS} ids (got {len(ids)})")
    return JobFilter(
        queue=check_name("queue", queue) if queue is not None else None,
        type=check_name("type", type_) if type_ is not None else None,
        status=_enum_by_name("status", text("status"), JobStatus),
        failure_reason=_enum_by_name("reason", text("reason"), FailureReason),
        since=since,
        until=until,
        search=check_text("search", text("search"), max_length=MAX_SEARCH_LENGTH),
        ids=tuple(ids) if ids is not None else None,
        blocked=parse_bool("blocked", params.get("blocked")),
        partition=check_partition("partition", text("partition")),
        error_family=check_text("family", text("family"), max_length=FAMILY_CHARS),
    )


def filter_json(f: JobFilter) -> dict[str, Any]:
    """The inverse of ``parse_filter`` (for echoing a pinned preview filter back)."""
    return {
        "queue": f.queue,
        "type": f.type,
        "status": f.status.name.lower() if f.status is not None else None,
        "reason": f.failure_reason.name.lower() if f.failure_reason is not None else None,
        "since": dump(f.since),
        "until": dump(f.until),
        "search": f.search,
        "blocked": f.blocked,
        "partition": f.partition,
        "family": f.error_family,
    }

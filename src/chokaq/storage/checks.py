"""The argument rules of the storage seam, applied once before any driver runs.

Owns the checks of the operation arguments that are not job fields (those are in
``chokaq.limits``): times, id lists, leases and moves, edits, fetch arguments, caps, batch sizes,
pages and the sort whitelist, queue limits, rescue timeouts, worker requests, leadership terms
and the caller's own connection of an enqueue. Each rule raises ``ValidationError`` naming the
field and the limit, and returns the value normalised (times in UTC, ids de-duplicated,
progress clamped), so that every backend receives the same arguments and refuses the same
input with the same message. It must not do I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import IntEnum
from typing import Any, ClassVar, TypeVar

import psycopg

from ..errors import ValidationError
from ..ids import CANONICAL_ID
from ..limits import (
    MAX_DELAY_SECONDS,
    MAX_ERROR_TYPE_LENGTH,
    MAX_SEARCH_LENGTH,
    MAX_TIMEOUT_SECONDS,
    Limits,
    check_actor,
    check_job_id,
    check_name,
    check_partition,
    check_payload,
    check_priority,
    check_tags,
    check_text,
    check_time,
    storable,
)
from ..models import (
    Capabilities,
    FailMove,
    FailureReason,
    Heartbeat,
    JobFilter,
    JobStatus,
    LeaderTerm,
    Lease,
    Move,
    Pillar,
    RetryMove,
    SucceedMove,
    WorkerInfo,
    ordered_ids,
)
from .families import FAMILY_CHARS

__all__ = [
    "ATTEMPTS_KEPT",
    "MAX_FETCH",
    "MAX_LEASE_SECONDS",
    "MAX_PAGE",
    "MAX_RESCUE_TIMEOUT_SECONDS",
    "MAX_SAMPLE",
    "MAX_TOP_ERRORS",
    "MAX_TOP_ERRORS_SCAN",
    "MAX_WIDTH_SECONDS",
    "MIN_ZOMBIE_TIMEOUT_SECONDS",
    "NULLABLE_SORTS",
    "SORT_COLUMNS",
    "UNSET",
    "ZOMBIE_HEARTBEAT_MARGIN",
    "Edits",
    "QueueLimits",
    "actor",
    "alive_within",
    "argument_name",
    "bounded_int",
    "caller_connection",
    "edits",
    "heartbeats",
    "job_filter",
    "job_ids",
    "lease_seconds",
    "leases",
    "moves",
    "names",
    "now",
    "page",
    "page_size",
    "pillar",
    "positive_int",
    "progress",
    "purge_limit",
    "queue_limits",
    "rescue_timeouts",
    "seconds",
    "sort_column",
    "term",
    "worker_info",
    "worker_request",
]


class _Unset:
    """Marks "leave this setting alone" where ``None`` means "clear it"."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
E = TypeVar("E", bound=IntEnum)

MAX_WORKERS = 10_000
MAX_ZOMBIE_TIMEOUT_SECONDS = 86_400.0
# A running job heartbeats every 3-5 s by default (WorkerSettings.heartbeat_max_seconds = 5).
# A zombie timeout shorter than a few heartbeat intervals dead-letters healthy jobs that merely
# had one slow beat, and a requeued "zombie" runs twice. So a stored per-queue timeout must
# cover ZOMBIE_HEARTBEAT_MARGIN default intervals; a worker with a slower heartbeat warns at
# start about stored timeouts its own interval makes unsafe (runtime/registry.py).
ZOMBIE_HEARTBEAT_MARGIN = 3
MIN_ZOMBIE_TIMEOUT_SECONDS = ZOMBIE_HEARTBEAT_MARGIN * 5.0
MAX_EXECUTION_TIMEOUT_SECONDS = MAX_TIMEOUT_SECONDS
MAX_RESCUE_TIMEOUT_SECONDS = MAX_DELAY_SECONDS
MAX_PAGE_SIZE = 1000
MAX_PAGE = 10_000_000
MAX_FETCH = 10_000
MAX_CONCURRENCY = 1000
MAX_PURGE_BATCH = 1_000_000
MAX_PURGE_LIMIT = 1_000_000_000
MAX_SAMPLE = 1000
MAX_TOP_ERRORS = 1000
MAX_TOP_ERRORS_SCAN = 1_000_000
# How many failed attempts a job keeps (its newest ones): enough to see a pattern across the
# retries of any sensible max_attempts, bounded so a job retried for ever cannot grow a table.
ATTEMPTS_KEPT = 20
MAX_WIDTH_SECONDS = 86_400
MAX_LAG_GROUPS = 1000
MAX_UNSERVED_CAP = 1_000_000
MAX_LEASE_SECONDS = 3600.0

# The sortable columns of each pillar (the `sort` names of jobs_page); others are refused.
_EVERY_PILLAR = {
    "created": "created_at",
    "id": "id",
    "queue": "queue",
    "type": "type",
    "priority": "priority",
    "attempts": "attempt_count",
    "worker": "worker_id",
}
SORT_COLUMNS: Mapping[Pillar, Mapping[str, str]] = {
    Pillar.HOT: {"date": "created_at", **_EVERY_PILLAR},
    Pillar.ARCHIVE: {"date": "finished_at", **_EVERY_PILLAR, "duration": "duration_seconds"},
    Pillar.DLQ: {
        "date": "failed_at",
        **_EVERY_PILLAR,
        "duration": "duration_seconds",
        "reason": "failure_reason",
    },
}
# The sort columns that may hold NULL: rows with NULL there sort last in either direction.
NULLABLE_SORTS = frozenset({"worker_id", "duration_seconds"})


def bounded_int(field: str, value: object, low: int, high: int) -> int:
    """An integer in ``low..high`` (``bool`` is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(field, f"must be an integer between {low} and {high}")
    return value


def positive_int(field: str, value: object, maximum: int) -> int:
    """An integer in ``1..maximum``."""
    return bounded_int(field, value, 1, maximum)


def seconds(field: str, value: object, *, low: float, high: float, exclusive: bool) -> float:
    """A finite number of seconds above ``low`` (or at least ``low``) and at most ``high``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, "must be a finite number of seconds")
    if (value <= low if exclusive else value < low) or value > high:
        bound = f"greater than {low:g}" if exclusive else f"at least {low:g}"
        raise ValidationError(field, f"must be {bound} and at most {high:g} seconds")
    return float(value)


def now(value: datetime | None, field: str = "now") -> datetime | None:
    """An injected clock: None (the store's own clock) or an aware time, in UTC."""
    return None if value is None else check_time(field, value)


def job_ids(field: str, ids: Sequence[str], maximum: int) -> tuple[str, ...]:
    """A list of at most ``maximum`` job ids, de-duplicated in input order."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise ValidationError(field, "must be a list of job ids")
    unique = ordered_ids(ids)
    if len(unique) > maximum:
        raise ValidationError(field, f"must hold at most {maximum} job ids")
    for i, job_id in enumerate(unique):
        check_job_id(f"{field}[{i}]", job_id)
    return unique


_canonical = CANONICAL_ID.fullmatch  # ``is_job_id`` without its call, on the worker's path


def _sound(lease: object) -> bool:
    """The worker path's common case, checked without building a field name."""
    return (
        type(lease) is Lease
        and type(lease.job_id) is str
        and _canonical(lease.job_id) is not None
        and type(lease.worker_id) is str
        and type(lease.token) is str
        and _canonical(lease.token) is not None
    )


def _lease(field: str, lease: object) -> Lease:
    """``lease`` checked, or the ``ValidationError`` naming what is wrong with it."""
    if _sound(lease):
        return lease  # type: ignore[return-value]
    if not isinstance(lease, Lease):
        raise ValidationError(field, "must be a Lease")
    check_job_id(f"{field}.job_id", lease.job_id)
    if type(lease.worker_id) is not str:
        check_name(f"{field}.worker_id", lease.worker_id)
    raise ValidationError(f"{field}.token", "must be a lease token (a canonical UUID string)")


def leases(field: str, values: Sequence[Lease], maximum: int) -> list[Lease]:
    """Leases of a batch: at most ``maximum``, each with a job id, a worker and a token; a job
    named twice is acted on once (the first lease)."""
    if len(values) > maximum:
        raise ValidationError(field, f"must hold at most {maximum} leases")
    checked = [
        lease if _sound(lease) else _lease(f"{field}[{i}]", lease) for i, lease in enumerate(values)
    ]
    if len(checked) > 1 and len({lease.job_id for lease in checked}) < len(checked):
        first: dict[str, Lease] = {}
        for lease in checked:
            first.setdefault(lease.job_id, lease)
        checked = list(first.values())
    return checked


def progress(field: str, value: object) -> int:
    """Progress in percent: a finite number, clamped to 0..100 and rounded to a whole one."""
    if type(value) is int and 0 <= value <= 100:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, "must be a finite number (0-100)")
    return max(0, min(100, round(value)))


def heartbeats(values: Sequence[Heartbeat], maximum: int) -> list[Heartbeat]:
    """Heartbeats of a batch, progress clamped (``None``: leave progress alone)."""
    if len(values) > maximum:
        raise ValidationError("beats", f"must hold at most {maximum} heartbeats")
    out = []
    for i, beat in enumerate(values):
        if not isinstance(beat, Heartbeat):
            raise ValidationError(f"beats[{i}]", "must be a Heartbeat")
        if not _sound(beat.lease):
            _lease(f"beats[{i}].lease", beat.lease)
        if beat.progress is not None:
            value = progress(f"beats[{i}].progress", beat.progress)
            if value is not beat.progress:
                beat = Heartbeat(beat.lease, value)
        out.append(beat)
    return out


def _duration(field: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, "must be a number of seconds")
    # A clock that stepped back or a NaN from arithmetic is not the caller's fault: unknown.
    return float(value) if math.isfinite(value) and value >= 0 else None


def _plain_seconds(value: object) -> bool:
    """Whether ``value`` is already what ``_duration`` makes of it (None or a finite float at
    least 0): the finalizer's common case, which allocates nothing."""
    return value is None or (type(value) is float and 0 <= value < math.inf)


_TimedMove = TypeVar("_TimedMove", SucceedMove, FailMove, RetryMove)


def _times(field: str, move: _TimedMove) -> _TimedMove:
    """``move`` with its ``duration_seconds`` and ``elapsed_seconds`` normalised by ``_duration``
    (the same move when both already are), so that every backend stores the same of them."""
    duration, elapsed = move.duration_seconds, move.elapsed_seconds
    if _plain_seconds(duration) and _plain_seconds(elapsed):
        return move
    return replace(
        move,
        duration_seconds=_duration(f"{field}.duration_seconds", duration),
        elapsed_seconds=_duration(f"{field}.elapsed_seconds", elapsed),
    )


def _move(i: int, move: object) -> Move:
    """A move checked and normalised; the same object when nothing needed normalising (the
    finalizer's common case allocates nothing here)."""
    field = f"moves[{i}]"
    if type(move) is SucceedMove:
        if not _sound(move.lease):
            _lease(f"{field}.lease", move.lease)
        return _times(field, move)
    if type(move) is FailMove:
        if not _sound(move.lease):
            _lease(f"{field}.lease", move.lease)
        if not isinstance(move.reason, FailureReason):
            raise ValidationError(f"{field}.reason", "must be a FailureReason")
        error = storable(str(move.error)) or ""
        actor = storable(move.actor)
        check_text(f"{field}.error_type", move.error_type, max_length=MAX_ERROR_TYPE_LENGTH)
        if error is not move.error or actor is not move.actor:
            move = replace(move, error=error, actor=actor)
        return _times(field, move)
    if type(move) is RetryMove:
        if not _sound(move.lease):
            _lease(f"{field}.lease", move.lease)
        move = _times(field, move)
        delay = move.delay_seconds
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise ValidationError(f"{field}.delay_seconds", "must be a number of seconds")
        run_at = None if move.run_at is None else check_time(f"{field}.run_at", move.run_at)
        return replace(
            move,
            error=storable(move.error),
            delay_seconds=float(delay) if math.isfinite(delay) and delay > 0 else 0.0,
            run_at=run_at,
            refund_attempt=bool(move.refund_attempt),
            count_retry=bool(move.count_retry),
        )
    raise ValidationError(field, f"must be a move, not {type(move).__name__}")


def moves(values: Sequence[Move], maximum: int) -> list[Move]:
    """Moves of a finalize batch, checked and normalised (error text made storable)."""
    if len(values) > maximum:
        raise ValidationError("moves", f"must hold at most {maximum} moves")
    return [_move(i, move) for i, move in enumerate(values)]


def job_filter(filter: object) -> JobFilter:
    """A listing filter: queue and type are names, search is at most 1000 characters, the error
    family at most 160, ids are job ids, since/until are aware times (``None`` switches a
    filter off). Times come back UTC."""
    if not isinstance(filter, JobFilter):
        raise ValidationError("filter", "must be a JobFilter")
    if filter.queue is not None:
        check_name("filter.queue", filter.queue)
    if filter.type is not None:
        check_name("filter.type", filter.type)
    check_text("filter.search", filter.search, max_length=MAX_SEARCH_LENGTH)
    check_text("filter.error_family", filter.error_family, max_length=FAMILY_CHARS)
    check_partition("filter.partition", filter.partition)
    if filter.ids is not None:
        if isinstance(filter.ids, str) or len(filter.ids) > 100_000:
            raise ValidationError("filter.ids", "must be a list of at most 100000 job ids")
        for i, job_id in enumerate(filter.ids):
            check_job_id(f"filter.ids[{i}]", job_id)
    changes: dict[str, Any] = {}
    if filter.status is not None:
        changes["status"] = _member("filter.status", JobStatus, filter.status)
    if filter.failure_reason is not None:
        changes["failure_reason"] = _member(
            "filter.failure_reason", FailureReason, filter.failure_reason
        )
    if filter.since is not None:
        changes["since"] = check_time("filter.since", filter.since)
    if filter.until is not None:
        changes["until"] = check_time("filter.until", filter.until)
    if filter.ids is not None:
        changes["ids"] = tuple(filter.ids)
    if filter.blocked is not None and not isinstance(filter.blocked, bool):
        raise ValidationError("filter.blocked", "must be true, false or None")
    if all(getattr(filter, k) is v for k, v in changes.items()):
        return filter
    return replace(filter, **changes)


def _member(field: str, enum: type[E], value: object) -> E:
    if isinstance(value, bool):
        value = None  # True is not a status
    try:
        return enum(value)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        allowed = ", ".join(m.name for m in enum)
        raise ValidationError(field, f"must be one of {allowed}") from None


@dataclass(frozen=True, slots=True)
class Edits:
    """The checked repairs of an edit or a resurrection (``None`` leaves a field alone)."""

    payload: str | None = None
    tags: tuple[str, ...] | None = None
    priority: int | None = None


def edits(
    limits: Limits, payload: str | None, tags: Sequence[str] | None, priority: int | None
) -> Edits:
    """Check a payload, tags and priority to apply; tags come back trimmed and de-duplicated."""
    if payload is not None:
        check_payload("payload", payload, limits)
    if priority is not None:
        check_priority("priority", priority)
    return Edits(
        payload=payload,
        tags=None if tags is None else check_tags("tags", tags),
        priority=priority,
    )


def argument_name(field: str, value: object) -> str | None:
    """A job argument's name (a Python identifier of at most 255 characters), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.isidentifier() or len(value) > 255:
        raise ValidationError(field, "must be an argument name (an identifier)")
    return value


def names(field: str, values: Sequence[str] | None) -> list[str] | None:
    """Queue or job type names (de-duplicated), or None: any."""
    if values is None:
        return None
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValidationError(field, "must be a list of names")
    return [check_name(f"{field}[{i}]", name) for i, name in enumerate(dict.fromkeys(values))]


def sort_column(pillar: Pillar, sort: object) -> str:
    """The column ``sort`` orders ``pillar`` by, from the whitelist."""
    column = SORT_COLUMNS[pillar].get(sort) if isinstance(sort, str) else None
    if column is None:
        allowed = ", ".join(sorted(SORT_COLUMNS[pillar]))
        raise ValidationError("sort", f"must be one of {allowed} for the {pillar} pillar")
    return column


def pillar(value: object) -> Pillar:
    try:
        return Pillar(value)  # type: ignore[arg-type]
    except ValueError:
        allowed = ", ".join(p.value for p in Pillar)
        raise ValidationError("pillar", f"must be one of {allowed}") from None


def page(value: object) -> int:
    """A page number: 1..10,000,000."""
    return positive_int("page", value, MAX_PAGE)


def page_size(value: object) -> int:
    """Rows per page: 1..1000."""
    return positive_int("page_size", value, MAX_PAGE_SIZE)


def purge_limit(batch_size: object, limit: object) -> tuple[int, int | None]:
    """An age purge's batch size (1..1,000,000) and limit (None: all; else 0..10**9)."""
    size = positive_int("batch_size", batch_size, MAX_PURGE_BATCH)
    if limit is not None:
        limit = bounded_int("limit", limit, 0, MAX_PURGE_LIMIT)
    return size, limit


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """Checked queue limits: each is ``UNSET`` (leave alone), ``None`` (clear) or the value."""

    max_workers: Any
    zombie_timeout_seconds: Any
    execution_timeout_seconds: Any


def queue_limits(
    *, max_workers: object, zombie_timeout_seconds: object, execution_timeout_seconds: object
) -> QueueLimits:
    """max_workers 1..10,000; zombie timeout 15..86,400 s (three default heartbeat intervals
    at least); execution timeout 0 < t <= 7 days."""
    if max_workers is not UNSET and max_workers is not None:
        max_workers = positive_int("max_workers", max_workers, MAX_WORKERS)
    if zombie_timeout_seconds is not UNSET and zombie_timeout_seconds is not None:
        zombie_timeout_seconds = seconds(
            "zombie_timeout_seconds",
            zombie_timeout_seconds,
            low=0,
            high=MAX_ZOMBIE_TIMEOUT_SECONDS,
            exclusive=True,
        )
        if zombie_timeout_seconds < MIN_ZOMBIE_TIMEOUT_SECONDS:
            raise ValidationError(
                "zombie_timeout_seconds",
                f"must be at least {MIN_ZOMBIE_TIMEOUT_SECONDS:g} seconds "
                f"({ZOMBIE_HEARTBEAT_MARGIN} heartbeat intervals of a default worker, 5 s "
                "each): a shorter timeout dead-letters healthy running jobs as zombies, "
                "and they run twice when requeued",
                value=zombie_timeout_seconds,
            )
    if execution_timeout_seconds is not UNSET and execution_timeout_seconds is not None:
        execution_timeout_seconds = seconds(
            "execution_timeout_seconds",
            execution_timeout_seconds,
            low=0,
            high=MAX_EXECUTION_TIMEOUT_SECONDS,
            exclusive=True,
        )
    return QueueLimits(max_workers, zombie_timeout_seconds, execution_timeout_seconds)


def rescue_timeouts(fetched: object, processing: object) -> tuple[float, float]:
    """The rescue timeouts: each 0 < t <= 366 days."""
    return (
        seconds(
            "fetched_timeout_seconds",
            fetched,
            low=0,
            high=MAX_RESCUE_TIMEOUT_SECONDS,
            exclusive=True,
        ),
        seconds(
            "processing_timeout_seconds",
            processing,
            low=0,
            high=MAX_RESCUE_TIMEOUT_SECONDS,
            exclusive=True,
        ),
    )


def worker_info(info: object) -> WorkerInfo:
    """A worker's registration: names, counts and the start time checked."""
    if not isinstance(info, WorkerInfo):
        raise ValidationError("info", "must be a WorkerInfo")
    check_name("info.id", info.id)
    check_text("info.hostname", info.hostname, max_length=255, allow_none=False)
    bounded_int("info.pid", info.pid, 0, 2**31 - 1)
    for i, queue in enumerate(info.queues):
        check_name(f"info.queues[{i}]", queue)
    positive_int("info.concurrency", info.concurrency, MAX_CONCURRENCY)
    if info.desired_concurrency is not None:
        positive_int("info.desired_concurrency", info.desired_concurrency, MAX_CONCURRENCY)
    bounded_int("info.running", info.running, 0, 1_000_000)
    check_name("info.state", info.state)
    check_text("info.circuits", info.circuits, max_length=1_000_000, allow_none=False)
    started_at = check_time("info.started_at", info.started_at)
    return info if started_at is info.started_at else replace(info, started_at=started_at)


def worker_request(
    worker_id: str | None, concurrency: int | None, close_circuit: str | None
) -> None:
    """A request to one worker (or all, ``None``): concurrency 1..1000, a circuit named like a
    job type."""
    if worker_id is not None:
        check_name("worker_id", worker_id)
    if concurrency is not None:
        positive_int("concurrency", concurrency, MAX_CONCURRENCY)
    if close_circuit is not None:
        check_name("close_circuit", close_circuit)


def actor(value: object) -> str:
    """Who acts on jobs and the DLQ: an audit identity, required."""
    who = check_actor("actor", value)
    if who is None:
        raise ValidationError("actor", "is required")
    return who


def caller_connection(value: object, capabilities: Capabilities) -> Any:
    """The caller's own connection for an enqueue in their transaction, or None.

    Only an open psycopg ``Connection`` or ``AsyncConnection`` whose transaction has not
    failed, and only on a backend with ``caller_transactions``: anything else would fail (or,
    worse, half-apply) inside the driver. The type is checked first, so a value that is no
    connection at all gets the same error on every backend. Its row factory does not matter.
    """
    if value is None:
        return None
    if not isinstance(value, psycopg.AsyncConnection | psycopg.Connection):
        raise ValidationError(
            "connection",
            f"must be a psycopg Connection or AsyncConnection (got {type(value).__name__})",
        )
    if not capabilities.caller_transactions:
        raise ValidationError(
            "connection",
            f"is not supported on {capabilities.name} (caller transactions need "
            "a database that shares the caller's connection: PostgreSQL)",
        )
    if value.closed:
        raise ValidationError("connection", "is closed")
    if value.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
        raise ValidationError(
            "connection", "is in a failed transaction (roll it back before enqueueing)"
        )
    return value


def alive_within(value: object) -> float:
    """How recently a worker must have beaten to count as alive (``alive_within_seconds``):
    0 < t <= 366 days, as a rescue timeout."""
    return seconds(
        "alive_within_seconds", value, low=0, high=MAX_RESCUE_TIMEOUT_SECONDS, exclusive=True
    )


def lease_seconds(value: object) -> float:
    """A leadership lease: 0 < t <= 1 hour (longer would stall maintenance for that long after
    its holder stops)."""
    return seconds("lease_seconds", value, low=0, high=MAX_LEASE_SECONDS, exclusive=True)


def term(field: str, value: object) -> LeaderTerm:
    """A term the database granted: a role name, a holder name and an epoch of at least 1."""
    if not isinstance(value, LeaderTerm):
        raise ValidationError(field, "must be a LeaderTerm")
    check_name(f"{field}.name", value.name)
    check_name(f"{field}.holder", value.holder)
    bounded_int(f"{field}.epoch", value.epoch, 1, 2**63 - 1)
    return value

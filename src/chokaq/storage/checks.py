"""The argument rules every backend applies before touching the database.

Owns the checks of the operation arguments that are not job fields (those are in
``chokaq.limits``): id lists, edits, fetch arguments, page arguments and the sort whitelist,
queue limits, rescue timeouts and worker requests. Each rule raises ``ValidationError`` naming
the field and the limit, and returns the value normalized, so that both backends refuse the same
input with the same message. It must not do I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..limits import (
    MAX_SEARCH_LENGTH,
    Limits,
    check_job_id,
    check_name,
    check_payload,
    check_priority,
    check_tags,
    check_text,
)
from ..models import JobFilter, Pillar, ordered_ids
from .base import UNSET

__all__ = [
    "SORT_COLUMNS",
    "Edits",
    "QueueLimits",
    "edits",
    "fetch",
    "job_filter",
    "job_ids",
    "page_size",
    "positive_int",
    "queue_limits",
    "rescue_timeouts",
    "seconds",
    "sort_column",
    "worker_request",
]

MAX_WORKERS = 10_000
MAX_ZOMBIE_TIMEOUT_SECONDS = 86_400.0
MAX_EXECUTION_TIMEOUT_SECONDS = 7 * 24 * 3600.0
MAX_RESCUE_TIMEOUT_SECONDS = 366 * 86_400.0
MAX_PAGE_SIZE = 1000
MAX_CONCURRENCY = 1000

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


def positive_int(field: str, value: object, maximum: int) -> int:
    """An integer in ``1..maximum`` (``bool`` is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValidationError(field, f"must be an integer between 1 and {maximum}")
    return value


def seconds(field: str, value: object, *, low: float, high: float, exclusive: bool) -> float:
    """A finite number of seconds above ``low`` (or at least ``low``) and at most ``high``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, "must be a finite number of seconds")
    if (value <= low if exclusive else value < low) or value > high:
        bound = f"greater than {low:g}" if exclusive else f"at least {low:g}"
        raise ValidationError(field, f"must be {bound} and at most {high:g} seconds")
    return float(value)


def job_ids(field: str, ids: Sequence[str]) -> tuple[str, ...]:
    """A list of job ids, de-duplicated in input order, each a canonical UUID string."""
    if isinstance(ids, str):
        raise ValidationError(field, "must be a list of job ids")
    unique = ordered_ids(ids)
    for i, job_id in enumerate(unique):
        check_job_id(f"{field}[{i}]", job_id)
    return unique


def job_filter(filter: JobFilter) -> JobFilter:
    """A listing filter: queue and type are names, search is at most 1000 characters, ids are
    job ids (``None`` switches a filter off)."""
    if filter.queue is not None:
        check_name("filter.queue", filter.queue)
    if filter.type is not None:
        check_name("filter.type", filter.type)
    check_text("filter.search", filter.search, max_length=MAX_SEARCH_LENGTH)
    if filter.ids is not None:
        for i, job_id in enumerate(filter.ids):
            check_job_id(f"filter.ids[{i}]", job_id)
    return filter


@dataclass(frozen=True, slots=True)
class Edits:
    """The checked repairs of an edit or a resurrection (``None`` leaves a field alone)."""

    payload: str | None
    tags: tuple[str, ...] | None
    priority: int | None


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


def fetch(limit: int, queues: Sequence[str] | None) -> tuple[int, list[str] | None]:
    """A fetch's ``limit`` (an integer, at least 0) and its ``queues`` (names, or None: any)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("limit", "must be a non-negative integer")
    if queues is None:
        return limit, None
    return limit, [check_name(f"queues[{i}]", name) for i, name in enumerate(queues)]


def sort_column(
    pillar: Pillar, sort: str, columns: Mapping[Pillar, Mapping[str, str]] = SORT_COLUMNS
) -> str:
    """The column ``sort`` orders ``pillar`` by, from the whitelist ``columns``."""
    column = columns[pillar].get(sort)
    if column is None:
        allowed = ", ".join(sorted(columns[pillar]))
        raise ValidationError("sort", f"must be one of {allowed} for the {pillar} pillar")
    return column


def page_size(value: object) -> int:
    """Rows per page: 1..1000."""
    return positive_int("page_size", value, MAX_PAGE_SIZE)


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """Checked queue limits: each is ``UNSET`` (leave alone), ``None`` (clear) or the value."""

    max_workers: Any
    zombie_timeout_seconds: Any
    execution_timeout_seconds: Any


def queue_limits(
    *, max_workers: object, zombie_timeout_seconds: object, execution_timeout_seconds: object
) -> QueueLimits:
    """max_workers 1..10,000; zombie timeout 1..86,400 s; execution timeout 0 < t <= 7 days."""
    if max_workers is not UNSET and max_workers is not None:
        max_workers = positive_int("max_workers", max_workers, MAX_WORKERS)
    if zombie_timeout_seconds is not UNSET and zombie_timeout_seconds is not None:
        zombie_timeout_seconds = seconds(
            "zombie_timeout_seconds",
            zombie_timeout_seconds,
            low=1,
            high=MAX_ZOMBIE_TIMEOUT_SECONDS,
            exclusive=False,
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


def worker_request(concurrency: int | None, close_circuit: str | None) -> None:
    """A request to workers: concurrency 1..1000, a circuit named like a job type."""
    if concurrency is not None:
        positive_int("concurrency", concurrency, MAX_CONCURRENCY)
    if close_circuit is not None:
        check_name("close_circuit", close_circuit)

"""Keyset paging and light listing rows, shared by both backends: checking a ``PageKey``
against the sort column it belongs to, the key of a listed row, the counting bound, and the
cut of a listing row's long text fields.

A deep page is read from the position of the row it follows (``after``) or precedes
(``before``) in the sort order (column, then id), so its cost does not grow with its depth
as an OFFSET's does; the key is the only state. This module must not import a database
driver or hold SQL.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime

from ..errors import ValidationError
from ..limits import check_job_id, check_text, check_time
from ..models import JobView, PageKey
from .checks import NULLABLE_SORTS

__all__ = [
    "COUNT_EXACT_UP_TO",
    "LIST_TEXT_CHARS",
    "TIME_SORTS",
    "key_of",
    "listed",
    "page_key",
]

# A listing counts its matches exactly up to this many (a count that stops there costs a
# few milliseconds); past it, PostgreSQL gives the planner's estimate instead of scanning
# every match (a million-row archive took 0.3-2 s per page to count exactly).
COUNT_EXACT_UP_TO = 10_000
# A listing row carries this many characters of its payload, error and result: a DLQ page of
# 1 MB payloads was 50 MB. The inspector (``job_get``) has the full text.
LIST_TEXT_CHARS = 300
_CUT_FIELDS = ("payload", "error", "last_error", "result")
# An error keeps its end: a traceback's last line (the exception and its message) is what a
# listing shows of it, and the start of a long traceback is only "Traceback (most recent...".
_TAIL_FIELDS = frozenset({"error", "last_error"})

TIME_SORTS = frozenset({"created_at", "finished_at", "failed_at"})
_INT_SORTS = frozenset({"priority", "attempt_count", "failure_reason"})
_FLOAT_SORTS = frozenset({"duration_seconds"})
_BIGINT = 2**63


def page_key(field: str, column: str, key: object) -> PageKey:
    """A ``PageKey`` whose value fits the sort ``column`` (times come back UTC)."""
    if not isinstance(key, PageKey):
        raise ValidationError(field, "must be a PageKey")
    job_id = check_job_id(f"{field}.id", key.id)
    value = key.value
    if value is None:
        if column not in NULLABLE_SORTS:
            raise ValidationError(f"{field}.value", f"must not be null for the {column} sort")
        return PageKey(None, job_id)
    if column in TIME_SORTS:
        return PageKey(check_time(f"{field}.value", value), job_id)
    if column in _INT_SORTS:
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= _BIGINT:
            raise ValidationError(f"{field}.value", f"must be an integer for the {column} sort")
        return PageKey(value, job_id)
    if column in _FLOAT_SORTS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"{field}.value", f"must be a number for the {column} sort")
        if not math.isfinite(value):
            raise ValidationError(f"{field}.value", "must be a finite number")
        return PageKey(float(value), job_id)
    if column == "id":
        return PageKey(check_job_id(f"{field}.value", value), job_id)
    if not isinstance(value, str):
        raise ValidationError(f"{field}.value", f"must be a string for the {column} sort")
    check_text(f"{field}.value", value, max_length=1000)
    return PageKey(value, job_id)


def key_of(column: str, job: JobView) -> PageKey:
    """The key of a listed row under the sort ``column``."""
    value: str | int | float | datetime | None
    if column == "failure_reason":
        value = None if job.failure_reason is None else int(job.failure_reason)
    else:
        value = getattr(job, column)
    return PageKey(value, job.id)


def listed(job: JobView) -> JobView:
    """A listing's row: payload and result cut to their first ``LIST_TEXT_CHARS`` characters,
    error and last error to their last ones, the cut fields named in ``truncated``. (The
    backends read one character more than that, so that a cut is known.)"""
    cut: dict[str, str] = {}
    for name in _CUT_FIELDS:
        text = getattr(job, name)
        if text is not None and len(text) > LIST_TEXT_CHARS:
            cut[name] = text[-LIST_TEXT_CHARS:] if name in _TAIL_FIELDS else text[:LIST_TEXT_CHARS]
    if not cut:
        return job
    return replace(job, truncated=tuple(cut), **cut)  # type: ignore[arg-type]

"""The Deck's audit lines: what an operator changed (``ADMIN_COMPLETED``), what was refused
(``ADMIN_REJECTED``) and which requests failed unexpectedly (``DECK_REQUEST_FAILED``).

The API's endpoint wrapper calls these, once per request, so every action is logged in one
place with the actor, the action, its target and how many rows it touched. It must never log
payload contents or credentials, and it decides nothing about the request itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from typing import Any

from ..logs import Event, log_admin, log_admin_refused, log_event
from ..models import JobFilter

__all__ = ["Done", "action_name", "completed", "failed", "filter_summary", "rejected"]

ERROR = 40


@dataclass(frozen=True)
class Done:
    """An admin handler's answer: the JSON ``body`` plus what the audit line records.

    ``action`` overrides the route's action name (a queue update names what it changed);
    ``target`` says what was acted on (a queue, a job id, an id count or a filter summary) and
    ``rows`` how many rows the action touched."""

    body: Any
    target: str
    rows: int
    action: str | None = None
    extra: dict[str, Any] | None = None


def action_name(path: str) -> str:
    """A route's action name from its path: ``/api/dlq/purge-by-filter`` is
    ``dlq.purge_by_filter`` and ``/api/jobs/{id}/edit`` is ``jobs.edit``."""
    parts = [p for p in path.removeprefix("/api/").split("/") if p and not p.startswith("{")]
    return ".".join(parts).replace("-", "_")


def filter_summary(job_filter: JobFilter) -> str:
    """``queue=emails reason=timeout until=...``: the filter's set fields, never a payload."""
    parts = []
    for spec in fields(job_filter):
        value = getattr(job_filter, spec.name)
        if value is None:
            continue
        if isinstance(value, enum.Enum):
            value = value.name.lower()
        elif isinstance(value, tuple):
            value = f"{len(value)} id(s)"
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        parts.append(f"{spec.name}={value}")
    return " ".join(parts) or "everything"


def completed(action: str, actor: str, done: Done) -> Any:
    """Log one ``ADMIN_COMPLETED`` line and return the body to send."""
    log_admin("deck", done.action or action, actor, done.target, done.rows, **(done.extra or {}))
    return done.body


def rejected(action: str, actor: str | None, status: int, reason: str) -> None:
    """Log one ``ADMIN_REJECTED`` line (WARNING) for a refused admin request."""
    log_admin_refused("deck", action, actor or "anonymous", reason, status=status)


def failed(method: str, path: str, exc: BaseException) -> None:
    """Log one ``DECK_REQUEST_FAILED`` line (ERROR) for a 500: the method, the path and the
    error's type only, since its message may quote a payload."""
    log_event(
        Event.DECK_REQUEST_FAILED,
        "deck: request failed",
        level=ERROR,
        method=method,
        path=path,
        error_type=type(exc).__name__,
    )

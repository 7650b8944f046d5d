"""``make_context``: a real ``JobContext`` for calling a handler directly in a unit test.

It only builds the value (with defaults a worker would give a first attempt); nothing is
written to a store, and heartbeats and progress go nowhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..app import App, JobHandle
from ..context import JobContext, _request_stop
from ..ids import new_job_id
from ..policies import RetryPolicy

__all__ = ["make_context"]


def make_context(
    handle: JobHandle[Any, Any] | None = None,
    *,
    cancel_reason: str | None = None,
    **fields: Any,
) -> JobContext:
    """A ``JobContext`` as a worker builds it for a first attempt, with ``fields`` (any of
    ``JobContext``'s: ``job_id``, ``type``, ``queue``, ``attempt``, ``max_attempts``,
    ``created_at``, ``tags``, ``worker_id``, ``trace_context``, ``parent_results``,
    ``parent_outcomes``,
    ``previous_error``, ``requeues``) replacing the defaults. Given a ``handle``
    (``@app.job``), ``type``, ``queue`` and ``max_attempts`` are the handler's; otherwise
    ``"test"``, ``"default"`` and the default ``RetryPolicy``'s 3.

    ``cancel_reason`` (for example ``"cancelled"``) builds a context whose job was asked to
    stop: ``cancel_requested`` is true and ``cancelled`` is set. Raises ``TypeError`` for a
    field ``JobContext`` does not have."""
    defaults: dict[str, Any] = {
        "job_id": new_job_id(),
        "type": handle.name if handle is not None else "test",
        "queue": handle.queue if handle is not None else "default",
        "attempt": 1,
        "max_attempts": _max_attempts(handle),
        "created_at": datetime.now(UTC),
        "tags": (),
        "worker_id": "test-worker",
    }
    if "tags" in fields:
        fields["tags"] = tuple(fields["tags"])
    context = JobContext(**{**defaults, **fields})
    if cancel_reason is not None:
        _request_stop(context, cancel_reason)
    return context


def _max_attempts(handle: JobHandle[Any, Any] | None) -> int:
    if handle is not None:
        if handle.max_attempts is not None:
            return handle.max_attempts
        if handle.retry is not None:
            return handle.retry.max_attempts
        if isinstance(handle.app, App):  # a handle's app is any producer; an App has settings
            return handle.app.worker_settings.retry.max_attempts
    return RetryPolicy().max_attempts

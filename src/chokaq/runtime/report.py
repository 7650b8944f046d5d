"""Logs and publishes the outcome of every move the finalizer recorded (or that was refused).

Owns the mapping from outcomes to log events and listener events; decides nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..logs import Event, log_event
from ..models import ClaimedJob, FailMove, Move, RetryMove, SucceedMove

if TYPE_CHECKING:
    from .worker import Worker

__all__ = ["report_outcome"]

WARNING = 30


def report_outcome(worker: Worker, move: Move, ex: Any, applied: bool) -> None:
    """Log and publish one recorded (or refused) move."""
    if applied and type(move) is SucceedMove and not worker._verbose and not worker.listeners:
        return  # the common case, kept cheap: nothing to log or count
    job: ClaimedJob = ex.job
    kind = type(move).__name__.removesuffix("Move").lower()
    fields: dict[str, Any] = {"job_id": job.id, "type": job.type, "queue": job.queue}
    if not applied:
        log_event(
            Event.TRANSITION_NOT_APPLIED,
            "transition not applied (lease no longer held)",
            level=WARNING,
            transition=kind,
            **fields,
        )
        worker.emit("conflict", transition=kind, **fields)
        return
    if type(move) is SucceedMove:
        log_event(
            Event.JOB_SUCCEEDED,
            "job succeeded",
            level=10,
            duration=move.duration_seconds,
            **fields,
        )
        worker.emit("succeeded", duration=move.duration_seconds, **fields)
    elif isinstance(move, FailMove):
        event = {
            "FATAL_ERROR": Event.JOB_FATAL,
            "TIMEOUT": Event.JOB_TIMED_OUT,
            "CANCELLED": Event.JOB_CANCELLED,
            "REJECTED": Event.JOB_REJECTED,
            "RETRY_LIFETIME_EXPIRED": Event.JOB_LIFETIME_EXPIRED,
        }.get(move.reason.name, Event.JOB_RETRIES_EXHAUSTED)
        log_event(event, "job dead-lettered", level=WARNING, reason=move.reason.name, **fields)
        worker.emit("failed", reason=move.reason, duration=move.duration_seconds, **fields)
    elif isinstance(move, RetryMove):
        if move.count_retry:
            log_event(
                Event.JOB_RETRY_SCHEDULED,
                "job will retry",
                level=20,
                run_at=move.run_at,
                **fields,
            )
            worker.emit("retried", **fields)
        elif move.refund_attempt:
            worker.emit("deferred", **fields)
        else:
            log_event(Event.JOB_SHUTDOWN_REQUEUED, "job put back to pending at shutdown", **fields)
            worker.emit("requeued", **fields)

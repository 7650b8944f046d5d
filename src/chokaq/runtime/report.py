"""Logs and publishes the outcome of every move the finalizer recorded (or that was refused).

Owns the mapping from outcomes to log events and to the events the worker's listeners hear; it
is given the event emitter and whether debug logging is on, never the worker. Decides nothing
and does no storage I/O.
"""

from __future__ import annotations

from typing import Any

from ..logs import Event, log_event
from ..models import NO_HANDLER_ERROR, ClaimedJob, FailMove, Move, RetryMove, SucceedMove
from .events import Events

__all__ = ["report_outcome"]

WARNING = 30


def report_outcome(events: Events, verbose: bool, move: Move, ex: Any, applied: bool) -> None:
    """Log and publish one recorded (or refused) move; ``verbose``: debug logging is on (the
    worker binds both first arguments once: ``partial(report_outcome, events, verbose)``)."""
    if applied and type(move) is SucceedMove and not verbose and not events.listeners:
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
        events.emit("conflict", transition=kind, **fields)
        return
    if type(move) is SucceedMove:
        log_event(
            Event.JOB_SUCCEEDED,
            "job succeeded",
            level=10,
            duration=move.duration_seconds,
            **fields,
        )
        events.emit("succeeded", duration=move.duration_seconds, **fields)
    elif isinstance(move, FailMove):
        event = {
            "FATAL_ERROR": Event.JOB_FATAL,
            "TIMEOUT": Event.JOB_TIMED_OUT,
            "CANCELLED": Event.JOB_CANCELLED,
            "REJECTED": Event.JOB_REJECTED,
            "RETRY_LIFETIME_EXPIRED": Event.JOB_LIFETIME_EXPIRED,
        }.get(move.reason.name, Event.JOB_RETRIES_EXHAUSTED)
        log_event(event, "job dead-lettered", level=WARNING, reason=move.reason.name, **fields)
        events.emit("failed", reason=move.reason, duration=move.duration_seconds, **fields)
    elif isinstance(move, RetryMove):
        if move.count_retry:
            log_event(
                Event.JOB_RETRY_SCHEDULED,
                "job will retry",
                level=20,
                run_at=move.run_at,
                **fields,
            )
            events.emit("retried", **fields)
        elif move.refund_attempt and (move.error or "").startswith(NO_HANDLER_ERROR):
            events.emit("no_handler", **fields)  # released: no handler for its type here
        elif move.refund_attempt:
            events.emit("deferred", **fields)
        else:
            log_event(Event.JOB_SHUTDOWN_REQUEUED, "job put back to pending at shutdown", **fields)
            events.emit("requeued", **fields)

"""Logs and publishes the outcome of every move the finalizer recorded (or that was refused).

Owns the mapping from outcomes to log events and to the events the worker's listeners hear; it
is given the event emitter and whether debug logging is on, never the worker. Decides nothing
and does no storage I/O.
"""

from __future__ import annotations

from typing import Any

from ..logs import Event, error_line, log_event
from ..models import NO_HANDLER_ERROR, ClaimedJob, FailMove, Move, RetryMove, SucceedMove
from .events import Events

__all__ = ["report_outcome"]

WARNING = 30


def _attempts(ex: Any) -> tuple[int, int | str]:
    """The attempt that just ended and the attempts allowed ("?" when no handler resolved)."""
    context = getattr(ex, "context", None)
    if context is not None:
        return context.attempt, context.max_attempts
    job: ClaimedJob = ex.job
    return job.attempt_count, job.max_attempts or "?"


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
        attempt, of = _attempts(ex)
        error = error_line(move.error)
        log_event(
            event,
            f"job {job.id} ({job.type}) dead-lettered: {move.reason.name} after attempt "
            f"{attempt} of {of}: {error}",
            level=WARNING,
            reason=move.reason.name,
            attempt=attempt,
            max_attempts=of,
            error=error,
            **fields,
        )
        events.emit("failed", reason=move.reason, duration=move.duration_seconds, **fields)
    elif isinstance(move, RetryMove):
        if move.count_retry:
            attempt, of = _attempts(ex)
            error = error_line(move.error)
            when = move.run_at.isoformat() if move.run_at else f"in {move.delay_seconds:.3g} s"
            log_event(
                Event.JOB_RETRY_SCHEDULED,
                f"job {job.id} ({job.type}) will retry {when}: attempt {attempt} of {of} "
                f"failed: {error}",
                level=20,
                run_at=move.run_at,
                delay=move.delay_seconds,
                attempt=attempt,
                max_attempts=of,
                error=error,
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

"""Which queues a worker serves, and what it does with a job it has no handler for.

By default a worker serves the queues its app's handlers and pipes declare, not every queue:
another app sharing the database has its own. ``queues=("*",)`` serves every queue.

A job on a served queue whose type has no handler here (and whose queue no pipe) is not lost:
in a rolling deploy the producers may ship a new type before the workers. It is released back to
Pending without consuming an attempt (the handler never ran, and the grace, not the attempts,
bounds the wait), with a growing delay (about as long as it has waited so far, 1 to 60 s), for
``unknown_type_grace_seconds`` after a worker first found no handler for it; then it is
dead-lettered as REJECTED with a clear error. The first time travels in the job's last error
(``NoHandler since <time>: ...``), so the grace holds across workers and restarts, and The
Deck finds such jobs by that word. Owns these decisions and their log lines; no storage I/O.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..logs import Event, log_event
from ..models import NO_HANDLER_ERROR, ClaimedJob, FailMove, FailureReason, Move, RetryMove

__all__ = ["ALL_QUEUES", "Unhandled", "served_queues"]

ALL_QUEUES = "*"
MIN_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 60.0
LOG_EVERY_SECONDS = 60.0  # one warning per (queue, type) and worker this often, not per job

_SINCE = re.compile(rf"^{NO_HANDLER_ERROR} since (\S+):")


def served_queues(
    queues: Sequence[str] | None, handlers: Mapping[str, Any], pipes: Mapping[str, Any]
) -> tuple[str, ...] | None:
    """The queues a worker fetches from (None: every queue). ``queues`` as configured: None is
    the queues of the handlers (their ``queue``) and of the pipes; a list holding ``"*"`` is
    every queue; any other list is taken as it is."""
    if queues is None:
        declared = {getattr(h, "queue", "default") for h in handlers.values()}
        return tuple(sorted(declared | set(pipes)))
    if ALL_QUEUES in queues:
        return None
    return tuple(queues)


def first_seen(job: ClaimedJob) -> datetime | None:
    """When a worker first released ``job`` for want of a handler (None: never)."""
    match = _SINCE.match(job.last_error or "")
    if match is None:
        return None
    try:
        return datetime.fromisoformat(match.group(1))
    except ValueError:
        return None


class Unhandled:
    """The no-handler decision of one worker, with its rate-limited warning."""

    def __init__(self, grace_seconds: float, worker_id: str) -> None:
        self.grace_seconds = grace_seconds
        self.worker_id = worker_id
        self._logged: dict[tuple[str, str], float] = {}

    def move(self, job: ClaimedJob, now: datetime) -> Move:
        """Release ``job`` with a delay, or, once its grace is spent, reject it."""
        since = first_seen(job) or now
        waited = max(0.0, (now - since).total_seconds())
        remaining = self.grace_seconds - waited
        where = f"job type {job.type!r} on queue {job.queue!r}"
        if remaining <= 0:
            message = (
                f"Rejected: unknown job type {job.type!r}: no worker that claimed it has a "
                f"handler for it, and queue {job.queue!r} has no pipe handler, for "
                f"{self.grace_seconds:g} s (unknown_type_grace_seconds) since "
                f"{since.isoformat()}"
            )
            log_event(Event.JOB_REJECTED, message, level=30, job_id=job.id, type=job.type)
            return FailMove(job.lease, FailureReason.REJECTED, message, duration_seconds=None)
        delay = min(MAX_DELAY_SECONDS, max(MIN_DELAY_SECONDS, waited), remaining)
        self._warn(job, since, delay)
        text = (
            f"{NO_HANDLER_ERROR} since {since.isoformat()}: no handler for {where} on worker "
            f"{self.worker_id}; released without using an attempt, rejected at "
            f"{(since + timedelta(seconds=self.grace_seconds)).isoformat()} if no worker "
            "handles it by then"
        )
        return RetryMove(
            job.lease, text, delay_seconds=delay, refund_attempt=True, count_retry=False
        )

    def _warn(self, job: ClaimedJob, since: datetime, delay: float) -> None:
        key = (job.queue, job.type)
        now = time.monotonic()
        if now - self._logged.get(key, -LOG_EVERY_SECONDS) < LOG_EVERY_SECONDS:
            return
        self._logged[key] = now
        log_event(
            Event.JOB_NO_HANDLER_RELEASED,
            f"no handler for job type {job.type!r} on queue {job.queue!r}: released, "
            f"retried for {self.grace_seconds:g} s in all before it is rejected",
            level=30,
            job_id=job.id,
            type=job.type,
            queue=job.queue,
            first_seen=since.isoformat(),
            delay=round(delay, 3),
            worker_id=self.worker_id,
        )

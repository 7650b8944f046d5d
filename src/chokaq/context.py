"""The job context a handler can ask for: who it is, which attempt, cancellation, progress.

A handler receives it by declaring a parameter annotated ``JobContext`` (any name), or reads it
with ``current_job()``. The worker owns the storage side (heartbeats, progress writes); this module
only holds state and hands requests over.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["JobContext", "Middleware", "current_job"]

_current: contextvars.ContextVar[JobContext] = contextvars.ContextVar("chokaq_job")


@dataclass(eq=False)
class JobContext:
    """What a running job knows about itself.

    ``cancelled`` is set when the job should stop (operator cancel, timeout, lost lease or
    shutdown); async handlers are also cancelled, sync handlers should poll
    ``cancel_requested``. ``progress`` (0-100) is stored with the next heartbeat.
    ``parent_results`` holds, for a job enqueued with ``after=``, each parent's id and return
    value (None for a parent that returned None or whose result was not kept); it is empty
    for a job without parents.

    ``attempt`` counts this run of the job since it was enqueued or last requeued from the DLQ
    (a requeue starts the attempts over, at 1). ``requeues`` says how many times an operator
    requeued it from the DLQ (The Deck, ``chokaq dlq requeue``, ``chokaq job retry``), and
    ``requeued`` whether it was at all. ``previous_error`` is the error the job's last run
    ended with: the failed attempt before this one (a raised exception's text and traceback,
    ``"Retry: ..."`` for a returned ``Retry``), or, on the first attempt after a requeue, the
    error it was dead-lettered with; None on a job's very first run.
    """

    job_id: str
    type: str
    queue: str
    attempt: int
    max_attempts: int
    created_at: datetime
    tags: tuple[str, ...]
    worker_id: str
    trace_context: str | None = None  # the W3C traceparent stamped at enqueue, if any
    parent_results: dict[str, Any] = field(default_factory=dict)
    previous_error: str | None = None
    requeues: int = 0
    _cancelled: threading.Event | None = field(default=None, repr=False)
    _cancel_flag: bool = False
    cancel_reason: str | None = None
    _progress: int | None = None
    _beat: Callable[[], None] | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def requeued(self) -> bool:
        """Whether an operator requeued this job from the DLQ (it ran and failed before)."""
        return self.requeues > 0

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_flag

    @property
    def cancelled(self) -> threading.Event:
        """An event set when the job should stop (for sync handlers that want to wait on it).

        Created on first use: most jobs never ask, and an Event costs a lock and a condition.
        """
        if self._cancelled is None:
            self._cancelled = threading.Event()
            if self._cancel_flag:
                self._cancelled.set()
        return self._cancelled

    @property
    def progress(self) -> int | None:
        return self._progress

    def report_progress(self, percent: float) -> None:
        """Record progress (clamped to 0..100); it is written with the next heartbeat, and at
        once when the value moved by 5 points or more. Safe from sync handlers' threads."""
        value = max(0, min(100, int(percent)))
        moved = self._progress is None or abs(value - self._progress) >= 5 or value == 100
        self._progress = value
        if moved:
            self.heartbeat()

    def heartbeat(self) -> None:
        """Ask the worker to heartbeat this job now (a long step is about to start)."""
        if self._beat is None or self._loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._beat()
        else:
            self._loop.call_soon_threadsafe(self._beat)


def current_job() -> JobContext:
    """The context of the job running in this task or thread; LookupError outside a job."""
    return _current.get()


def _bind(context: JobContext) -> contextvars.Token[JobContext]:
    return _current.set(context)


def _unbind(token: contextvars.Token[JobContext]) -> None:
    _current.reset(token)


def _request_stop(context: JobContext, reason: str) -> None:
    """Tell the job to stop (the worker's side: the handler sees ``cancel_requested``)."""
    context.cancel_reason = reason
    context._cancel_flag = True
    if context._cancelled is not None:
        context._cancelled.set()


# ``async fn(ctx, call_next)`` around every execution (``App.middleware`` registers them).
Middleware = Callable[[JobContext, Callable[[], Awaitable[Any]]], Awaitable[Any]]

"""The job context a handler can ask for: who it is, which attempt, cancellation, progress.

A handler receives it by declaring a parameter annotated ``JobContext`` (any name), or reads it
with ``current_job()``. The worker owns the storage side (heartbeats, progress writes); this module
only holds state and hands requests over.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from .errors import ConfigurationError

__all__ = ["Durable", "Emitter", "JobContext", "JobSuspended", "Middleware", "current_job"]

_current: contextvars.ContextVar[JobContext] = contextvars.ContextVar("chokaq_job")


class JobSuspended(BaseException):
    """Raised out of ``ctx.sleep`` / ``ctx.wait_for_event`` once the job is suspended (or
    out of any durable call once the worker no longer owns the job: ``lost``). It unwinds the
    handler: never catch it (it is a ``BaseException``, so ``except Exception`` lets it
    through). The job runs again from the top when its time or its event comes."""

    def __init__(self, why: str, *, lost: bool = False) -> None:
        super().__init__(why)
        self.lost = lost


class Durable(Protocol):
    """What a durable job's context hands its calls to (``chokaq.runtime.durable``)."""

    async def step(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any: ...

    async def sleep(self, seconds: float) -> None: ...

    async def wait_for_event(self, key: str, timeout_seconds: float | None) -> Any: ...

    async def spawn(self, jobs: Sequence[Any]) -> list[str]: ...

    async def gather(self, ids: Sequence[str], return_exceptions: bool) -> list[Any]: ...


class Emitter(Protocol):
    """What a job's context hands its stream items to (``chokaq.runtime.streams``)."""

    async def emit(self, item: Any) -> None: ...


# ``streams(lease, replayed)``: the stream writer of one run (``chokaq.runtime.streams``).
EmitterFactory = Callable[[Any, bool], Emitter]


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
    _durable: Durable | None = field(default=None, repr=False)
    # The stream writer is made on the first ``emit`` (most jobs never emit): the worker hands
    # over its factory and the run's lease, which cost nothing to pass.
    _streams: EmitterFactory | None = field(default=None, repr=False)
    _lease: Any = field(default=None, repr=False)
    _stream: Emitter | None = field(default=None, repr=False)

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

    # -- durable jobs (docs/durable.md) -----------------------------------------------------

    def step(self, name: str, fn: Callable[..., Any], /, *args: Any) -> Any:
        """Run ``fn(*args)`` once, ever, as the step ``name`` of this durable job, and return
        its value (as JSON gives it back: the recorded value is what every run returns).

        ``fn`` is a coroutine function or a plain one (run in a thread). Its value is stored
        in the same short, lease-fenced write that marks the step done; a later run of the
        job (a retry, a resume after a crash, a wake after a sleep) returns it without calling
        ``fn``. A step that raises records the error and raises it here; it runs again on the
        job's next attempt. The same name twice in one run raises ``ValidationError``.
        ``await`` it in an ``async def`` handler; a plain ``def`` handler calls it as is."""
        return self._durable_call(lambda durable: durable.step(name, fn, args))

    def sleep(self, seconds: float) -> Any:
        """Suspend this durable job for ``seconds`` (0 to 366 days; never capped): it leaves
        its worker slot and the fetch index, uses no attempt, and runs again from the top on
        any worker when the time has come, where this call returns at once.
        ``ValidationError`` (naming ``seconds``) for a negative, NaN or too long sleep."""
        return self._durable_call(lambda durable: durable.sleep(seconds))

    def wait_for_event(self, key: str, *, timeout_seconds: float | None = None) -> Any:
        """Suspend this durable job until an event is sent under ``key`` (``App.send_event``,
        ``chokaq event send``) and return its data; an event sent before the wait is kept
        for it (7 days). ``TimeoutError`` when none came within ``timeout_seconds`` (0 to 366
        days; None: wait for ever). The job holds no slot and uses no attempt meanwhile."""
        return self._durable_call(lambda durable: durable.wait_for_event(key, timeout_seconds))

    def spawn(self, jobs: Sequence[Any]) -> Any:
        """Enqueue ``jobs`` (prepared: ``handle.prepare(...)``, ``app.raw(...)``; without
        ``after``) as children of this durable job and return their ids, in order. A step:
        the children and the record go in one transaction, and a replay returns the same ids
        without enqueueing again. The children join this job's workflow, and cancelling this
        job cancels those that have not finished."""
        return self._durable_call(lambda durable: durable.spawn(jobs))

    def gather(self, ids: Sequence[str], *, return_exceptions: bool = False) -> Any:
        """Suspend this durable job until every job of ``ids`` has finished (holding no slot,
        using no attempt), then return their results in order. A job that ended in the DLQ
        raises ``JobFailedError`` (``ResultUnavailableError`` for a result not kept,
        ``NotFoundError`` for a job in no pillar), unless ``return_exceptions``: then the
        exception takes its place in the list. The wake-up comes from the elected worker's
        wake pass, within about a second of the last job's end."""
        return self._durable_call(lambda durable: durable.gather(ids, return_exceptions))

    def emit(self, item: Any) -> Any:
        """Append ``item`` (any value JSON holds, through the serializer; at most 64 KiB as
        JSON) to this job's stream, which ``App.stream`` and ``chokaq job stream`` read in
        order as it grows, until the job ends. Any job may emit. The write is durable and
        fenced by the job's lease (a worker that lost the job cannot emit: the handler is
        unwound as for any lost job). In a durable job the items are keyed by their order in
        the run, so a replay does not write again the items an earlier run wrote (see
        docs/durable.md, "Streams"); in any other job a retry's items follow the earlier
        attempts'. ``ValidationError`` naming ``item`` for a value JSON cannot hold or one
        over the limit, before anything is written. ``await`` it in an ``async def`` handler;
        a plain ``def`` handler calls it as is."""
        if self._stream is None:
            if self._streams is None:
                raise ConfigurationError("this job's context is not running on a worker")
            self._stream = self._streams(self._lease, self._durable is not None)
        stream = self._stream
        return self._on_loop(lambda: stream.emit(item))

    def _durable_call(self, call: Callable[[Durable], Coroutine[Any, Any, Any]]) -> Any:
        durable = self._durable
        if durable is None:
            raise ConfigurationError(
                f"job type {self.type!r} is not durable: ctx.step, ctx.sleep, "
                "ctx.wait_for_event, ctx.spawn and ctx.gather need @app.job(durable=True)"
            )
        return self._on_loop(lambda: call(durable))

    def _on_loop(self, call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """The coroutine ``call`` makes, for an ``async def`` handler to await; in a plain
        ``def`` handler's thread, run on the worker's loop and its value returned."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A plain ``def`` handler's thread: the call runs on the worker's loop while this
            # thread waits for it (what it raises, JobSuspended included, is raised here).
            if self._loop is None:
                raise ConfigurationError("this job's context is not running on a worker") from None
            return asyncio.run_coroutine_threadsafe(call(), self._loop).result()
        return call()


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

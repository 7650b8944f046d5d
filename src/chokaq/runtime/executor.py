"""Runs one claimed job and decides its outcome: resolve, run with timeout, classify, move.

``Executor.prepare`` resolves a claimed job's handler, timeout and attempts into an
``Execution``; ``Executor.execute`` decodes the payload, runs middleware and handler (sync
handlers in the thread pool it is given), and returns the storage move that records the outcome
(``None`` when the worker no longer owns the job). ``decide`` is the one place where outcomes
map to moves; it is pure and takes the clock as an argument, so retry timing is tested without
sleeping. Handlers are seen through the ``host`` protocols, never the App. This module does no
storage I/O itself and must not reach the worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import random
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from ..context import (
    Durable,
    EmitterFactory,
    JobContext,
    JobSuspended,
    _bind,
    _request_stop,
    _unbind,
)
from ..errors import FatalError, ThrottledError, ValidationError
from ..limits import DEFAULT_LIMITS, MAX_ERROR_TYPE_LENGTH, storable
from ..logs import Event, log_event
from ..models import (
    ClaimedJob,
    FailMove,
    FailureReason,
    JobOutcome,
    Move,
    QueueInfo,
    RetryMove,
    SucceedMove,
)
from ..outcomes import Fail, Retry
from ..payloads import encode_result
from ..policies import ExceptionTypes, RetryPolicy, explicit_delay
from ..serializer import decode_arguments
from .host import JobHandler, Middleware, PipeHandler

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..models import Lease
    from ..settings import WorkerSettings

__all__ = [
    "BatchStops",
    "Execution",
    "Executor",
    "Parents",
    "Prove",
    "Result",
    "StopReason",
    "SyncRunner",
    "decide",
    "lease_window",
]

MAX_ERROR_CHARS = 16_000


class StopReason(enum.Enum):
    """Why the worker stopped a running job before it returned."""

    TIMEOUT = "timeout"  # it ran past its execution timeout
    CANCELLED = "cancelled"  # an operator asked (actor recorded)
    LEASE_LOST = "lease_lost"  # a heartbeat found the job is no longer ours
    SHUTDOWN = "shutdown"  # the grace period ran out
    HEARTBEAT_FAILURE = "heartbeat_failure"  # heartbeats kept failing
    UNPROVEN = "unproven"  # its claim could not be proven held before the handler started


class Result(enum.Enum):
    SUCCEEDED = "succeeded"
    RAISED = "raised"
    RETURNED_RETRY = "retry"
    RETURNED_FAIL = "fail"
    TIMED_OUT = "timed_out"
    STOPPED = "stopped"
    REJECTED = "rejected"  # could not be dispatched at all
    SUSPENDED = "suspended"  # a durable job suspended itself (sleep, wait): the store has it


@dataclass(eq=False, slots=True)
class Execution:
    """One running job as the worker tracks it."""

    job: ClaimedJob
    context: JobContext
    timeout_seconds: float
    handle: JobHandler | PipeHandler | None = None
    is_pipe: bool = False
    started: float = field(default_factory=time.monotonic)
    # When the execution timeout started counting (monotonic): as the middleware and handler
    # are called; None while nothing counts (before that, and while a sync handler waits for
    # a thread: the time it had used is kept and its thread restarts the clock less that).
    clock: float | None = None
    # The claim is proven held until this monotonic time: the start of the last statement that
    # showed it held (the claim, a heartbeat) plus ``lease_seconds``, the queue's zombie timeout
    # less a safety margin (``lease_window``). A handler never starts after it unverified.
    proof_until: float = 0.0
    lease_seconds: float = 0.0
    next_beat: float = 0.0
    beat_now: bool = False
    beat_failures: int = 0
    stop_reason: StopReason | None = None
    stop_actor: str | None = None
    task: asyncio.Task[None] | None = None
    in_handler: bool = False
    abandoned: bool = False
    # How it ended, when not plainly (``finish``): the circuit breaker asks whether the handler
    # chose its outcome (a returned ``Retry``) or the worker stopped it.
    result: Result | None = None
    # When the handler's call returned or raised (monotonic; None until then): the attempt's
    # end is recorded as its start plus ``ended - started`` (``SucceedMove.elapsed_seconds``).
    ended: float | None = None
    # The batch this job runs in (a batch handler's job; ``runtime.batches``): its call is
    # shared, so a stop goes through the batch, which decides whether it ends the call.
    batch: BatchStops | None = None

    def stop(self, reason: StopReason, actor: str | None = None) -> None:
        """Ask the job to stop: set its cancel flag and cancel the handler while it runs."""
        if self.stop_reason is not None:
            return
        self.stop_reason = reason
        self.stop_actor = actor
        _request_stop(self.context, reason.value)
        if self.batch is not None:
            self.batch.member_stopped(reason)
            return
        if self.in_handler and self.task is not None and not self.task.done():
            self.task.cancel()


def lease_window(zombie_timeout_seconds: float) -> float:
    """How long after a statement that showed a claim held the claim is still proven: the
    zombie timeout less a margin (a quarter of it, at most 5 s) for clock rates and the time a
    row's ``heartbeat_at`` is set after our clock was read."""
    return zombie_timeout_seconds - min(0.25 * zombie_timeout_seconds, 5.0)


class _NotStarted(BaseException):
    """Raised where a handler would start when its claim is not proven: the handler is not
    called. A BaseException so that middleware catching ``Exception`` lets it through."""


Prove = Callable[["Execution"], Awaitable["tuple[StopReason, str | None] | None"]]


class ParentsRead(NamedTuple):
    """What a job with parents reads as it starts: its parents' return values (those that
    succeeded) and outcomes by id, for its context, and the results it gets as its leading
    positional arguments (``pass_results``; empty otherwise)."""

    results: dict[str, Any]
    outcomes: dict[str, JobOutcome]
    passed: tuple[Any, ...] = ()


Parents = Callable[[str], Awaitable[ParentsRead]]
# ``durable(lease)``: the durable side of one run of a durable job (``runtime.durable``).
DurableFactory = Callable[["Lease"], Durable]


class BatchStops(Protocol):
    """How a batch hears that one of its jobs was asked to stop (``runtime.batches``)."""

    def member_stopped(self, reason: StopReason) -> None: ...


class SyncRunner(Protocol):
    """Where sync handlers run (``threads.SyncThreads``)."""

    def submit(self, fn: Callable[[], Any]) -> Future[Any]: ...

    def waiter(self, future: Future[Any]) -> asyncio.Future[Any]: ...

    def overran(self, future: Future[Any], *, job_id: str) -> None: ...


def _error_text(exc: BaseException, note: str | None = None) -> str:
    # The exception line comes first, so the error's first line names it (the DLQ's error
    # families group on it), then why it was not retried (when a rule says so), then the trace.
    head = "".join(traceback.format_exception_only(exc)).strip()
    if note is not None:
        head = f"{head}\n\n{note}"
    trace = "".join(traceback.format_exception(exc)).strip()
    text = storable(f"{head}\n\n{trace}") or ""
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 20] + "\n... (truncated)"
    return text


def error_type_of(exc: BaseException) -> str:
    """The qualified class name of ``exc`` (``module.Class``, ``builtins.ValueError`` for a
    built-in), kept beside the error's text: what the exception *is*, which the text's first
    line only shows for a class outside ``builtins`` and ``__main__``. Cut to the storage
    limit (a class nested in generated code can have a very long name)."""
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"[:MAX_ERROR_TYPE_LENGTH]


def decide(
    *,
    job: ClaimedJob,
    result: Result,
    policy: RetryPolicy,
    max_attempts: int,
    duration: float | None,
    now: datetime,
    value: Any = None,
    error: BaseException | None = None,
    message: str | None = None,
    stop_reason: StopReason | None = None,
    actor: str | None = None,
    fatal_types: ExceptionTypes = (),
    fatal_on: ExceptionTypes = (),
    retry_on: ExceptionTypes | None = None,
    rng: random.Random | None = None,
) -> Move | None:
    """Map an execution's result to the move that records it (None: we no longer own it).

    ``policy`` and ``max_attempts`` are the job's (its type's own when it has them, else the
    worker's); ``fatal_types`` are the worker's fatal exceptions, ``fatal_on`` and ``retry_on``
    the job type's (``retry_on=None``: every exception is retryable).

    * success -> archive;
    * ``FatalError``, a fatal type of the worker's or of the job type's (``fatal_on``), an
      exception outside the type's ``retry_on`` (``ThrottledError`` excepted: it asks for a
      retry), ``Fail``, or a retry delay the handler named that is not a number of seconds
      up to 366 days (``explicit_delay``) -> DLQ FATAL_ERROR, no retry;
    * dispatch failure -> DLQ REJECTED;
    * timeout -> DLQ TIMEOUT; operator cancel -> DLQ CANCELLED (actor);
      heartbeat failure -> DLQ HEARTBEAT_FAILURE; shutdown -> back to pending now (the
      interrupted execution counts as an attempt), or DLQ MAX_RETRIES_EXCEEDED when it was
      the last attempt; lost lease -> nothing (not ours);
    * ``Retry``, ``ThrottledError`` and other exceptions -> retry while attempts remain
      (``job.attempt_count`` executions so far), else DLQ MAX_RETRIES_EXCEEDED, THROTTLED or
      TRANSIENT; a retry that would land past ``created_at`` + max job age -> DLQ
      RETRY_LIFETIME_EXPIRED.
    """
    lease = job.lease
    kind = None if error is None else error_type_of(error)  # on each FailMove an error made
    if result is Result.SUCCEEDED:
        return SucceedMove(lease, duration)
    if result is Result.REJECTED:
        return FailMove(lease, FailureReason.REJECTED, message or "Rejected", duration_seconds=None)
    if result is Result.TIMED_OUT:
        return FailMove(
            lease, FailureReason.TIMEOUT, message or "Timeout", duration_seconds=duration
        )
    if result is Result.STOPPED:
        if stop_reason is StopReason.LEASE_LOST or stop_reason is None:
            return None
        if stop_reason is StopReason.CANCELLED:
            return FailMove(
                lease,
                FailureReason.CANCELLED,
                f"Cancelled by {actor or 'an operator'} while running",
                actor=actor,
                duration_seconds=duration,
            )
        if stop_reason is StopReason.UNPROVEN:
            # Never started: give it back at once, the attempt refunded (the fence refuses
            # this too if the claim was in fact lost).
            return RetryMove(lease, None, refund_attempt=True, count_retry=False)
        if stop_reason is StopReason.HEARTBEAT_FAILURE:
            return FailMove(
                lease,
                FailureReason.HEARTBEAT_FAILURE,
                "HeartbeatFailure: heartbeats kept failing; the job was cancelled",
                duration_seconds=duration,
            )
        text = "Shutdown: the worker stopped before the job finished"
        if job.attempt_count >= max_attempts:
            # The interrupted execution was its last: giving it back would run it past
            # max_attempts, and a job that always outlives the grace period for ever.
            return FailMove(
                lease,
                FailureReason.MAX_RETRIES_EXCEEDED,
                f"Attempts exhausted ({job.attempt_count} of {max_attempts}): {text}",
                duration_seconds=duration,
            )
        return RetryMove(lease, text, count_retry=False, duration_seconds=duration)
    if result is Result.RETURNED_FAIL:
        return FailMove(
            lease, FailureReason.FATAL_ERROR, f"Fail: {message}", duration_seconds=duration
        )
    if result is Result.RAISED and error is not None:
        fatal = _fatal_note(job.type, error, fatal_types, fatal_on, retry_on)
        if fatal is not None:
            return FailMove(
                lease,
                FailureReason.FATAL_ERROR,
                _error_text(error, fatal or None),
                duration_seconds=duration,
                error_type=kind,
            )

    # Retryable: Retry(...) returned, a throttled error or any other exception. A delay the
    # handler named is honoured exactly up to the engine's maximum; the policy's max_delay caps
    # the computed backoff only.
    throttled = isinstance(error, ThrottledError)
    if result is Result.RETURNED_RETRY:
        retry = value if isinstance(value, Retry) else Retry()
        exhausted_reason = FailureReason.MAX_RETRIES_EXCEEDED
        text = f"Retry: {retry.reason}"
        after, field = retry.after_seconds, "Retry.after_seconds"
    else:
        exhausted_reason = FailureReason.THROTTLED if throttled else FailureReason.TRANSIENT
        text = _error_text(error) if error is not None else (message or "failed")
        after = error.retry_after_seconds if isinstance(error, ThrottledError) else None
        field = "ThrottledError.retry_after_seconds"
    if after is None:
        delay = policy.backoff(job.attempt_count, rng)
    else:
        try:
            delay = explicit_delay(field, after)
        except ValidationError as exc:
            # A delay the engine would not take at enqueue: refused, never shortened to fit
            # (a retry 34 days early is no more what was asked than one 366 days late).
            refusal = f"Not retried: {exc}"
            return FailMove(
                lease,
                FailureReason.FATAL_ERROR,
                f"{text}\n\n{refusal}" if error is None else _error_text(error, refusal),
                duration_seconds=duration,
                error_type=kind,
            )
    if job.attempt_count >= max_attempts:
        return FailMove(
            lease,
            exhausted_reason,
            f"Attempts exhausted ({job.attempt_count} of {max_attempts}): {text}",
            duration_seconds=duration,
            error_type=kind,
        )
    run_at = now + timedelta(seconds=delay)
    if policy.max_job_age_seconds is not None:
        deadline = job.created_at + timedelta(seconds=policy.max_job_age_seconds)
        if now >= deadline or run_at > deadline:
            return FailMove(
                lease,
                FailureReason.RETRY_LIFETIME_EXPIRED,
                f"RetryLifetimeExpired: created {job.created_at.isoformat()}, next retry "
                f"{run_at.isoformat()}, max job age {policy.max_job_age_seconds:g} s: {text}",
                duration_seconds=duration,
                error_type=kind,
            )
    return RetryMove(lease, text, run_at=run_at, duration_seconds=duration)


def _fatal_note(
    type_name: str,
    error: BaseException,
    fatal_types: ExceptionTypes,
    fatal_on: ExceptionTypes,
    retry_on: ExceptionTypes | None,
) -> str | None:
    """Why ``error`` is not to be retried ("" when it says so itself), or None: retryable.

    ``fatal_on`` is checked before ``retry_on``, so an exception in both is fatal."""
    if isinstance(error, FatalError) or (fatal_types and isinstance(error, fatal_types)):
        return ""
    name = type(error).__name__
    if fatal_on and isinstance(error, fatal_on):
        return f"Not retried: {name} is in the fatal_on of job type {type_name!r}"
    if retry_on is not None and not isinstance(error, (ThrottledError, *retry_on)):
        return f"Not retried: {name} is not in the retry_on of job type {type_name!r}"
    return None


@dataclass(eq=False, slots=True)
class Executor:
    """Runs the executions of one worker: its settings (retry policy, fatal exception types),
    the app's middleware list (read at each job, so later registrations apply) and the thread
    pool for sync handlers."""

    settings: WorkerSettings
    handlers: Mapping[str, JobHandler]
    pipes: Mapping[str, PipeHandler]
    middlewares: Sequence[Middleware]
    threads: SyncRunner
    _: KW_ONLY
    worker_id: str
    # ``prove(ex)``: check with storage that ``ex``'s claim is still held (None) or say why it
    # is not to be started (the heartbeats' batched check).
    prove: Prove
    # ``parents(job_id)``: how a job's parents ended (jobs enqueued with after=).
    parents: Parents | None = None
    max_result_bytes: int = DEFAULT_LIMITS.max_result_bytes
    # ``durable(ex)``: the recorded run a durable job's context replays (durable=True types).
    durable: DurableFactory | None = None
    # ``streams(lease, replayed)``: the stream writer of a run, made on its first ``ctx.emit``.
    streams: EmitterFactory | None = None

    def prepare(self, job: ClaimedJob, queue: QueueInfo | None) -> Execution:
        """Resolve ``job``'s handler (by type, else the pipe of its queue), its timeout and
        attempts, and build its context: the execution, started now, not yet running."""
        handle: JobHandler | PipeHandler | None = self.handlers.get(job.type)
        is_pipe = False
        if handle is None:
            handle = self.pipes.get(job.queue)
            is_pipe = handle is not None
        settings = self.settings
        # Per job, then per queue, then per type (or pipe), then the worker's default.
        timeout = (
            job.timeout_seconds
            or (queue.execution_timeout_seconds if queue is not None else None)
            or (handle.timeout if handle is not None else None)
            or settings.default_timeout_seconds
        )
        # Per job, then the handler's max_attempts, then its own retry policy's, then the
        # worker's policy's: read here, at execution, so a changed handler applies to jobs
        # already enqueued (only a per-job value is stored with the job).
        max_attempts = job.max_attempts or (handle.max_attempts if handle is not None else None)
        if not max_attempts:
            own = None if is_pipe or handle is None else cast("JobHandler", handle).retry
            max_attempts = (own or settings.retry).max_attempts
        context = JobContext(
            job_id=job.id,
            type=job.type,
            queue=job.queue,
            attempt=job.attempt_count,
            max_attempts=max_attempts,
            created_at=job.created_at,
            tags=job.tags,
            worker_id=self.worker_id,
            trace_context=job.trace_context,
            previous_error=job.last_error,
            requeues=job.requeues,
            _durable=(
                self.durable(job.lease)
                if self.durable is not None and getattr(handle, "durable", False)
                else None
            ),
            _streams=self.streams,
            _lease=job.lease,
        )
        zombie = (
            queue.zombie_timeout_seconds if queue is not None else None
        ) or settings.zombie_timeout_seconds
        return Execution(
            job=job,
            context=context,
            timeout_seconds=timeout,
            handle=handle,
            is_pipe=is_pipe,
            started=time.monotonic(),
            lease_seconds=lease_window(zombie),
        )

    async def execute(self, ex: Execution) -> Move | None:
        """Run ``ex`` to its end and return the move that records the outcome.

        This runs for every job, so the success path is kept short: one monotonic clock read
        (the claim's proof), no closures beyond the handler call itself. The execution timeout
        is enforced by the worker's watchdog, which stops the job with ``StopReason.TIMEOUT``
        (one timer for all jobs instead of one each).
        """
        job = ex.job
        handle = ex.handle
        if handle is None:
            message = (
                f"Rejected: unknown job type {job.type!r} (no handler is registered for it and "
                f"queue {job.queue!r} has no pipe handler)"
            )
            log_event(Event.JOB_REJECTED, message, level=30, job_id=job.id, type=job.type)
            return self.finish(ex, Result.REJECTED, duration=None, message=message)

        context = ex.context
        passed: tuple[Any, ...] = ()
        if job.has_parents and self.parents is not None:
            try:
                read = await self.parents(job.id)
            except Exception as exc:  # storage failed us: an ordinary failure, retried
                return self.finish(ex, Result.RAISED, duration=None, error=exc)
            context.parent_results, context.parent_outcomes, passed = read
        if ex.is_pipe:
            pargs: dict[str, Any] = {}
            if handle.context_param is not None:
                pargs[handle.context_param] = context
            call = self.caller(handle.fn, (job.type, job.payload), pargs, handle.is_async, ex)
        else:
            try:
                arguments = decode_arguments(handle, job.payload, passed)
                if handle.context_param is not None:
                    arguments[handle.context_param] = context
            except (ValueError, TypeError) as exc:
                message = f"Rejected: the payload does not fit {job.type}: {exc}"
                log_event(Event.JOB_REJECTED, message, level=30, job_id=job.id, type=job.type)
                return self.finish(ex, Result.REJECTED, duration=None, message=message)
            call = self.caller(handle.fn, (), arguments, handle.is_async, ex)

        if self.middlewares:
            call = _chain(self.middlewares, context, call)
        started = time.perf_counter()
        ex.in_handler = True
        ex.clock = time.monotonic()
        try:
            value = await call()
        except _NotStarted:
            ex.in_handler = False
            return self.stopped(ex, 0.0)
        except JobSuspended as suspended:
            # A durable job left for the store (suspended), or one no longer ours: nothing to
            # finalize either way.
            ex.in_handler = False
            ex.ended = time.monotonic()
            if suspended.lost:
                ex.stop(StopReason.LEASE_LOST)
                ex.result = Result.STOPPED
            else:
                ex.result = Result.SUSPENDED
            return None
        except asyncio.CancelledError as exc:
            ex.in_handler = False
            ex.ended = time.monotonic()
            task = asyncio.current_task()
            cancelled = task is not None and task.cancelling() > 0
            if ex.stop_reason is not None:
                if cancelled:
                    task.uncancel()  # type: ignore[union-attr]
                return self.stopped(ex, time.perf_counter() - started)
            if cancelled:
                raise  # the task itself was cancelled (the loop is closing): not the job's end
            # Nobody cancelled this task: the handler raised CancelledError itself (it awaited
            # a cancelled sub-task). That is an ordinary failure, retried by the policy.
            return self.finish(ex, Result.RAISED, duration=time.perf_counter() - started, error=exc)
        except BaseException as exc:  # handlers may raise anything, SystemExit included
            ex.in_handler = False
            ex.ended = time.monotonic()
            if ex.stop_reason is not None:
                return self.stopped(ex, time.perf_counter() - started)
            return self.finish(ex, Result.RAISED, duration=time.perf_counter() - started, error=exc)
        ex.in_handler = False
        ex.ended = time.monotonic()
        duration = time.perf_counter() - started
        if ex.stop_reason is not None and ex.stop_reason is not StopReason.SHUTDOWN:
            # Stopped but the handler returned anyway (it swallowed the cancellation, or a sync
            # handler finished): the stop decides the outcome and the result is ignored.
            return self.stopped(ex, duration)
        if type(value) is Retry:
            return self.finish(ex, Result.RETURNED_RETRY, duration=duration, value=value)
        if type(value) is Fail:
            return self.finish(ex, Result.RETURNED_FAIL, duration=duration, message=value.message)
        elapsed = ex.ended - ex.started
        if value is None:
            return SucceedMove(job.lease, duration, elapsed_seconds=elapsed)
        result, why = encode_result(value, self.max_result_bytes)
        if why is not None:
            log_event(
                Event.JOB_RESULT_NOT_KEPT,
                "the job succeeded; its return value was not kept",
                level=30,
                job_id=job.id,
                type=job.type,
                reason=why,
            )
        return SucceedMove(job.lease, duration, result, why, elapsed)

    def stopped(self, ex: Execution, duration: float) -> Move | None:
        if ex.stop_reason is StopReason.TIMEOUT:
            return self.finish(
                ex, Result.TIMED_OUT, duration=duration, message=_timeout_message(ex)
            )
        return self.finish(
            ex,
            Result.STOPPED,
            duration=duration,
            stop_reason=ex.stop_reason,
            actor=ex.stop_actor,
        )

    def finish(self, ex: Execution, result: Result, **kw: Any) -> Move | None:
        ex.result = result
        settings = self.settings
        policy = settings.retry
        fatal_on: ExceptionTypes = ()
        retry_on: ExceptionTypes | None = None
        if not ex.is_pipe and ex.handle is not None:
            # The job type's own rules, read from its handler now (see ``prepare``).
            handler = cast("JobHandler", ex.handle)
            policy = handler.retry or policy
            fatal_on, retry_on = handler.fatal_on, handler.retry_on
        move = decide(
            job=ex.job,
            result=result,
            policy=policy,
            max_attempts=ex.context.max_attempts,
            now=datetime.now(UTC),
            fatal_types=settings.fatal_exceptions,
            fatal_on=fatal_on,
            retry_on=retry_on,
            **kw,
        )
        if move is not None and ex.ended is not None and move.duration_seconds is not None:
            # A handler that ran: its end on the store's clock (SucceedMove.elapsed_seconds).
            move = replace(move, elapsed_seconds=ex.ended - ex.started)
        error = kw.get("error")
        if isinstance(move, RetryMove) and isinstance(error, ThrottledError):
            job = ex.job
            log_event(
                Event.JOB_THROTTLED_RETRY,
                "job throttled; it will retry (retry_after honoured when given)",
                job_id=job.id,
                type=job.type,
                queue=job.queue,
                retry_after=error.retry_after_seconds,
            )
        return move

    async def _proven(self, ex: Execution) -> None:
        """Return when ``ex``'s claim is proven held; else stop it and raise ``_NotStarted``."""
        refused = await self.prove(ex)
        if refused is None:
            return
        ex.in_handler = False  # stop() must not cancel this task: it is the one asking
        ex.stop(*refused)
        raise _NotStarted

    def caller(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        is_async: bool,
        ex: Execution,
    ) -> Callable[[], Awaitable[Any]]:
        context = ex.context
        if is_async:

            async def call_async() -> Any:
                # The handler starts on this very step, so the proof is checked here, after
                # any middleware (which may have waited), not when the job was claimed.
                if time.monotonic() >= ex.proof_until:
                    await self._proven(ex)
                token = _bind(context)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    _unbind(token)

            return call_async

        threads = self.threads

        async def call_sync() -> Any:
            # A sync handler runs in a thread with the job's context bound. If it overruns its
            # timeout or is cancelled, the worker stops waiting and records the outcome; the
            # thread cannot be interrupted and its eventual result is ignored (``SyncThreads``
            # keeps such overrun threads from starving later sync jobs).
            ctx = contextvars.copy_context()
            ctx.run(_bind, context)

            def in_thread(used: float) -> tuple[Any, BaseException | None]:
                # The handler starts in this thread, maybe later than it was handed over:
                # past the claim's proof it does not start, and the loop checks the claim.
                if time.monotonic() >= ex.proof_until:
                    return _UNPROVEN, None
                ex.clock = time.monotonic() - used  # the timeout counts from here on
                # Whatever the handler raises comes back as a value and is re-raised below. A
                # GeneratorExit delivered through the future would be thrown into this task's
                # coroutine chain, where CPython closes the inner frames instead of letting the
                # exception pass through them: it would skip ``execute`` and strand the job.
                try:
                    return ctx.run(fn, *args, **kwargs), None
                except BaseException as exc:
                    return None, exc

            while True:
                if time.monotonic() >= ex.proof_until:
                    await self._proven(ex)
                # Waiting for a thread does not count against the timeout.
                clock = ex.clock
                used = 0.0 if clock is None else time.monotonic() - clock
                ex.clock = None
                future = threads.submit(partial(in_thread, used))
                try:
                    value, error = await threads.waiter(future)
                except asyncio.CancelledError:
                    # Stopped: a handler not yet started never will be; a running one cannot
                    # be interrupted, so its thread runs on and the pool makes room for it.
                    if not future.cancel() and not future.done():
                        threads.overran(future, job_id=ex.job.id)
                    raise
                if value is not _UNPROVEN:
                    break
                ex.clock = time.monotonic() - used
            if error is not None:
                raise error
            return value

        return call_sync


_UNPROVEN = object()  # what a sync handler's thread returns when it did not start it


def _timeout_message(ex: Execution) -> str:
    return f"Timeout: the handler ran past its execution timeout of {ex.timeout_seconds:g} s"


def _chain(
    middlewares: Sequence[Middleware], context: JobContext, call: Callable[[], Awaitable[Any]]
) -> Callable[[], Awaitable[Any]]:
    def link(index: int) -> Callable[[], Awaitable[Any]]:
        if index == len(middlewares):
            return call
        middleware = middlewares[index]
        following = link(index + 1)

        async def run() -> Any:
            return await middleware(context, following)

        return run

    return link(0)

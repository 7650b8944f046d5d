"""Running a batch handler's jobs: one handler call for many claimed jobs, one outcome each.

A claimed batch is a ``BatchRun``: its jobs (an ``Execution`` each, in the worker's slots like
any running job, so heartbeats, cancel requests and zombie rescue see every job; the batch
takes one slot), the one task that calls the handler, and how a job's stop reaches that call.
``BatchRunner`` launches a claimed batch and hands each job's move to the finalizer at once,
so that a batch is finalized in one round trip; ``run_batch`` decodes the jobs, calls the
handler (a plain ``def`` in a thread, through the executor's caller) and maps the list it
returns, or what it raised, to one move per job through the executor's ``decide``. It does no
storage I/O itself and never sees the worker: it is given the executor, the slots, the circuit
breakers and the finalizer's ``submit``.

What applies per batch (docs/batches.md): the circuit breaker (one permit, one verdict: a raise
is one failure, a returned list one success), the execution timeout (the smallest of its
jobs'; past it the call is cancelled and every job of the batch times out), shutdown (the call
is interrupted after the grace period and every job goes back to Pending) and the claim's
proof. What applies per job: a cancel request (the job's ``context`` says so and its result is
discarded; the call goes on for the others), a lost lease, a failed heartbeat, its retry policy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..batches import Batched, batch_results
from ..context import _request_stop
from ..logs import Event, log_event
from ..models import Claim, ClaimedJob, Move, RetryMove, SucceedMove
from ..outcomes import Fail, Retry
from ..payloads import encode_result
from ..serializer import decode_arguments
from .circuit import CircuitBreakers
from .executor import Execution, Executor, Result, StopReason, _chain, _NotStarted
from .host import BatchHandler
from .slots import Slots

__all__ = ["BatchRun", "BatchRunner", "run_batch"]

ERROR = 40

# Stops that end the shared call for every job of the batch; any other stop is one job's.
_WHOLE_BATCH = frozenset({StopReason.TIMEOUT, StopReason.SHUTDOWN, StopReason.UNPROVEN})


@dataclass(eq=False)
class BatchRun:
    """One claimed batch as the worker tracks it."""

    id: str
    handle: BatchHandler
    members: list[Execution]
    task: asyncio.Task[None] | None = None
    in_call: bool = False
    # The circuit breaker's verdict on the call: a failed job's move when it raised (or
    # returned something that is not one result per job), None when it returned; and whether
    # it says anything about the dependency (not when a stop of the whole batch ended it).
    verdict: Move | None = field(default=None, init=False)
    judged: bool = field(default=True, init=False)

    def member_stopped(self, reason: StopReason) -> None:
        """A job of the batch was asked to stop. A timeout, a shutdown or an unproven claim
        stops them all and cancels the call; any other stop is that job's alone (its flag is
        set, the call goes on for the others)."""
        if reason not in _WHOLE_BATCH:
            return
        for ex in self.members:
            if ex.stop_reason is None:
                ex.stop_reason = reason
                _request_stop(ex.context, reason.value)
        task = self.task
        if self.in_call and task is not None and not task.done():
            task.cancel()


@dataclass(eq=False)
class BatchRunner:
    """Launches claimed batches and records their outcomes; ``track(job, sent)`` makes a
    claimed job a running execution (the worker's own bookkeeping, shared with plain jobs)."""

    executor: Executor
    slots: Slots
    circuits: CircuitBreakers
    submit: Callable[[Move, Any], None]
    track: Callable[[ClaimedJob, float], Execution]
    emit: Callable[..., None]
    circuit_delay_seconds: float

    def launch(self, claim: Claim, sent: float) -> None:
        """Start the batch ``claim`` took (``sent``: the monotonic time before its statement)."""
        members = [self.track(job, sent) for job in claim.jobs]
        lead = members[0]
        run = BatchRun(claim.batch_id or "", lead.handle, members)  # type: ignore[arg-type]
        self.slots.add_batch(members)
        task = asyncio.get_running_loop().create_task(self._run(run))
        run.task = task
        for ex in members:
            ex.task = task
            ex.batch = run
        job = lead.job
        self.emit("batch", batch_id=run.id, type=job.type, queue=job.queue, size=len(members))

    async def _run(self, run: BatchRun) -> None:
        lead = run.members[0]
        name = lead.job.type
        permit = self.circuits.acquire(name)
        moves: list[tuple[Execution, Move | None]]
        if permit is None:
            log_event(Event.JOB_CIRCUIT_DEFERRED, "circuit open; batch deferred", type=name)
            moves = [
                (
                    ex,
                    RetryMove(
                        ex.job.lease,
                        None,
                        delay_seconds=self.circuit_delay_seconds,
                        refund_attempt=True,
                        count_retry=False,
                    ),
                )
                for ex in run.members
            ]
        else:
            try:
                moves = await run_batch(self.executor, run)
            except asyncio.CancelledError:
                self.circuits.release(name, permit)
                self.slots.done_batch(run.members)
                raise
            except BaseException as exc:  # a bug of ours: rescue recovers the jobs
                log_event(
                    Event.WORKER_LOOP_CRASHED,
                    "batch executor failed",
                    level=ERROR,
                    job_id=lead.job.id,
                    error=repr(exc),
                )
                moves = []
            verdict = run.verdict or SucceedMove(lead.job.lease, None)
            self.circuits.report(name, verdict, permit, judged=run.judged)
        self.slots.done_batch(run.members)
        for ex, move in moves:
            if move is not None and not ex.abandoned:
                self.submit(move, ex)


async def run_batch(executor: Executor, run: BatchRun) -> list[tuple[Execution, Move | None]]:
    """Decode each job of ``run`` (a job whose payload does not fit is rejected alone), call
    the handler once with the rest, and return each job's move (None: not ours any more)."""
    handle = run.handle
    moves: list[tuple[Execution, Move | None]] = []
    live: list[Execution] = []
    items: list[Batched[Any]] = []
    for ex in run.members:
        try:
            item = _item(handle, ex)
        except Exception as exc:  # a model's own check (__post_init__) may raise anything
            job = ex.job
            message = f"Rejected: the payload does not fit {job.type}: {exc}"
            log_event(Event.JOB_REJECTED, message, level=30, job_id=job.id, type=job.type)
            move = executor.finish(ex, Result.REJECTED, duration=None, message=message)
            moves.append((ex, move))
            continue
        live.append(ex)
        items.append(item)
    if items:
        moves += await _call(executor, run, live, items)
    return moves


def _item(handle: BatchHandler, ex: Execution) -> Batched[Any]:
    arguments = decode_arguments(handle, ex.job.payload)
    assert handle.arguments is not None
    key = handle.batch.key
    context = ex.context
    return Batched(
        id=ex.job.id,
        args=handle.arguments.build(arguments),
        attempt=context.attempt,
        max_attempts=context.max_attempts,
        key=None if key is None else arguments.get(key),
        context=context,
    )


async def _call(
    executor: Executor, run: BatchRun, live: list[Execution], items: list[Batched[Any]]
) -> list[tuple[Execution, Move | None]]:
    """Call the handler with ``items`` and map its answer to the ``live`` jobs' moves."""
    handle = run.handle
    lead = live[0]
    # Only the first job's clock counts, against the smallest timeout of the batch.
    lead.timeout_seconds = min(ex.timeout_seconds for ex in live)
    call = executor.caller(handle.fn, (items,), {}, handle.is_async, lead)
    if executor.middlewares:
        call = _chain(executor.middlewares, lead.context, call)
    started = time.perf_counter()
    values: Any = None
    error: BaseException | None = None
    stopped = False  # the call was cut short (or never began) by a stop of the whole batch
    run.in_call = True
    for ex in live:
        ex.in_handler = True
    lead.clock = time.monotonic()
    try:
        values = await call()
    except _NotStarted:
        stopped = True
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        cancelled = task is not None and task.cancelling() > 0
        if lead.stop_reason is not None:
            stopped = True
            if cancelled:
                task.uncancel()  # type: ignore[union-attr]
        elif cancelled:
            raise  # the loop is closing: not the batch's end
        else:
            error = exc  # the handler raised CancelledError itself: an ordinary failure
    except BaseException as exc:  # handlers may raise anything
        error = exc
    finally:
        run.in_call = False
        ended = time.monotonic()
        for ex in live:
            ex.in_handler = False
            ex.ended = ended
    duration = time.perf_counter() - started
    if stopped:
        run.judged = False
        _stop_all(live, lead.stop_reason)
        return [(ex, executor.stopped(ex, duration)) for ex in live]
    if error is None:
        try:
            values = batch_results(handle.name, values, len(items))
        except ValueError as exc:
            error = exc
    moves = [
        (ex, _move(executor, ex, duration, error, None if error is not None else values[i]))
        for i, ex in enumerate(live)
    ]
    if error is not None:
        run.verdict = moves[0][1]
    return moves


def _stop_all(live: list[Execution], reason: StopReason | None) -> None:
    """Every job of a batch whose call a stop cut short (or kept from starting: an unproven
    claim) takes that stop; a lost lease of the first job is an unproven claim for the rest."""
    for ex in live:
        if ex.stop_reason is None:
            ex.stop_reason = StopReason.UNPROVEN if reason is StopReason.LEASE_LOST else reason


def _move(
    executor: Executor, ex: Execution, duration: float, error: BaseException | None, value: Any
) -> Move | None:
    """One job's move: its stop, the batch's error, or its own result."""
    reason = ex.stop_reason
    if reason is not None and (error is not None or reason is not StopReason.SHUTDOWN):
        return executor.stopped(ex, duration)
    if error is None and isinstance(value, BaseException):
        error = value  # this item failed alone
    if error is not None:
        return executor.finish(ex, Result.RAISED, duration=duration, error=error)
    if type(value) is Retry:
        return executor.finish(ex, Result.RETURNED_RETRY, duration=duration, value=value)
    if type(value) is Fail:
        return executor.finish(ex, Result.RETURNED_FAIL, duration=duration, message=value.message)
    elapsed = (ex.ended or time.monotonic()) - ex.started
    result, why = encode_result(value, executor.max_result_bytes)
    if why is not None:
        log_event(
            Event.JOB_RESULT_NOT_KEPT,
            "the job succeeded; its return value was not kept",
            level=30,
            job_id=ex.job.id,
            type=ex.job.type,
            reason=why,
        )
    return SucceedMove(ex.job.lease, duration, result, why, elapsed)

"""The durable side of one run of a durable job: what ``ctx.step``, ``ctx.sleep`` and
``ctx.wait_for_event`` do, on the storage seam, under the run's lease.

Replay: the handler runs from the top on every run; each call finds its outcome among the steps
the job recorded (read once, on the first durable call of the run, so a durable job that makes
none costs nothing) and returns it at once, or does its work and records it (reads and records
go through the worker's ``StepBatcher``: many jobs' in one statement). Sleeps and waits are
keyed by their order in the run (``sleep#1``, ``wait#2``), steps by their name. A sleep or
a wait that suspends the job raises ``JobSuspended``, which unwinds the handler; the executor
then leaves the job to the store (no move to finalize). Owns no SQL and never reaches the worker.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from ..context import JobSuspended
from ..errors import (
    JobFailedError,
    NotFoundError,
    ResultUnavailableError,
    ValidationError,
)
from ..limits import check_event_key, check_seconds, check_step_name, storable
from ..models import FailureReason, Lease, NewJob, StepKind, StepRecord, StepState, StepWrite
from ..serializer import Unserializable, encode
from ..storage import Backend
from .steps import StepBatcher

__all__ = ["DurableRun"]


def _decoded(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _error(exc: BaseException) -> str:
    head = "".join(traceback.format_exception_only(exc)).strip()
    trace = "".join(traceback.format_exception(exc)).strip()
    return (storable(f"{head}\n\n{trace}") or "")[:16_000]


class DurableRun:
    """One run of a durable job (``JobContext._durable``), under ``lease``."""

    def __init__(
        self, backend: Backend, steps: StepBatcher, lease: Lease, *, max_value_bytes: int
    ) -> None:
        self.backend = backend
        self.steps = steps
        self.lease = lease
        self.max_value_bytes = max_value_bytes
        self._steps: dict[str, StepRecord] | None = None
        self._used: set[str] = set()
        self._sleeps = 0
        self._waits = 0
        self._spawns = 0
        self._gathers = 0

    async def _recorded(self, name: str) -> StepRecord | None:
        if self._steps is None:
            listed = await self.steps.read(self.lease.job_id)
            self._steps = {step.name: step for step in listed}
        return self._steps.get(name)

    def _keep(self, step: StepRecord) -> None:
        assert self._steps is not None
        self._steps[step.name] = step

    async def step(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        name = check_step_name("name", name)
        if not callable(fn):
            raise ValidationError("fn", f"must be callable, not {type(fn).__name__}")
        if name in self._used:
            raise ValidationError("name", f"step {name!r} was called twice in one run of the job")
        self._used.add(name)
        recorded = await self._recorded(name)
        if recorded is not None and recorded.state is StepState.DONE:
            if recorded.kind is not StepKind.STEP:
                raise ValidationError("name", f"{name!r} names a {recorded.kind.name.lower()}")
            return _decoded(recorded.value)
        started = time.monotonic()
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(*args)
            else:
                value = await asyncio.to_thread(fn, *args)
        except Exception as exc:
            elapsed = time.monotonic() - started
            await self.steps.record(
                StepWrite(self.lease, name, error=_error(exc), elapsed_seconds=elapsed)
            )
            raise
        elapsed = time.monotonic() - started
        text = self._encoded(name, value)
        done = await self.steps.record(StepWrite(self.lease, name, text, elapsed_seconds=elapsed))
        if done is None:
            raise JobSuspended(f"step {name!r} not recorded: the job is no longer ours", lost=True)
        self._keep(done)
        return _decoded(done.value)

    def _encoded(self, name: str, value: Any) -> str | None:
        if value is None:
            return None
        try:
            text = encode(value, "value")
        except (Unserializable, RecursionError) as exc:
            raise ValidationError(
                "value", f"step {name!r} returned a value JSON cannot hold: {exc}"
            ) from None
        size = len(text.encode("utf-8"))
        if size > self.max_value_bytes:
            raise ValidationError(
                "value",
                f"step {name!r} returned {size} bytes of JSON, over the limit of "
                f"{self.max_value_bytes}",
            )
        return text

    async def sleep(self, seconds: float) -> None:
        delay = check_seconds("seconds", seconds, allow_none=False)
        assert delay is not None
        self._sleeps += 1
        name = f"sleep#{self._sleeps}"
        recorded = await self._recorded(name)
        if recorded is not None and recorded.state is StepState.DONE:
            return
        outcome = await self.backend.durable_sleep(lease=self.lease, name=name, seconds=delay)
        if outcome.suspended:
            raise JobSuspended(f"{name}: sleeping {delay:g} s")
        if outcome.step is None:
            raise JobSuspended(f"{name} not recorded: the job is no longer ours", lost=True)
        self._keep(outcome.step)

    async def wait_for_event(self, key: str, timeout_seconds: float | None) -> Any:
        key = check_event_key("key", key)
        timeout = check_seconds("timeout_seconds", timeout_seconds)
        self._waits += 1
        name = f"wait#{self._waits}"
        step = await self._recorded(name)
        if step is None or step.state is not StepState.DONE:
            outcome = await self.backend.durable_wait(
                lease=self.lease, name=name, key=key, timeout_seconds=timeout
            )
            if outcome.suspended:
                raise JobSuspended(f"{name}: waiting for event {key!r}")
            if outcome.step is None:
                raise JobSuspended(f"{name} not recorded: the job is no longer ours", lost=True)
            step = outcome.step
            self._keep(step)
        if step.error == "timeout":
            raise TimeoutError(f"no event {key!r} came within {timeout_seconds} s")
        return _decoded(step.value)

    async def spawn(self, jobs: Sequence[NewJob]) -> list[str]:
        self._spawns += 1
        name = f"spawn#{self._spawns}"
        recorded = await self._recorded(name)
        if recorded is None or recorded.state is not StepState.DONE:
            done = await self.backend.durable_spawn(lease=self.lease, name=name, jobs=list(jobs))
            if done is None:
                raise JobSuspended(f"{name} not recorded: the job is no longer ours", lost=True)
            self._keep(done)
            recorded = done
        return [str(job_id) for job_id in _decoded(recorded.value)]

    async def gather(self, ids: Sequence[str], return_exceptions: bool) -> list[Any]:
        self._gathers += 1
        name = f"gather#{self._gathers}"
        step = await self._recorded(name)
        if step is None or step.state is not StepState.DONE:
            outcome = await self.backend.durable_gather(lease=self.lease, name=name, ids=ids)
            if outcome.suspended:
                raise JobSuspended(f"{name}: waiting for {len(ids)} jobs")
            if outcome.step is None:
                raise JobSuspended(f"{name} not recorded: the job is no longer ours", lost=True)
            step = outcome.step
            self._keep(step)
        results = [_outcome(*row) for row in _decoded(step.value)]
        if not return_exceptions:
            for result in results:
                if isinstance(result, Exception):
                    raise result
        return results


def _outcome(
    job_id: str,
    where: str,
    result: str | None,
    result_error: str | None,
    reason: int | None,
    error: str | None,
) -> Any:
    """A gathered job's return value, or the exception that says why there is none."""
    if where == "archive":
        if result_error is not None:
            return ResultUnavailableError(job_id, result_error)
        return _decoded(result)
    if where == "dlq" and reason is not None:
        return JobFailedError(job_id, FailureReason(reason), error)
    return NotFoundError(f"job {job_id} is in no pillar (purged, or never enqueued)")

"""Celery's ``Task`` over a chokaq job handler: calling conventions, ``self.request`` and
``self.retry``.

A task is registered as one chokaq job type (its Celery name) whose handler takes the call's
positional and keyword arguments as the two JSON fields ``args`` and ``kwargs``, as Celery's own
message does, so that a ported task keeps its signature. Owns that handler: it binds the
request, passes a parent's return value to a ``.s()`` child, and turns ``self.retry()`` into a
returned ``chokaq.Retry`` (a deferral the task chose, which the circuit breaker does not count).
Sending is the canvas' (``Signature``); this module must not write jobs itself.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...context import JobContext
from ...errors import ConfigurationError, FatalError, JobFailedError, ValidationError
from ...handles import JobHandle
from ...limits import check_delay, check_time
from ...models import Pillar
from ...outcomes import Retry as Deferral
from .canvas import Signature
from .options import TaskOptions, missing, refuse_unknown, seconds_of
from .results import AsyncResult

if TYPE_CHECKING:
    from .canvas import Owner

__all__ = ["MaxRetriesExceededError", "Request", "Retry", "Task"]

RETRY_OPTIONS = frozenset({"exc", "countdown", "eta", "max_retries"})


class Retry(Exception):  # Celery's name, so that ``except Retry`` ports as is
    """What ``self.retry()`` raises: the handler turns it into ``chokaq.Retry`` (run again
    after ``countdown`` seconds). Never catch it in the task."""

    def __init__(self, countdown: float, exc: BaseException | None) -> None:
        self.countdown = countdown
        self.exc = exc
        super().__init__(f"Retry in {countdown:g}s: {exc!r}" if exc else f"Retry in {countdown:g}s")


class MaxRetriesExceededError(FatalError):
    """``self.retry()`` past the task's (or the call's) ``max_retries``: the job goes to the
    DLQ at once (as ``FATAL_ERROR``), chained to the exception given as ``exc``."""


@dataclass(frozen=True, slots=True)
class Request:
    """``self.request`` of a running task: ``id`` (the job's), ``retries`` (runs before this
    one), ``task`` (its name), ``args``, ``kwargs``, ``hostname`` (the worker's id) and
    ``called_directly`` (run by calling the task, not by a worker)."""

    id: str | None
    task: str
    retries: int = 0
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    hostname: str | None = None
    called_directly: bool = False


_request: contextvars.ContextVar[Request] = contextvars.ContextVar("chokaq_celery_request")


class Task:
    """A Celery task: ``delay``, ``apply_async``, ``s``, ``si``, ``retry``, ``request``;
    calling it runs the function here and now, as Celery does."""

    def __init__(self, fn: Callable[..., Any], options: TaskOptions) -> None:
        self.run = fn
        self.options = options
        self.name = options.name or f"{fn.__module__}.{fn.__qualname__}"
        self.max_retries = options.max_retries
        self.default_retry_delay = options.default_retry_delay
        self.celery: Owner | None = None
        self.handle: JobHandle[Any, Any] | None = None
        # The function's signature as a caller sees it (without ``self`` when bound).
        params = list(inspect.signature(fn).parameters.values())
        self.call_signature = inspect.Signature(params[1:] if options.bind else params)
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<@task: {self.name}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing("Task", name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        token = None
        if _request.get(None) is None:
            token = _request.set(Request(None, self.name, 0, args, kwargs, called_directly=True))
        try:
            return (
                self.run(self, *args, **kwargs) if self.options.bind else self.run(*args, **kwargs)
            )
        finally:
            if token is not None:
                _request.reset(token)

    @property
    def app(self) -> Owner:
        if self.celery is None:
            raise ConfigurationError(
                f"task {self.name!r} is bound to no app: create Celery(app) before using it"
            )
        return self.celery

    @property
    def request(self) -> Request:
        """The running job's request (a directly called task's, outside a worker)."""
        found = _request.get(None)
        return found if found is not None else Request(None, self.name, called_directly=True)

    # -- sending ----------------------------------------------------------------------

    @property
    def takes_request(self) -> bool:
        """Whether, as a ``link_error``, it is called Celery's new way, with ``request, exc,
        traceback`` (its function takes more than one positional argument), rather than with
        the failed task's id."""
        params = self.call_signature.parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            return True
        return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) > 1

    def check_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Refuse arguments the function cannot take, at send time as Celery's ``typing``
        does (``ValidationError`` naming ``arguments``), before anything is written."""
        signature = self.call_signature
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ValidationError(
                "arguments", f"do not fit {self.name}{signature}: {exc}"
            ) from None

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature; in a chain, the previous task's return value is its first argument."""
        return Signature(self, args, kwargs)

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """An immutable signature: it takes no parent's return value."""
        return Signature(self, args, kwargs, immutable=True)

    def signature(
        self,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        *,
        immutable: bool = False,
        **options: Any,
    ) -> Signature:
        return Signature(self, tuple(args or ()), dict(kwargs or {}), options, immutable)

    subtask = signature

    def delay(self, *args: Any, **kwargs: Any) -> AsyncResult:
        return self.s(*args, **kwargs).apply_async()

    def apply_async(
        self,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send the task; ``options`` are Celery's ``countdown``, ``eta``, ``expires``,
        ``queue``, ``priority``, ``time_limit``, ``soft_time_limit``, ``link`` and
        ``link_error`` (any other raises ``ValidationError`` naming it)."""
        return Signature(self, tuple(args or ()), dict(kwargs or {})).apply_async(**options)

    def AsyncResult(self, task_id: str) -> AsyncResult:  # Celery's name
        return AsyncResult(task_id, app=self.app)

    # -- retrying ---------------------------------------------------------------------

    def retry(self, **options: Any) -> Retry:
        """Run this job again: after ``countdown`` seconds (or at ``eta``; default
        ``default_retry_delay``), unless it has run ``max_retries`` retries (default the
        task's) already: then ``exc`` is raised, or ``MaxRetriesExceededError``. Always raises
        (``raise self.retry(...)`` reads as in Celery). ``max_retries`` above the task's cannot
        be had (the task's is its jobs' attempts): ``ValidationError``."""
        refuse_unknown(options, RETRY_OPTIONS, "retry")
        exc = options.get("exc")
        request = self.request
        limit = options.get("max_retries", self.max_retries)
        if limit is not None and self.max_retries is not None and limit > self.max_retries:
            raise ValidationError(
                "max_retries",
                f"{limit} is more than task {self.name!r} declares ({self.max_retries}): "
                "declare the largest on the task",
            )
        if request.called_directly:
            raise exc if isinstance(exc, BaseException) else Retry(0, exc)
        if limit is not None and request.retries >= limit:
            if isinstance(exc, BaseException):
                raise MaxRetriesExceededError(
                    f"{self.name}: {exc!r} after {limit} retries"
                ) from exc
            raise MaxRetriesExceededError(f"Can't retry {self.name}[{request.id}]: {limit} retries")
        raise Retry(_countdown(options, self.default_retry_delay), exc)


def _countdown(options: dict[str, Any], default: float) -> float:
    if options.get("eta") is not None:
        moment = check_time("eta", options["eta"])
        return max(0.0, (moment - datetime.now(UTC)).total_seconds())
    countdown = options.get("countdown")
    seconds = default if countdown is None else seconds_of("countdown", countdown)
    return check_delay("countdown", seconds) or 0.0


# -- the job handler a task is registered as --------------------------------------------


def handler(task: Task) -> Callable[..., Any]:
    """The function ``@app.job`` registers for ``task``: async for an ``async def`` task. Its
    parameters are the payload's fields: the call's ``args`` and ``kwargs``, and for a canvas
    step the parents whose values come first (``results_of``, ``as_list``) or, for a
    ``link_error``, the job it handles (``errback_of``: its id and task)."""
    if inspect.iscoroutinefunction(task.run):

        async def run_async(
            ctx: JobContext,
            args: list[Any] | None = None,
            kwargs: dict[str, Any] | None = None,
            results_of: list[str] | None = None,
            as_list: bool = False,
            errback_of: list[str] | None = None,
        ) -> Any:
            leading = _leading(task, ctx, results_of, as_list, errback_of)
            if leading is None:
                return None
            with _running(task, ctx, [*leading, *(args or ())], kwargs) as call:
                try:
                    return await call()
                except Retry as retry:
                    return _deferral(retry)

        return run_async

    def run(
        ctx: JobContext,
        args: list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        results_of: list[str] | None = None,
        as_list: bool = False,
        errback_of: list[str] | None = None,
    ) -> Any:
        leading = _leading(task, ctx, results_of, as_list, errback_of)
        if leading is None:
            return None
        with _running(task, ctx, [*leading, *(args or ())], kwargs) as call:
            try:
                return call()
            except Retry as retry:
                return _deferral(retry)

    return run


def _deferral(retry: Retry) -> Deferral:
    reason = f"Retry: {retry.exc!r}" if retry.exc is not None else "retry requested by the task"
    return Deferral(after_seconds=retry.countdown, reason=reason)


@contextmanager
def _running(
    task: Task, ctx: JobContext, positional: list[Any], kwargs: dict[str, Any] | None
) -> Iterator[Callable[[], Any]]:
    """Bind the request for the task's run and yield the call of its function."""
    keywords = dict(kwargs or {})
    request = Request(
        ctx.job_id, task.name, ctx.attempt - 1, tuple(positional), keywords, ctx.worker_id
    )
    token = _request.set(request)
    try:
        if task.options.bind:
            yield lambda: task.run(task, *positional, **keywords)
        else:
            yield lambda: task.run(*positional, **keywords)
    finally:
        _request.reset(token)


def _leading(
    task: Task,
    ctx: JobContext,
    results_of: list[str] | None,
    as_list: bool,
    errback_of: list[str] | None,
) -> list[Any] | None:
    """What the task receives before its own arguments; None when it must not run at all
    (the errback of a task that succeeded)."""
    if errback_of:
        return errback_values(task, ctx, errback_of)
    return parent_values(ctx, results_of, as_list)


def errback_values(task: Task, ctx: JobContext, errback_of: list[str]) -> list[Any] | None:
    """A ``link_error``'s leading arguments once the job it handles has finished: None when
    that job succeeded (nothing to handle), else Celery's ``request, exc, traceback`` (a
    ``Request`` of the failed job, a ``JobFailedError`` whose ``error_type`` names its
    exception class, and the error's text) or, for a task that takes one argument, its id."""
    failed_id, failed_task = errback_of[0], errback_of[-1]
    outcome = ctx.parent_outcomes.get(failed_id)
    if outcome is None or outcome.pillar is not Pillar.DLQ:
        return None
    if not task.takes_request:
        return [failed_id]
    error = JobFailedError(failed_id, outcome.failure_reason, outcome.error, outcome.error_type)
    return [Request(failed_id, failed_task), error, outcome.error]


def parent_values(ctx: JobContext, results_of: list[str] | None, as_list: bool) -> list[Any]:
    """What a ``.s()`` child receives before its own arguments: nothing without parents, the
    parent's return value after one task, the list of a group's values (in the group's order)
    after a group or as a chord's body."""
    if not results_of:
        return []
    values = [ctx.parent_results.get(parent) for parent in results_of]
    return [values] if as_list else [values[0]]

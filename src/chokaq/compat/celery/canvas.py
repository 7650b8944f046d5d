"""Celery's canvas (signatures, ``chain``, ``group``, ``chord``) as jobs with parents.

Every canvas becomes prepared chokaq jobs linked by ``after=`` and written by one atomic
``enqueue_many``: a chain's step waits on the step before, a group's members on what came
before the group, a chord's body on every member of its header. A ``.s()`` step also names the
jobs whose return values it receives first (``results_of``: one value after a task, the list
of values after a group), which the task's handler reads from ``ctx.parent_results``. Owns the
translation of a canvas into jobs; the options' meaning is ``options``', the result objects
``results``'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import ValidationError
from ...ids import new_job_id
from ...models import NewJob
from .options import TaskOptions, call_options
from .results import AsyncResult, Backing, GroupResult

if TYPE_CHECKING:
    from ...app import App
    from ...handles import JobHandle


class Owner(Backing, Protocol):
    """What a signature needs of its task's app (``Celery``): the job handle of the task."""

    def handle_of(self, task: Any) -> JobHandle[Any, Any]: ...


class TaskLike(Protocol):
    """What a signature needs of its task (``Task``)."""

    name: str
    options: TaskOptions

    @property
    def app(self) -> Owner: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def check_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None: ...

    @property
    def takes_request(self) -> bool: ...


__all__ = ["Signature", "chain", "chord", "group"]


@dataclass(frozen=True)
class Tail:
    """Where a canvas ends: the jobs whose values the next step receives, and whether it gets
    them as one value (after a task) or as a list (after a group)."""

    jobs: tuple[NewJob, ...] = ()
    as_list: bool = False


class Canvas:
    """What ``|``, ``apply_async``, ``delay`` and calling share across the canvas types."""

    def jobs(self, tail: Tail) -> tuple[list[NewJob], Tail, Any]:
        """The jobs this canvas writes after ``tail``, its own tail, and its result."""
        raise NotImplementedError

    def app(self) -> App:
        raise NotImplementedError

    def __or__(self, other: Canvas) -> chain:
        return chain(self, other)

    def apply_async(
        self, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None, **options: Any
    ) -> Any:
        if args or kwargs or options:
            raise ValidationError(
                "apply_async", f"{type(self).__name__}.apply_async takes no arguments or options"
            )
        written, _, result = self.jobs(Tail())
        self.app().enqueue_many_sync(written)
        return result

    def delay(self) -> Any:
        return self.apply_async()

    def __call__(self) -> Any:
        return self.apply_async()


@dataclass(frozen=True, eq=False)
class Signature(Canvas):
    """A task with arguments and options (``task.s(...)``, ``task.si(...)``)."""

    task: TaskLike
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    immutable: bool = False

    def app(self) -> App:
        return self.task.app.app

    def set(self, **options: Any) -> Signature:
        """The same signature with these calling options over its own."""
        return replace(self, options={**self.options, **options})

    def clone(
        self, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None, **options: Any
    ) -> Signature:
        """A copy with ``args`` after its own (before them for an immutable one: none),
        ``kwargs`` over its own and these options over its own."""
        return replace(
            self,
            args=self.args if self.immutable else (*args, *self.args),
            kwargs={**self.kwargs, **(kwargs or {})},
            options={**self.options, **options},
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the task here and now, as Celery's ``sig()`` does."""
        return self.task(*args, *self.args, **{**self.kwargs, **kwargs})

    def apply_async(
        self, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None, **options: Any
    ) -> AsyncResult:
        """Send it (``link=`` signatures run after it and receive its value)."""
        own = self.clone(args, kwargs, **options)
        written, _, result = own.jobs(Tail())
        self.app().enqueue_many_sync(written)
        return result

    def delay(self, *args: Any, **kwargs: Any) -> AsyncResult:
        return self.apply_async(args, kwargs)

    def jobs(self, tail: Tail) -> tuple[list[NewJob], Tail, AsyncResult]:
        options = dict(self.options)
        links = _signatures("link", options.pop("link", None))
        errbacks = _signatures("link_error", options.pop("link_error", None))
        job = self.prepare(tail, options)
        written = [job]
        for link in links:
            more, _, _ = link.jobs(Tail((job,)))
            written += more
        for errback in errbacks:
            if not isinstance(errback, Signature):
                raise ValidationError("link_error", "must be signatures (task.s(...))")
            written.append(errback.errback(job))
        result = AsyncResult(job.id or "", app=self.task.app, parent=_parent_result(self, tail))
        return written, Tail((job,)), result

    def prepare(self, tail: Tail, options: dict[str, Any]) -> NewJob:
        """The job of this signature after ``tail``, with its checked options."""
        handle = self.task.app.handle_of(self.task)
        receives = bool(tail.jobs) and not self.immutable
        self.task.check_arguments(((None,) if receives else ()) + self.args, self.kwargs)
        payload: dict[str, Any] = {"args": list(self.args), "kwargs": dict(self.kwargs)}
        if receives:
            payload["results_of"] = [parent.id for parent in tail.jobs]
            payload["as_list"] = tail.as_list
        enqueue = call_options(options)
        if tail.jobs:
            enqueue["after"] = list(tail.jobs)
        return handle.options(**enqueue).prepare(**payload)

    def errback(self, failed: NewJob) -> NewJob:
        """The job of this signature as a ``link_error`` of ``failed``: it waits for ``failed``
        to finish either way (``after_outcome="any"``) and calls the task only if it failed,
        with Celery's errback arguments first (``request, exc, traceback``, or the failed
        task's id for a task that takes one argument)."""
        options = dict(self.options)
        if options.pop("link", None) or options.pop("link_error", None):
            raise ValidationError("link_error", "an errback cannot have links of its own")
        lead = (None,) * (3 if self.task.takes_request else 1)
        self.task.check_arguments(lead + self.args, self.kwargs)
        enqueue = call_options(options)
        enqueue.update(after_any([failed]))
        handle = self.task.app.handle_of(self.task)
        return handle.options(**enqueue).prepare(
            args=list(self.args), kwargs=dict(self.kwargs), errback_of=[failed.id, failed.type]
        )

    def __repr__(self) -> str:
        call = ", ".join([*map(repr, self.args), *(f"{k}={v!r}" for k, v in self.kwargs.items())])
        return f"{self.task.name}({call}){'!' if self.immutable else ''}"


def after_any(parents: list[NewJob]) -> dict[str, Any]:
    """The enqueue options of a job that runs once ``parents`` have finished, failed or not
    (``after_outcome="any"``): a ``link_error``'s."""
    return {"after": parents, "after_outcome": "any"}


def _signatures(field_name: str, value: Any) -> list[Canvas]:
    if value is None:
        return []
    items = value if isinstance(value, list | tuple) else [value]
    for i, item in enumerate(items):
        if not isinstance(item, Canvas):
            raise ValidationError(
                f"{field_name}[{i}]", f"must be a signature (task.s(...)), not {item!r}"
            )
    return list(items)


def _parent_result(sig: Signature, tail: Tail) -> AsyncResult | None:
    if len(tail.jobs) != 1:
        return None
    return AsyncResult(tail.jobs[0].id or "", app=sig.task.app)


class chain(Canvas):  # Celery's name
    """Tasks run one after the other (``a.s() | b.s()``): each ``.s()`` step receives the
    value of the step before as its first argument. Its result is the last step's, with
    ``.parent`` the one before."""

    def __init__(self, *tasks: Canvas | Iterable[Canvas]) -> None:
        flat: list[Canvas] = []
        for item in tasks:
            if isinstance(item, chain):
                flat += item.tasks
            elif isinstance(item, Canvas):
                flat.append(item)
            else:
                flat += _members("chain", item)
        if not flat:
            raise ValidationError("chain", "needs at least one signature")
        self.tasks: list[Canvas] = flat

    def app(self) -> App:
        return self.tasks[0].app()

    def jobs(self, tail: Tail) -> tuple[list[NewJob], Tail, Any]:
        written: list[NewJob] = []
        result: Any = None
        for step in self.tasks:
            more, tail, step_result = step.jobs(tail)
            written += more
            if isinstance(step_result, AsyncResult) and result is not None:
                step_result.parent = result
            result = step_result
        return written, tail, result


class group(Canvas):  # Celery's name
    """Signatures run side by side; their results come back as a list, in the group's order.
    After a group, a ``.s()`` step receives that list (a chord)."""

    def __init__(self, *tasks: Canvas | Iterable[Canvas]) -> None:
        if len(tasks) == 1 and not isinstance(tasks[0], Canvas):
            self.tasks = _members("group", tasks[0])
        else:
            self.tasks = _members("group", tasks)
        if not self.tasks:
            raise ValidationError("group", "needs at least one signature")

    def app(self) -> App:
        return self.tasks[0].app()

    def jobs(self, tail: Tail) -> tuple[list[NewJob], Tail, GroupResult]:
        written: list[NewJob] = []
        ends: list[NewJob] = []
        results = []
        for member in self.tasks:
            more, member_tail, result = member.jobs(tail)
            written += more
            ends += member_tail.jobs
            results.append(result)
        return written, Tail(tuple(ends), as_list=True), GroupResult(new_job_id(), results)


class chord(Canvas):  # Celery's name
    """A group (the header) and a body run once every member has succeeded, receiving their
    values as a list. ``chord(header)(body)`` and ``chord(header, body)`` both send it."""

    def __init__(self, header: Canvas | Iterable[Canvas], body: Canvas | None = None) -> None:
        self.header = header if isinstance(header, group) else group(header)
        self.body = body

    def app(self) -> App:
        return self.header.app()

    def jobs(self, tail: Tail) -> tuple[list[NewJob], Tail, Any]:
        if self.body is None:
            raise ValidationError(
                "chord", "needs a body: chord(header, body) or chord(header)(body)"
            )
        return chain(self.header, self.body).jobs(tail)

    def __call__(self, body: Canvas | None = None) -> Any:
        if body is not None:
            return chord(self.header, body).apply_async()
        return self.apply_async()


def _members(kind: str, items: Any) -> list[Canvas]:
    if isinstance(items, Canvas) or not isinstance(items, Iterable):
        raise ValidationError(kind, f"takes signatures or an iterable of them, not {items!r}")
    members = list(items)
    for i, item in enumerate(members):
        if not isinstance(item, Canvas):
            raise ValidationError(
                f"{kind}[{i}]", f"must be a signature (task.s(...)), not {item!r}"
            )
    return members

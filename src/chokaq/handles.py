"""Job handles: what ``@app.job`` returns, typed by the handler's signature.

A ``JobHandle[P, R]`` turns a call with the handler's arguments into a ``NewJob`` (checked
against the signature, serialized as JSON) and hands it to its app to write; ``JobOptions``
(``handle.options(...)``) carries the enqueue options apart from the arguments, so that the two
never share a namespace. It owns the option names and their aliases; it never touches storage
or the registry (``chokaq.app`` does).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import (
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    TypedDict,
    TypeVar,
    Unpack,
    overload,
)

from .argument_checks import Check, Kinds, parameter_checks, refusal
from .batches import ArgumentsModel, BatchSpec, check_batch_key
from .context import JobContext
from .errors import ValidationError
from .ids import new_job_id
from .models import EnqueueOutcome, NewJob, OnConflict
from .payloads import encode_payload, tags_option
from .policies import ExceptionTypes, RetryPolicy
from .serializer import Converter, parameter_converters

__all__ = [
    "OPTION_NAMES",
    "BatchHandle",
    "ContextJobHandle",
    "EnqueueOptions",
    "JobDecorator",
    "JobHandle",
    "JobId",
    "JobOptions",
    "Producer",
    "batch_handle",
]

P = ParamSpec("P")
R = TypeVar("R")

# The enqueue options. ``handle.options(...)`` takes them apart from the handler's arguments; the
# older keyword form (``handle.enqueue(x=1, priority=5)``) takes a name from this set as an option
# unless the handler has a parameter of that name, which then gets it as an argument.
OPTION_NAMES = frozenset(
    {
        "queue",
        "priority",
        "delay_seconds",
        "delay",
        "run_at",
        "idempotency_key",
        "tags",
        "created_by",
        "max_attempts",
        "timeout_seconds",
        "timeout",
        "after",
        "after_outcome",
        "pass_results",
        "partition",
        "expires_at",
        "expires_after_seconds",
        "unique_for_seconds",
        "on_conflict",
        "connection",
    }
)
# Durations say seconds (``delay_seconds``); the names they had first are kept as aliases.
_ALIASES = {"delay": "delay_seconds", "timeout": "timeout_seconds"}


class EnqueueOptions(TypedDict, total=False):
    """The options of ``handle.options(...)`` (each described there)."""

    queue: str
    priority: int
    delay_seconds: float
    run_at: datetime
    idempotency_key: str
    tags: Sequence[str]
    created_by: str
    max_attempts: int
    timeout_seconds: float
    after: Iterable[NewJob | str]
    after_outcome: str
    pass_results: bool
    partition: str
    expires_at: datetime
    expires_after_seconds: float
    unique_for_seconds: float
    on_conflict: OnConflict
    connection: Any
    delay: float  # alias of delay_seconds
    timeout: float  # alias of timeout_seconds


class JobId(str):
    """A job's id, and whether the enqueue found an existing job with the same idempotency key
    (``duplicate``: the id is that job's; nothing new was written, unless it was ``replaced``).

    ``outcome`` says what the enqueue did (``"inserted"``, ``"kept"``, ``"replaced"`` or
    ``"superseded"``; see ``on_conflict``). It is a ``str`` subclass so that every caller that
    stores, compares or passes the id on keeps working whatever happened."""

    # Set on the instance only when not the default: most ids need no __dict__.
    duplicate: bool = False
    outcome: EnqueueOutcome = "inserted"

    def __new__(
        cls, value: str, duplicate: bool = False, outcome: EnqueueOutcome | None = None
    ) -> JobId:
        self = super().__new__(cls, value)
        if duplicate:
            self.duplicate = True
            self.outcome = "kept"
        if outcome is not None and outcome != "inserted":
            self.outcome = outcome
        return self


class Producer(Protocol):
    """What a handle needs of its app (``chokaq.App`` is one): writing the jobs it makes."""

    async def enqueue_many(
        self, jobs: Sequence[NewJob], *, connection: Any = None
    ) -> list[JobId]: ...

    def enqueue_many_sync(
        self, jobs: Sequence[NewJob], *, connection: Any = None
    ) -> list[JobId]: ...


@dataclass(frozen=True)
class _Options:
    queue: str | None = None
    priority: int | None = None
    delay_seconds: float | None = None
    run_at: datetime | None = None
    idempotency_key: str | None = None
    tags: Sequence[str] | None = None
    created_by: str | None = None
    max_attempts: int | None = None
    timeout_seconds: float | None = None
    after: Iterable[NewJob | str] | None = None
    after_outcome: str | None = None
    pass_results: bool | None = None
    partition: str | None = None
    expires_at: datetime | None = None
    expires_after_seconds: float | None = None
    unique_for_seconds: float | None = None
    on_conflict: OnConflict | None = None


_NO_OPTIONS = _Options()


def parent_ids(after: Iterable[NewJob | str] | None) -> tuple[str, ...]:
    """The ids ``after=`` names: prepared jobs (``handle.prepare``, ``app.raw``) or ids of
    stored jobs. A single job or id is refused (``after=[a]``, not ``after=a``)."""
    if after is None:
        return ()
    if isinstance(after, str | NewJob) or not isinstance(after, Iterable):
        raise ValidationError("after", "must be a list of prepared jobs or job ids")
    ids: list[str] = []
    for i, parent in enumerate(after):
        if isinstance(parent, NewJob):
            if parent.id is None:
                raise ValidationError(
                    f"after[{i}]", "is a job without an id (prepare() gives each job one)"
                )
            ids.append(parent.id)
        elif isinstance(parent, str):
            ids.append(str(parent))
        else:
            raise ValidationError(
                f"after[{i}]",
                f"must be a prepared job or a job id, not {type(parent).__name__}",
            )
    return tuple(ids)


def _options(given: Mapping[str, Any], base: _Options = _NO_OPTIONS) -> tuple[_Options, Any]:
    """The options named in ``given`` (over ``base``: a value given replaces it) and the
    ``connection``; an alias given with its new name, or a name that is no option, raises
    ``ValidationError`` naming it."""
    unknown = given.keys() - OPTION_NAMES
    if unknown:
        names = ", ".join(sorted(OPTION_NAMES))
        raise ValidationError(sorted(unknown)[0], f"is not an enqueue option (one of {names})")
    values = {k: v for k, v in given.items() if v is not None}
    connection = values.pop("connection", None)
    for old, new in _ALIASES.items():
        if old in values:
            if new in values:
                raise ValidationError(old, f"is another name for {new}; give one of them")
            values[new] = values.pop(old)
    if not isinstance(values.get("pass_results", False), bool):
        raise ValidationError("pass_results", "must be True or False")
    after = values.get("after")
    if isinstance(after, Iterator):
        values["after"] = tuple(after)  # a generator would be used up by the first enqueue
    if not values:
        return base, connection
    return replace(base, **values), connection


def job_from_options(
    type: str,
    payload: str,
    queue: str,
    priority: int,
    options: _Options,
    job_id: str | None = None,
) -> NewJob:
    """The job an enqueue writes: its type and payload, and the options over the handler's (or
    the raw call's) queue and priority. The one place that turns options into a ``NewJob``, so
    that every way to enqueue carries every option."""
    return NewJob(
        type=type,
        payload=payload,
        queue=options.queue if options.queue is not None else queue,
        priority=options.priority if options.priority is not None else priority,
        delay_seconds=options.delay_seconds,
        run_at=options.run_at,
        idempotency_key=options.idempotency_key,
        tags=tags_option(options.tags),
        created_by=options.created_by,
        # Left None unless given per job: the handler's and the queue's settings are applied
        # at execution time, so that changing them applies to jobs already enqueued.
        max_attempts=options.max_attempts,
        timeout_seconds=options.timeout_seconds,
        id=job_id,
        after=parent_ids(options.after),
        after_outcome="success" if options.after_outcome is None else options.after_outcome,
        pass_results=False if options.pass_results is None else options.pass_results,
        partition=options.partition,
        expires_at=options.expires_at,
        expires_after_seconds=options.expires_after_seconds,
        unique_for_seconds=options.unique_for_seconds,
        on_conflict=options.on_conflict or "keep",
    )


@dataclass
class JobHandle(Generic[P, R]):
    """A registered job handler; call ``enqueue`` to run it in the background.

    ``P`` is the handler's parameters (without its ``JobContext``, when that comes first) and
    ``R`` what calling it returns, so that type checkers check ``enqueue``, ``enqueue_sync``,
    ``prepare`` and the options path ``handle.options(priority=20).enqueue(...)`` against the
    handler's signature. Calling the handle itself runs the function directly (handy in tests).
    """

    app: Producer
    fn: Callable[..., R]
    name: str
    queue: str
    priority: int
    max_attempts: int | None
    timeout: float | None
    signature: inspect.Signature = field(repr=False)
    # Every job of the type expires this long after its enqueue unless the enqueue says
    # otherwise (``expires_at`` or its own ``expires_after_seconds``).
    expires_after_seconds: float | None = None
    context_param: str | None = None
    is_async: bool = True
    rate_limit: str | None = None  # per partition value for a job that has one
    partition_concurrency: int | None = None
    # The type's own retry rules (see ``App.job``), read by the worker when a job fails.
    retry: RetryPolicy | None = None
    retry_on: ExceptionTypes | None = None
    fatal_on: ExceptionTypes = ()
    # A durable job (docs/durable.md): its context's step, sleep and wait_for_event work, and
    # a worker that dies running it is resumed by another instead of dead-lettered.
    durable: bool = False
    _names: frozenset[str] | None = field(default=None, repr=False)  # None: takes **kwargs
    _required: frozenset[str] = field(default=frozenset(), repr=False)
    # The option names the keyword form takes as options: every one the handler has no
    # parameter of (a parameter named ``priority`` gets ``priority=`` as its argument).
    _option_names: frozenset[str] = field(default=OPTION_NAMES, repr=False)
    # Keyword arguments alone bind exactly as given (no positional-only or *args parameter).
    _keywords_bind: bool = field(default=False, repr=False)
    # The parameters whose annotation needs a conversion from JSON (chokaq.serializer), worked
    # out once here: () for a handler of plain JSON types. None while an annotation cannot be
    # resolved (a type defined after the handler): the first job resolves it.
    converters: tuple[tuple[str, Converter], ...] | None = field(default=(), repr=False)
    # Whether enqueue checks the arguments' values against the annotations (chokaq.argument_checks;
    # ``@app.job(check_arguments=False)`` turns it off), and the checks, worked out once here
    # as the converters are: () when nothing is checked, None until the annotations resolve.
    check_arguments: bool = True
    checks: tuple[Check, ...] | None = field(default=(), repr=False)
    _kinds: dict[str, Kinds] | None = field(default_factory=dict, repr=False)
    _full_checks: dict[str, Check] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        params = [p for p in self.signature.parameters.values() if p.name != self.context_param]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            self._names = frozenset(p.name for p in params)
        self._required = frozenset(
            p.name
            for p in params
            if p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )
        self._keywords_bind = not any(
            p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL) for p in params
        )
        self._option_names = OPTION_NAMES - {
            p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
        self.converters = self._converters()
        self._set_checks(self._checks(params, final=False))

    def _set_checks(self, checks: tuple[Check, ...] | None) -> None:
        self.checks = checks
        if checks is None:
            self._kinds = None
            return
        self._kinds = {name: () if inner else kinds for name, kinds, inner, _ in checks}
        self._full_checks = {check[0]: check for check in checks}

    def _checks(self, params: list[inspect.Parameter], *, final: bool) -> tuple[Check, ...] | None:
        if not self.check_arguments or all(p.annotation is p.empty for p in params):
            return ()
        return parameter_checks(
            self._annotated(), [p for p in params if p.kind is not p.VAR_KEYWORD], final=final
        )

    def _annotated(self) -> Callable[..., Any]:
        """The function whose annotations type the arguments (a batch handler's differ)."""
        return self.fn

    def resolve_checks(self) -> tuple[Check, ...]:
        """The checks, resolved now (at the first enqueue, when the annotations did not resolve
        at decoration): a parameter whose annotation still does not resolve is not checked."""
        params = [p for p in self.signature.parameters.values() if p.name != self.context_param]
        checks = self._checks(params, final=True) or ()
        self._set_checks(checks)
        return checks

    def _converters(self) -> tuple[tuple[str, Converter], ...] | None:
        names = [
            p.name
            for p in self.signature.parameters.values()
            if p.name != self.context_param and p.kind is not p.VAR_KEYWORD
        ]
        if all(p.annotation is p.empty for p in self.signature.parameters.values()):
            return ()
        return parameter_converters(self._annotated(), names)

    def resolve_converters(self) -> tuple[tuple[str, Converter], ...]:
        """The converters, resolved now; a handler whose annotations still cannot be resolved
        gets its arguments as plain JSON."""
        found = self._converters()
        self.converters = () if found is None else found
        return self.converters

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def misfit(self, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` (a decoded payload) cannot be passed to the handler, or None.

        The same check as binding to the signature, done with two set comparisons because it
        runs for every job (comparisons build no set: the differences are only worked out for
        the message)."""
        keys = arguments.keys()
        if not keys >= self._required:
            missing = self._required - keys
            return f"missing argument(s) {', '.join(sorted(missing))}"
        if self._names is not None and not self._names.issuperset(keys):
            unknown = keys - self._names
            return f"unknown argument(s) {', '.join(sorted(unknown))}"
        return None

    def options(self, **options: Unpack[EnqueueOptions]) -> JobOptions[P, R]:
        """These enqueue options, for the ``enqueue``, ``enqueue_sync``, ``prepare`` and
        ``enqueue_many`` of what it returns; they never clash with the handler's arguments::

            await send_email.options(priority=20, delay_seconds=60).enqueue(to=..., subject=...)

        ``queue`` and ``priority`` (default: the handler's), ``delay_seconds`` or ``run_at``
        (an aware datetime; default: now), ``idempotency_key``, ``tags`` (a list of strings),
        ``created_by``, ``max_attempts`` and ``timeout_seconds`` (default: the handler's, then
        the worker's, read at execution time), ``after`` (prepared jobs or ids of stored jobs:
        it runs once every one of them has succeeded), ``after_outcome`` (``"success"``, the
        default, or ``"any"``: it runs once every parent has finished, in the archive or the
        DLQ; ``ctx.parent_outcomes`` says how each ended), ``pass_results`` (with ``after``:
        the parents' return values are its first positional arguments, in the order of
        ``after``; the call gives the arguments after them), ``partition`` (the key its type's
        ``rate_limit`` and ``partition_concurrency`` apply per), ``expires_after_seconds`` or
        ``expires_at`` (not started by then, from the enqueue: it goes to the DLQ as
        ``EXPIRED`` instead of running), ``unique_for_seconds`` (with ``idempotency_key``:
        another enqueue with the key within that many seconds gets this job's id, even after
        it has finished), ``on_conflict`` (with ``idempotency_key``, what to do to the hot job
        holding the key: ``"keep"`` it, the default; ``"replace"`` its payload and due time;
        ``"replace_payload"`` only; ``"cancel_running"``: replace it, or when it already runs,
        ask it to stop and enqueue this job after it; the returned id's ``outcome`` says what
        happened) and ``connection`` (PostgreSQL:
        the caller's open psycopg connection, making the enqueue part of its transaction;
        not for ``prepare``). ``delay`` and ``timeout`` are aliases of the ``_seconds`` names.
        None means "not given". An unknown name, or an alias given with its new name, raises
        ``ValidationError``; the values are checked at enqueue, before anything is written.
        """
        settings, connection = _options(options)
        return JobOptions(self, settings, connection)

    def _split(self, kwargs: dict[str, Any]) -> tuple[_Options, Any, dict[str, Any]]:
        """The keyword form: take the options out of ``kwargs`` (a dict the caller owns)."""
        names = self._option_names
        if kwargs.keys().isdisjoint(names):
            return _NO_OPTIONS, None, kwargs
        settings, connection = _options({k: kwargs.pop(k) for k in list(kwargs) if k in names})
        return settings, connection, kwargs

    def prepare(self, *args: P.args, **kwargs: P.kwargs) -> NewJob:
        """The ``NewJob`` an ``enqueue`` with these arguments would write, with its id given
        up front (``job.id``), for ``app.enqueue_many`` and for other jobs' ``after=``.

        Arguments are checked against the handler's signature. Options go through
        ``handle.options(...).prepare(...)``; the keyword form (``prepare(x=1, priority=5)``)
        still works for an option the handler has no parameter of, but is deprecated (see
        ``enqueue``).
        """
        options, connection, arguments = self._split(kwargs)
        if connection is not None:
            raise ValidationError("connection", "is only accepted by enqueue, not prepare")
        return self._new_job(args, arguments, options, job_id=new_job_id())

    def encode(self, args: tuple[Any, ...], kwargs: dict[str, Any], passed: int = 0) -> str:
        """Bind arguments to the handler's signature, check their values against its
        annotations (``chokaq.argument_checks``; ``ValidationError`` for ``arguments.<name>``) and
        serialize them as a JSON object. ``passed`` leading positional parameters are left
        out: a job enqueued with ``pass_results`` gets its parents' results there."""
        if passed:
            arguments = self._bind(args, kwargs, self.passed_names(passed))
        elif not args and self._keywords_bind and self.misfit(kwargs) is None:
            arguments = kwargs  # binding would return them unchanged
        else:
            arguments = self._bind(args, kwargs)
        kinds_of = self._kinds
        if kinds_of is None:  # annotations that did not resolve at decoration
            self.resolve_checks()
            kinds_of = self._kinds
        if kinds_of:
            # One isinstance per argument given, the type(s) worked out ahead of time; an
            # argument whose check looks inside it has () there, which no value is an
            # instance of, so that it takes the slow path below.
            for name, value in arguments.items():
                kinds = kinds_of.get(name)
                if kinds is not None and not isinstance(value, kinds):
                    self._check(name, value)
        return encode_payload(arguments)

    def _check(self, name: str, value: Any) -> None:
        """Raise ``ValidationError`` for ``arguments.<name>`` unless ``value`` passes its
        whole check (the type(s), then what looks inside)."""
        _, kinds, inner, annotation = self._full_checks[name]
        if not isinstance(value, kinds):
            raise ValidationError(f"arguments.{name}", refusal(annotation, value))
        if inner is not None:
            inner(value, f"arguments.{name}")

    def passed_names(self, count: int) -> tuple[str, ...]:
        """The handler's first ``count`` parameters after its context, which a job enqueued
        with ``pass_results`` gets its parents' results in; ``ValidationError`` naming
        ``pass_results`` when the handler has fewer that a keyword can fill."""
        names: list[str] = []
        for param in self.signature.parameters.values():
            if param.name == self.context_param:
                continue
            if param.kind is not param.POSITIONAL_OR_KEYWORD or len(names) == count:
                break
            names.append(param.name)
        if len(names) < count:
            raise ValidationError(
                "pass_results",
                f"needs {count} leading positional parameter(s) of {self.name} for its "
                f"{count} parent(s)' results; it has {len(names)}",
            )
        return tuple(names)

    def _bind(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], passed: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        params = self.signature.parameters
        if self.context_param is not None or passed:
            skip = {self.context_param, *passed}
            params = {k: v for k, v in params.items() if k not in skip}  # type: ignore[assignment]
        signature = self.signature.replace(parameters=list(params.values()))
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ValidationError(
                "arguments", f"do not fit {self.name}{signature}: {exc}"
            ) from None
        arguments = dict(bound.arguments)
        for pname, param in params.items():
            if param.kind is param.VAR_KEYWORD and pname in arguments:
                arguments.update(arguments.pop(pname))
        return arguments

    def _new_job(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        options: _Options,
        job_id: str | None = None,
    ) -> NewJob:
        passed = len(parent_ids(options.after)) if options.pass_results else 0
        payload = self.encode(args, kwargs, passed)
        if (
            self.expires_after_seconds is not None
            and options.expires_at is None
            and options.expires_after_seconds is None
        ):
            options = replace(options, expires_after_seconds=self.expires_after_seconds)
        if options is _NO_OPTIONS:
            # The common shape of a bulk enqueue: four fields, the rest left to their defaults.
            job = NewJob(self.name, payload, self.queue, self.priority)
            if job_id is not None:
                job.id = job_id
            return job
        return job_from_options(self.name, payload, self.queue, self.priority, options, job_id)

    async def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """Enqueue one job; returns its id (``.duplicate`` when the idempotency key was taken).
        Raises ``ValidationError`` before writing anything.

        Options go through ``handle.options(...).enqueue(...)``. The keyword form
        (``enqueue(x=1, priority=5)``, any name of ``handle.options``) still works at run time
        for an option the handler has no parameter of, but type checkers refuse it and it is
        deprecated: it will warn in a later release and then go (docs/concepts.md).
        """
        options, connection, arguments = self._split(kwargs)
        job = self._new_job(args, arguments, options)
        return (await self.app.enqueue_many([job], connection=connection))[0]

    def enqueue_sync(self, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """``enqueue`` for code that cannot await (runs on the app's background loop)."""
        options, connection, arguments = self._split(kwargs)
        job = self._new_job(args, arguments, options)
        return self.app.enqueue_many_sync([job], connection=connection)[0]

    async def enqueue_many(
        self, calls: Iterable[Mapping[str, Any]], *, connection: Any = None, **options: Any
    ) -> list[JobId]:
        """Enqueue one job per mapping of arguments, all or none (and in the caller's
        transaction with ``connection=``, as ``enqueue``). ``options`` are shared by every job
        (deprecated: ``handle.options(...).enqueue_many(calls)``); a name that is no option is
        an argument of every call, and a mapping may still carry options the handler has no
        parameter of. A ``ValidationError`` names the call by its index (``jobs[3].arguments.x``).
        """
        jobs = self._calls(calls, options)
        return await self.app.enqueue_many(jobs, connection=connection)

    def enqueue_many_sync(
        self, calls: Iterable[Mapping[str, Any]], *, connection: Any = None, **options: Any
    ) -> list[JobId]:
        """``enqueue_many`` for code that cannot await (runs on the app's background loop)."""
        jobs = self._calls(calls, options)
        return self.app.enqueue_many_sync(jobs, connection=connection)

    def _calls(self, calls: Iterable[Mapping[str, Any]], options: dict[str, Any]) -> list[NewJob]:
        """The jobs of ``enqueue_many``: one per mapping of arguments, ``options`` shared by
        every one (a name that is no option is an argument of every call)."""
        shared = {k: options.pop(k) for k in list(options) if k in OPTION_NAMES}
        jobs = []
        for i, call in enumerate(calls):
            try:
                own, _, arguments = self._split({**call, **options})
                settings, _ = _options(shared, own)
                jobs.append(self._new_job((), arguments, settings))
            except ValidationError as exc:
                raise exc.at(f"jobs[{i}]") from None
        return jobs


@dataclass
class ContextJobHandle(JobHandle[P, R]):
    """The handle of a job whose first parameter is its ``JobContext``: ``P`` leaves it out,
    and calling the handle directly takes it first, as the function does."""

    def __call__(  # type: ignore[override]  # the context comes first, as in the function
        self, ctx: JobContext, /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        return self.fn(ctx, *args, **kwargs)


@dataclass
class BatchHandle(JobHandle[..., R]):
    """The handle of a batch handler (``@app.job(batch_size=...)``): its jobs are enqueued one
    by one with the fields of the handler's arguments model as their arguments
    (``embed.enqueue(tenant="t1", text="...")``, checked against the model's annotations), and
    the worker calls the handler with a list of ``Batched`` items (docs/batches.md)."""

    batch: BatchSpec = field(default=BatchSpec(1, 0.0))
    arguments: ArgumentsModel | None = field(default=None, repr=False)

    def _annotated(self) -> Callable[..., Any]:
        return self.fn if self.arguments is None else self.arguments.annotated


def batch_handle(common: dict[str, Any], spec: BatchSpec) -> BatchHandle[Any]:
    """The handle ``@app.job(batch_size=...)`` registers: ``common`` holds what every handle
    takes (app, fn, name, queue, ...); the arguments come from the handler's model, and the
    batch key must be one of them (``ValidationError`` for ``batch_key``)."""
    arguments = ArgumentsModel.of(common["fn"], common["name"])
    return BatchHandle(
        signature=arguments.signature,
        batch=check_batch_key(spec, arguments.names),
        arguments=arguments,
        **common,
    )


@dataclass(frozen=True)
class JobOptions(Generic[P, R]):
    """Enqueue options bound to a handle (``handle.options(...)``); its methods take the
    handler's arguments only, checked by type checkers against the handler's signature."""

    handle: JobHandle[P, R]
    settings: _Options = field(default=_NO_OPTIONS, repr=False)
    connection: Any = field(default=None, repr=False)

    def options(self, **options: Unpack[EnqueueOptions]) -> JobOptions[P, R]:
        """These options with ``options`` replacing the ones they name."""
        given: dict[str, Any] = {"connection": self.connection, **options}
        settings, connection = _options(given, self.settings)
        return JobOptions(self.handle, settings, connection)

    def prepare(self, *args: P.args, **kwargs: P.kwargs) -> NewJob:
        """As ``JobHandle.prepare``, with these options (``connection`` is refused)."""
        if self.connection is not None:
            raise ValidationError("connection", "is only accepted by enqueue, not prepare")
        return self.handle._new_job(args, kwargs, self.settings, job_id=new_job_id())

    async def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """As ``JobHandle.enqueue``, with these options."""
        job = self.handle._new_job(args, kwargs, self.settings)
        return (await self.handle.app.enqueue_many([job], connection=self.connection))[0]

    def enqueue_sync(self, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """As ``JobHandle.enqueue_sync``, with these options."""
        job = self.handle._new_job(args, kwargs, self.settings)
        return self.handle.app.enqueue_many_sync([job], connection=self.connection)[0]

    async def enqueue_many(self, calls: Iterable[Mapping[str, Any]]) -> list[JobId]:
        """One job per mapping of arguments, each with these options, all or none."""
        jobs = self._calls(calls)
        return await self.handle.app.enqueue_many(jobs, connection=self.connection)

    def enqueue_many_sync(self, calls: Iterable[Mapping[str, Any]]) -> list[JobId]:
        """As ``enqueue_many``, for code that cannot await (as ``JobHandle.enqueue_sync``)."""
        jobs = self._calls(calls)
        return self.handle.app.enqueue_many_sync(jobs, connection=self.connection)

    def _calls(self, calls: Iterable[Mapping[str, Any]]) -> list[NewJob]:
        jobs = []
        for i, call in enumerate(calls):
            try:
                jobs.append(self.handle._new_job((), dict(call), self.settings))
            except ValidationError as exc:
                raise exc.at(f"jobs[{i}]") from None  # the call's index, as storage names a job
        return jobs


class JobDecorator(Protocol):
    """What ``@app.job(...)`` with options returns: it registers the function it decorates."""

    @overload
    def __call__(
        self, fn: Callable[Concatenate[JobContext, P], R], /
    ) -> ContextJobHandle[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> JobHandle[P, R]: ...

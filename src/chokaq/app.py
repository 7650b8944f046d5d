"""The client API: ``App``, the ``@app.job`` decorator and enqueueing.

An ``App`` names a database and holds the registry of job handlers, pipe handlers and middleware.
Producers use it to enqueue; ``app.run_worker()`` (or ``chokaq worker --app module:app``) runs
the jobs. It reaches storage only through ``chokaq.storage.Backend``; the handles ``@app.job``
returns, and the enqueue options, are ``chokaq.handles``'.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Concatenate, TypeVar, overload

from .batches import batch_options
from .context import JobContext, Middleware
from .errors import ConfigurationError, ValidationError
from .handles import (
    ContextJobHandle,
    EnqueueOptions,
    JobDecorator,
    JobHandle,
    JobId,
    JobOptions,
    P,
    R,
    _options,
    batch_handle,
    job_from_options,
)
from .ids import new_job_id
from .limits import (
    DEFAULT_LIMITS,
    Limits,
    check_expiry_seconds,
    check_job_id,
    check_max_attempts,
    check_name,
    check_priority,
    check_timeout,
)
from .logs import Event, log_event
from .models import (
    CancelResult,
    EnqueueResult,
    JobOutcome,
    JobView,
    NewJob,
    ScheduleDeclaration,
    Workflow,
)
from .payloads import encode_payload
from .periodic import Timing, check_misfire
from .policies import (
    RetryPolicy,
    check_exception_types,
    check_retry_policy,
)
from .portal import Portal, abandon
from .rates import check_rate
from .results import ResultWaiter, value_of
from .serializer import Unserializable, encode
from .settings import JobDefaults, WorkerSettings
from .storage import Backend, check_url, create_backend
from .storage.ratelimits import check_concurrency
from .storage.schedules import check_schedule_name
from .streams import check_from_index, read_stream

if TYPE_CHECKING:
    from .runtime.worker import Worker

# The handle types are chokaq.handles'; this module re-exports them under their old home, so
# that ``from chokaq.app import JobHandle`` keeps working: hence the list shared with handles.
__all__ = [
    "App",
    "ContextJobHandle",
    "EnqueueOptions",
    "JobDecorator",
    "JobHandle",
    "JobId",
    "JobOptions",
    "Middleware",
    "PipeHandle",
]

T = TypeVar("T")

DEFAULT_URL = "sqlite:///chokaq.db"
URL_VARIABLE = "CHOKAQ_DATABASE_URL"

# Observability hooks (chokaq.metrics, chokaq.otel): wrap a whole enqueue call (a tracing span
# around it, which may rewrite the jobs to carry its context), rewrite jobs before they are
# written, and hear what was written (to count enqueues).
AroundEnqueue = Callable[[list[NewJob]], AbstractContextManager[list[NewJob]]]
BeforeEnqueue = Callable[[list[NewJob]], list[NewJob]]
AfterEnqueue = Callable[[Sequence[NewJob], Sequence[EnqueueResult]], None]


@dataclass
class PipeHandle:
    """A raw handler for every job of one queue that has no typed handler: it receives the
    type and the raw JSON payload text (and a ``JobContext`` if it asks for one)."""

    fn: Callable[..., Any]
    queue: str
    timeout: float | None
    max_attempts: int | None
    context_param: str | None
    is_async: bool


class App:
    """A chokaq application: a database URL plus registered handlers.

    ``url`` is ``sqlite:///path`` or ``postgresql://user@host/db``; default from the environment
    variable ``CHOKAQ_DATABASE_URL``, else ``sqlite:///chokaq.db``. An empty or blank URL, given
    or in the variable, raises ``ConfigurationError`` naming ``url`` or ``CHOKAQ_DATABASE_URL``
    (it is not the default: that wrote to a ``./chokaq.db`` no worker reads). ``auto_migrate``
    applies pending migrations on open (default: yes on SQLite, no on PostgreSQL, where
    ``chokaq migrate`` runs them). ``worker`` holds the worker's settings (``WorkerSettings``).
    ``job_defaults`` (a ``JobDefaults`` or a mapping of its fields: ``queue``, ``priority``,
    ``max_attempts``, ``retry``, ``timeout_seconds``) are every job type's defaults below its
    own ``@app.job`` options and each enqueue's (docs/configuration.md); a bad value raises
    ``ValidationError`` naming ``job_defaults.<field>``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        schema: str = "chokaq",
        limits: Limits = DEFAULT_LIMITS,
        auto_migrate: bool | None = None,
        worker: WorkerSettings | None = None,
        job_defaults: JobDefaults | Mapping[str, Any] | None = None,
        **storage_options: Any,
    ) -> None:
        self.job_defaults = JobDefaults.of(job_defaults)
        self.url = resolve_url(url)
        self.schema = schema
        self.limits = limits
        self.auto_migrate = auto_migrate
        self.worker_settings = worker or WorkerSettings()
        self.storage_options = storage_options
        self.handlers: dict[str, JobHandle[Any, Any]] = {}
        self.pipes: dict[str, PipeHandle] = {}
        self.middlewares: list[Middleware] = []
        self.periodics: dict[str, ScheduleDeclaration] = {}
        self.around_enqueue: list[AroundEnqueue] = []
        self.before_enqueue: list[BeforeEnqueue] = []
        self.after_enqueue: list[AfterEnqueue] = []
        self._backend: Backend | None = None
        self._opened = False
        self._open_lock: asyncio.Lock | None = None
        self._portal: Portal[App] | None = None
        self._opened_pid: int | None = None  # the process whose connections the backend holds
        self._waiter: ResultWaiter | None = None  # result waits, made on first use

    # -- registration -------------------------------------------------------------------

    @overload
    def job(self, fn: Callable[Concatenate[JobContext, P], R], /) -> ContextJobHandle[P, R]: ...

    @overload
    def job(self, fn: Callable[P, R], /) -> JobHandle[P, R]: ...

    # The options overload restates the implementation's keywords on purpose: it is the typed
    # surface of ``@app.job(...)``, and the implementation below also takes the bare form.
    @overload
    def job(
        self,
        *,
        name: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
        expires_after_seconds: float | None = None,
        rate_limit: str | None = None,
        partition_concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        retry_on: Sequence[type[BaseException]] | None = None,
        fatal_on: Sequence[type[BaseException]] = (),
        check_arguments: bool = True,
        durable: bool = False,
        batch_size: int | None = None,
        batch_wait_seconds: float = 1.0,
        batch_key: str | None = None,
    ) -> JobDecorator: ...

    def job(  # type: ignore[misc]  # the overloads above are the typed surface
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
        expires_after_seconds: float | None = None,
        rate_limit: str | None = None,
        partition_concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        retry_on: Sequence[type[BaseException]] | None = None,
        fatal_on: Sequence[type[BaseException]] = (),
        check_arguments: bool = True,
        durable: bool = False,
        batch_size: int | None = None,
        batch_wait_seconds: float = 1.0,
        batch_key: str | None = None,
    ) -> Any:
        """Register a job handler (``async def`` or plain ``def``); usable bare or with options.

        ``name`` is the persisted type key (default: the function's name); ``queue`` and
        ``priority`` are its jobs' defaults (default: the app's ``job_defaults``, else
        ``"default"`` and 10); ``timeout_seconds`` (alias ``timeout``) is the execution timeout
        (default: ``job_defaults.timeout_seconds``, else the worker's); ``max_attempts`` counts
        executions; ``expires_after_seconds`` makes every job of the type expire that long
        after its enqueue (not started by then: the DLQ as EXPIRED) unless the enqueue gives
        ``expires_at`` or ``expires_after_seconds`` itself. Each of these is checked here by
        the rule an enqueue applies to it (priority within +-1,000,000, a timeout above 0 and
        at most 7 days, attempts 1 to 1000, an expiry above 0 and at most 366 days, a queue
        name), raising the same ``ValidationError`` naming it, when the module is imported.
        ``rate_limit`` ("10/s", "5/m", "100/h") and ``partition_concurrency`` (running jobs at
        most) hold across every worker process and host, per partition value for a job
        enqueued with ``partition=``; the workers that serve the type record them in the store,
        where operators can override them (``chokaq limits set``, The Deck).

        Retries: ``retry`` (a ``RetryPolicy``) is this type's backoff and attempts, in place of
        the worker's ``WorkerSettings.retry`` as a whole. Attempts come from the enqueue's
        ``max_attempts``, else this ``max_attempts``, else ``retry.max_attempts``, else the
        worker's policy. ``retry_on`` (a tuple of exception classes; default None: every
        exception) retries only those and their subclasses: any other exception goes to the
        DLQ at once as FATAL_ERROR (``ThrottledError`` still retries, as ``Retry()`` does).
        ``fatal_on`` exceptions are never retried (FATAL_ERROR), checked before ``retry_on``;
        the worker's ``fatal_exceptions`` and ``FatalError`` stay fatal too. All of these are
        read when a job fails, so they apply to jobs enqueued before they changed. A bad value
        raises ``ValidationError`` naming the option.

        Arguments: every enqueue checks the values given against the handler's annotations
        (``ValidationError`` for ``arguments.<name>``: "must be a str, not int"; what is and is
        not checked: docs/payloads.md); ``check_arguments=False`` checks their names only.

        ``durable=True`` makes a durable job (docs/durable.md): its ``JobContext`` offers
        ``step``, ``sleep`` and ``wait_for_event``, its handler replays from the top after a
        suspension or a crash with every recorded step returned at once, and when its worker
        dies it is resumed by another worker after the zombie timeout (while attempts remain)
        instead of going to the DLQ as ZOMBIE.

        ``batch_size`` (1 to 10,000) makes a batch handler (docs/batches.md): it takes one
        parameter, ``list[Batched[Model]]``, and is called with up to that many due jobs of
        its type at once, as soon as that many are due or once the oldest has waited
        ``batch_wait_seconds`` (0 to 3,600; default 1.0), never mixing two values of the
        argument ``batch_key``. It returns one result per item (an exception instance in an
        item's place fails that job alone). A batch type takes no ``rate_limit``,
        ``partition_concurrency`` or ``durable``; each bad value raises ``ValidationError``
        naming it.
        """
        # The options an enqueue also takes go through its checks, with its messages, here at
        # decoration: a handler default the enqueue would refuse (priority=10**9) failed every
        # enqueue, and a timeout it would refuse (nan) every job, instead of the import.
        if queue is not None:
            check_name("queue", queue)
        if priority is not None:
            check_priority("priority", priority)
        check_max_attempts("max_attempts", max_attempts)
        timeout_seconds = check_timeout(
            "timeout_seconds", _timeout_seconds(timeout_seconds, timeout)
        )
        expiry = check_expiry_seconds("expires_after_seconds", expires_after_seconds)
        policy = check_retry_policy("retry", retry)
        retry_types = check_exception_types("retry_on", retry_on)
        fatal_types = check_exception_types("fatal_on", fatal_on) or ()
        if rate_limit is not None:
            rate_limit = str(check_rate("rate_limit", rate_limit))
        check_concurrency("partition_concurrency", partition_concurrency)
        # The app's defaults fill what the type leaves out, once, here: the handle then holds
        # the type's effective options, which the enqueue and the worker read as before.
        defaults = self.job_defaults
        batched = batch_options(
            batch_size,
            batch_wait_seconds,
            batch_key,
            rate_limit=rate_limit,
            partition_concurrency=partition_concurrency,
            durable=durable,
        )

        def register(fn: Callable[..., Any]) -> JobHandle[Any, Any]:
            key = name or fn.__name__
            check_name("name", key)
            if key in self.handlers:
                raise ConfigurationError(f"job {key!r} is registered twice")
            common: dict[str, Any] = {
                "app": self,
                "fn": fn,
                "name": key,
                "queue": _or(queue, _or(defaults.queue, "default")),
                "priority": _or(priority, _or(defaults.priority, 10)),
                # A type's own retry policy carries its attempts, which the app's are below.
                "max_attempts": _or(max_attempts, None if policy else defaults.max_attempts),
                "timeout": _or(timeout_seconds, defaults.timeout_seconds),
                "expires_after_seconds": expiry,
                "is_async": inspect.iscoroutinefunction(fn),
                "retry": _or(policy, defaults.retry),
                "retry_on": retry_types,
                "fatal_on": fatal_types,
                "check_arguments": bool(check_arguments),
            }
            if batched is not None:
                self.handlers[key] = batch_handle(common, batched)
                return self.handlers[key]
            signature = inspect.signature(fn)
            context_param = None
            # A parameter may be named like an enqueue option (``priority``): options have
            # their own path, ``handle.options(...)``.
            for param in signature.parameters.values():
                if param.annotation in (JobContext, "JobContext"):
                    context_param = param.name
                elif param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL):
                    raise ConfigurationError(
                        f"job {key!r}: parameter {param.name!r} must be passable by keyword"
                    )
            first = next(iter(signature.parameters), None)
            kind = (
                JobHandle if context_param is None or context_param != first else ContextJobHandle
            )
            handle: JobHandle[Any, Any] = kind(
                signature=signature,
                context_param=context_param,
                rate_limit=rate_limit,
                partition_concurrency=partition_concurrency,
                durable=bool(durable),
                **common,
            )
            self.handlers[key] = handle
            return handle

        return register(fn) if fn is not None else register

    def periodic(
        self,
        *,
        cron: str | None = None,
        every_seconds: float | None = None,
        timezone: str = "UTC",
        name: str | None = None,
        kwargs: Mapping[str, Any] | None = None,
        misfire: str = "latest",
        overlap: bool = True,
        queue: str | None = None,
        priority: int | None = None,
        expires_after_seconds: float | None = None,
    ) -> Callable[[JobHandle[P, R]], JobHandle[P, R]]:
        """Run a registered job on a schedule; put it above ``@app.job``::

            @app.periodic(cron="0 7 * * mon-fri", timezone="Europe/Berlin",
                          kwargs={"kind": "daily"})
            @app.job(queue="reports")
            def send_digest(kind: str) -> None: ...

        ``cron`` (5 fields, in ``timezone``, an IANA name) or ``every_seconds`` (at least 1;
        slots are multiples of it since 1970 UTC). ``kwargs`` are every run's arguments,
        checked against the handler's signature now. ``name`` (default: the job type, at most
        90 characters) is the schedule's key in the database. ``misfire`` says what happens to
        slots that came due while nothing was enqueueing them: ``"skip"``, ``"latest"`` (one
        run for the most recent) or ``"all"`` (each, up to 100). ``overlap=False`` skips a slot
        (and records it) while the previous run has not finished.

        ``queue`` and ``priority`` are this schedule's runs' (default: the job type's, as
        ``@app.job`` resolved them), so one job type can run on several schedules with
        different ones. ``expires_after_seconds`` makes every run expire that long after it is
        enqueued (normally at its slot): a run not started by then goes to the DLQ as EXPIRED
        instead of running late (default: the type's ``expires_after_seconds``, else never).

        The schedule is upserted when a worker of this app starts; every slot is enqueued once,
        by whichever worker leads, as an ordinary job of these queue, priority and expiry.
        Raises ``ValidationError`` naming the argument (the limits an enqueue applies to each),
        ``ConfigurationError`` for a name used twice or a function that is not a registered
        job."""
        timing = Timing.checked(cron, every_seconds, timezone)
        rule = check_misfire("misfire", misfire)
        if queue is not None:
            check_name("queue", queue)
        if priority is not None:
            check_priority("priority", priority)
        expiry = check_expiry_seconds("expires_after_seconds", expires_after_seconds)

        def register(handle: JobHandle[P, R]) -> JobHandle[P, R]:
            if not isinstance(handle, JobHandle) or handle.app is not self:
                raise ConfigurationError(
                    "@app.periodic goes above @app.job of the same app (it schedules a "
                    "registered job)"
                )
            key = check_schedule_name("name", name or handle.name)
            if key in self.periodics:
                raise ConfigurationError(f"schedule {key!r} is declared twice")
            arguments = dict(kwargs or {})
            misfit = handle.misfit(arguments)
            if misfit is not None:
                raise ValidationError("kwargs", f"do not fit {handle.name}: {misfit}")
            self.periodics[key] = ScheduleDeclaration(
                name=key,
                type=handle.name,
                queue=_or(queue, handle.queue),
                priority=_or(priority, handle.priority),
                cron=timing.cron,
                every_seconds=timing.every_seconds,
                timezone=timing.timezone,
                kwargs=self.encode_arguments(handle, (), arguments),
                misfire=str(rule),
                overlap=bool(overlap),
                expires_after_seconds=_or(expiry, handle.expires_after_seconds),
            )
            return handle

        return register

    def pipe(
        self,
        queue: str,
        *,
        timeout_seconds: float | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a raw handler ``fn(type: str, payload: str[, ctx: JobContext])`` for every
        job of ``queue`` whose type has no typed handler (the reference's Pipe mode);
        ``timeout_seconds`` (alias ``timeout``) is its execution timeout. Checked as
        ``@app.job``'s options are."""
        check_name("queue", queue)
        check_max_attempts("max_attempts", max_attempts)
        timeout_seconds = check_timeout(
            "timeout_seconds", _timeout_seconds(timeout_seconds, timeout)
        )

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if queue in self.pipes:
                raise ConfigurationError(f"queue {queue!r} already has a pipe handler")
            context_param = next(
                (
                    p.name
                    for p in inspect.signature(fn).parameters.values()
                    if p.annotation in (JobContext, "JobContext")
                ),
                None,
            )
            self.pipes[queue] = PipeHandle(
                fn,
                queue,
                timeout_seconds,
                max_attempts,
                context_param,
                inspect.iscoroutinefunction(fn),
            )
            return fn

        return register

    def middleware(self, fn: Middleware) -> Middleware:
        """Register ``async fn(ctx, call_next)`` around every execution; the first registered
        is the outermost. Not calling ``call_next`` skips the handler (the job succeeds)."""
        self.middlewares.append(fn)
        return fn

    # -- payloads -----------------------------------------------------------------------

    def encode_arguments(
        self, handle: JobHandle[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str:
        """Bind arguments to the handler's signature and serialize them as a JSON object."""
        return handle.encode(args, kwargs)

    # -- storage ------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        """This app's storage backend (created on first use; ``await app.open()`` opens it)."""
        if self._backend is None:
            self._backend = create_backend(
                self.url, schema=self.schema, limits=self.limits, **self.storage_options
            )
        return self._backend

    @property
    def opened(self) -> bool:
        """Whether ``open()`` has completed and ``close()`` has not been called since."""
        return self._opened

    def configure(
        self, *, url: str | None = None, schema: str | None = None, **storage_options: Any
    ) -> None:
        """Point this app at another database ``url`` and/or ``schema`` (what the CLI's
        ``--database`` and ``--schema`` do), or change ``storage_options`` (further
        ``StorageSettings`` fields); the backend is created afresh on next use.

        Raises ``ConfigurationError`` while the app is open (close it first)."""
        if self._opened:
            raise ConfigurationError("App.configure: the app is open; close it first")
        if url is not None:
            self.url = check_url("url", url)
        if schema is not None:
            self.schema = schema
        if storage_options:
            self.storage_options = {**self.storage_options, **storage_options}
        self._backend = None

    async def open(self) -> App:
        """Open the backend and, when ``auto_migrate`` says so, migrate the schema."""
        if self._opened:
            return self
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._opened:
                return self
            backend = self.backend
            self._opened_pid = os.getpid()
            await backend.open()
            migrate = self.auto_migrate
            if migrate is None:
                migrate = backend.capabilities.migrates_on_open
            if migrate:
                await backend.migrate()  # logs its start, completion or failure
            self._opened = True
        return self

    async def close(self) -> None:
        """Close the backend (and the background loop of the sync client, if started)."""
        portal, self._portal = self._portal, None
        if portal is not None and portal.pid != os.getpid():
            abandon(portal)  # a forked child's copy of the parent's: not ours to close
            portal = None
        if portal is not None and portal.shared and portal.on_loop_thread():
            portal = None  # the portal's own close of this very App: the portal ends itself
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            with contextlib.suppress(Exception):
                await waiter.close()
        if self._backend is not None:
            await self._backend.close()  # also after a failed open: no connection left behind
        self._opened = False
        self._opened_pid = None
        self._backend = None
        if portal is not None:
            await asyncio.to_thread(portal.stop)

    def close_sync(self) -> None:
        """Close the sync client (``enqueue_sync``'s loop, thread and connections) now, rather
        than at interpreter exit; the next ``enqueue_sync`` starts a new one. On an in-memory
        SQLite app the sync client shares the App's backend, so this closes the App too."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        if portal.pid != os.getpid():
            abandon(portal)
            return
        portal.stop()

    async def __aenter__(self) -> App:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- enqueue ------------------------------------------------------------------------

    async def enqueue_many(self, jobs: Sequence[NewJob], *, connection: Any = None) -> list[JobId]:
        """Enqueue prepared jobs (``handle.prepare(...)``, ``app.raw(...)``), all or none: every
        job is checked before anything is written, and the batch commits as one transaction."""
        if not self.around_enqueue:  # the common case: no list copy, no context to enter
            return await self._enqueue_many(jobs, connection)
        with contextlib.ExitStack() as stack:
            wrapped = list(jobs)
            for around in self.around_enqueue:
                wrapped = stack.enter_context(around(wrapped))
            return await self._enqueue_many(wrapped, connection)

    async def _enqueue_many(self, jobs: Sequence[NewJob], connection: Any) -> list[JobId]:
        await self.open()
        for before in self.before_enqueue:
            jobs = before(list(jobs))
        results = await self.backend.jobs_enqueue(jobs, connection=connection)
        for after in self.after_enqueue:
            with contextlib.suppress(Exception):  # observability must never break an enqueue
                after(jobs, results)
        ids: list[JobId] = []
        for job, result in zip(jobs, results, strict=True):
            if result.changed is not None:
                ids.append(JobId(result.id, result.duplicate, result.changed))
            elif result.duplicate:
                log_event(
                    Event.ENQUEUE_DUPLICATE,
                    "duplicate enqueue returned the existing job",
                    level=10,
                    job_id=result.id,
                    type=job.type,
                    idempotency_key=job.idempotency_key,
                )
                ids.append(JobId(result.id, True))
            else:
                ids.append(str.__new__(JobId, result.id))
        return ids

    def enqueue_many_sync(self, jobs: Sequence[NewJob], *, connection: Any = None) -> list[JobId]:
        """``enqueue_many`` for code that cannot await (on the sync client: a private loop on a
        daemon thread with its own connections, closed by ``close_sync()`` or at exit).

        Fork-safe: in a child process (gunicorn ``--preload``, multiprocessing) the client the
        parent started is left alone and a fresh one is made. Raises ``ConfigurationError`` for
        an in-memory SQLite app in a forked child (its database is the parent's memory)."""
        return self._sync_client().call(lambda app: app.enqueue_many(jobs, connection=connection))

    async def send_event(self, key: str, data: Any = None) -> str | None:
        """Send an event under ``key`` (1..200 characters) carrying ``data`` (any value JSON
        holds, through the serializer; None by default), from any process. The durable job
        that waits on ``key`` the longest (``ctx.wait_for_event``) gets it and goes back to
        Pending: its id is returned. With none waiting, the event is kept 7 days for the
        first job that waits on the key, and None is returned. ``ValidationError`` naming
        ``key`` or ``data`` before anything is written."""
        try:
            text = encode(data, "data")
        except (Unserializable, RecursionError) as exc:
            raise ValidationError("data", f"must be JSON-serializable: {exc}") from None
        await self.open()
        return await self.backend.events_send(key=key, data=text)

    def send_event_sync(self, key: str, data: Any = None) -> str | None:
        """``send_event`` for code that cannot await (on the sync client, as
        ``enqueue_many_sync``)."""
        return self._sync_client().call(lambda app: app.send_event(key, data))

    def _sync_client(self) -> Portal[App]:
        portal = self._portal
        if portal is not None and portal.pid != os.getpid():
            abandon(portal)  # forked: the parent's thread is not here, its connections are
            self._portal = portal = None
        if portal is None:
            shared = self.backend.capabilities.in_process
            if shared and self._opened_pid not in (None, os.getpid()):
                raise ConfigurationError(
                    f"{self.url}: an in-memory database lives in the process that opened it, "
                    "not in a forked child; use a file (sqlite:///jobs.db) or PostgreSQL"
                )
            portal = self._portal = Portal(self if shared else self._sync_copy(), shared=shared)
        return portal

    def _sync_copy(self) -> App:
        """An App on the same store and registry with its own connections (async resources are
        bound to one loop: the sync client's cannot be the caller's)."""
        copy = App(
            self.url,
            schema=self.schema,
            limits=self.limits,
            auto_migrate=self.auto_migrate,
            worker=self.worker_settings,
            job_defaults=self.job_defaults,
            **self.storage_options,
        )
        copy.handlers = self.handlers
        copy.pipes = self.pipes
        copy.around_enqueue = self.around_enqueue
        copy.before_enqueue = self.before_enqueue
        copy.after_enqueue = self.after_enqueue
        return copy

    def raw(
        self,
        type: str,
        payload: str | Mapping[str, Any] | list[Any],
        *,
        queue: str | None = None,
        **options: Any,
    ) -> NewJob:
        """A job for a pipe handler or another service: type key plus raw payload; ``queue``
        and the ``priority`` option default to the app's ``job_defaults``, else ``"default"``
        and 10.

        ``payload`` is JSON text (``str``; checked as strict JSON) or a mapping or list that is
        serialized here; anything else (``bytes`` included: decode it first) raises
        ``ValidationError`` naming ``payload``, as do the enqueue options' limits."""
        text: str
        if isinstance(payload, str):
            text = payload
        elif isinstance(payload, Mapping | list | tuple):
            value = dict(payload) if isinstance(payload, Mapping) else payload
            text = encode_payload(value, "payload")
        else:
            raise ValidationError(
                "payload",
                "must be JSON text (str), a mapping or a list, not "
                f"{payload.__class__.__name__}"
                + (" (decode it first)" if isinstance(payload, bytes | bytearray) else ""),
            )
        if "connection" in options:
            raise ValidationError("connection", "is only accepted by enqueue_raw, not raw")
        opts, _ = _options(options)
        defaults = self.job_defaults
        return job_from_options(
            type,
            text,
            _or(queue, _or(defaults.queue, "default")),
            _or(defaults.priority, 10),
            opts,
            new_job_id(),
        )

    async def enqueue_raw(
        self, type: str, payload: str | Mapping[str, Any] | list[Any], **options: Any
    ) -> JobId:
        """Enqueue one raw job (see ``raw``)."""
        connection = options.pop("connection", None)
        return (
            await self.enqueue_many([self.raw(type, payload, **options)], connection=connection)
        )[0]

    def enqueue_raw_sync(
        self, type: str, payload: str | Mapping[str, Any] | list[Any], **options: Any
    ) -> JobId:
        """``enqueue_raw`` for code that cannot await (on the sync client, as
        ``enqueue_many_sync``)."""
        connection = options.pop("connection", None)
        job = self.raw(type, payload, **options)
        return self.enqueue_many_sync([job], connection=connection)[0]

    # -- results and workflows ----------------------------------------------------------

    async def result(
        self,
        job_id: str,
        *,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The return value of job ``job_id`` (JSON decoded) once it has succeeded, waiting
        for it up to ``timeout_seconds`` (alias ``timeout``; None: as long as it takes).

        Raises ``JobFailedError`` (reason and error) when the job is in the DLQ,
        ``JobBlockedError`` (the job in the DLQ it waits on, and its reason) as soon as it is
        seen waiting (``after=``) on a job in the DLQ, directly or through parents that wait
        themselves (it cannot run until an operator acts), ``ResultUnavailableError`` when it
        succeeded but its value was not kept (too large, not JSON), ``TimeoutError`` when it
        has not finished in time, and ``NotFoundError`` when no pillar holds it. Waiting is
        woken by the notifier (LISTEN/NOTIFY, SQLite's signal) as the job leaves the hot table,
        with a poll as fallback."""
        seconds = _timeout_seconds(timeout_seconds, timeout)
        return value_of(job_id, await self.wait(job_id, timeout_seconds=seconds))

    def result_sync(
        self,
        job_id: str,
        *,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
    ) -> Any:
        """``result`` for code that cannot await (on the sync client, as ``enqueue_sync``)."""
        seconds = _timeout_seconds(timeout_seconds, timeout)
        return self._sync_client().call(lambda app: app.result(job_id, timeout_seconds=seconds))

    async def wait(
        self,
        job_id: str,
        *,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
    ) -> JobOutcome:
        """Wait until job ``job_id`` has left the hot table and return where it went (its
        pillar, result or failure), without raising for a failure, or until it is blocked
        (still hot, ``JobOutcome.blocked_by`` naming the job in the DLQ it waits on);
        ``TimeoutError`` and ``NotFoundError`` as ``result``. ``timeout_seconds`` (alias
        ``timeout``) as there."""
        seconds = _timeout_seconds(timeout_seconds, timeout)
        return await (await self._result_waiter()).outcome(job_id, seconds)

    async def _result_waiter(self) -> ResultWaiter:
        await self.open()
        if self._waiter is None:
            self._waiter = ResultWaiter(self.backend)
        return self._waiter

    def stream(self, job_id: str, *, from_index: int = 0) -> AsyncIterator[Any]:
        """The items job ``job_id`` emits (``ctx.emit``), decoded, in order, from item
        ``from_index`` (default 0: the first) on: those already written at once, then each as
        it is written (woken by the notifier: LISTEN/NOTIFY, SQLite's signal; with a poll as
        fallback), until the job has left the hot table (succeeded, dead-lettered, cancelled)
        and every item was yielded. A suspended durable job is still in hot: its stream goes
        on across its sleeps and waits. ``async for item in app.stream(job_id): ...``.

        ``ValidationError`` naming ``job_id`` or ``from_index`` at once; ``NotFoundError``
        (on the first iteration) when no pillar holds the job."""
        check_job_id("job_id", job_id)
        start = check_from_index(from_index)
        return self._stream(job_id, start)

    async def _stream(self, job_id: str, from_index: int) -> AsyncIterator[Any]:
        waiter = await self._result_waiter()
        async for item in read_stream(self.backend, waiter, job_id, from_index):
            yield item

    def stream_sync(self, job_id: str, *, from_index: int = 0) -> Iterator[Any]:
        """``stream`` for code that cannot await: a plain iterator over the same items, each
        read on the sync client (as ``result_sync``). Close it (``for`` does at its end, or
        ``close()``) to stop reading early."""
        check_job_id("job_id", job_id)
        start = check_from_index(from_index)
        return self._stream_sync(job_id, start)

    def _stream_sync(self, job_id: str, from_index: int) -> Iterator[Any]:
        portal = self._sync_client()
        items: list[AsyncIterator[Any]] = []

        async def step(app: App) -> tuple[bool, Any]:
            if not items:  # made on the portal's loop, from the portal's own App
                items.append(app.stream(job_id, from_index=from_index))
            try:
                return True, await anext(items[0])
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = portal.call(step)
                if not more:
                    return
                yield item
        finally:
            if items:
                closing = items[0]
                portal.call(lambda app: _close(closing))

    def wait_sync(
        self,
        job_id: str,
        *,
        timeout_seconds: float | None = None,
        timeout: float | None = None,
    ) -> JobOutcome:
        """``wait`` for code that cannot await (on the sync client, as ``enqueue_sync``)."""
        seconds = _timeout_seconds(timeout_seconds, timeout)
        return self._sync_client().call(lambda app: app.wait(job_id, timeout_seconds=seconds))

    async def get_job(self, job_id: str) -> JobView | None:
        """Where job ``job_id`` is and how it is doing (``JobView``: pillar, state, attempts,
        result or error), with its workflow, parents and children; None when no pillar holds
        it."""
        await self.open()
        return await self.backend.job_get_related(id=job_id)

    def get_job_sync(self, job_id: str) -> JobView | None:
        """``get_job`` for code that cannot await (on the sync client)."""
        return self._sync_client().call(lambda app: app.get_job(job_id))

    async def workflow(self, workflow_id: str) -> Workflow | None:
        """Every job of a workflow (``JobView.workflow_id``: the id of its first job), parents
        first, each with its state; None when no job is linked to it."""
        await self.open()
        return await self.backend.workflow_get(id=workflow_id)

    def workflow_sync(self, workflow_id: str) -> Workflow | None:
        """``workflow`` for code that cannot await (on the sync client)."""
        return self._sync_client().call(lambda app: app.workflow(workflow_id))

    async def cancel(self, *job_ids: str, actor: str = "api") -> CancelResult:
        """Cancel jobs from any process: Pending, Fetched and Waiting ones go to the DLQ as
        CANCELLED at once; a running one is asked to stop (its worker hears it). A cancelled
        parent leaves the jobs waiting on it blocked (see ``cancel_workflow``)."""
        await self.open()
        return await self.backend.jobs_cancel(ids=list(job_ids), actor=actor)

    def cancel_sync(self, *job_ids: str, actor: str = "api") -> CancelResult:
        """``cancel`` for code that cannot await (on the sync client)."""
        return self._sync_client().call(lambda app: app.cancel(*job_ids, actor=actor))

    async def cancel_workflow(self, workflow_id: str, *, actor: str = "api") -> CancelResult:
        """Cancel every job of a workflow that has not finished: blocked ones (waiting on a
        parent in the DLQ) go to the DLQ as DEPENDENCY_FAILED naming that parent, the others
        are cancelled as by ``cancel``."""
        await self.open()
        return await self.backend.workflow_cancel(id=workflow_id, actor=actor)

    def cancel_workflow_sync(self, workflow_id: str, *, actor: str = "api") -> CancelResult:
        """``cancel_workflow`` for code that cannot await (on the sync client)."""
        return self._sync_client().call(lambda app: app.cancel_workflow(workflow_id, actor=actor))

    # -- worker -------------------------------------------------------------------------

    def create_worker(self, **overrides: Any) -> Worker[App]:
        """A worker for this app; ``overrides`` are ``WorkerSettings`` fields. Unless
        ``queues`` is given, it serves the queues this app's handlers and pipes declare
        (``queues=("*",)``: every queue)."""
        from .runtime.worker import Worker

        settings = replace(self.worker_settings, **overrides) if overrides else self.worker_settings
        return Worker(self, settings)

    async def run_worker(self, **overrides: Any) -> None:
        """Run a worker until it is stopped (SIGTERM/SIGINT when installed by the CLI, or
        ``worker.stop()``), or, with ``burst=True``, until no eligible job is left."""
        await self.create_worker(**overrides).run()


def resolve_url(url: str | None) -> str:
    """The database URL of an App: ``url``; when None, ``$CHOKAQ_DATABASE_URL`` if set, else
    ``sqlite:///chokaq.db``. Empty or blank (given or set) raises ``ConfigurationError`` naming
    ``url`` or the variable."""
    if url is not None:
        return check_url("url", url)
    env = os.environ.get(URL_VARIABLE)
    if env is None:
        return DEFAULT_URL
    try:
        return check_url(URL_VARIABLE, env)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{exc}, or unset it for the default {DEFAULT_URL}") from None


async def _close(items: AsyncIterator[Any]) -> None:
    """Close an async generator the sync client drove (its ``finally`` blocks run there)."""
    aclose = getattr(items, "aclose", None)
    if aclose is not None:
        await aclose()


def _timeout_seconds(timeout_seconds: float | None, timeout: float | None) -> float | None:
    """``timeout_seconds``, or its older name ``timeout``; both given is a ``ValidationError``."""
    if timeout is None:
        return timeout_seconds
    if timeout_seconds is not None:
        raise ValidationError("timeout", "is another name for timeout_seconds; give one")
    return timeout


def _or(value: T | None, default: T) -> T:
    """``value`` unless it is None (not given), then ``default``: an option over a default."""
    return default if value is None else value

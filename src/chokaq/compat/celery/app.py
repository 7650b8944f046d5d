"""``Celery(app)``: a chokaq ``App`` seen through Celery's application API.

It registers tasks (``@celery_app.task``, and ``@shared_task`` through the current app) as job
types of the wrapped App, turns ``conf.beat_schedule`` into the App's periodic schedules, and
answers results. It is the one place that knows the wrapped App; everything is written through
that App's public API (the sync client), so a ported producer needs no event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast, overload

from ...app import App
from ...errors import ConfigurationError
from ...handles import JobHandle
from ...models import JobView
from ...periodic import check_timezone
from .beat import Entry, entry_of
from .options import call_options, missing, refuse_unknown, task_options
from .results import CURRENT, AsyncResult, current
from .tasks import Task, handler

__all__ = ["Celery", "current_app", "shared_task"]

CONF_KEYS = frozenset({"beat_schedule", "task_default_queue", "timezone"})

_shared: list[Task] = []  # @shared_task tasks, bound to every app created after them


class Conf:
    """The settings this layer reads (``beat_schedule``, ``timezone``,
    ``task_default_queue``); setting any other raises ``ValidationError`` naming it."""

    _owner: Celery
    timezone: str
    task_default_queue: str
    beat_schedule: dict[str, Any]

    def __init__(self, owner: Celery) -> None:
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "timezone", "UTC")
        object.__setattr__(self, "task_default_queue", "celery")
        object.__setattr__(self, "beat_schedule", {})

    def __setattr__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def update(self, values: Mapping[str, Any] | None = None, **more: Any) -> None:
        given = {**(values or {}), **more}
        refuse_unknown(given, CONF_KEYS, "setting")
        if "timezone" in given:
            object.__setattr__(self, "timezone", check_timezone("timezone", given["timezone"]))
        if "task_default_queue" in given:
            object.__setattr__(self, "task_default_queue", given["task_default_queue"])
        if "beat_schedule" in given:
            object.__setattr__(self, "beat_schedule", dict(given["beat_schedule"] or {}))
            self._owner.declare_beat()


class Celery:
    """Celery's application over the chokaq ``App`` it wraps; the last one created is the
    current app (``shared_task``, ``AsyncResult(id)``).

    ``Celery(app)`` takes the App, not a name: the broker and result backend are the App's
    database. ``timezone`` (an IANA name, default UTC) is the ``crontab`` entries' zone,
    ``task_default_queue`` (default ``"celery"``, as Celery's) the queue of a task that names
    none. Any other keyword raises ``ValidationError`` naming it."""

    def __init__(self, app: App, **settings: Any) -> None:
        if not isinstance(app, App):
            raise ConfigurationError(
                f"Celery(app) takes a chokaq App (got {type(app).__name__}): "
                "the jobs live in that App's database; there is no broker to name"
            )
        self.app = app
        self.tasks: dict[str, Task] = {}
        self._beat: dict[str, Entry] = {}
        self.conf = Conf(self)
        self.conf.update(settings)
        CURRENT[:] = [self]  # the last created is the current app
        for task in _shared:
            self.register(task)

    def __repr__(self) -> str:
        return f"<Celery over {self.app.url}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing("Celery", name)

    # -- tasks --------------------------------------------------------------------------

    @overload
    def task(self, fn: Callable[..., Any], /) -> Task: ...

    @overload
    def task(self, fn: None = None, /, **options: Any) -> Callable[[Callable[..., Any]], Task]: ...

    def task(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Register a task (``@celery_app.task`` bare or with Celery's options; see
        ``chokaq.compat.celery.options.TASK_OPTIONS`` for those supported)."""
        checked = task_options(options)

        def register(fn: Callable[..., Any]) -> Task:
            return self.register(Task(fn, checked))

        return register(fn) if fn is not None else register

    def register(self, task: Task) -> Task:
        """Register ``task`` as a job type of the App (its Celery name), with its options."""
        if task.name in self.tasks:
            if self.tasks[task.name] is task:
                return task
            raise ConfigurationError(f"task {task.name!r} is registered twice")
        opts = task.options
        task.handle = self.app.job(
            name=task.name,
            queue=opts.queue or self.conf.task_default_queue,
            priority=opts.priority,
            max_attempts=opts.max_attempts,
            timeout_seconds=opts.timeout_seconds,
            rate_limit=opts.rate_limit,
            expires_after_seconds=opts.expires,
            retry=opts.retry_policy(),
            retry_on=opts.autoretry_for,
        )(handler(task))
        task.celery = self
        self.tasks[task.name] = task
        if task.name in {entry.task for entry in self._beat.values()}:
            self.declare_beat()
        return task

    def handle_of(self, task: Task) -> JobHandle[Any, Any]:
        if task.handle is None or self.tasks.get(task.name) is not task:
            raise ConfigurationError(f"task {task.name!r} is not registered on this app")
        return task.handle

    def send_task(
        self,
        name: str,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> AsyncResult:
        """Send a task by name: a registered one with its options, else a job of that type
        for a worker that has it (on ``task_default_queue`` unless ``queue=``)."""
        task = self.tasks.get(name)
        if task is not None:
            return task.apply_async(args, kwargs, **options)
        enqueue = call_options(options)
        enqueue.setdefault("queue", self.conf.task_default_queue)
        payload = {"args": list(args or ()), "kwargs": dict(kwargs or {})}
        return AsyncResult(self.app.enqueue_raw_sync(name, payload, **enqueue), app=self)

    # -- beat ---------------------------------------------------------------------------

    def declare_beat(self) -> None:
        """Declare ``conf.beat_schedule`` as the App's schedules (again after a change, or
        once the task an entry names is registered: its queue and priority apply)."""
        entries = [
            entry_of(name, entry, self.conf.timezone)
            for name, entry in self.conf.beat_schedule.items()
        ]
        for name in self._beat.keys() - {entry.name for entry in entries}:
            self.app.periodics.pop(name, None)
        self._beat = {}
        for entry in entries:
            declare_schedule(self, entry)
            self._beat[entry.name] = entry

    # -- results ------------------------------------------------------------------------

    def AsyncResult(self, task_id: str) -> AsyncResult:  # Celery's name
        return AsyncResult(task_id, app=self)

    def job_view(self, job_id: str) -> JobView | None:
        """Where job ``job_id`` is (``App.get_job_sync``)."""
        return self.app.get_job_sync(job_id)

    def cancel(self, job_id: str) -> None:
        self.app.cancel_sync(job_id, actor="celery.revoke")


def declare_schedule(celery: Celery, entry: Entry) -> None:
    """Declare one beat entry on the App, with the task's queue, priority and expiry when its
    options name none (Celery's routing: the task's queue)."""
    task = celery.tasks.get(entry.task)
    handle = task.handle if task is not None else None
    queue = handle.queue if handle is not None else celery.conf.task_default_queue
    priority = handle.priority if handle is not None else 0
    expires = handle.expires_after_seconds if handle is not None else None
    existing = celery.app.periodics.get(entry.name)
    if existing is not None and existing.type != entry.task:
        raise ConfigurationError(f"schedule {entry.name!r} is declared twice")
    celery.app.periodics[entry.name] = entry.declaration(queue, priority, expires)


def current_app() -> Celery:
    """The Celery app created last; ``ConfigurationError`` before any."""
    return cast(Celery, current())


def shared_task(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """A task bound to the current app, and to any app created after it (``@shared_task``
    bare or with the options of ``Celery.task``)."""
    checked = task_options(options)

    def register(fn: Callable[..., Any]) -> Task:
        task = Task(fn, checked)
        _shared.append(task)
        if CURRENT:
            cast(Celery, CURRENT[-1]).register(task)
        return task

    return register(fn) if fn is not None else register

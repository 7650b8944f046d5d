"""The worker side of Django tasks: which tasks ``manage.py chokaq_worker`` runs, and one run.

Owns the choice of what runs: every ``@task`` of the project's installed apps declared on a
``ChokaqBackend`` whose App is the worker's, found by importing each installed app's ``tasks``
module (as Django's admin finds ``admin`` modules) and whatever the apps imported at set-up.
Each becomes a chokaq handler named by its dotted path; a job of any other type is one the
worker has no handler for (released, then dead-lettered as REJECTED after the grace): its
path is never imported. One run sends ``task_started`` and ``task_finished`` around the call,
with a ``TaskResult`` read from the store, on a worker thread with Django's connection
hygiene, as a request would have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

from ...app import App
from ...context import JobContext, Middleware
from .framework import (
    Task,
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    class_path,
    normalize_json,
    task_backends,
    task_finished,
    task_started,
)
from .tasks import CLASS_NOTE, ChokaqBackend, declared_tasks, result_of

__all__ = ["serve"]


# The TaskResult of the run under way, read by the middleware on the worker's loop and handed
# to the handler's thread (chokaq copies the context into it).
_running: ContextVar[TaskResult] = ContextVar("chokaq_django_task")
# Per App, the tasks it runs by dotted path, with their backends.
_served: WeakKeyDictionary[App, dict[str, tuple[ChokaqBackend, Task]]] = WeakKeyDictionary()


def serve(app: App) -> list[str]:
    """Register on ``app`` a handler for each task it should run (see the module's note) and
    widen the queues it serves by its backends' ``QUEUES``; returns the tasks' dotted paths."""
    from django.conf import settings
    from django.utils.module_loading import autodiscover_modules

    autodiscover_modules("tasks")
    queues: set[str] = set()
    for alias in getattr(settings, "TASKS", {}):
        backend = task_backends[alias]
        if not isinstance(backend, ChokaqBackend) or backend.app is not app:
            continue
        queues |= backend.queues
        for task in declared_tasks(alias):
            if _of_installed_app(task):
                _register(app, backend, task)
    if queues and app.worker_settings.queues is None:
        declared = {handle.queue for handle in app.handlers.values()} | set(app.pipes)
        app.worker_settings = replace(app.worker_settings, queues=tuple(sorted(declared | queues)))
    return list(_served.get(app, {}))


def _of_installed_app(task: Task) -> bool:
    from django.apps import apps

    return apps.get_containing_app_config(task.func.__module__) is not None


def _register(app: App, backend: ChokaqBackend, task: Task) -> None:
    """One chokaq handler for ``task``: sync, so that it runs in the worker's own thread pool
    (sized to its concurrency, timeouts and overruns accounted), an async task on that
    thread's own loop; its TaskResult comes from the ``_reader`` middleware around it."""
    path = task.module_path
    if path in app.handlers:
        return
    if app not in _served:
        _served[app] = {}
        app.middleware(_reader(app))
    _served[app][path] = (backend, task)

    def run(ctx: JobContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return execute(type(backend), task, _running.get(), args, kwargs)

    app.job(
        name=path, queue=task.queue_name, max_attempts=backend.max_attempts, check_arguments=False
    )(run)


def _reader(app: App) -> Middleware:
    """The middleware through which ``app``'s Django task runs read their job first, on the
    worker's loop, as the TaskResult their context and signals carry (workers, times and
    errors so far); other jobs pass through."""

    async def read_result(ctx: JobContext, call_next: Callable[[], Awaitable[Any]]) -> Any:
        served = _served[app].get(ctx.type)
        if served is None:
            return await call_next()
        backend, task = served
        view = await app.get_job(ctx.job_id)
        if view is None:  # cancelled and purged since the claim: nothing to run
            return None
        token = _running.set(result_of(view, task, backend.alias))
        try:
            return await call_next()
        finally:
            _running.reset(token)

    return read_result


def execute(
    sender: type[ChokaqBackend],
    task: Task,
    result: TaskResult,
    args: list[Any],
    kwargs: dict[str, Any],
) -> Any:
    """Run ``task`` as the framework does: ``task_started``, the call (the context first when
    it takes one), the value normalised to JSON, ``task_finished``; an exception is re-raised
    for chokaq to record, noted with its class path (``tasks.CLASS_NOTE``)."""
    from django.db import close_old_connections

    close_old_connections()
    try:
        task_started.send(sender=sender, task_result=result)
        try:
            if task.takes_context:
                value = task.call(TaskContext(task_result=result), *args, **kwargs)
            else:
                value = task.call(*args, **kwargs)
            value = normalize_json(value)
        except Exception as exc:
            path = class_path(type(exc))
            exc.add_note(f"{CLASS_NOTE}{path}")
            _finish(sender, result, TaskResultStatus.FAILED, error=exc)
            raise
        _finish(sender, result, TaskResultStatus.SUCCESSFUL, value=value)
        return value
    finally:
        close_old_connections()


def _finish(
    sender: type[ChokaqBackend],
    result: TaskResult,
    status: Any,
    *,
    value: Any = None,
    error: Exception | None = None,
) -> None:
    import traceback

    from django.utils import timezone

    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "_return_value", value)
    if error is not None:
        result.errors.append(
            TaskError(
                exception_class_path=class_path(type(error)),
                traceback="".join(traceback.format_exception(error)),
            )
        )
    task_finished.send(sender=sender, task_result=result)

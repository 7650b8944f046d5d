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

import asyncio
from dataclasses import replace
from typing import Any

from ...app import App
from ...context import JobContext
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


def serve(app: App) -> list[str]:
    """Register on ``app`` a handler for each task it should run (see the module's note) and
    widen the queues it serves by its backends' ``QUEUES``; returns the tasks' dotted paths."""
    from django.conf import settings
    from django.utils.module_loading import autodiscover_modules

    autodiscover_modules("tasks")
    served: list[str] = []
    queues: set[str] = set()
    for alias in getattr(settings, "TASKS", {}):
        backend = task_backends[alias]
        if not isinstance(backend, ChokaqBackend) or backend.app is not app:
            continue
        queues |= backend.queues
        for task in declared_tasks(alias):
            if _of_installed_app(task):
                _register(app, backend, task)
                served.append(task.module_path)
    if queues and app.worker_settings.queues is None:
        declared = {handle.queue for handle in app.handlers.values()} | set(app.pipes)
        app.worker_settings = replace(app.worker_settings, queues=tuple(sorted(declared | queues)))
    return served


def _of_installed_app(task: Task) -> bool:
    from django.apps import apps

    return apps.get_containing_app_config(task.func.__module__) is not None


def _register(app: App, backend: ChokaqBackend, task: Task) -> None:
    """One chokaq handler for ``task``: async, so that it reads the job on the worker's loop,
    then runs the task on a thread (an async task on that thread's own loop)."""
    if task.module_path in app.handlers:
        return

    async def run(ctx: JobContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        view = await app.get_job(ctx.job_id)
        if view is None:  # cancelled and purged since the claim: nothing to run
            return None
        result = result_of(view, task, backend.alias)
        return await asyncio.to_thread(execute, type(backend), task, result, args, kwargs)

    app.job(
        name=task.module_path,
        queue=task.queue_name,
        max_attempts=backend.max_attempts,
        check_arguments=False,
    )(run)


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

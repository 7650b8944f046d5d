"""Django's task framework, from wherever this Django has it: ``django.tasks`` on Django 6, the
``django-tasks`` backport (``django_tasks``) on Django 4.2-5.2.

Owns the one import of the framework's names, so that the backend and the worker side never
test versions themselves, and the two exceptions that are at once the framework's and
chokaq's ``ValidationError``; it holds no logic of its own.
"""

from __future__ import annotations

from typing import Any

from ...errors import ValidationError

try:  # Django 6: the framework ships with Django.
    from django.tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError
    from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
except ImportError:  # Django 4.2-5.2: the backport (pip install django-tasks).
    from django_tasks import (
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task_backends,
    )
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskError
    from django_tasks.exceptions import (
        InvalidTaskBackendError as InvalidTaskBackend,
    )
    from django_tasks.exceptions import (
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import (
        task_enqueued,
        task_finished,
        task_started,
    )
    from django_tasks.utils import normalize_json

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "InvalidTaskInput",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "UnknownResultId",
    "class_path",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]


class InvalidTaskInput(ValidationError, InvalidTask):
    """A task, its options or its arguments refused before anything is written: the
    framework's ``InvalidTask`` (what Django's callers catch) and chokaq's
    ``ValidationError`` (``field`` and ``limit``) at once."""


class UnknownResultId(ValidationError, TaskResultDoesNotExist):
    """``get_result`` of an id that cannot name a chokaq job: no result exists for it (the
    framework's ``TaskResultDoesNotExist``), and the id is bad input (``ValidationError``)."""


def class_path(kind: type[Any]) -> str:
    """A class's dotted path as the framework writes it (``TaskError.exception_class_path``):
    module and qualified name, ``builtins.ValueError`` included."""
    return f"{kind.__module__}.{kind.__qualname__}"

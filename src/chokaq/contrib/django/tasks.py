"""``ChokaqBackend``: chokaq as a backend of Django's task framework (``django.tasks``, DEP 14).

Owns the translation between the framework and chokaq's own API: a ``Task`` becomes a raw job
whose type is the task's dotted path (``shop.tasks.send_receipt``, as The Deck and the CLI show
it) and whose payload holds its arguments; a job read back becomes a ``TaskResult``. It is not
a second engine: queues, priorities, delays, attempts and errors are chokaq's, and what the
worker does with a task is ``chokaq.contrib.django.runner``'s. Settings::

    TASKS = {"default": {"BACKEND": "chokaq.contrib.django.tasks.ChokaqBackend",
                         "QUEUES": [],   # [] any queue; default ["default"], as Django's
                         "OPTIONS": {"app": "shop.jobs:app",   # default settings.CHOKAQ_APP
                                     "database": "default",    # Django's alias enqueued through
                                     "max_attempts": 1}}}      # 1: a task that raises failed

Priorities: chokaq's is Django's plus 10, so Django's default 0 is chokaq's default 10 and
Django's -100..100 keeps its order among chokaq's own jobs. Transactions: when the App's store
is the PostgreSQL database Django's ``database`` connection is on (same host, port and database
name, through psycopg 3), the job is written on that connection: inside ``atomic()`` it commits
or rolls back with the caller's writes. Otherwise it is written on chokaq's own connection once
that Django transaction commits (``on_commit``; at once outside one).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from ...app import App
from ...errors import JobFailedError, ValidationError
from ...limits import (
    check_delay,
    check_job_id,
    check_max_attempts,
    check_name,
    check_payload,
)
from ...models import JobAttempt, JobView, NewJob, Pillar
from .framework import (
    BaseTaskBackend,
    InvalidTask,
    InvalidTaskBackend,
    InvalidTaskInput,
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    UnknownResultId,
    class_path,
    normalize_json,
    task_enqueued,
)

__all__ = ["PRIORITY_OFFSET", "ChokaqBackend", "declared_tasks", "error_class_path"]

PRIORITY_OFFSET = 10  # chokaq priority = Django priority + 10 (Django's 0 is chokaq's default)
OPTIONS = ("app", "database", "max_attempts")
CREATED_BY = "django.tasks"
# Until stored errors carry their class (JobFailedError.error_type), the worker notes the class
# path on the exception it re-raises; the note is the last line of that name in the error text.
CLASS_NOTE = "django task exception class: "
_NOTED = re.compile(rf"^{re.escape(CLASS_NOTE)}(\S+)$", re.MULTILINE)
_FIRST_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
TRACEBACK_HEAD = "Traceback (most recent call last):"

# Every task validated by a ChokaqBackend in this process, by backend alias and dotted path:
# the worker runs these (those of installed apps) and nothing else. Module-level because
# Django makes one backend object per thread.
_declared: dict[tuple[str, str], Task] = {}


def declared_tasks(alias: str) -> list[Task]:
    """The tasks declared on backend ``alias`` in this process (first declaration of each)."""
    return [task for (owner, _), task in _declared.items() if owner == alias]


class ChokaqBackend(BaseTaskBackend):
    """Django tasks on a chokaq ``App``: deferred, async, prioritised, with results readable
    from any process. Bad settings raise ``InvalidTaskBackend`` naming the key; a bad task or
    argument ``InvalidTaskInput`` (both ``InvalidTask`` and ``ValidationError``) naming the
    field, before anything is written."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['OPTIONS']: unknown option {unknown[0]!r} "
                f"(known: {', '.join(OPTIONS)})"
            )
        for queue in sorted(self.queues):
            _configured(alias, "QUEUES", lambda q=queue: check_name("queue", q))
        self.database = _database(alias, self.options.get("database", "default"))
        self.max_attempts = _max_attempts(alias, self.options.get("max_attempts", 1))
        spec = self.options.get("app")
        if spec is not None and (not isinstance(spec, str) or ":" not in spec):
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['OPTIONS']['app']: must name your App as "
                f'"module:attribute" (for example "myproject.jobs:app"), not {spec!r}'
            )
        self._spec: str | None = spec
        self._app: App | None = None

    @property
    def app_spec(self) -> str:
        """``OPTIONS["app"]``, else ``settings.CHOKAQ_APP`` (``"module:attribute"``)."""
        from . import app_spec

        return self._spec or app_spec()

    @property
    def app(self) -> App:
        """The App the tasks are enqueued on and run by (imported on first use: the App's
        module may import the tasks that built this backend)."""
        if self._app is None:
            from ...cli.options import load_app

            self._app = load_app(self.app_spec)
        return self._app

    # -- the framework's calls -----------------------------------------------------------

    def check(self, **kwargs: Any) -> list[Any]:
        """``manage.py check``: the App must load (a wrong ``OPTIONS["app"]`` or
        ``CHOKAQ_APP`` is found there, not at the first enqueue)."""
        from django.core import checks

        try:
            self.app  # noqa: B018  # loaded for its errors
        except Exception as exc:
            return [
                checks.Error(
                    f"TASKS[{self.alias!r}]: the chokaq App cannot be loaded: {exc}",
                    hint='OPTIONS["app"] (or settings.CHOKAQ_APP) names it as "module:attribute"',
                    id="chokaq.E001",
                )
            ]
        return []

    def validate_task(self, task: Task) -> None:
        """The framework's rules, each error naming its field, plus chokaq's for a queue name;
        a valid task is declared to this process's worker side."""
        if isinstance(task.priority, bool) or not isinstance(task.priority, int):
            raise InvalidTaskInput("priority", "must be a whole number between -100 and 100")
        try:
            check_name("queue_name", task.queue_name)
            check_name("func", task.module_path)  # the job's type
            if isinstance(task.run_after, timedelta):
                check_delay("run_after", task.run_after.total_seconds())
                task = replace(task, run_after=None)  # the framework's rules know datetimes only
            super().validate_task(task)
        except ValidationError as exc:
            raise InvalidTaskInput(exc.field, exc.limit) from None
        except InvalidTask as exc:
            raise InvalidTaskInput(_field_of(str(exc)), str(exc)) from None
        _declared.setdefault((self.alias, task.module_path), task)

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Write the task's job (see the module's note on transactions) and send
        ``task_enqueued``; its ``TaskResult`` is READY, with the job's id."""
        self.validate_task(task)
        job = self.new_job(task, args, kwargs)
        result = TaskResult(
            task=task,
            id=job.id,
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        connection = self.shared_connection()
        if connection is not None:
            self._write(job, result, connection)
        else:
            from django.db import transaction

            transaction.on_commit(lambda: self._write(job, result, None), using=self.database)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """The task's result as its job stands now, from any process; ``TaskResultDoesNotExist``
        when no pillar holds that job or it is not a task of this backend."""
        try:
            job_id = check_job_id("result_id", result_id)
        except ValidationError as exc:
            raise UnknownResultId(exc.field, exc.limit) from None
        view = self.app.get_job_sync(job_id)
        task = None if view is None else _declared.get((self.alias, view.type))
        if view is None or task is None:
            raise TaskResultDoesNotExist(f"no task result {result_id!r} on backend {self.alias!r}")
        return result_of(view, task, self.alias)

    # -- enqueueing ----------------------------------------------------------------------

    def new_job(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> NewJob:
        """The chokaq job of one task call: type the dotted path, payload the arguments as
        JSON (the framework's rule: refused here, naming ``args`` or ``kwargs``)."""
        payload = {"args": _json("args", list(args)), "kwargs": _json("kwargs", dict(kwargs))}
        options: dict[str, Any] = {"priority": task.priority + PRIORITY_OFFSET}
        if isinstance(task.run_after, timedelta):
            options["delay_seconds"] = task.run_after.total_seconds()
        elif task.run_after is not None:
            options["run_at"] = task.run_after
        try:
            job = self.app.raw(
                task.module_path, payload, queue=task.queue_name, created_by=CREATED_BY, **options
            )
            # Its size now, not when an on_commit write would refuse it after the commit.
            check_payload("payload", job.payload, self.app.limits)
            return job
        except ValidationError as exc:
            raise InvalidTaskInput(exc.field, exc.limit) from None

    def shared_connection(self) -> Any:
        """Django's psycopg 3 connection when the App's store is its database, else None."""
        if not self.app.url.startswith(("postgresql:", "postgres:")):
            return None
        from django.db import connections

        wrapper = connections[self.database]
        if wrapper.vendor != "postgresql":
            return None
        wrapper.ensure_connection()
        raw = wrapper.connection
        info = getattr(raw, "info", None)
        if info is None or not hasattr(info, "dbname"):  # psycopg2: no shared transaction
            return None
        url = urlsplit(self.app.url)
        same = (info.host, info.port, info.dbname) == (
            url.hostname or "localhost",
            url.port or 5432,
            url.path.lstrip("/"),
        )
        return raw if same else None

    def _write(self, job: NewJob, result: TaskResult, connection: Any) -> None:
        from django.utils import timezone

        self.app.enqueue_many_sync([job], connection=connection)
        object.__setattr__(result, "enqueued_at", timezone.now())
        task_enqueued.send(sender=type(self), task_result=result)


# -- reading a job back as a TaskResult ---------------------------------------------------


def result_of(view: JobView, task: Task, alias: str) -> TaskResult:
    """The ``TaskResult`` of a job as it stands: status, times, workers, errors, value."""
    failed = sorted(view.attempts, key=lambda attempt: attempt.seq)
    final = view.pillar is Pillar.ARCHIVE or _running(view)
    payload = json.loads(view.payload or "{}")
    starts = [a.started_at for a in failed] + ([view.started_at] if final else [])
    known = [start for start in starts if start is not None]
    result = TaskResult(
        task=task,
        id=view.id,
        status=_status(view),
        enqueued_at=view.created_at,
        started_at=known[0] if known else None,
        finished_at=view.finished_at or view.failed_at,
        last_attempted_at=known[-1] if known else None,
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=alias,
        errors=_task_errors(view, failed),
        worker_ids=[a.worker_id or "" for a in failed] + ([view.worker_id or ""] if final else []),
    )
    if view.pillar is Pillar.ARCHIVE and view.result is not None:
        object.__setattr__(result, "_return_value", json.loads(view.result))
    return result


def error_class_path(error: str, error_type: str | None = None) -> str:
    """The exception class path of a stored error: ``error_type`` when the store kept it, else
    the worker's note, else the class the error's first line names (a dotted path, or a
    builtin exception), else ``chokaq.errors.JobFailedError`` (a timeout, a zombie, an
    expiry: chokaq's reasons, not an exception of the task)."""
    if error_type:
        return error_type
    noted = _NOTED.findall(error)
    if noted:
        return str(noted[-1])
    first = _FIRST_LINE.match(error)
    name = first.group(1) if first else ""
    builtin = getattr(builtins, name, None)
    if "." in name:
        return name
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return f"builtins.{name}"
    return class_path(JobFailedError)


def _task_errors(view: JobView, failed: list[JobAttempt]) -> list[TaskError]:
    """The errors of the failed attempts, oldest first; a job dead-lettered without a run
    (expired, cancelled while pending) has its DLQ error as its one error. The DLQ row keeps
    the exception's class (``error_type``); an earlier attempt's comes from its text."""
    texts = [attempt.error for attempt in failed if attempt.error is not None]
    if not texts and view.pillar is Pillar.DLQ and view.error:
        texts.append(view.error)
    last = len(texts) - 1
    dead = view.error_type if view.pillar is Pillar.DLQ else None
    return [_error(text, dead if i == last else None) for i, text in enumerate(texts)]


def _error(text: str, error_type: str | None = None) -> TaskError:
    at = text.find(f"\n\n{TRACEBACK_HEAD}")
    return TaskError(
        exception_class_path=error_class_path(text, error_type),
        traceback=text[at + 2 :] if at >= 0 else text,
    )


def _status(view: JobView) -> Any:
    if view.pillar is Pillar.ARCHIVE:
        return TaskResultStatus.SUCCESSFUL
    if view.pillar is Pillar.DLQ:
        return TaskResultStatus.FAILED
    return TaskResultStatus.RUNNING if _running(view) else TaskResultStatus.READY


def _running(view: JobView) -> bool:
    return view.pillar is Pillar.HOT and view.state == "processing"


def _json(field: str, value: Any) -> Any:
    """``value`` normalised as the framework does (tuples become lists), if it is JSON: the
    framework's types only, and finite numbers."""
    try:
        normal = normalize_json(value)
        json.dumps(normal, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidTaskInput(field, f"must be JSON-serializable ({exc})") from None
    return normal


def _field_of(message: str) -> str:
    """The task field a framework message is about."""
    lowered = message.lower()
    for field in ("priority", "run_after", "queue", "context", "async"):
        if field in lowered:
            return {"queue": "queue_name", "context": "takes_context", "async": "func"}.get(
                field, field
            )
    return "func"


def _database(alias: str, value: Any) -> str:
    """``OPTIONS["database"]``: an alias of ``settings.DATABASES``."""
    from django.conf import settings

    if not isinstance(value, str) or value not in settings.DATABASES:
        raise InvalidTaskBackend(
            f"TASKS[{alias!r}]['OPTIONS']['database']: must be an alias of settings.DATABASES "
            f"({', '.join(map(repr, settings.DATABASES))}), not {value!r}"
        )
    return value


def _max_attempts(alias: str, value: Any) -> int:
    """``OPTIONS["max_attempts"]``: 1 (the framework's rule: a task that raises has failed) to
    1000 runs of a task that raises."""
    # None is chokaq's "the worker's default" (3 attempts): not what a Django task means.
    _configured(
        alias,
        "OPTIONS['max_attempts']",
        lambda: check_max_attempts("max_attempts", 0 if value is None else value),
    )
    return int(value)


def _configured(alias: str, key: str, check: Any) -> None:
    """``check()``, its ``ValidationError`` as the framework's settings error."""
    try:
        check()
    except ValidationError as exc:
        raise InvalidTaskBackend(f"TASKS[{alias!r}][{key}]: {exc.limit}") from None

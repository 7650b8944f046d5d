"""chokaq in a Django project: settings, enqueue inside Django's own transaction, management
commands.

Owns the wiring between Django (its settings, its database connections, its ``on_commit``) and
chokaq's public API; it holds no SQL and no job logic. Add ``"chokaq.contrib.django"`` to
``INSTALLED_APPS`` and name your App in settings::

    CHOKAQ_APP = "myproject.jobs:app"      # module:attribute, as `chokaq worker --app`

Then, in a view::

    from chokaq.contrib.django import enqueue, enqueue_on_commit

    with transaction.atomic():
        order = Order.objects.create(...)
        enqueue(send_receipt, order_id=order.pk)   # written by Django's own transaction

``enqueue`` needs PostgreSQL through psycopg 3 (Django's ``django.db.backends.postgresql`` uses
it when it is installed). With psycopg2, ``enqueue_on_commit`` enqueues once the transaction
has committed, on chokaq's own connection: nothing is enqueued for a transaction that rolls
back, but a process that dies between the commit and the enqueue loses the job.
``manage.py chokaq_worker`` and ``manage.py chokaq_migrate`` run ``chokaq worker`` and
``chokaq migrate`` on that App; the worker also runs the project's Django tasks when
``settings.TASKS`` names ``chokaq.contrib.django.tasks.ChokaqBackend`` (``tasks``).
"""

from __future__ import annotations

from typing import Any, ParamSpec, TypeVar

from ...app import App
from ...errors import ConfigurationError
from ...handles import JobHandle, JobId

__all__ = ["DjangoEnqueuer", "app_spec", "enqueue", "enqueue_on_commit", "get_app"]

P = ParamSpec("P")
R = TypeVar("R")
TASKS_BACKEND = "chokaq.contrib.django.tasks.ChokaqBackend"


def app_spec() -> str:
    """``settings.CHOKAQ_APP`` (``"module:attribute"``); without it, the one App the
    ``ChokaqBackend`` entries of ``settings.TASKS`` name in ``OPTIONS["app"]``; else a
    ``ConfigurationError``."""
    from django.conf import settings

    spec = getattr(settings, "CHOKAQ_APP", None)
    if spec is None:
        named = {
            params.get("OPTIONS", {}).get("app")
            for params in getattr(settings, "TASKS", {}).values()
            if params.get("BACKEND") == TASKS_BACKEND
        }
        spec = named.pop() if len(named) == 1 else None
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigurationError(
            'settings.CHOKAQ_APP must name your App as "module:attribute" '
            '(for example "myproject.jobs:app")'
        )
    return spec


def get_app() -> App:
    """The App ``settings.CHOKAQ_APP`` names (imported, as ``chokaq worker --app`` does)."""
    from ...cli.options import load_app

    return load_app(app_spec())


class DjangoEnqueuer:
    """Enqueues through one of Django's database connections (``using``, default ``"default"``)."""

    def __init__(self, using: str = "default") -> None:
        self.using = using

    def connection(self) -> Any:
        """The psycopg 3 connection under Django's ``using`` connection (opened if needed)."""
        import psycopg
        from django.db import connections

        wrapper = connections[self.using]
        wrapper.ensure_connection()
        raw = wrapper.connection
        if wrapper.vendor != "postgresql" or not isinstance(raw, psycopg.Connection):
            raise ConfigurationError(
                f"enqueue needs Django's {self.using!r} database on PostgreSQL through psycopg 3 "
                f"(it is {wrapper.vendor} through {type(raw).__module__}); with psycopg2, use "
                "enqueue_on_commit, which enqueues after the commit on chokaq's own connection"
            )
        return raw

    def enqueue(self, handle: JobHandle[P, R], /, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """``handle.enqueue_sync(...)`` on Django's connection: inside ``transaction.atomic()``
        the job commits with the block's writes, or rolls back with them."""
        return handle.options(connection=self.connection()).enqueue_sync(*args, **kwargs)

    def enqueue_on_commit(
        self, handle: JobHandle[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> None:
        """Enqueue once the current transaction on ``using`` commits (at once outside one),
        on chokaq's own connection: any database driver, any chokaq store; see the module's
        note on what a crash between the two loses."""
        from django.db import transaction

        handle.prepare(*args, **kwargs)  # a bad argument is refused now, not after the commit

        def send() -> None:
            handle.enqueue_sync(*args, **kwargs)

        transaction.on_commit(send, using=self.using)


_default = DjangoEnqueuer()
enqueue = _default.enqueue
enqueue_on_commit = _default.enqueue_on_commit

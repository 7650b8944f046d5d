"""Celery's calling conventions over chokaq: change the imports, keep the call sites.

::

    from chokaq import App
    from chokaq.compat.celery import Celery, shared_task, chain, group, chord, AsyncResult

    app = App("postgresql://...")
    celery_app = Celery(app)

    @shared_task(bind=True, max_retries=3, autoretry_for=(ConnectionError,), retry_backoff=True)
    def scan(self, url): ...

A porting layer, not a second engine: a task is a chokaq job type, a canvas is jobs with
parents (``after=``), beat entries are periodic schedules, results are the archived jobs'.
What means something else here is listed, row by row, in docs/migrating-from-celery-rq.md; a
Celery option this layer does not support raises ``ValidationError`` naming it.
"""

from __future__ import annotations

from .app import Celery, current_app, shared_task
from .beat import crontab
from .canvas import Signature, chain, chord, group
from .results import AsyncResult, GroupResult
from .tasks import MaxRetriesExceededError, Request, Retry, Task

__all__ = [
    "AsyncResult",
    "Celery",
    "GroupResult",
    "MaxRetriesExceededError",
    "Request",
    "Retry",
    "Signature",
    "Task",
    "chain",
    "chord",
    "crontab",
    "current_app",
    "group",
    "shared_task",
]

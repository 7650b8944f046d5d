"""Celery's ``AsyncResult`` and ``GroupResult`` over chokaq's results and job views.

A result is a job id; ``get`` waits through ``App.result_sync`` (woken by the notifier, not by
polling) and ``state`` reads where the job is (``App.get_job``) in Celery's words. Owns that
mapping only; it never writes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import ChokaqError, ConfigurationError, ValidationError
from ...models import FailureReason, JobStatus, JobView, Pillar
from .options import missing, refuse_unknown

if TYPE_CHECKING:
    from ...app import App

__all__ = ["AsyncResult", "Backing", "GroupResult", "current", "state_of"]

PENDING, RECEIVED, STARTED, RETRY = "PENDING", "RECEIVED", "STARTED", "RETRY"
SUCCESS, FAILURE, REVOKED = "SUCCESS", "FAILURE", "REVOKED"
READY_STATES = frozenset({SUCCESS, FAILURE, REVOKED})
GET_OPTIONS = frozenset({"timeout", "propagate", "interval"})
# Dead-lettered without having failed: Celery calls a revoked or expired task REVOKED.
_REVOKED = frozenset({FailureReason.CANCELLED, FailureReason.EXPIRED})


def state_of(view: JobView | None) -> str:
    """A job's state in Celery's words: PENDING (unknown, waiting or due), RETRY (due again
    after a failed run), RECEIVED (claimed), STARTED, SUCCESS, FAILURE or REVOKED."""
    if view is None:
        return PENDING  # as Celery says of an id it knows nothing about
    if view.pillar is Pillar.ARCHIVE:
        return SUCCESS
    if view.pillar is Pillar.DLQ:
        return REVOKED if view.failure_reason in _REVOKED else FAILURE
    if view.status is JobStatus.PROCESSING:
        return STARTED
    if view.status is JobStatus.FETCHED:
        return RECEIVED
    return RETRY if view.attempt_count > 0 else PENDING


class Backing(Protocol):
    """What a result needs of its Celery app (``Celery`` is one): the chokaq App, and where a
    job is and its cancel, on the sync client."""

    app: App

    def job_view(self, job_id: str) -> JobView | None: ...

    def cancel(self, job_id: str) -> None: ...


# The current Celery app, the one created last (``Celery.__init__`` puts itself here).
CURRENT: list[Backing] = []


def current() -> Backing:
    """The current Celery app; ``ConfigurationError`` before any."""
    if not CURRENT:
        raise ConfigurationError("no Celery app yet: create celery_app = Celery(app) first")
    return CURRENT[-1]


class AsyncResult:
    """The result of a sent task, by its id (the chokaq job's)."""

    def __init__(
        self, id: str, *, app: Backing | None = None, parent: AsyncResult | None = None
    ) -> None:
        self.id = id
        self.app = app if app is not None else current()
        self.parent = parent

    task_id = property(lambda self: self.id)

    def __repr__(self) -> str:
        return f"<AsyncResult: {self.id}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing("AsyncResult", name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AsyncResult) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def get(self, **options: Any) -> Any:
        """The task's return value, waiting up to ``timeout`` seconds (None: as long as it
        takes; ``TimeoutError`` after). A failed task raises ``chokaq.JobFailedError`` (its
        ``error`` holds the exception's text), or returns it with ``propagate=False``.
        ``interval`` is accepted and unused: the wait is woken by the database."""
        refuse_unknown(options, GET_OPTIONS, "AsyncResult.get")
        try:
            return self.app.app.result_sync(self.id, timeout_seconds=options.get("timeout"))
        except ChokaqError as exc:
            if options.get("propagate", True) or isinstance(exc, ValidationError):
                raise
            return exc

    wait = get

    def _view(self) -> JobView | None:
        return self.app.job_view(self.id)

    @property
    def state(self) -> str:
        return state_of(self._view())

    status = state

    def ready(self) -> bool:
        return self.state in READY_STATES

    def successful(self) -> bool:
        return self.state == SUCCESS

    def failed(self) -> bool:
        return self.state == FAILURE

    @property
    def result(self) -> Any:
        """The value of a succeeded task, the error of a failed one, else None."""
        view = self._view()
        if view is None or view.pillar is Pillar.HOT:
            return None
        return self.get(timeout=0, propagate=False)

    info = result

    @property
    def traceback(self) -> str | None:
        view = self._view()
        return view.error if view is not None and view.pillar is Pillar.DLQ else None

    def revoke(self, terminate: bool = False) -> None:
        """Cancel the job from any process (a running one is asked to stop whatever
        ``terminate`` says: its worker hears the request)."""
        self.app.cancel(self.id)


class GroupResult:
    """The results of a group's members, in its order."""

    def __init__(self, id: str, results: Sequence[Any]) -> None:
        self.id = id
        self.results = list(results)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def get(self, **options: Any) -> list[Any]:
        """Every member's value, in order; ``timeout`` bounds the whole wait."""
        refuse_unknown(options, GET_OPTIONS, "GroupResult.get")
        timeout = options.get("timeout")
        deadline = None if timeout is None else time.monotonic() + timeout
        values = []
        for result in self.results:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            values.append(result.get(**{**options, "timeout": left}))
        return values

    join = get

    def ready(self) -> bool:
        return all(result.ready() for result in self.results)

    def successful(self) -> bool:
        return all(result.successful() for result in self.results)

    def failed(self) -> bool:
        return any(result.failed() for result in self.results)

    def completed_count(self) -> int:
        return sum(1 for result in self.results if result.successful())

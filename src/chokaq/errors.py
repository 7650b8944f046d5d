"""The one exception tree of chokaq; every error the library raises on purpose is drawn here.

::

    ChokaqError
    ├── ConfigurationError        bad settings, detected at start-up
    ├── ValidationError           bad input, detected before anything is written (also a ValueError)
    ├── NotFoundError             no such job, queue or worker where it was looked for
    ├── JobFailedError            a job waited on (``App.result``) ended in the DLQ
    ├── JobBlockedError           a job waited on cannot run: a job it waits on is in the DLQ
    ├── ResultUnavailableError    a job succeeded but its return value was not kept
    ├── LeadershipLostError       a write made under leadership was fenced: its term is over
    ├── StorageError              the database failed us; the driver's error is the __cause__
    │   ├── StorageUnavailableError   the database is out of reach (retry)
    │   └── SchemaError               the schema is missing, too old or too new for this code
    └── JobSignal                 raised by a handler to steer its own job's outcome
        ├── FatalError                never retry: straight to the DLQ as FatalError
        └── ThrottledError            retry after ``retry_after_seconds`` exactly (366 days at most)

This module must not import anything from the rest of the package.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ChokaqError",
    "ConfigurationError",
    "FatalError",
    "JobBlockedError",
    "JobFailedError",
    "JobSignal",
    "LeadershipLostError",
    "NotFoundError",
    "ResultUnavailableError",
    "SchemaError",
    "StorageError",
    "StorageUnavailableError",
    "ThrottledError",
    "ValidationError",
]


class ChokaqError(Exception):
    """The root of every error chokaq raises on purpose."""


class ConfigurationError(ChokaqError):
    """A setting is missing or out of range; raised at start-up, never mid-run."""


class ValidationError(ChokaqError, ValueError):
    """Input was refused before anything was written.

    ``field`` names the offending input (``"queue"``, ``"jobs[3].payload"``) and ``limit`` states
    the rule it broke, so the message can be shown to an operator as it is.
    """

    def __init__(self, field: str, limit: str, *, value: object = None) -> None:
        self.field = field
        self.limit = limit
        self.value = value
        super().__init__(f"{field}: {limit}")

    def at(self, prefix: str) -> ValidationError:
        """The same error with its field nested under ``prefix`` (``jobs[3]`` and so on)."""
        return ValidationError(f"{prefix}.{self.field}", self.limit, value=self.value)


class NotFoundError(ChokaqError, LookupError):
    """The named job, queue or worker does not exist where it was looked for."""


class JobFailedError(ChokaqError):
    """The job waited on is in the DLQ: ``job_id``, ``reason`` (a ``FailureReason``), ``error``
    (the text it was dead-lettered with) and ``error_type`` (the qualified class name of the
    exception that sent it there, ``"billing.CardDeclined"``; None when no exception did: a
    timeout, ``Fail``, a cancel). Repair and requeue it, and wait again."""

    def __init__(
        self, job_id: str, reason: Any, error: str | None, error_type: str | None = None
    ) -> None:
        self.job_id = job_id
        self.reason = reason
        self.error = error
        self.error_type = error_type
        name = getattr(reason, "name", reason)
        super().__init__(f"job {job_id} failed ({name}): {error}")


class JobBlockedError(ChokaqError):
    """The job waited on is blocked: it waits (``after=``) on ``blocked_by``, a job in the DLQ
    (its parent, or an ancestor through parents that wait themselves) dead-lettered for
    ``reason`` (a ``FailureReason``), so it cannot run until an operator acts: requeue that job
    (when it succeeds, this one runs), purge it (its waiting children go to the DLQ as
    DEPENDENCY_FAILED), or cancel the workflow. Then wait again."""

    def __init__(self, job_id: str, blocked_by: str, reason: Any) -> None:
        self.job_id = job_id
        self.blocked_by = blocked_by
        self.reason = reason
        name = getattr(reason, "name", reason)
        super().__init__(
            f"job {job_id} is blocked: it waits on job {blocked_by}, which is in the DLQ "
            f"({name}); requeue or purge that job, then wait again"
        )


class ResultUnavailableError(ChokaqError):
    """The job succeeded, but its return value was not kept: ``reason`` says why ("not kept:
    2000314 bytes of JSON, over the limit of 1000000", or not JSON)."""

    def __init__(self, job_id: str, reason: str) -> None:
        self.job_id = job_id
        self.reason = reason
        super().__init__(f"job {job_id} succeeded; its result was {reason}")


class LeadershipLostError(ChokaqError):
    """A write made under leadership was refused, and nothing of it applied: the term it named
    (``term``, a ``LeaderTerm``) has lapsed or passed to another holder. The holder stops
    leading; it may be elected again, with a new term."""

    def __init__(self, term: Any) -> None:
        self.term = term
        super().__init__(f"leadership lost: {term!r} is no longer the current term")


class StorageError(ChokaqError):
    """The database failed; the driver's own exception is chained as ``__cause__``."""


class StorageUnavailableError(StorageError):
    """The database cannot be reached right now; callers retry with backoff."""


class SchemaError(StorageError):
    """The schema is missing, or its version does not match this code: run ``chokaq migrate``."""


class JobSignal(ChokaqError):
    """Base for exceptions a handler raises to steer its own job's outcome."""


class FatalError(JobSignal):
    """A poison pill: the job goes straight to the DLQ (reason FatalError) without retries."""


class ThrottledError(JobSignal):
    """A downstream asked us to slow down.

    The job is retried after ``retry_after_seconds`` exactly (no jitter, and not capped by the
    retry policy's ``max_delay_seconds``, which bounds computed backoff only) and still consumes
    an attempt; when attempts run out it lands in the DLQ with reason Throttled. ``None`` means
    "use the normal backoff"; a negative value (a reset time already past) retries at once.
    More than 366 days, or not a finite number, is refused: the job goes to the DLQ as
    FatalError with an error naming ``ThrottledError.retry_after_seconds`` and the limit.
    """

    def __init__(self, message: str = "throttled", *, retry_after_seconds: float | None = None):
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

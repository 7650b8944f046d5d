"""Celery's task and calling options, checked and mapped onto chokaq's.

Owns the names Celery's ``@app.task(...)`` and ``apply_async(...)`` take, which of them this
layer supports, and what each becomes in chokaq (``@app.job`` keywords, enqueue options, a
``RetryPolicy``). A name it does not support raises ``ValidationError`` naming it, before
anything is registered or written. It holds values only: no task, no enqueue, no storage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...errors import ValidationError
from ...limits import (
    MAX_ATTEMPTS,
    MAX_DELAY_SECONDS,
    check_delay,
    check_expiry_seconds,
    check_name,
    check_priority,
    check_seconds,
    check_time,
    check_timeout,
)
from ...policies import RetryPolicy, check_exception_types
from ...rates import check_rate

__all__ = [
    "CALL_OPTIONS",
    "TASK_OPTIONS",
    "TaskOptions",
    "call_options",
    "missing",
    "task_options",
]

# Celery's defaults (celery.app.task.Task), kept where this layer applies them itself.
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_DELAY = 180.0
DEFAULT_BACKOFF_MAX = 600.0
# Celery's priority without one given is the lowest (RabbitMQ's 0); chokaq's default is 10.
DEFAULT_PRIORITY = 0

TASK_OPTIONS = frozenset(
    {
        "acks_late",
        "autoretry_for",
        "bind",
        "default_retry_delay",
        "expires",
        "ignore_result",
        "max_retries",
        "name",
        "priority",
        "queue",
        "rate_limit",
        "retry_backoff",
        "retry_backoff_max",
        "retry_jitter",
        "soft_time_limit",
        "time_limit",
    }
)
CALL_OPTIONS = frozenset(
    {
        "countdown",
        "eta",
        "expires",
        "link",
        "link_error",
        "priority",
        "queue",
        "soft_time_limit",
        "time_limit",
    }
)


# Celery calls people port often that this layer has not, with what to write instead.
_INSTEAD = {
    "autodiscover_tasks": "import every task module from the module that makes the App",
    "config_from_object": "set conf.timezone, conf.task_default_queue and conf.beat_schedule; "
    "the rest are chokaq's App(...) and WorkerSettings",
    "control": "cancel with AsyncResult(id).revoke(), app.cancel(...), The Deck or chokaq job "
    "cancel",
    "apply": "call the task to run it here, or use chokaq.testing in tests",
    "map": "use group(task.s(item) for item in items)",
    "starmap": "use group(task.s(*item) for item in items)",
    "chunks": "use group(task.s(...) for ...) over slices of the items",
    "forget": "a result lives with its archived job, for the archive's retention",
    "children": "App.get_job(id).children lists the jobs that wait on it",
}


def missing(owner: str, name: str) -> AttributeError:
    """The error for a Celery attribute this layer does not have (an ``AttributeError``, so
    that ``hasattr`` stays false), naming it and what to write instead where known."""
    instead = _INSTEAD.get(name)
    return AttributeError(
        f"{owner}.{name} is not supported by chokaq.compat.celery"
        + (f": {instead}" if instead else "")
        + " (see docs/migrating-from-celery-rq.md)"
    )


def refuse_unknown(given: Mapping[str, Any], known: frozenset[str], what: str) -> None:
    """Raise ``ValidationError`` naming the first option of ``given`` not in ``known``: a Celery
    option this layer does not support is never ignored."""
    unknown = sorted(given.keys() - known)
    if unknown:
        raise ValidationError(
            unknown[0],
            f"is a Celery {what} option chokaq.compat.celery does not support "
            f"(it supports {', '.join(sorted(known))}; see docs/migrating-from-celery-rq.md)",
        )


def seconds_of(field: str, value: object, *, maximum: float = MAX_DELAY_SECONDS) -> float:
    """A duration Celery gives as a number of seconds or a ``timedelta``."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    seconds = check_seconds(field, value, maximum=maximum, allow_none=False)
    assert seconds is not None  # allow_none=False
    return seconds


def expiry_of(field: str, value: object) -> float:
    """An expiry Celery gives as seconds or a ``timedelta``: above 0, at most 366 days."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    seconds = check_expiry_seconds(field, value)
    if seconds is None:
        raise ValidationError(field, "is required")
    return seconds


def _flag(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be True or False, not {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """A task's options as Celery names them, checked (``task_options``)."""

    name: str | None = None
    bind: bool = False
    queue: str | None = None
    priority: int = DEFAULT_PRIORITY
    max_retries: int | None = DEFAULT_MAX_RETRIES  # None: Celery's "for ever"
    default_retry_delay: float = DEFAULT_RETRY_DELAY
    autoretry_for: tuple[type[BaseException], ...] = ()
    retry_backoff: float = 0.0  # 0: off; True is 1
    retry_backoff_max: float = DEFAULT_BACKOFF_MAX
    retry_jitter: bool = True
    rate_limit: str | None = None
    time_limit: float | None = None
    soft_time_limit: float | None = None
    acks_late: bool = False
    expires: float | None = None
    ignore_result: bool = False

    @property
    def max_attempts(self) -> int:
        """Executions a job gets: Celery's retries plus the first run; "for ever" (None) is
        chokaq's most, ``MAX_ATTEMPTS``."""
        return MAX_ATTEMPTS if self.max_retries is None else self.max_retries + 1

    @property
    def timeout_seconds(self) -> float | None:
        """The first of the two time limits to expire ends the job (chokaq has one)."""
        limits = [t for t in (self.time_limit, self.soft_time_limit) if t is not None]
        return min(limits) if limits else None

    def retry_policy(self) -> RetryPolicy:
        """The backoff of exceptions in ``autoretry_for``, as Celery computes it: with
        ``retry_backoff`` the n-th retry waits ``retry_backoff * 2**(n-1)`` seconds, at most
        ``retry_backoff_max``, jittered (chokaq adds up to one base delay on top instead of
        Celery's draw from 0); without, ``default_retry_delay`` every time. No age limit:
        Celery has none."""
        if self.retry_backoff:
            base = min(self.retry_backoff, self.retry_backoff_max)
            return RetryPolicy(
                max_attempts=self.max_attempts,
                base_delay_seconds=base,
                multiplier=2.0,
                max_delay_seconds=self.retry_backoff_max,
                jitter_seconds=base if self.retry_jitter else 0.0,
                max_job_age_seconds=None,
            )
        return RetryPolicy(
            max_attempts=self.max_attempts,
            base_delay_seconds=self.default_retry_delay,
            multiplier=1.0,
            max_delay_seconds=self.default_retry_delay,
            jitter_seconds=0.0,
            max_job_age_seconds=None,
        )


def task_options(given: Mapping[str, Any]) -> TaskOptions:
    """``@celery_app.task(...)``'s keywords, checked: ``ValidationError`` naming the option for
    an unsupported name or a bad value."""
    refuse_unknown(given, TASK_OPTIONS, "task")
    values: dict[str, Any] = {}
    for key, value in given.items():
        values[key] = _task_value(key, value)
    return TaskOptions(**values)


def _task_value(key: str, value: Any) -> Any:  # one branch per option
    if key in ("name", "queue"):
        return None if value is None else check_name(key, value)
    if key == "priority":
        return DEFAULT_PRIORITY if value is None else check_priority(key, value)
    if key in ("bind", "retry_jitter", "acks_late", "ignore_result"):
        return _flag(key, value)
    if key == "max_retries":
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_ATTEMPTS
        ):
            raise ValidationError(key, f"must be None or an integer from 0 to {MAX_ATTEMPTS - 1}")
        return value
    if key == "autoretry_for":
        return check_exception_types(key, value) or ()
    if key == "retry_backoff":
        if value is False:
            return 0.0
        return 1.0 if value is True else seconds_of(key, value)
    if key == "expires":
        return None if value is None else expiry_of(key, value)
    if key in ("default_retry_delay", "retry_backoff_max"):
        return seconds_of(key, value)
    if key == "rate_limit":
        return None if value is None else _rate(key, value)
    # time_limit, soft_time_limit
    return None if value is None else check_timeout(key, seconds_of(key, value))


def _rate(field: str, value: object) -> str:
    """Celery's rate: "10/s", "10/m", "10/h", or a bare number of tasks per second."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or value <= 0:
            raise ValidationError(field, "must be a positive number of tasks per second")
        value = f"{value:g}/s"
    return str(check_rate(field, value))


def call_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """``apply_async(...)``'s options (but ``link`` and ``link_error``, which the canvas
    handles) as ``handle.options(...)`` keywords, each checked here under Celery's name
    (``countdown``, not ``delay_seconds``). The task's own ``expires`` is its job type's
    (``@app.job(expires_after_seconds=)``), which an ``expires`` here replaces."""
    refuse_unknown(given, CALL_OPTIONS, "calling")
    out: dict[str, Any] = {}
    if given.get("countdown") is not None:
        out["delay_seconds"] = check_delay("countdown", seconds_of("countdown", given["countdown"]))
    if given.get("eta") is not None:
        if "delay_seconds" in out:
            raise ValidationError("eta", "give countdown or eta, not both")
        out["run_at"] = check_time("eta", given["eta"])
    expires = given.get("expires")
    if isinstance(expires, datetime):
        out["expires_at"] = check_time("expires", expires)
    elif expires is not None:
        out["expires_after_seconds"] = expiry_of("expires", expires)
    if given.get("queue") is not None:
        out["queue"] = check_name("queue", given["queue"])
    if given.get("priority") is not None:
        out["priority"] = check_priority("priority", given["priority"])
    limits = [
        check_timeout(k, seconds_of(k, given[k]))
        for k in ("time_limit", "soft_time_limit")
        if given.get(k) is not None
    ]
    if limits:
        out["timeout_seconds"] = min(t for t in limits if t is not None)
    return out

"""Structured logs with stable event ids: one range per area, never renumbered.

Every log line chokaq writes goes through ``log_event``, which attaches the event's id and name
and the fields given, so a JSON formatter (``chokaq.logs.JsonFormatter``) or a plain one prints
them. The ids are a contract: a test checks they are unique and unchanged. Owns the catalogue and
formatting; it must not decide when to log.
"""

from __future__ import annotations

import enum
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "LOG_LEVELS",
    "Event",
    "JsonFormatter",
    "PlainFormatter",
    "configure_logging",
    "default_level",
    "error_line",
    "log_admin",
    "log_admin_refused",
    "log_event",
    "logger",
    "set_default_level",
]

logger = logging.getLogger("chokaq")


class Event(enum.IntEnum):
    """Event ids by area: 1000 worker, 2000 job, 2100 transitions, 3000 enqueue, 4000 recovery
    and maintenance, 5000 storage, 6000 operators, 7000 dashboard."""

    WORKER_STARTED = 1000
    WORKER_STOPPED = 1001
    WORKER_LOOP_CRASHED = 1002
    WORKER_SIDE_TASK_DIED = 1003
    WORKER_CAPACITY_CHANGED = 1004
    WORKER_LISTEN_FAILED = 1005
    WORKER_STORAGE_UNAVAILABLE = 1006
    WORKER_STORAGE_RECOVERED = 1007
    OPS_SERVER_STARTED = 1008
    PREFETCHED_JOB_RELEASED = 1010
    PREFETCHED_JOB_RELEASE_FAILED = 1011
    SHUTDOWN_DRAIN_STARTED = 1012
    SHUTDOWN_GRACE_EXPIRED = 1013
    FINALIZE_RETRYING = 1014
    WORKER_QUEUE_TIMEOUT_UNSAFE = 1020
    WORKER_BURST_WORK_LEFT = 1021
    WORKER_SERVES_NOTHING = 1022
    WORKER_RECYCLING = 1023
    WORKER_SUPERVISOR_STARTED = 1030
    WORKER_CHILD_STARTED = 1031
    WORKER_CHILD_CRASHED = 1032
    WORKER_CHILD_RECYCLED = 1033
    WORKER_SUPERVISOR_STOPPING = 1034
    WORKER_SUPERVISOR_STOPPED = 1035

    JOB_CANCEL_REQUESTED = 2000
    JOB_CIRCUIT_DEFERRED = 2001
    JOB_LEASE_REJECTED = 2002
    JOB_SUCCEEDED = 2003
    JOB_SHUTDOWN_REQUEUED = 2004
    JOB_TIMED_OUT = 2005
    JOB_HEARTBEAT_FAILED = 2006
    JOB_HEARTBEAT_THRESHOLD = 2007
    JOB_LEASE_LOST = 2008
    JOB_CANCELLED = 2009
    JOB_REJECTED = 2010
    JOB_SYNC_OVERRAN = 2011
    JOB_FATAL = 2020
    JOB_THROTTLED_RETRY = 2021
    JOB_RETRY_SCHEDULED = 2022
    JOB_RETRIES_EXHAUSTED = 2023
    JOB_LIFETIME_EXPIRED = 2024
    JOB_EXPIRED = 2025
    JOB_NO_HANDLER_RELEASED = 2030
    JOB_NOT_STARTED = 2031
    JOB_SYNC_OVERRUN_LIMIT = 2032
    JOB_RESULT_NOT_KEPT = 2040

    TRANSITION_NOT_APPLIED = 2100

    ENQUEUE_DUPLICATE = 3000

    RESCUE_STARTED = 4000
    FETCHED_JOBS_RECOVERED = 4001
    ZOMBIES_DEAD_LETTERED = 4002
    MAINTENANCE_FAILED = 4003
    RETENTION_PURGED = 4004
    METRICS_ROLLED_UP = 4005
    LEADERSHIP_ACQUIRED = 4006
    LEADERSHIP_LOST = 4007
    RESCUE_RESUMING = 4008
    ZOMBIES_RESUMED = 4009
    SCHEDULES_DECLARED = 4010
    SCHEDULE_ENQUEUED = 4011
    SCHEDULE_MISSED = 4012
    SCHEDULE_SKIPPED = 4013
    SCHEDULE_FAILED = 4014

    MIGRATION_STARTED = 5000
    MIGRATION_COMPLETED = 5001
    MIGRATION_FAILED = 5002
    NOTIFY_LISTEN_LOST = 5010
    NOTIFY_LISTEN_RESTORED = 5011
    JOB_ROW_UNDECODABLE = 5012

    ADMIN_REJECTED = 6000
    ADMIN_COMPLETED = 6001

    DECK_STARTED = 7000
    DECK_REQUEST_FAILED = 7001
    DECK_UNGUARDED = 7002
    DECK_PLAIN_PASSWORDS = 7003
    DECK_HOST_REFUSED = 7004
    DECK_LOGIN_THROTTLED = 7005


ERROR_LINE_CHARS = 300


def error_line(text: str | None) -> str:
    """The first line of a stored error (the exception's type and message), at most 300
    characters, for log lines; the full text stays on the job."""
    if not text:
        return "(no error text)"
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= ERROR_LINE_CHARS else line[: ERROR_LINE_CHARS - 3] + "..."


def log_event(event: Event, message: str, *, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``message`` as ``event`` with structured ``fields`` (kept on the record as
    ``chokaq`` for formatters).

    A line about a job names it in the message text itself (`` (job <id>)`` appended when the
    message does not hold the id): used as a library with no logging configured, Python prints
    only the message, and a warning about a job that does not say which job helps nobody."""
    if not logger.isEnabledFor(level):
        return
    job_id = fields.get("job_id")
    if job_id is not None and str(job_id) not in message:
        message = f"{message} (job {job_id})"
    logger.log(
        level,
        message,
        extra={"chokaq": {"event_id": int(event), "event": event.name.lower(), **fields}},
    )


def log_admin(source: str, action: str, actor: str, target: str, rows: int, **extra: Any) -> None:
    """The audit line of one operator action (``ADMIN_COMPLETED``), from The Deck or the CLI
    (``source``): who did what, to what (a queue, an id count, a filter summary) and how many
    rows it touched. Never a payload."""
    log_event(
        Event.ADMIN_COMPLETED,
        f"{source}: {action}",
        actor=actor,
        action=action,
        target=target,
        rows=rows,
        source=source,
        **extra,
    )


def log_admin_refused(source: str, action: str, actor: str, reason: str, **extra: Any) -> None:
    """The audit line of a refused operator action (``ADMIN_REJECTED``, at WARNING)."""
    log_event(
        Event.ADMIN_REJECTED,
        f"{source}: {action} refused",
        level=logging.WARNING,
        actor=actor,
        action=action,
        reason=reason,
        source=source,
        **extra,
    )


def _iso_utc(created: float) -> str:
    """A record's time as ISO 8601 UTC with milliseconds: ``2026-12-01T12:03:50.123Z``."""
    stamp = datetime.fromtimestamp(created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def _json_value(value: Any) -> Any:
    """Fields JSON cannot hold: datetimes as ISO 8601 (UTC ``Z`` when UTC), the rest as text."""
    if isinstance(value, datetime):
        if value.tzinfo is not None and value.utcoffset() == timedelta(0):
            return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return str(value)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601 UTC, milliseconds), level, logger, message,
    event id and fields; for any logger's records (the pool's warnings too), not only ours."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _iso_utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        data.update(getattr(record, "chokaq", {}))
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=_json_value)


class PlainFormatter(logging.Formatter):
    """``time level [event_id event] message key=value ...`` for terminals."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "chokaq", {}))
        head = ""
        if "event_id" in fields:
            head = f"[{fields.pop('event_id')} {fields.pop('event')}] "
        tail = " ".join(f"{k}={v}" for k, v in fields.items())
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
        line = f"{stamp} {record.levelname:<7} {head}{record.getMessage()}"
        if tail:
            line += f" {tail}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


# What ``--log-level`` / ``CHOKAQ_LOG_LEVEL`` accept, by the names the logging module knows.
LOG_LEVELS = ("debug", "info", "warning", "error")

# The level ``configure_logging`` uses when not given one. The CLI group sets it from
# ``--log-level`` before any command runs, so a command that configures logging itself
# (``chokaq worker``, ``deck``, ``demo``) honours the group's option without an option of its own.
_default_level = logging.INFO


def set_default_level(name: str | None) -> None:
    """Make ``name`` (one of ``LOG_LEVELS``, any case) the level of a later
    ``configure_logging()`` called without one, and of the CLI's audit lines; None restores
    INFO. Raises ``ValueError`` for another name."""
    global _default_level
    if name is None:
        _default_level = logging.INFO
        return
    if name.lower() not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {name!r}")
    _default_level = logging.getLevelNamesMapping()[name.upper()]


def default_level() -> int:
    """The level set by ``set_default_level`` (INFO unless changed)."""
    return _default_level


def configure_logging(*, json_lines: bool = False, level: int | None = None) -> None:
    """Send chokaq's logs to stderr, plain or as JSON lines (the CLI calls this), at ``level``
    (default: ``default_level()``, INFO unless ``--log-level`` or ``set_default_level`` said).

    The libraries' records (psycopg's pool warnings, asyncio's) go to the same handler at
    WARNING and up, so a ``--json-logs`` stream holds only JSON lines; unless the host
    configured the root logger itself, whose handlers are then left alone."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if json_lines else PlainFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(default_level() if level is None else level)
    logger.propagate = False
    root = logging.getLogger()
    if not root.handlers or all(getattr(h, _OURS, False) for h in root.handlers):
        setattr(handler, _OURS, True)
        root.handlers[:] = [handler]
        root.setLevel(logging.WARNING)


_OURS = "_chokaq_handler"  # marks the root handler configure_logging installed

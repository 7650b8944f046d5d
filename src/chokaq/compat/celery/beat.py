"""Celery beat's ``beat_schedule`` as chokaq's durable periodic schedules.

Each entry (``task``, ``schedule``: seconds, a ``timedelta`` or a ``crontab``, ``args``,
``kwargs``, ``options``: ``queue``, ``priority``, ``expires``) becomes one schedule declaration
of the app, upserted when a worker starts and fired once per slot across every host (no beat
process). Owns ``crontab`` and that translation; it does not fire anything itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ...errors import ValidationError
from ...limits import check_name, check_priority
from ...models import ScheduleDeclaration
from ...payloads import encode_payload
from ...periodic import Timing
from ...storage.schedules import check_schedule_name
from .options import expiry_of, refuse_unknown, seconds_of

__all__ = ["ENTRY_KEYS", "Entry", "crontab", "entry_of"]

ENTRY_KEYS = frozenset({"task", "schedule", "args", "kwargs", "options", "relative"})
ENTRY_OPTIONS = frozenset({"queue", "priority", "expires"})
CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


class crontab:  # Celery's name
    """A cron schedule by Celery's fields (``crontab(minute=0, hour="*/3")``,
    ``day_of_week="mon-fri"``): each a string, a number or an iterable of them, ``"*"`` by
    default, in the app's time zone."""

    def __init__(
        self,
        minute: Any = "*",
        hour: Any = "*",
        day_of_week: Any = "*",
        day_of_month: Any = "*",
        month_of_year: Any = "*",
        **unsupported: Any,
    ) -> None:
        refuse_unknown(unsupported, frozenset(CRONTAB_FIELDS), "crontab")
        given = {
            "minute": minute,
            "hour": hour,
            "day_of_month": day_of_month,
            "month_of_year": month_of_year,
            "day_of_week": day_of_week,
        }
        self.expression = " ".join(_cron_field(name, given[name]) for name in CRONTAB_FIELDS)
        Timing.checked(self.expression, None, prefix="crontab.")

    def __repr__(self) -> str:
        return f"<crontab: {self.expression}>"


def _cron_field(name: str, value: Any) -> str:
    if isinstance(value, str):
        text = value.replace(" ", "")
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, Iterable):
        text = ",".join(_cron_field(name, item) for item in sorted(value, key=str))
    else:
        raise ValidationError(
            f"crontab.{name}", f"must be a string, a number or a list, not {value!r}"
        )
    if not text:
        raise ValidationError(f"crontab.{name}", "must not be empty")
    return text


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``beat_schedule`` entry, checked: ``queue`` and ``priority`` None unless its
    options set them (the task's then apply)."""

    name: str
    task: str
    timing: Timing
    payload: str
    queue: str | None
    priority: int | None
    expires: float | None

    def declaration(self, queue: str, priority: int, expires: float | None) -> ScheduleDeclaration:
        """The schedule this entry declares, with the task's ``queue``, ``priority`` and
        ``expires`` where its options name none. Missed slots run once (``latest``), as beat
        does on restart."""
        return ScheduleDeclaration(
            name=self.name,
            type=self.task,
            queue=self.queue or queue,
            priority=self.priority if self.priority is not None else priority,
            cron=self.timing.cron,
            every_seconds=self.timing.every_seconds,
            timezone=self.timing.timezone,
            kwargs=self.payload,
            misfire="latest",
            overlap=True,
            expires_after_seconds=self.expires if self.expires is not None else expires,
        )


def entry_of(name: object, entry: object, timezone: str) -> Entry:
    """A ``beat_schedule`` item, checked: ``ValidationError`` naming
    ``beat_schedule[name].<key>`` for an unsupported key or option, or a bad value."""
    key = check_schedule_name("beat_schedule", name)
    where = f"beat_schedule[{key!r}]"
    if not isinstance(entry, Mapping):
        raise ValidationError(where, f"must be a dict, not {type(entry).__name__}")
    try:
        refuse_unknown(entry, ENTRY_KEYS, "beat entry")
        if entry.get("relative"):
            raise ValidationError("relative", "is not supported: slots are fixed multiples")
        options = entry.get("options") or {}
        if not isinstance(options, Mapping):
            raise ValidationError("options", "must be a dict")
        refuse_unknown(options, ENTRY_OPTIONS, "beat entry")
        args, kwargs = entry.get("args") or (), entry.get("kwargs") or {}
        if not isinstance(args, list | tuple) or not isinstance(kwargs, Mapping):
            raise ValidationError("args", "must be a list or tuple, and kwargs a dict")
        expires = options.get("expires")
        return Entry(
            name=key,
            task=check_name("task", entry.get("task")),
            timing=_timing(entry.get("schedule"), timezone),
            payload=encode_payload({"args": list(args), "kwargs": dict(kwargs)}, "args"),
            queue=None if options.get("queue") is None else check_name("queue", options["queue"]),
            priority=None
            if options.get("priority") is None
            else check_priority("priority", options["priority"]),
            expires=None if expires is None else expiry_of("expires", expires),
        )
    except ValidationError as exc:
        raise exc.at(where) from None


def _timing(schedule: object, timezone: str) -> Timing:
    if isinstance(schedule, crontab):
        return Timing.checked(schedule.expression, None, timezone, prefix="schedule.")
    if isinstance(schedule, timedelta | int | float) and not isinstance(schedule, bool):
        return Timing.checked(None, seconds_of("schedule", schedule), timezone)
    raise ValidationError(
        "schedule", f"must be a number of seconds, a timedelta or a crontab, not {schedule!r}"
    )

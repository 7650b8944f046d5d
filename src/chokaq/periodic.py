"""Periodic schedules' timing: which slots a schedule has, which are due, and what a misfire
rule makes of the ones that were missed. Pure functions on aware datetimes; no storage, no clock.

A schedule's timing is a 5-field cron expression in an IANA time zone, or an interval in
seconds. Cron expressions are parsed and stepped by ``cronsim`` (the parser Healthchecks.io
runs in production; chosen over croniter for its DST rule, which fires a fixed-time job once on
the fall-back day where croniter fires it twice, for ``L``, ``#`` and ``5L``, and for being about
ten times faster to build). Its rule, which is ours:

* Spring forward: a local time that does not exist that day (02:30 in Berlin on the last Sunday
  of March) fires once, at the first moment after the gap (03:00 local).
* Fall back: a job at a fixed hour (``30 2 * * *``) fires once, at the first of the two 02:30s;
  a job whose hour field is a wildcard or a step (``*/30 * * * *``) fires in both hours, as the
  wall clock shows them.

An interval's slots are the multiples of the interval since 1970-01-01 UTC: computed, never
slept, so they drift by nothing and every host agrees on them (``every_seconds=86400`` is every
midnight UTC). The time zone does not apply to intervals.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .errors import ValidationError
from .limits import MAX_DELAY_SECONDS, check_seconds
from .models import Schedule

__all__ = [
    "MAX_EVERY_SECONDS",
    "MIN_EVERY_SECONDS",
    "MISFIRE_ALL_CAP",
    "MISFIRE_GRACE_SECONDS",
    "Misfire",
    "Plan",
    "Timing",
    "check_timezone",
    "plan",
]

MIN_EVERY_SECONDS = 1.0
MAX_EVERY_SECONDS = MAX_DELAY_SECONDS
MAX_CRON_LENGTH = 200
# ``misfire="all"`` runs at most this many missed slots (the newest); older ones are recorded as
# missed.
MISFIRE_ALL_CAP = 100
# A slot enqueued within this many seconds of its due time is on time, not missed (what
# ``misfire="skip"`` still runs).
MISFIRE_GRACE_SECONDS = 60.0
# How many slots one plan steps through before it jumps ahead to the last day before ``now``
# (an outage of weeks on a per-minute schedule): the count of missed slots is then a floor.
MAX_SCAN = 10_000
_JUMP = timedelta(days=2)


class Misfire(enum.StrEnum):
    """What happens to slots that came due while nothing was enqueueing them."""

    SKIP = "skip"  # none of them runs (a slot still within the grace period does)
    LATEST = "latest"  # one run, for the most recent
    ALL = "all"  # every one, up to MISFIRE_ALL_CAP (the newest)


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def check_timezone(field: str, value: object) -> str:
    """An IANA time zone name (``Europe/Berlin``, ``UTC``), else ``ValidationError``."""
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ValidationError(field, "must be an IANA time zone name such as 'Europe/Berlin'")
    try:
        _zone(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            field, f"{value!r} is not an IANA time zone name (such as 'Europe/Berlin')"
        ) from None
    return value


def check_cron(field: str, value: object) -> str:
    """A 5-field cron expression cronsim accepts, else ``ValidationError`` with its reason."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a cron expression of 5 fields ('*/5 * * * *')")
    if len(value) > MAX_CRON_LENGTH:
        raise ValidationError(field, f"must be at most {MAX_CRON_LENGTH} characters")
    expr = " ".join(value.split())
    if len(expr.split(" ")) != 5:
        raise ValidationError(
            field, f"{value!r} must have 5 fields (minute hour day month weekday)"
        )
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise ValidationError(field, f"{value!r} is not a valid cron expression: {exc}") from None
    return expr


def check_every(field: str, value: object) -> float:
    """An interval: a finite number of seconds from 1 to ``MAX_EVERY_SECONDS`` (366 days)."""
    seconds = check_seconds(
        field, value, minimum=MIN_EVERY_SECONDS, maximum=MAX_EVERY_SECONDS, allow_none=False
    )
    assert seconds is not None  # allow_none=False
    return seconds


def check_misfire(field: str, value: object) -> Misfire:
    try:
        return Misfire(str(value))
    except ValueError:
        raise ValidationError(field, "must be 'skip', 'latest' or 'all'") from None


@dataclass(frozen=True, slots=True)
class Timing:
    """When a schedule's slots fall: ``cron`` in ``timezone``, or every ``every_seconds``."""

    cron: str | None
    every_seconds: float | None
    timezone: str = "UTC"

    @classmethod
    def checked(
        cls, cron: object, every_seconds: object, timezone: object = "UTC", *, prefix: str = ""
    ) -> Timing:
        """A timing from untrusted values: exactly one of ``cron`` and ``every_seconds``."""
        if (cron is None) == (every_seconds is None):
            raise ValidationError(f"{prefix}cron", "give exactly one of cron= and every_seconds=")
        zone = check_timezone(f"{prefix}timezone", timezone)
        if cron is not None:
            return cls(check_cron(f"{prefix}cron", cron), None, zone)
        return cls(None, check_every(f"{prefix}every_seconds", every_seconds), zone)

    @classmethod
    def of(cls, schedule: Schedule) -> Timing:
        """The timing in force of a stored schedule."""
        return cls(schedule.cron, schedule.every_seconds, schedule.timezone)

    @classmethod
    def declared_of(cls, schedule: Schedule) -> Timing:
        """The timing a stored schedule's code declared (in force unless an edit is)."""
        return cls(
            schedule.declared_cron, schedule.declared_every_seconds, schedule.declared_timezone
        )

    def describe(self) -> str:
        if self.cron is not None:
            return f"{self.cron} ({self.timezone})"
        return f"every {self.every_seconds:g} s"

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment`` (aware), in UTC."""
        if self.every_seconds is not None:
            step = _micros(self.every_seconds)
            k = _micros_of(moment) // step + 1
            return _at(k * step)
        local = moment.astimezone(_zone(self.timezone))
        return next(CronSim(self.cron or "", local)).astimezone(UTC)

    def slots(self, after: datetime, until: datetime) -> tuple[list[datetime], int]:
        """The slots in ``(after, until]``, oldest first, as UTC datetimes, but at most the
        newest ``MAX_SCAN``; and how many there are in all (a floor when the scan jumped)."""
        if self.every_seconds is not None:
            step = _micros(self.every_seconds)
            first = _micros_of(after) // step + 1
            last = _micros_of(until) // step
            total = max(0, last - first + 1)
            lowest = max(first, last - MAX_SCAN + 1)
            return [_at(k * step) for k in range(lowest, last + 1)], total
        zone = _zone(self.timezone)
        found: list[datetime] = []
        counted = 0
        start, jumped = after, False
        while True:
            for local in CronSim(self.cron or "", start.astimezone(zone)):
                slot = local.astimezone(UTC)
                if slot > until:
                    return found, counted
                found.append(slot)
                counted += 1
                if len(found) >= MAX_SCAN and not jumped and until - slot > _JUMP:
                    # Weeks behind on a frequent schedule: only the last slots matter. Start
                    # again two days before ``until``; ``counted`` is now a floor.
                    found, start, jumped = [], until - _JUMP, True
                    break
                if len(found) > MAX_SCAN:
                    del found[0]
            else:
                return found, counted  # the expression has no further slot


def _micros(seconds: float) -> int:
    return max(1, round(seconds * 1_000_000))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros_of(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _at(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with a schedule's due slots now: ``run`` (oldest first) are enqueued;
    ``missed`` of them are recorded as missed, from ``missed_first`` to ``missed_last``;
    ``last_slot`` becomes the newest due slot and ``next_slot`` the first one after now."""

    run: tuple[datetime, ...]
    missed: int
    missed_first: datetime | None
    missed_last: datetime | None
    last_slot: datetime
    next_slot: datetime


def plan(
    timing: Timing,
    last_slot: datetime,
    now: datetime,
    misfire: Misfire,
    *,
    grace_seconds: float = MISFIRE_GRACE_SECONDS,
) -> Plan | None:
    """The plan for the slots in ``(last_slot, now]``, or None when none is due.

    Every due slot but the newest is missed (a later slot came due before it was enqueued); the
    newest is missed too when more than ``grace_seconds`` late. ``skip`` runs the newest only
    when it is on time, ``latest`` runs the newest, ``all`` runs every due slot up to
    ``MISFIRE_ALL_CAP`` (the newest)."""
    due, total = timing.slots(last_slot, now)
    if not due:
        return None
    newest = due[-1]
    on_time = (now - newest).total_seconds() <= grace_seconds
    if misfire is Misfire.ALL:
        run = due[-MISFIRE_ALL_CAP:]
    elif misfire is Misfire.LATEST or on_time:
        run = [newest]
    else:
        run = []
    missed = total - len(run)
    missed_slots = [slot for slot in due if slot not in run]
    return Plan(
        run=tuple(run),
        missed=missed,
        missed_first=missed_slots[0] if missed_slots else None,
        missed_last=missed_slots[-1] if missed_slots else None,
        last_slot=newest,
        next_slot=timing.next_after(max(now, newest)),
    )

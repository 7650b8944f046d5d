"""Rates ("10/s", "5/m", "100/h") and the cell-rate arithmetic that enforces them.

A rate of N per period lets one job start every ``period / N`` seconds (the interval), with a
burst of up to a tenth of a second's worth at once (at least one): "20/s" starts at most 2 jobs
at the same instant and 200 + 2 in any 10 seconds; "5/m" starts one every 12 seconds. The state
of one limited key is a single time, ``tat`` (the theoretical arrival time of the next job, as
in the generic cell rate algorithm): a key never used, or idle for long, has its whole burst.
Owns parsing and the arithmetic only; storage keeps ``tat`` and serializes who spends it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .errors import ValidationError

__all__ = ["MAX_RATE_PER_SECOND", "RATE_WINDOW_SECONDS", "Rate", "check_rate", "take"]

_PERIODS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_FORM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*/\s*([smh])\s*")
# The fastest rate worth enforcing in the database (above it, a limit costs more than it
# saves) and the slowest (one job a week).
MAX_RATE_PER_SECOND = 100_000.0
MIN_RATE_PER_SECOND = 1 / (7 * 24 * 3600.0)
# A limit's current rate is its starts over this many seconds, divided by them.
RATE_WINDOW_SECONDS = 10.0
# A burst is this many seconds' worth of the rate (at least one job).
BURST_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` jobs per ``unit`` ("s", "m" or "h")."""

    count: float
    unit: str

    @property
    def per_second(self) -> float:
        return self.count / _PERIODS[self.unit]

    @property
    def interval_seconds(self) -> float:
        return _PERIODS[self.unit] / self.count

    @property
    def burst(self) -> int:
        return max(1, math.floor(self.per_second * BURST_SECONDS))

    def __str__(self) -> str:
        count = int(self.count) if self.count == int(self.count) else self.count
        return f"{count}/{self.unit}"


def check_rate(field: str, value: object) -> Rate:
    """A rate from its text form, or ``ValidationError`` naming ``field`` and the form."""
    if isinstance(value, Rate):
        value = str(value)
    if not isinstance(value, str):
        raise ValidationError(field, "must be a rate such as '10/s', '5/m' or '100/h'")
    match = _FORM.fullmatch(value)
    if match is None:
        raise ValidationError(
            field, f"{value[:40]!r} is not a rate: write N/s, N/m or N/h (N a positive number)"
        )
    rate = Rate(float(match.group(1)), match.group(2))
    if not MIN_RATE_PER_SECOND <= rate.per_second <= MAX_RATE_PER_SECOND:
        raise ValidationError(
            field, f"{value!r} is out of range: between 1/week and {MAX_RATE_PER_SECOND:,.0f}/s"
        )
    return rate


def take(
    tat: float | None, now: float, interval: float, burst: int, wanted: int
) -> tuple[int, float]:
    """How many of ``wanted`` starts the key allows at ``now`` (epoch seconds), and its new
    ``tat``. ``tat`` None: never used."""
    base = now if tat is None else max(tat, now)
    tolerance = (burst - 1) * interval
    # Epoch seconds carry about 0.2 microseconds of rounding: a hair of slack, so that a start
    # exactly on its due instant is not refused by it. (base - now) is computed first so that
    # the large epoch values cancel exactly.
    allowed = math.floor((tolerance - (base - now)) / interval + 1e-6) + 1
    granted = max(0, min(wanted, allowed))
    return granted, (base + granted * interval) if granted else (base if tat is None else tat)


def next_start(tat: float, interval: float, burst: int) -> float:
    """When a key whose ``tat`` is in the future allows its next start (epoch seconds)."""
    return tat - (burst - 1) * interval

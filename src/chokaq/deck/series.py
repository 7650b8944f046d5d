"""The Deck's chart series: ``GET /api/series`` turns a window (5 min, hour, 24 h, two weeks)
and the number of bars the page can draw into one storage read of at most that many buckets.

The bucket width is the smallest "round" width (one that divides a day, so buckets line up with
minutes and hours and a minute roll-up never straddles two) that fits the window into the points
asked for, capped at ``MAX_POINTS``. The window starts on a bucket boundary and ends now: the
buckets come from storage aggregated (``stats_series`` reads live seconds and minute roll-ups
alike) up to ``TAIL_SECONDS`` ago, and the newest seconds come one by one as ``tail``, in the
shape of the live snapshot's ``series_tail``, so that the page can keep the chart moving from the
snapshots without re-reading the window. Points are columns of numbers, not objects, to keep a
two-week series small. Whole bars are kept per (queue, width) between requests (``Bars``): a
later read of the same window asks storage only for the bars since, not for two weeks again.
It reaches data through the backend and must not hold SQL.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request

from ..app import App
from ..errors import ValidationError
from ..limits import check_name
from ..models import SeriesPoint
from ..storage import Backend
from ..views import dump, parse_int
from .api import ApiRoute
from .auth import Principal
from .state import DeckState

__all__ = ["MAX_POINTS", "ROUTES", "WINDOWS", "bucket_width"]

WINDOWS = {"5m": 300, "hour": 3600, "24h": 86_400, "2w": 14 * 86_400}
MAX_POINTS = 1000  # bars drawn at most, whatever the page asks: a two-week series stays small
MIN_POINTS = 60
DEFAULT_POINTS = 600
# The live snapshot re-reads this many seconds one by one (deck.state.snapshot's series_tail):
# the aggregated part stops where that begins, so the two never count a second twice.
TAIL_SECONDS = 15
# Widths that divide a day (and, from a minute up, are whole minutes).
WIDTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60, 120, 180, 240, 300)
WIDTHS += (600, 900, 1200, 1800, 3600, 7200, 10_800, 14_400, 21_600, 43_200, 86_400)


def bucket_width(span_seconds: int, points: int) -> int:
    """The smallest width in ``WIDTHS`` that draws ``span_seconds`` in at most ``points``
    buckets, counting the partial bucket at each end."""
    for width in WIDTHS:
        if math.ceil(span_seconds / width) + 2 <= points:
            return width
    return WIDTHS[-1]


@dataclass
class Bars:
    """The bars of one (queue, width) read so far, from ``since`` on: every stored bucket that
    started up to ``until`` (Unix seconds) is in them. Stored buckets are only ever added to
    at the newest end (requeue and purge never erase an outcome), so the next read asks
    storage again only for the bars from ``REREAD_SECONDS`` before ``until`` on. Upkeep's
    roll-up moves seconds into their minute, in the same bar at widths of a minute or more;
    at shorter widths (the hour window) a fresh read would count a rolled-up minute in the
    bar of its start, where kept bars keep its seconds where they were: only at the window's
    far left edge, over an hour old."""

    since: float = math.inf
    until: float = -math.inf
    points: dict[int, SeriesPoint] = field(default_factory=dict)


MAX_KEPT = 64  # (queue, width) pairs whose bars a Deck keeps, least recently read dropped first
# Kept bars this close to their read's end are read again: a transaction that committed late
# (its outcome stamped with a second already read) is counted all the same.
REREAD_SECONDS = 60
_kept: weakref.WeakKeyDictionary[App, OrderedDict[tuple[str | None, int], Bars]] = (
    weakref.WeakKeyDictionary()
)


async def read_bars(
    app: App, since: datetime, until: datetime, width: int, queue: str | None
) -> list[SeriesPoint]:
    """The bars from ``since`` (on a bar boundary) to ``until``: the kept ones, and storage
    read again from the last (partial) bar on."""
    kept = _kept.setdefault(app, OrderedDict())
    bars = kept.pop((queue, width), None) or Bars()
    kept[(queue, width)] = bars
    while len(kept) > MAX_KEPT:
        kept.popitem(last=False)
    first, end = since.timestamp(), until.timestamp()
    start = first
    if bars.since <= first <= bars.until <= end:
        # Kept from an earlier read: read again from its last bars on.
        start = max(first, math.floor((bars.until - REREAD_SECONDS) / width) * width)
    else:
        bars.since, bars.points = first, {}
    fresh = await app.backend.stats_series(
        since=datetime.fromtimestamp(start, UTC), until=until, width_seconds=width, queue=queue
    )
    bars.points = {b: p for b, p in bars.points.items() if first <= b < start}
    bars.points.update((int(p.bucket_start.timestamp()), p) for p in fresh)
    bars.until = end
    return [bars.points[b] for b in sorted(bars.points)]


def columns(points: list[SeriesPoint]) -> dict[str, list[Any]]:
    """Points as columns: bucket start (Unix seconds), succeeded, failed, how many recorded a
    duration, their average and the longest (seconds, None where none did)."""
    return {
        "t": [int(p.bucket_start.timestamp()) for p in points],
        "succeeded": [p.succeeded for p in points],
        "failed": [p.failed for p in points],
        "duration_count": [p.duration_count for p in points],
        "duration_avg_seconds": [
            _round(p.total_duration_seconds / p.duration_count) if p.duration_count else None
            for p in points
        ],
        "duration_max_seconds": [_round(p.max_duration_seconds) for p in points],
    }


def _round(seconds: float | None) -> float | None:
    # Six significant digits: the chart draws no finer, and it keeps the payload small.
    return None if seconds is None else float(f"{seconds:.6g}")


async def get_series(request: Request, state: DeckState, who: Principal) -> Any:
    params = request.query_params
    window = params.get("window", "hour")
    if window not in WINDOWS:
        raise ValidationError("window", "must be one of 5m, hour, 24h, 2w")
    points = parse_int("points", params.get("points"), default=DEFAULT_POINTS, low=1, high=10**9)
    points = min(max(points, MIN_POINTS), MAX_POINTS)
    queue = params.get("queue") or None
    if queue is not None:
        check_name("queue", queue)
    span = WINDOWS[window]
    width = bucket_width(span, points)
    now = datetime.now(UTC)
    start = math.floor((now.timestamp() - span) / width) * width
    since = datetime.fromtimestamp(start, UTC)
    tail_from = datetime.fromtimestamp(math.floor(now.timestamp()) - TAIL_SECONDS, UTC)
    body = await read_bars(state.app, since, tail_from - timedelta(seconds=1), width, queue)
    backend: Backend = state.app.backend
    tail = await backend.stats_series(since=tail_from, width_seconds=1, queue=queue)
    return {
        "window": window,
        "queue": queue,
        "width_seconds": width,
        "points_cap": MAX_POINTS,
        "since": dump(since),
        "until": dump(now),
        "tail_from": dump(tail_from),
        "points": columns(body),
        "tail": dump(tail),
    }


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "GET",
        "/api/series",
        get_series,
        "Succeeded, failed and durations per bucket over a window ending now (window=5m, hour, "
        "24h or 2w), in at most points buckets (60..1000, default 600; more is capped): "
        "aggregated columns up to tail_from, then the newest seconds one by one as tail",
        query=("window", "points", "queue"),
    ),
)

"""The Deck's chart series (``GET /api/series``) through httpx against the ASGI app, on both
backends: every window ends now and counts every outcome in it (minute roll-ups and the newest
seconds included), in at most the points asked for (capped), and bad input is a 422 naming the
field."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import PG_URL, drop_schema, require_postgres

from chokaq.app import App
from chokaq.deck import series
from chokaq.deck.series import MAX_POINTS, WINDOWS, bucket_width
from chokaq.models import FailMove, FailureReason, NewJob, SucceedMove

from .conftest import Client

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["sqlite", "postgres"])
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[App]:
    if request.param == "sqlite":
        url, schema = f"sqlite:///{tmp_path / 'deck.db'}", None
    else:
        require_postgres()
        url, schema = PG_URL, f"t_{uuid.uuid4().hex[:16]}"
    chokaq_app = App(url, schema=schema, auto_migrate=True) if schema else App(url)
    await chokaq_app.open()
    try:
        yield chokaq_app
    finally:
        await chokaq_app.close()
        if schema:
            drop_schema(schema)


async def finish(
    app: App, at: datetime, succeeded: int, failed: int, *, queue: str = "default", d: float = 0.5
) -> None:
    """Move ``succeeded`` + ``failed`` jobs to their pillars at ``at`` the way a worker does
    (enqueue, claim, one finalize), so that metric_buckets get them at that second."""
    n = succeeded + failed
    jobs = [NewJob(type="t", queue=queue) for _ in range(n)]
    await app.backend.jobs_enqueue(jobs, now=at - timedelta(seconds=2))
    claimed = await app.backend.jobs_fetch(
        worker_id="w", limit=n, queues=[queue], start=True, now=at - timedelta(seconds=1)
    )
    moves: list[Any] = [SucceedMove(c.lease, d) for c in claimed[:succeeded]]
    moves += [
        FailMove(c.lease, FailureReason.FATAL_ERROR, "boom", duration_seconds=d)
        for c in claimed[succeeded:]
    ]
    assert all(await app.backend.jobs_finalize(moves=moves, now=at))


def totals(body: dict[str, Any]) -> tuple[int, int]:
    points, tail = body["points"], body["tail"]
    return (
        sum(points["succeeded"]) + sum(p["succeeded"] for p in tail),
        sum(points["failed"]) + sum(p["failed"] for p in tail),
    )


def test_bucket_width_fits_the_window_in_the_points() -> None:
    for span in WINDOWS.values():
        for points in (60, 390, 600, 1000):
            width = bucket_width(span, points)
            assert -(-span // width) + 2 <= points  # the partial bucket at each end included
            assert 86_400 % width == 0
    assert bucket_width(3600, 1000) == 4 and bucket_width(14 * 86_400, 1000) == 1800


async def test_every_window_counts_minutes_rolled_up_and_the_newest_seconds(
    app: App, client: Client
) -> None:
    now = datetime.now(UTC)
    await finish(app, now - timedelta(days=3), 7, 3)  # rolled up into a minute below
    await finish(app, now - timedelta(hours=2), 4, 0, queue="mail")  # rolled up too
    await finish(app, now - timedelta(minutes=30), 5, 1, d=2.5)
    await finish(app, now - timedelta(seconds=2), 2, 2, queue="mail")  # in the tail
    assert await app.backend.metrics_rollup(older_than=now - timedelta(hours=1)) == 3
    c = await client("bob")
    expected = {"5m": (2, 2), "hour": (7, 3), "24h": (11, 3), "2w": (18, 6)}
    for window, counts in expected.items():
        body = (await c.get(f"/api/series?window={window}&points=1000")).json()
        assert totals(body) == counts, window
        width = body["width_seconds"]
        since = datetime.fromisoformat(body["since"])
        until = datetime.fromisoformat(body["until"])
        # The window starts on a bucket boundary at or before now - span and ends now.
        assert since.timestamp() % width == 0
        assert (
            timedelta(0)
            <= until - since - timedelta(seconds=WINDOWS[window])
            < timedelta(seconds=width)
        )
        assert all(t % width == 0 for t in body["points"]["t"])
    body = (await c.get("/api/series?window=2w&queue=mail")).json()
    assert (body["queue"], totals(body)) == ("mail", (6, 2))
    # Durations: the average and the longest of the bucket holding the 30-minute-old jobs.
    hour = (await c.get("/api/series?window=hour")).json()["points"]
    assert hour["duration_count"] == [6]
    assert (hour["duration_avg_seconds"], hour["duration_max_seconds"]) == ([2.5], [2.5])


async def test_points_are_capped_and_never_exceeded(app: App, client: Client) -> None:
    now = datetime.now(UTC)
    # One outcome every 4 minutes for two weeks would be slow to write: every 3 hours will do,
    # plus a dense last hour (every 3 s), so the hour window fills its buckets.
    for hours in range(1, 14 * 24, 3):
        await finish(app, now - timedelta(hours=hours), 1, 1)
    for seconds in range(20, 3600, 3):
        await finish(app, now - timedelta(seconds=seconds), 1, 0)
    c = await client("bob")
    for window in WINDOWS:
        for asked in (60, 400, 5000):
            body = (await c.get(f"/api/series?window={window}&points={asked}")).json()
            drawn = len(body["points"]["t"]) + 1  # the tail's seconds fall in one more bucket
            assert drawn <= min(asked, MAX_POINTS), (window, asked)
            assert body["points_cap"] == MAX_POINTS
    hour = (await c.get("/api/series?window=hour&points=5000")).json()
    # Most 4-second bars hold one of the outcomes 3 s apart (the window has slid by however
    # long the writes above took on a busy machine).
    assert hour["width_seconds"] == 4 and len(hour["points"]["t"]) >= 600


async def test_kept_bars_and_a_fresh_read_agree(app: App, client: Client) -> None:
    now = datetime.now(UTC)
    await finish(app, now - timedelta(days=2), 5, 1)
    await finish(app, now - timedelta(minutes=30), 3, 1)
    c = await client("bob")
    windows = ("5m", "hour", "24h", "2w")
    first = {w: (await c.get(f"/api/series?window={w}&points=1000")).json() for w in windows}
    assert totals(first["2w"]) == (8, 2)
    # Outcomes stamped around the first reads' end (one committed late) and after it.
    await finish(
        app, datetime.fromisoformat(first["2w"]["tail_from"]) - timedelta(seconds=30), 2, 0
    )
    await finish(app, now - timedelta(seconds=10), 1, 1)
    await finish(app, datetime.now(UTC), 0, 2)
    kept = {w: (await c.get(f"/api/series?window={w}&points=1000")).json() for w in windows}
    series._kept.clear()
    fresh = {w: (await c.get(f"/api/series?window={w}&points=1000")).json() for w in windows}
    assert totals(kept["2w"]) == totals(fresh["2w"]) == (11, 5)
    for w in windows:
        assert totals(kept[w]) == totals(fresh[w]), w
        # Bars drawn from the kept and the fresh read alike (the newest seconds may differ
        # in which part they are: the reads are a moment apart).
        assert (
            kept[w]["points"]["t"][:-2]
            == fresh[w]["points"]["t"][: len(kept[w]["points"]["t"]) - 2]
        )


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("window=forever", "window"),
        ("window=", "window"),
        ("points=abc", "points"),
        ("points=0", "points"),
        ("points=-5", "points"),
        ("points=1.5", "points"),
        ("queue=" + "q" * 300, "queue"),
        ("queue=%20padded", "queue"),
    ],
)
async def test_bad_input_is_a_422_naming_the_field(
    app: App, client: Client, query: str, field: str
) -> None:
    c = await client("bob")
    r = await c.get(f"/api/series?{query}")
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(field), r.json()

"""The Deck's charts in Chromium against a real server, on a SQLite file seeded with a known mix
of successes and failures (written the way a worker writes them, then rolled up into minutes by
upkeep where they are over an hour old): in every window the red share of the drawn area is the
failure share of the stored counts, hover reads out one bucket's numbers, the duration chart
draws, and a queue's chart shows only that queue."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq.app import App
from chokaq.models import FailMove, FailureReason, NewJob, SucceedMove

from .conftest import Served, run, wait_for

pytestmark = pytest.mark.browser

# Signed numbers: a bar that reached the top once printed "-0.000", and a pattern without the
# sign silently left that bar out of the sums (a failure on some wall-clock alignments).
NUM = r"(-?[\d.]+)"
RECT = re.compile(rf"M{NUM} {NUM}V{NUM}H{NUM}V{NUM}Z")
SPANS = {"5m": 300, "hour": 3600, "24h": 86_400, "2w": 14 * 86_400}


@dataclass(frozen=True)
class Group:
    """``succeeded`` and ``failed`` jobs of ``queue`` that finished at ``at``."""

    at: datetime
    succeeded: int
    failed: int
    queue: str = "default"
    duration: float = 0.2


@pytest.fixture
def login(login: Callable[..., Any]) -> Callable[[str], Any]:
    """``login("bob")`` -> a signed-in page 1,400 px wide at twice the pixel density, so that
    a two-week chart's bars are whole pixels wide."""
    return lambda user: login(user, device_scale_factor=2)


def known_mix(now: datetime) -> list[Group]:
    groups = []
    # Days ago (two-week window only): 10 % failures, rolled up into minutes below; as many
    # jobs per bar as the last hour has, so that these bars are pixels tall, not fractions.
    for i in range(52):
        groups.append(Group(now - timedelta(hours=27 + 6 * i), 90 + 10 * (i % 5), 10 + i % 3))
    # The last hour but not the last 5 minutes: about 4 % failures, a third on queue "mail".
    for i in range(400):
        at = now - timedelta(seconds=3300 - 7 * i)
        queue = "mail" if i % 3 == 0 else "default"
        groups.append(Group(at, 1 + i % 5, 1 if i % 11 == 0 else 0, queue))
    # The last 3 minutes: two failures for each success.
    for i in range(60):
        groups.append(
            Group(now - timedelta(seconds=200 - 3 * i), 1, 2, "mail" if i % 2 else "default")
        )
    return groups


SLOW = timedelta(seconds=3300 - 7 * 200)  # the group (200 of the hour) with a 4.5 s job


def seed(url: str, groups: list[Group], now: datetime, *, rollup: bool = True) -> None:
    async def go(app: App) -> None:
        b = app.backend
        for g in groups:
            n = g.succeeded + g.failed
            await b.jobs_enqueue(
                [NewJob(type="t", queue=g.queue) for _ in range(n)], now=g.at - timedelta(seconds=2)
            )
            claimed = await b.jobs_fetch(
                worker_id="seed",
                limit=n,
                queues=[g.queue],
                start=True,
                now=g.at - timedelta(seconds=1),
            )
            duration = 4.5 if rollup and now - g.at == SLOW else g.duration
            moves: list[Any] = [SucceedMove(c.lease, duration) for c in claimed[: g.succeeded]]
            moves += [
                FailMove(c.lease, FailureReason.TRANSIENT, "boom", duration_seconds=duration)
                for c in claimed[g.succeeded :]
            ]
            assert all(await b.jobs_finalize(moves=moves, now=g.at))
        if rollup:  # what upkeep does to seconds over an hour old
            assert await b.metrics_rollup(older_than=now - timedelta(hours=1)) > 0

    run(go, url)


def expected(
    groups: list[Group], now: datetime, window: str, queue: str | None = None
) -> tuple[int, int]:
    start = now - timedelta(seconds=SPANS[window])
    inside = [g for g in groups if g.at >= start and (queue is None or g.queue == queue)]
    return sum(g.succeeded for g in inside), sum(g.failed for g in inside)


def areas_of(d: str) -> float:
    total = 0.0
    found = RECT.findall(d)
    assert len(found) == d.count("Z"), d  # every bar read, none skipped
    for x, y0, y1, x2, _ in found:
        total += (float(x2) - float(x)) * abs(float(y1) - float(y0))
    return total


def show(page: Any, window: str, counts: tuple[int, int]) -> None:
    page.click(f"#chart-window button[data-window='{window}']")
    total = sum(counts)
    # The window's own read must have answered: the hour and 24 h windows hold the same jobs
    # here, so equal totals alone can be the previous window's chart (read then mid-redraw).
    wait_for(
        lambda: (
            (page.get_attribute("#chart", "data-loaded") or "").startswith(f"{window}:")
            and page.get_attribute("#chart", "data-total") == str(total)
            and page.get_attribute("#chart", "data-failed") == str(counts[1])
        ),
        what=f"the {window} chart to show {counts}",
    )


def bar_paths(page: Any) -> tuple[str, str]:
    """The red and green paths of one drawing (read in one go: the chart redraws as the live
    stream moves its window's end, and two reads could straddle a redraw)."""
    bad, ok = page.evaluate(
        "() => ['bad', 'ok'].map(c => document.querySelector('#chart path.' + c).getAttribute('d'))"
    )
    return bad or "", ok or ""


def red_share(page: Any) -> float:
    """The red share of the bars' area as the SVG describes it."""
    bad, ok = bar_paths(page)
    red, green = areas_of(bad), areas_of(ok)
    return red / (red + green)


def rects(d: str) -> list[tuple[float, float, float, float]]:
    """The bars of one path as (left, right, top, bottom) in the SVG's units."""
    out = []
    for x, y0, y1, x2, _ in RECT.findall(d):
        top, bottom = sorted((float(y0), float(y1)))
        out.append((float(x), float(x2), top, bottom))
    return out


def overlaps(page: Any) -> list[tuple[Any, Any]]:
    """Pairs of drawn bars that cover the same area (more than touching edges). Equal areas
    with overlapping bars would still paint the wrong share, as the hour chart once did
    (3,600 bars in 1,000 units, red painted last): disjoint bars paint what their areas say.
    Read from the SVG rather than from a screenshot's pixels, whose rounding of bars a pixel
    or two tall moves a share by more than a point on some wall-clock alignments."""
    bad, ok = bar_paths(page)
    bars = sorted(rects(ok) + rects(bad))
    found = []
    for i, a in enumerate(bars):
        for b in bars[i + 1 :]:
            if b[0] >= a[1] - 1e-6:
                break  # sorted by left edge: nothing further starts inside a
            if min(a[3], b[3]) - max(a[2], b[2]) > 1e-6:
                found.append((a, b))
    return found


def test_red_share_is_the_failure_share_in_every_window(login: Any, deck_server: Served) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    groups = known_mix(now)
    seed(deck_server.db_url, groups, now)
    page = login("bob")
    width = page.locator("#chart").bounding_box()["width"]
    shares = {}
    for window in ("5m", "hour", "24h", "2w"):
        succeeded, failed = expected(groups, now, window)
        show(page, window, (succeeded, failed))
        real = failed / (succeeded + failed)
        page.mouse.move(5, 5)  # no hover band over the bars
        drawn = red_share(page)
        assert abs(drawn - real) < 0.01, (window, drawn, real)
        assert overlaps(page) == [], window
        bars = int(page.get_attribute("#chart", "data-bars") or 0)
        assert 0 < bars <= width  # never more bars than the chart is wide
        # The y axis' top value is at least the tallest bar (jobs per second).
        top = float(page.locator("#chart-y span").first.text_content() or "0")
        peak = re.search(r"peak ([\d.]+) jobs/s", page.text_content("#chart-peak") or "")
        assert peak and top >= float(peak.group(1)) > 0
        shares[window] = real
    # The windows do differ, so a chart stuck on one would fail above.
    assert shares["5m"] > 0.6 and shares["hour"] < 0.2 and shares["2w"] < shares["hour"] + 0.1
    assert page.js_errors == []


def test_hover_reads_out_a_bucket_and_the_duration_chart_draws(
    login: Any, deck_server: Served
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    groups = known_mix(now)
    seed(deck_server.db_url, groups, now)
    page = login("bob")
    show(page, "hour", expected(groups, now, "hour"))
    [slow] = [g for g in groups if now - g.at == SLOW]
    width = int(page.get_attribute("#chart", "data-width") or 0)
    bucket = math.floor(slow.at.timestamp() / width) * width
    # Groups are 7 s apart and buckets at most 4 s wide: this bucket holds the slow group only.
    assert width <= 4
    box = page.locator("#chart").bounding_box()

    def point_at_bucket() -> bool:
        # The domain's right end follows the clock: aim with the current one until it holds.
        x0 = float(page.get_attribute("#chart", "data-x0") or 0)
        x1 = float(page.get_attribute("#chart", "data-x1") or 0)
        x = box["x"] + (bucket + width / 2 - x0) / (x1 - x0) * box["width"]
        page.mouse.move(x, box["y"] + box["height"] / 2)
        return page.get_attribute("#chart-tip", "data-bucket") == str(bucket)

    wait_for(point_at_bucket, what="the pointer over the slow group's bucket")
    text = page.text_content("#chart-tip") or ""
    share = 100 * slow.failed / (slow.succeeded + slow.failed)
    assert f"{slow.succeeded} succeeded · {slow.failed} failed · {share:.1f}% failed" in text
    assert "max 4.5 s" in text and "avg 4.5 s" in text
    # The duration chart: a bar per bucket with durations, the axis reaching the slowest job.
    assert int(page.get_attribute("#lat", "data-bars") or 0) > 100
    assert "M" in (page.get_attribute("#lat path.max", "d") or "")
    assert (page.locator("#lat-y span").first.text_content() or "") == "6 s"
    # The same bucket from the duration chart; leaving hides the read-out.
    box = page.locator("#lat").bounding_box()
    wait_for(point_at_bucket, what="the pointer over the same bucket of the duration chart")
    page.mouse.move(5, 5)
    page.wait_for_selector("#chart-tip[hidden]", state="attached")
    assert page.js_errors == []


def test_a_queue_chart_shows_only_that_queue(login: Any, deck_server: Served) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    groups = known_mix(now)
    seed(deck_server.db_url, groups, now)
    page = login("bob")
    show(page, "hour", expected(groups, now, "hour"))
    page.wait_for_selector("#chart-queue option[value='mail']", state="attached")
    page.select_option("#chart-queue", "mail")
    succeeded, failed = expected(groups, now, "hour", "mail")
    wait_for(
        lambda: page.get_attribute("#chart", "data-total") == str(succeeded + failed),
        what="the mail queue's chart",
    )
    assert abs(red_share(page) - failed / (succeeded + failed)) < 0.01
    # Jobs of that queue finishing now show up (the chart re-reads while its queue moves).
    later = datetime.now(UTC)
    seed(deck_server.db_url, [Group(later, 3, 2, "mail")], later, rollup=False)
    wait_for(
        lambda: page.get_attribute("#chart", "data-total") == str(succeeded + failed + 5),
        what="the mail queue's new jobs",
    )
    mail = expected(groups, now, "2w", "mail")
    show(page, "2w", (mail[0] + 3, mail[1] + 2))
    page.select_option("#chart-queue", "")
    everything = expected(groups, now, "2w")
    show(page, "2w", (everything[0] + 3, everything[1] + 2))
    # Every queue's chart follows the live snapshot's newest seconds.
    later = datetime.now(UTC)
    seed(deck_server.db_url, [Group(later, 4, 0)], later, rollup=False)
    wait_for(
        lambda: page.get_attribute("#chart", "data-total") == str(sum(everything) + 9),
        what="the new jobs in every queue's chart",
    )
    assert page.js_errors == []

"""Periodic schedules in the API and the worker: ``@app.periodic`` checks what it is given when
the decorator runs; slots fall where the documented time-zone rule says (DST transitions with an
injected clock, month ends, ``L`` and ``#``); a worker declares its app's schedules and, leading,
enqueues their slots; an operator's edit survives a worker restart."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import until

from chokaq import App, JobContext, WorkerSettings
from chokaq.errors import ConfigurationError, ValidationError
from chokaq.metrics import WorkerMetrics
from chokaq.models import Pillar, SlotOutcome
from chokaq.periodic import MISFIRE_ALL_CAP, Misfire, Timing, plan


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def slots(timing: Timing, start: datetime, end: datetime) -> list[datetime]:
    found, total = timing.slots(start, end)
    assert total == len(found)
    return found


# -- the decorator ---------------------------------------------------------------------------


def test_periodic_declares_a_schedule_of_a_registered_job(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.periodic(cron="0 7 * * mon-fri", name="digest", kwargs={"kind": "daily"})
    @app.job(queue="reports", priority=5)
    def send_digest(kind: str) -> None: ...

    @app.periodic(every_seconds=30, timezone="Europe/Berlin", misfire="all", overlap=False)
    @app.job()
    async def cleanup(ctx: JobContext) -> None: ...

    digest = app.periodics["digest"]
    assert (digest.type, digest.queue, digest.priority) == ("send_digest", "reports", 5)
    assert (digest.cron, digest.every_seconds, digest.timezone) == ("0 7 * * mon-fri", None, "UTC")
    assert digest.kwargs == '{"kind":"daily"}' or digest.kwargs == '{"kind": "daily"}'
    assert digest.misfire == "latest" and digest.overlap
    clean = app.periodics["cleanup"]  # the name defaults to the job type
    assert (clean.every_seconds, clean.misfire, clean.overlap) == (30.0, "all", False)
    assert clean.kwargs == "{}"
    assert send_digest("weekly") is None  # the handle is returned unchanged


@pytest.mark.parametrize(
    ("options", "field", "reason"),
    [
        ({}, "cron", "exactly one of cron= and every_seconds="),
        ({"cron": "* * * * *", "every_seconds": 5}, "cron", "exactly one"),
        ({"cron": "61 * * * *"}, "cron", "not a valid cron expression: Bad minute"),
        ({"cron": "0 0 30 2 *"}, "cron", "Bad day-of-month"),
        ({"cron": "0 0 * * * *"}, "cron", "must have 5 fields"),
        ({"cron": "0 7 * * funday"}, "cron", "not a valid cron expression"),
        ({"every_seconds": 0.5}, "every_seconds", "between 1 and"),
        ({"every_seconds": float("inf")}, "every_seconds", "between 1 and"),
        ({"every_seconds": "10"}, "every_seconds", "a number of seconds"),
        ({"every_seconds": 10, "timezone": "Europe/Atlantis"}, "timezone", "IANA"),
        ({"every_seconds": 10, "misfire": "never"}, "misfire", "'skip', 'latest' or 'all'"),
        (
            {"every_seconds": 10, "kwargs": {"to": "x", "nope": 1}},
            "kwargs",
            "unknown argument(s) nope",
        ),
        ({"every_seconds": 10, "kwargs": {}}, "kwargs", "missing argument(s) to"),
        ({"every_seconds": 10, "name": "n" * 91}, "name", "at most 90 characters"),
        ({"every_seconds": 10, "queue": ""}, "queue", "must not be"),
        ({"every_seconds": 10, "priority": 10**7}, "priority", "between -1000000 and 1000000"),
        ({"every_seconds": 10, "priority": 1.5}, "priority", "must be an integer"),
        ({"every_seconds": 10, "expires_after_seconds": 0}, "expires_after_seconds", "than 0"),
        ({"every_seconds": 10, "expires_after_seconds": 4e7}, "expires_after_seconds", "at most"),
    ],
)
def test_bad_declarations_are_refused_with_the_reason(
    tmp_path: Path, options: dict[str, Any], field: str, reason: str
) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.job()
    def send(to: str) -> None: ...

    with pytest.raises(ValidationError) as caught:
        app.periodic(**options)(send)
    assert caught.value.field == field
    assert reason in str(caught.value)
    assert app.periodics == {}


def test_a_schedule_sets_its_own_queue_priority_and_expiry_over_its_types(
    tmp_path: Path,
) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}", job_defaults={"queue": "app-q"})

    @app.periodic(
        every_seconds=60, name="own", queue="urgent", priority=-5, expires_after_seconds=30
    )
    @app.periodic(every_seconds=3600, name="typed")
    @app.job(priority=7, expires_after_seconds=600)
    def scan(url: str = "x") -> None: ...

    @app.periodic(every_seconds=60)
    @app.job
    def plain() -> None: ...

    own, typed, bare = app.periodics["own"], app.periodics["typed"], app.periodics["plain"]
    assert (own.queue, own.priority, own.expires_after_seconds) == ("urgent", -5, 30.0)
    assert (typed.queue, typed.priority, typed.expires_after_seconds) == ("app-q", 7, 600.0)
    assert (bare.queue, bare.priority, bare.expires_after_seconds) == ("app-q", 10, None)


def test_periodic_needs_a_registered_job_and_a_unique_name(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    other = App(f"sqlite:///{tmp_path / 'other.db'}")

    def plain() -> None: ...

    with pytest.raises(ConfigurationError, match=r"above @app\.job"):
        app.periodic(every_seconds=5)(plain)  # type: ignore[arg-type]

    @other.job()
    def elsewhere() -> None: ...

    with pytest.raises(ConfigurationError, match=r"above @app\.job"):
        app.periodic(every_seconds=5)(elsewhere)

    @app.periodic(every_seconds=5)
    @app.job()
    def tick() -> None: ...

    with pytest.raises(ConfigurationError, match="declared twice"):
        app.periodic(every_seconds=10)(tick)
    app.periodic(every_seconds=10, name="tick-slow")(tick)  # another name: a second schedule
    assert sorted(app.periodics) == ["tick", "tick-slow"]


# -- where slots fall ------------------------------------------------------------------------


def test_a_daily_job_runs_once_on_the_spring_forward_and_fall_back_days_in_berlin() -> None:
    daily = Timing("30 2 * * *", None, "Europe/Berlin")
    # 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist and runs at 03:00.
    spring = slots(daily, utc(2026, 3, 27, 12), utc(2026, 3, 30, 12))
    assert spring == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]
    # 25 October 2026: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice, runs once.
    fall = slots(daily, utc(2026, 10, 24, 12), utc(2026, 10, 26, 12))
    assert fall == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_new_york_transitions_follow_the_same_rule() -> None:
    # 8 March 2026: 02:00 EST jumps to 03:00 EDT.
    spring = slots(
        Timing("30 2 * * *", None, "America/New_York"), utc(2026, 3, 7, 12), utc(2026, 3, 9, 12)
    )
    assert spring == [utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]  # 03:00 EDT, then 02:30 EDT
    # 1 November 2026: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice, runs once.
    fall = slots(
        Timing("30 1 * * *", None, "America/New_York"), utc(2026, 10, 31, 12), utc(2026, 11, 2, 12)
    )
    assert fall == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_a_step_in_the_hour_field_runs_in_both_repeated_hours() -> None:
    """Documented: ``*/30 * * * *`` follows the wall clock, so the repeated hour runs twice."""
    half_hourly = Timing("*/30 * * * *", None, "Europe/Berlin")
    found = slots(half_hourly, utc(2026, 10, 24, 23, 45), utc(2026, 10, 25, 2, 15))
    assert found == [utc(2026, 10, 25, 0, 0) + timedelta(minutes=30 * k) for k in range(5)]


def test_intervals_drift_by_nothing_over_a_day() -> None:
    every = Timing(None, 30.0, "UTC")
    day = slots(every, utc(2026, 12, 1), utc(2026, 12, 2))
    assert len(day) == 2880 and day[0] == utc(2026, 12, 1, 0, 0, 30) and day[-1] == utc(2026, 12, 2)
    assert all(b - a == timedelta(seconds=30) for a, b in itertools.pairwise(day))
    odd = slots(Timing(None, 1.5, "UTC"), utc(2026, 12, 1), utc(2026, 12, 1, 1))
    assert len(odd) == 2400 and odd[-1] == utc(2026, 12, 1, 1)  # exact, no float creep


def test_month_ends_last_day_and_nth_weekday() -> None:
    last = slots(Timing("0 0 L * *", None, "UTC"), utc(2028, 1, 15), utc(2028, 5, 1))
    assert last == [utc(2028, 1, 31), utc(2028, 2, 29), utc(2028, 3, 31), utc(2028, 4, 30)]
    thirty_first = slots(Timing("0 12 31 * *", None, "UTC"), utc(2026, 1, 1), utc(2026, 6, 1))
    assert [s.month for s in thirty_first] == [1, 3, 5]
    second_monday = slots(Timing("0 9 * * mon#2", None, "UTC"), utc(2026, 1, 1), utc(2026, 3, 31))
    assert second_monday == [utc(2026, 1, 12, 9), utc(2026, 2, 9, 9), utc(2026, 3, 9, 9)]
    last_friday = slots(Timing("0 9 * * 5L", None, "UTC"), utc(2026, 1, 1), utc(2026, 2, 28))
    assert last_friday == [utc(2026, 1, 30, 9), utc(2026, 2, 27, 9)]


def test_misfire_all_runs_at_most_the_cap_and_counts_the_rest() -> None:
    every = Timing(None, 60.0, "UTC")
    planned = plan(every, utc(2026, 12, 1), utc(2026, 12, 1, 5, 0, 10), Misfire.ALL)
    assert planned is not None
    assert len(planned.run) == MISFIRE_ALL_CAP and planned.run[-1] == utc(2026, 12, 1, 5)
    assert planned.missed == 300 - MISFIRE_ALL_CAP
    assert planned.next_slot == utc(2026, 12, 1, 5, 1)


def test_a_gap_of_weeks_on_a_frequent_cron_is_planned_without_stepping_every_slot() -> None:
    minutely = Timing("* * * * *", None, "UTC")
    planned = plan(minutely, utc(2026, 1, 1), utc(2026, 3, 1, 0, 0, 5), Misfire.LATEST)
    assert planned is not None and planned.run == (utc(2026, 3, 1),)
    assert planned.missed >= 10_000  # a floor once the scan jumps ahead


# -- the worker --------------------------------------------------------------------------------


def periodic_app(path: Path, calls: list[int]) -> App:
    app = App(
        f"sqlite:///{path}",
        worker=WorkerSettings(schedule_tick_seconds=0.05, poll_interval_seconds=0.05),
    )

    @app.periodic(every_seconds=1, kwargs={"n": 7})
    @app.job()
    async def tick(n: int) -> None:
        calls.append(n)

    return app


async def test_a_worker_declares_and_runs_its_schedules(tmp_path: Path) -> None:
    calls: list[int] = []
    app = periodic_app(tmp_path / "jobs.db", calls)
    async with app:
        worker = app.create_worker()
        metrics = WorkerMetrics()
        metrics.attach(worker)
        task = asyncio.create_task(worker.run())
        try:
            await until(lambda: _archived(app, 2), timeout=30)
        finally:
            worker.stop()
            await task
        history = await app.backend.schedule_history("tick", limit=100)
    assert calls[:2] == [7, 7]
    runs = [r for r in history if r.outcome is SlotOutcome.ENQUEUED]
    assert len({r.slot for r in runs}) == len(runs) >= 2
    assert all(r.slot.microsecond == 0 for r in runs)  # slots are whole multiples of 1 s
    # The worker's "schedule" event feeds the runs counter.
    assert f'chokaq_schedule_runs_total{{schedule="tick"}} {float(len(runs))}' in (
        metrics.render().decode()
    )


async def test_an_operator_edit_survives_a_worker_restart(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    calls: list[int] = []
    app = periodic_app(path, calls)
    async with app:
        worker = app.create_worker()
        task = asyncio.create_task(worker.run())
        try:
            await until(lambda: _declared(app), timeout=30)
            await app.backend.schedule_edit(
                "tick", actor="alice", every_seconds=3600, kwargs={"n": 8}
            )
            await app.backend.schedule_pause("tick", actor="alice")
        finally:
            worker.stop()
            await task
    again = periodic_app(path, calls)  # the same code, a new process's app
    async with again:
        worker = again.create_worker()
        task = asyncio.create_task(worker.run())
        try:
            await until(lambda: _declared_again(worker), timeout=30)
            schedule = await again.backend.schedule_get("tick")
        finally:
            worker.stop()
            await task
    assert schedule is not None
    assert (schedule.every_seconds, schedule.kwargs, schedule.paused) == (3600.0, '{"n":8}', True)
    assert schedule.edited_by == "alice" and schedule.declared_every_seconds == 1.0


async def _archived(app: App, count: int) -> bool:
    page = await app.backend.jobs_page(pillar=Pillar.ARCHIVE)
    return page.total >= count


async def _declared(app: App) -> bool:
    return await app.backend.schedule_get("tick") is not None


async def _declared_again(worker: Any) -> bool:
    scheduler = getattr(worker, "scheduler", None)  # set once run() has opened the app
    return scheduler is not None and scheduler.declared


async def test_a_schedule_that_cannot_be_fired_does_not_stop_the_others(tmp_path: Path) -> None:
    """A row this worker cannot plan (an expression its parser refuses, as another version might
    write) is logged (4014) and passed over; the other schedules keep firing."""
    import sqlite3

    from tests.ops.test_events import captured

    from chokaq.logs import Event

    path = tmp_path / "jobs.db"
    calls: list[int] = []
    app = periodic_app(path, calls)
    app.periodic(every_seconds=1, name="broken", kwargs={"n": 9})(app.handlers["tick"])  # type: ignore[arg-type]
    async with app:
        with captured() as lines:
            worker = app.create_worker()
            task = asyncio.create_task(worker.run())
            try:
                await until(lambda: _declared_again(worker), timeout=30)
                conn = sqlite3.connect(path)
                with conn:  # bypasses the seam's checks, as a row of another version would
                    conn.execute(
                        "UPDATE chokaq_schedules SET cron = '99 * * * *', every_seconds = NULL"
                        " WHERE name = 'broken'"
                    )
                conn.close()
                await until(lambda: _logged(lines, Event.SCHEDULE_FAILED), timeout=30)
                failed_at = datetime.now(UTC)
                ran = len(calls)
                # "tick" (n=7) goes on. A "broken" run (n=9) enqueued before the row was broken
                # may still run meanwhile: count the ticks only.
                await until(lambda: _more(calls[ran:], 2, of=7), timeout=30)
            finally:
                worker.stop()
                await task
            broken = await app.backend.schedule_history("broken", limit=100)
    # "broken" enqueued nothing once it could not be fired.
    assert not [
        r
        for r in broken
        if r.outcome is SlotOutcome.ENQUEUED
        and r.recorded_at is not None
        and r.recorded_at > failed_at
    ]
    failed = [line for line in lines if line.get("event_id") == Event.SCHEDULE_FAILED]
    assert failed[0]["schedule"] == "broken" and "Bad minute" in failed[0]["error"]


async def _more(calls: list[int], count: int, of: int | None = None) -> bool:
    return len([c for c in calls if of is None or c == of]) >= count


async def _logged(lines: list[dict[str, Any]], event: int) -> bool:
    return any(line.get("event_id") == event for line in lines)


async def test_missed_and_skipped_slots_are_logged_and_recorded(tmp_path: Path) -> None:
    """A schedule whose slots fell due while no worker ran logs 4012 and records the gap once;
    ``overlap=False`` with its run still going skips the next slot, logs 4013 and records it
    with the unfinished run's job."""
    from datetime import UTC, datetime

    from tests.ops.test_events import captured

    from chokaq.logs import Event

    release = asyncio.Event()
    app = App(
        f"sqlite:///{tmp_path / 'jobs.db'}",
        worker=WorkerSettings(schedule_tick_seconds=0.05, poll_interval_seconds=0.05),
    )

    @app.periodic(every_seconds=60, name="catch-up")
    @app.periodic(every_seconds=1, name="one-at-a-time", overlap=False)
    @app.job()
    async def report() -> None:
        await release.wait()

    async with app:
        # Declared ten minutes ago, then no worker ran: ten slots came due meanwhile.
        await app.backend.schedules_declare(
            [app.periodics["catch-up"]], now=datetime.now(UTC) - timedelta(minutes=10)
        )
        with captured() as lines:
            worker = app.create_worker()
            task = asyncio.create_task(worker.run())
            try:
                await until(lambda: _logged(lines, Event.SCHEDULE_MISSED), timeout=30)
                await until(lambda: _logged(lines, Event.SCHEDULE_SKIPPED), timeout=30)
            finally:
                release.set()
                worker.stop()
                await task
        missed = await app.backend.schedule_history("catch-up")
        skipped = await app.backend.schedule_history("one-at-a-time", limit=100)
    # Newest first: the gap, the slot that ran after it, and, when a minute boundary passed
    # while the test ran (a busy machine makes that likelier), that minute's slot too.
    [gap] = [r for r in missed if r.outcome is SlotOutcome.MISSED]
    later = missed[: missed.index(gap)]
    assert 1 <= len(later) <= 2 and all(r.outcome is SlotOutcome.ENQUEUED for r in later)
    run = later[-1]
    # Every slot from the gap's first to the one that ran, but that one, was missed (nine or ten
    # of them, as a minute boundary fell before or after the worker's first pass).
    count = round((run.slot - gap.slot).total_seconds() / 60)
    assert count in (9, 10) and (gap.detail or "").startswith(f"{count} slots missed")
    unfinished = [r for r in skipped if r.outcome is SlotOutcome.SKIPPED]
    first_run = [r for r in skipped if r.outcome is SlotOutcome.ENQUEUED][-1]
    assert unfinished and unfinished[-1].job_id == first_run.job_id

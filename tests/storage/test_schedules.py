"""Periodic schedules in storage, on both backends: declaring (what the code owns, what an
operator's edit keeps), firing slots exactly once under the compare-and-set, misfire rules,
overlap, operators' changes, orphans and history. Times are injected (``now=``)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from tests.conftest import schedule_declaration

from chokaq.errors import NotFoundError, ValidationError
from chokaq.models import JobStatus, ScheduleDeclaration, SlotOutcome
from chokaq.storage import Backend

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def every(name: str = "tick", seconds: float = 60.0, **fields: object) -> ScheduleDeclaration:
    return schedule_declaration(name, **{"every_seconds": seconds} | fields)


async def fire(backend: Backend, name: str, now: datetime) -> list[object] | None:
    schedule = await backend.schedule_get(name, now=now)
    assert schedule is not None
    return await backend.schedule_fire(schedule, now=now)  # type: ignore[return-value]


async def hot_jobs(backend: Backend) -> list[str]:
    page = await backend.jobs_page(pillar="hot", page_size=500)  # type: ignore[arg-type]
    return [job.id for job in page.items]


async def test_a_declared_schedule_fires_each_slot_once(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60, kwargs='{"n": 1}')], now=T0)
    schedule = await backend.schedule_get("tick", now=T0)
    assert schedule is not None
    assert schedule.next_slot == T0 + timedelta(seconds=60)
    assert schedule.last_slot == T0 and not schedule.orphaned and schedule.revision == 1
    assert await fire(backend, "tick", T0 + timedelta(seconds=30)) == []  # nothing due yet

    due = T0 + timedelta(seconds=61)
    await backend.schedules_seen(["tick"], now=due)  # a running worker still declares it
    assert [s.name for s in await backend.schedules_due(now=due)] == ["tick"]
    written = await fire(backend, "tick", due)
    assert written is not None and len(written) == 1
    record = written[0]
    assert record.outcome is SlotOutcome.ENQUEUED  # type: ignore[attr-defined]
    assert record.slot == T0 + timedelta(seconds=60)  # type: ignore[attr-defined]
    job = await backend.job_get(record.job_id)  # type: ignore[attr-defined]
    assert job is not None and job.type == "tick" and json.loads(job.payload) == {"n": 1}
    assert job.created_by == "schedule:tick"
    after = await backend.schedule_get("tick", now=due)
    assert after is not None
    assert after.last_slot == T0 + timedelta(seconds=60)
    assert after.next_slot == T0 + timedelta(seconds=120)
    assert after.last_job_id == record.job_id and after.last_outcome == "pending"  # type: ignore[attr-defined]
    assert await backend.schedules_due(now=due) == []


async def test_a_stale_reading_enqueues_nothing(backend: Backend) -> None:
    """Two processes that read the same row: only the first compare-and-set enqueues."""
    await backend.schedules_declare([every(seconds=60)], now=T0)
    due = T0 + timedelta(seconds=61)
    read = await backend.schedule_get("tick", now=due)
    assert read is not None
    first, second = await asyncio.gather(
        backend.schedule_fire(read, now=due), backend.schedule_fire(read, now=due)
    )
    assert sorted([first is None, second is None]) == [False, True]
    assert len(await hot_jobs(backend)) == 1


async def test_misfire_rules_decide_a_gap(backend: Backend) -> None:
    decls = [
        every("skip", 60, misfire="skip"),
        every("latest", 60, misfire="latest"),
        every("all", 60, misfire="all"),
    ]
    await backend.schedules_declare(decls, now=T0)
    late = T0 + timedelta(minutes=10, seconds=30)  # 10 slots due, the newest 30 s late
    for name, enqueued, missed in (("skip", 1, 9), ("latest", 1, 9), ("all", 10, 0)):
        written = await fire(backend, name, late)
        assert written is not None
        outcomes = [r.outcome for r in written]  # type: ignore[attr-defined]
        assert outcomes.count(SlotOutcome.ENQUEUED) == enqueued, name
        missed_records = [r for r in written if r.outcome is SlotOutcome.MISSED]  # type: ignore[attr-defined]
        if missed:
            assert len(missed_records) == 1 and f"{missed} slots missed" in missed_records[0].detail
        else:
            assert missed_records == []
    # More than the grace period (60 s) late, the newest slot is missed too: skip runs nothing
    # (with a period under a minute the newest slot is never that late: it simply runs).
    await backend.schedules_declare([every("skip5", 300, misfire="skip")], now=T0)
    very_late = T0 + timedelta(minutes=10, seconds=61)
    written = await fire(backend, "skip5", very_late)
    assert written is not None
    assert [r.outcome for r in written] == [SlotOutcome.MISSED]  # type: ignore[attr-defined]
    assert "2 slots missed" in written[0].detail  # type: ignore[attr-defined]
    history = await backend.schedule_history("skip5")
    assert [r.outcome for r in history] == [SlotOutcome.MISSED]


async def test_overlap_false_skips_a_slot_while_the_last_run_is_unfinished(
    backend: Backend,
) -> None:
    await backend.schedules_declare([every(seconds=60, overlap=False)], now=T0)
    first = await fire(backend, "tick", T0 + timedelta(seconds=60))
    assert first is not None and first[0].outcome is SlotOutcome.ENQUEUED  # type: ignore[attr-defined]
    second = await fire(backend, "tick", T0 + timedelta(seconds=120))
    assert second is not None
    assert [r.outcome for r in second] == [SlotOutcome.SKIPPED]  # type: ignore[attr-defined]
    assert "had not finished" in second[0].detail  # type: ignore[attr-defined]
    assert len(await hot_jobs(backend)) == 1
    # Once the run left the hot table (here: cancelled), the next slot runs.
    await backend.jobs_cancel(ids=[first[0].job_id], actor="ops")  # type: ignore[attr-defined]
    third = await fire(backend, "tick", T0 + timedelta(seconds=180))
    assert third is not None
    assert [r.outcome for r in third] == [SlotOutcome.ENQUEUED]  # type: ignore[attr-defined]
    schedule = await backend.schedule_get("tick", now=T0 + timedelta(seconds=180))
    assert schedule is not None and schedule.last_outcome == "pending"


async def test_an_operator_edit_wins_over_the_code_until_reset(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60)], now=T0)
    edited = await backend.schedule_edit(
        "tick", actor="alice", cron="0 7 * * *", timezone="Europe/Berlin", now=T0
    )
    assert edited.cron == "0 7 * * *" and edited.every_seconds is None
    assert edited.edited_by == "alice" and edited.last_modified_by == "alice"
    assert edited.next_slot == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)  # 07:00 CET
    # A worker restarts with the same code, then with new code: the edit stays in force.
    await backend.schedules_declare([every(seconds=60)], now=T0 + timedelta(hours=1))
    await backend.schedules_declare([every(seconds=30, queue="q2")], now=T0 + timedelta(hours=2))
    kept = await backend.schedule_get("tick", now=T0 + timedelta(hours=2))
    assert kept is not None
    assert kept.cron == "0 7 * * *" and kept.queue == "q2"  # the code owns the queue
    assert kept.declared_every_seconds == 30
    reset = await backend.schedule_reset("tick", actor="bob", now=T0 + timedelta(hours=3))
    assert reset.cron is None and reset.every_seconds == 30 and reset.edited_by is None
    assert reset.last_slot == T0 + timedelta(hours=3)


async def test_a_changed_declaration_restarts_its_slots(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60)], now=T0)
    same = T0 + timedelta(minutes=5)
    await backend.schedules_declare([every(seconds=60)], now=same)
    kept = await backend.schedule_get("tick", now=same)
    assert kept is not None and kept.revision == 1 and kept.last_slot == T0  # unchanged
    await backend.schedules_declare([every(seconds=120)], now=same)
    moved = await backend.schedule_get("tick", now=same)
    assert moved is not None and moved.revision == 2 and moved.last_slot == same


async def test_pause_resume_and_trigger(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60)], now=T0)
    paused = await backend.schedule_pause("tick", actor="ops", now=T0)
    assert paused.paused
    assert await backend.schedules_due(now=T0 + timedelta(minutes=5)) == []
    job_id = await backend.schedule_trigger("tick", actor="ops", now=T0 + timedelta(minutes=5))
    assert await hot_jobs(backend) == [job_id]
    resumed = await backend.schedule_pause(
        "tick", actor="ops", paused=False, now=T0 + timedelta(minutes=10)
    )
    assert not resumed.paused and resumed.last_slot == T0 + timedelta(minutes=10)
    history = await backend.schedule_history("tick")
    assert [(r.outcome, r.detail) for r in history] == [(SlotOutcome.TRIGGERED, "triggered by ops")]
    with pytest.raises(NotFoundError):
        await backend.schedule_trigger("nope", actor="ops")


async def test_orphans_do_not_fire_and_only_orphans_can_be_deleted(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60)], now=T0)
    with pytest.raises(ValidationError, match="declared by a running worker"):
        await backend.schedule_delete("tick", actor="ops", now=T0)
    later = T0 + timedelta(minutes=5)
    listed = await backend.schedules_list(now=later)
    assert [s.orphaned for s in listed] == [True]
    assert await backend.schedules_due(now=later) == []  # not seen lately: does not fire
    await backend.schedules_seen(["tick"], now=later)
    assert [s.name for s in await backend.schedules_due(now=later)] == ["tick"]
    assert await backend.schedule_delete("tick", actor="ops", now=later + timedelta(minutes=5))
    assert await backend.schedules_list(now=later) == []
    assert not await backend.schedule_delete("tick", actor="ops")


async def test_history_keeps_the_newest_hundred(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=1, misfire="all")], now=T0)
    for minute in range(1, 4):  # 60 slots per fire, 180 in all
        await fire(backend, "tick", T0 + timedelta(minutes=minute))
    history = await backend.schedule_history("tick", limit=100)
    assert len(history) == 100
    assert history[0].slot == T0 + timedelta(minutes=3)
    assert all(r.outcome is SlotOutcome.ENQUEUED for r in history)


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"cron": "61 * * * *", "every_seconds": None}, "declarations[0].cron", "not a valid"),
        ({"cron": "* * *", "every_seconds": None}, "declarations[0].cron", "5 fields"),
        ({"cron": "* * * * *"}, "declarations[0].cron", "exactly one"),
        ({"every_seconds": 0.5}, "declarations[0].every_seconds", "between 1"),
        ({"timezone": "Mars/Base"}, "declarations[0].timezone", "IANA"),
        ({"kwargs": "[1]"}, "declarations[0].kwargs", "JSON object"),
        ({"misfire": "sometimes"}, "declarations[0].misfire", "'skip', 'latest' or 'all'"),
        ({"name": "x" * 91}, "declarations[0].name", "at most 90"),
        ({"expires_after_seconds": 0}, "declarations[0].expires_after_seconds", "greater than 0"),
        ({"expires_after_seconds": 4e7}, "declarations[0].expires_after_seconds", "at most"),
        ({"expires_after_seconds": "1"}, "declarations[0].expires_after_seconds", "number"),
    ],
)
async def test_bad_declarations_are_refused_before_anything_is_written(
    backend: Backend, fields: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(ValidationError, match=reason) as caught:
        await backend.schedules_declare([every(**fields)], now=T0)
    assert caught.value.field == field
    assert await backend.schedules_list(now=T0) == []


async def test_bad_edits_are_refused_and_change_nothing(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60)], now=T0)
    with pytest.raises(ValidationError, match="cron"):
        await backend.schedule_edit("tick", actor="ops", cron="0 25 * * *", now=T0)
    with pytest.raises(ValidationError, match="timezone"):
        await backend.schedule_edit("tick", actor="ops", timezone="Nowhere", now=T0)
    with pytest.raises(ValidationError, match="actor"):
        await backend.schedule_pause("tick", actor=None, now=T0)  # type: ignore[arg-type]
    unchanged = await backend.schedule_get("tick", now=T0)
    assert unchanged is not None and unchanged.revision == 1 and unchanged.edited_by is None


async def test_a_run_is_an_ordinary_job(backend: Backend) -> None:
    await backend.schedules_declare([every(seconds=60, queue="reports", priority=5)], now=T0)
    written = await fire(backend, "tick", T0 + timedelta(seconds=60))
    assert written is not None
    job = await backend.job_get(written[0].job_id)  # type: ignore[attr-defined]
    assert job is not None and job.queue == "reports" and job.priority == 5
    assert job.status is JobStatus.PENDING or job.status == JobStatus.PENDING


async def test_a_schedules_expiry_reaches_each_run_and_follows_the_code(
    backend: Backend,
) -> None:
    await backend.schedules_declare([every(seconds=60, expires_after_seconds=45)], now=T0)
    declared = await backend.schedule_get("tick", now=T0)
    assert declared is not None and declared.expires_after_seconds == 45
    due = T0 + timedelta(seconds=60)
    written = await fire(backend, "tick", due)
    assert written is not None
    job = await backend.job_get(written[0].job_id)  # type: ignore[attr-defined]
    assert job is not None and job.expires_at == due + timedelta(seconds=45)
    # The code owns it, as queue and priority: a new value is a new revision, None is none.
    await backend.schedules_declare([every(seconds=60)], now=due)
    changed = await backend.schedule_get("tick", now=due)
    assert changed is not None
    assert (changed.expires_after_seconds, changed.revision) == (None, declared.revision + 1)
    triggered = await backend.schedule_trigger("tick", actor="ops", now=due)
    run = await backend.job_get(triggered)
    assert run is not None and run.expires_at is None


async def test_a_daily_slot_fires_once_across_each_dst_transition(backend: Backend) -> None:
    """Europe/Berlin, ``30 2 * * *``, with an injected clock through both transitions of 2026:
    02:30 does not exist on 29 March (it fires at 03:00 CEST) and happens twice on 25 October
    (it fires at the first, 02:30 CEST)."""
    berlin = every("daily", cron="30 2 * * *", every_seconds=None, timezone="Europe/Berlin")
    start = datetime(2026, 3, 28, 12, tzinfo=UTC)
    await backend.schedules_declare([berlin], now=start)
    fired: list[datetime] = []
    moment = start
    while moment < datetime(2026, 10, 27, tzinfo=UTC):
        moment += timedelta(minutes=30)
        if moment.month not in (3, 10):  # only the weeks around the transitions
            continue
        await backend.schedules_seen(["daily"], now=moment)
        for schedule in await backend.schedules_due(now=moment):
            written = await backend.schedule_fire(schedule, now=moment)
            assert written is not None
            fired += [r.slot for r in written if r.outcome is SlotOutcome.ENQUEUED]
    march = [slot for slot in fired if slot.month == 3]
    october = [slot for slot in fired if slot.month == 10]
    assert march[:3] == [
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC),  # 03:00 CEST: 02:30 did not exist
        datetime(2026, 3, 30, 0, 30, tzinfo=UTC),
        datetime(2026, 3, 31, 0, 30, tzinfo=UTC),
    ]
    assert datetime(2026, 10, 25, 0, 30, tzinfo=UTC) in october  # 02:30 CEST, once
    assert datetime(2026, 10, 25, 1, 30, tzinfo=UTC) not in october  # not 02:30 CET again
    assert len(set(fired)) == len(fired)

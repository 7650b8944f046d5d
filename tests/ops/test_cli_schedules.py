"""``chokaq schedule ...`` against both backends (the real commands, in-process): listing and
showing where schedules stand, pausing, triggering, an operator's edit and its reset, deleting
orphans only, and bad input refused with one line naming the option, changing nothing."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from tests.conftest import schedule_declaration

from chokaq.models import Schedule, SlotOutcome
from chokaq.storage import Backend

from .conftest import Cli, on_store

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


declaration = partial(schedule_declaration, type="report", priority=0)


def declare(cli: Cli, store: Any) -> None:
    """Four schedules, as of now: ``tick`` fired once after nine missed slots, ``late`` due
    for ten minutes and never fired, ``nightly`` (cron, Berlin) ahead, ``gone`` orphaned (no
    running worker has declared it for two hours)."""
    cli("migrate")
    now = datetime.now(UTC)

    async def run(backend: Backend) -> None:
        ten_ago = now - timedelta(minutes=10)
        nightly = declaration(
            "nightly", cron="0 7 * * *", every_seconds=None, timezone="Europe/Berlin"
        )
        await backend.schedules_declare(
            [
                declaration("tick", queue="scans", priority=3, expires_after_seconds=120),
                declaration("late"),
                nightly,
            ],
            now=ten_ago,
        )
        await backend.schedules_declare([declaration("gone")], now=now - timedelta(hours=2))
        await backend.schedules_seen(["tick", "late", "nightly"], now=now)
        tick = await backend.schedule_get("tick", now=now)
        assert tick is not None
        await backend.schedule_fire(tick, now=now)

    on_store(store, run)


def get(store: Any, name: str) -> Schedule | None:
    found: Schedule | None = on_store(store, lambda b: b.schedule_get(name))
    return found


def row(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if re.search(rf"\b{name}\b", line))


def test_list_shows_timing_next_last_state_and_lag(cli: Cli, store: Any) -> None:
    declare(cli, store)
    out = cli("schedule", "list").output
    assert "Schedules: 4" in out
    tick = get(store, "tick")
    assert tick is not None and tick.last_job_id and tick.next_slot
    line = row(out, "tick")
    assert "every 60 s" in line and tick.last_job_id in line and "pending" in line
    assert "scans, p3, expires 2m 00s" in line and "default, p0" in row(out, "late")
    assert tick.next_slot.strftime("%Y-%m-%d %H:%M:%S") in line and "active" in line
    nightly = row(out, "nightly")
    assert "0 7 * * * (Europe/Berlin)" in nightly and "07:00:00 CE" in nightly  # CET or CEST
    assert "06:00:00" in nightly or "05:00:00" in nightly  # the same moment in UTC
    assert "late" in row(out, "late").split("│")[-2]  # its next slot and the one after passed
    gone = row(out, "gone")
    assert "orphaned" in gone and gone.rstrip(" │").endswith("-")  # an orphan has no lag


def test_show_has_the_row_and_its_history(cli: Cli, store: Any) -> None:
    declare(cli, store)
    tick = get(store, "tick")
    assert tick is not None and tick.last_job_id
    out = cli("schedule", "show", "tick").output
    assert "schedule tick" in out and "every 60 s" in out and "latest" in out
    assert "2m 00s after its enqueue" in row(out, "expires") and "scans" in row(out, "queue")
    assert "never" in row(cli("schedule", "show", "late").output, "expires")
    enqueued = row(out, "enqueued")
    assert tick.last_job_id in enqueued
    missed = row(out, "missed")
    assert "9 slots missed" in missed and "misfire=latest" in missed
    assert "no history yet" in cli("schedule", "show", "late").output
    limited = cli("schedule", "show", "tick", "--history", "1").output
    assert "enqueued" in limited and "missed" not in limited


def test_list_and_show_print_json(cli: Cli, store: Any) -> None:
    declare(cli, store)
    tick = get(store, "tick")
    assert tick is not None and tick.next_slot and tick.last_job_id
    listed = json.loads(cli("schedule", "list", "--json").stdout)
    assert isinstance(listed, list) and {s["name"] for s in listed} == {
        "tick",
        "late",
        "nightly",
        "gone",
    }
    row = next(s for s in listed if s["name"] == "tick")
    assert row["expression"] == "every 60 s" and row["every_seconds"] == 60
    assert row["last_job_id"] == tick.last_job_id and row["paused"] is False
    assert row["next_run_utc"] == tick.next_slot.isoformat().replace("+00:00", "Z")
    nightly = next(s for s in listed if s["name"] == "nightly")
    assert nightly["cron"] == "0 7 * * *" and nightly["timezone"] == "Europe/Berlin"
    assert next(s for s in listed if s["name"] == "gone")["orphaned"] is True
    shown = json.loads(cli("schedule", "show", "tick", "--json").stdout)
    assert shown["name"] == "tick" and shown["last_job_id"] == tick.last_job_id
    outcomes = [r["outcome"] for r in shown["history"]]
    assert outcomes == ["enqueued", "missed"], outcomes
    assert shown["history"][0]["job_id"] == tick.last_job_id
    assert json.loads(cli("schedule", "show", "late", "--json").stdout)["history"] == []


def test_pause_resume_and_trigger(cli: Cli, store: Any) -> None:
    declare(cli, store)
    out = cli("schedule", "pause", "late", "--actor", "alice").output
    assert "schedule late paused" in out and "admin_completed" in out
    paused = get(store, "late")
    assert paused is not None and paused.paused and paused.last_modified_by == "alice"
    assert "paused" in row(cli("schedule", "list").output, "late")
    triggered = cli("schedule", "trigger", "late", "--actor", "alice")
    job_id = triggered.stdout.strip()
    assert re.fullmatch(UUID, job_id), triggered.stdout
    job = on_store(store, lambda b: b.job_get(job_id))
    assert job is not None and job.type == "report" and job.created_by == "schedule:late"
    history = on_store(store, lambda b: b.schedule_history("late"))
    assert [(r.outcome, r.job_id, r.detail) for r in history] == [
        (SlotOutcome.TRIGGERED, job_id, "triggered by alice")
    ]
    before = datetime.now(UTC)
    assert "schedule late resumed; next run" in cli("schedule", "resume", "late").output
    resumed = get(store, "late")
    assert resumed is not None and not resumed.paused
    assert resumed.last_modified_by is not None and resumed.last_modified_by.startswith("cli")
    assert resumed.next_slot is not None and resumed.next_slot > before  # counted afresh


def test_set_edits_the_timing_and_kwargs_until_reset(cli: Cli, store: Any) -> None:
    declare(cli, store)
    out = cli(
        "schedule",
        "set",
        "tick",
        "--cron",
        "30 6 * * 1-5",
        "--timezone",
        "Europe/Berlin",
        "--kwargs",
        '{"days": 7}',
        "--actor",
        "alice",
    ).output
    assert "30 6 * * 1-5 (Europe/Berlin)" in out and '{"days": 7}' in out
    edited = get(store, "tick")
    assert edited is not None
    assert (edited.cron, edited.every_seconds, edited.timezone) == (
        "30 6 * * 1-5",
        None,
        "Europe/Berlin",
    )
    assert json.loads(edited.kwargs) == {"days": 7} and edited.edited_by == "alice"
    assert "edited by alice" in row(cli("schedule", "list").output, "tick")
    shown = cli("schedule", "show", "tick").output
    assert "every 60 s, kwargs {}" in row(shown, "declared")
    cli("schedule", "set", "tick", "--every", "30")
    interval = get(store, "tick")
    assert interval is not None and (interval.cron, interval.every_seconds) == (None, 30.0)
    assert json.loads(interval.kwargs) == {"days": 7}  # left out: unchanged
    out = cli("schedule", "reset", "tick", "--actor", "bob").output
    assert "back to its declaration: every 60 s, kwargs {}" in out
    reset = get(store, "tick")
    assert reset is not None and reset.edited_by is None and reset.every_seconds == 60.0
    assert reset.last_modified_by == "bob"


@pytest.mark.parametrize(
    ("argv", "option", "reason"),
    [
        (["--cron", "61 * * * *"], "--cron", "not a valid cron expression"),
        (["--cron", "* * *"], "--cron", "5 fields"),
        (["--every", "0.5"], "--every", "between 1"),
        (["--every", "nan"], "--every", "between 1"),
        (["--timezone", "Mars/Base"], "--timezone", "IANA"),
        (["--kwargs", "[1]"], "--kwargs", "JSON object"),
        (["--kwargs", "{nope"], "--kwargs", "valid JSON"),
        (["--cron", "0 7 * * *", "--kwargs", "{nope"], "--kwargs", "valid JSON"),
    ],
)
def test_bad_input_is_one_line_naming_the_option_and_changes_nothing(
    cli: Cli, store: Any, argv: list[str], option: str, reason: str
) -> None:
    declare(cli, store)
    before = get(store, "tick")
    refused = cli("schedule", "set", "tick", *argv, expect=1)
    [line] = refused.output.strip().splitlines()
    assert line.startswith(f"error: {option}: ") and reason in line, line
    assert get(store, "tick") == before


def test_set_refuses_nothing_or_both_timings(cli: Cli, store: Any) -> None:
    declare(cli, store)
    before = get(store, "tick")
    assert "nothing to change" in cli("schedule", "set", "tick", expect=2).output
    both = cli("schedule", "set", "tick", "--cron", "* * * * *", "--every", "60", expect=2)
    assert "--cron or --every, not both" in both.output
    not_a_number = cli("schedule", "set", "tick", "--every", "soon", expect=2).output
    assert "'--every'" in not_a_number and "not a valid float" in not_a_number
    assert get(store, "tick") == before


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "nope"],
        ["pause", "nope"],
        ["resume", "nope"],
        ["trigger", "nope"],
        ["set", "nope", "--every", "60"],
        ["reset", "nope"],
        ["delete", "nope", "--yes"],
    ],
    ids=lambda argv: argv[0],
)
def test_an_unknown_name_is_one_clear_line(cli: Cli, store: Any, argv: list[str]) -> None:
    declare(cli, store)
    refused = cli("schedule", *argv, expect=1)
    [line] = refused.output.strip().splitlines()
    assert line.startswith("error: no schedule named 'nope'"), line
    assert len(on_store(store, lambda b: b.schedules_list())) == 4


def test_delete_removes_an_orphan_only_and_asks_first(cli: Cli, store: Any) -> None:
    declare(cli, store)
    refused = cli("schedule", "delete", "tick", "--yes", expect=1)
    assert "declared by a running worker" in refused.output and "admin_rejected" in refused.output
    assert get(store, "tick") is not None
    declined = cli("schedule", "delete", "gone", input="n\n", expect=1)
    assert "delete schedule 'gone'" in declined.output and "nothing done" in declined.output
    assert get(store, "gone") is not None
    accepted = cli("schedule", "delete", "gone", input="y\n")
    assert "schedule gone deleted" in accepted.output
    assert get(store, "gone") is None
    assert "Schedules: 3" in cli("schedule", "list").output

"""The Deck's schedules API through httpx against the ASGI app, on both backends (a SQLite file
and a private PostgreSQL schema): the list and detail shapes, what each operator action changes
in storage, the admin role and CSRF, bad input answered with 4xx naming the field, and the audit
lines."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from tests.conftest import Store
from tests.ops.test_events import captured, only

from chokaq.app import App
from chokaq.logs import Event

from .conftest import Client, csrf, declared


@pytest.fixture
async def app(store: Store) -> AsyncIterator[App]:
    chokaq_app = App(store.url, schema=store.schema, auto_migrate=True)
    await chokaq_app.open()
    await chokaq_app.backend.schedules_declare(
        [
            declared("nightly", expires_after_seconds=900),
            declared("tick", cron=None, every_seconds=60, timezone="UTC"),
        ]
    )
    yield chokaq_app
    await chokaq_app.close()


def path(name: str, action: str = "") -> str:
    return f"/api/schedules/{quote(name, safe='')}" + (f"/{action}" if action else "")


async def test_the_list_shows_timing_next_and_last_run_and_lag(app: App, client: Client) -> None:
    # A schedule last declared ten minutes ago (its worker stopped) whose slots fell due since.
    ago = datetime.now(UTC) - timedelta(minutes=10)
    await app.backend.schedules_declare(
        [declared("late", cron=None, every_seconds=60, timezone="UTC")], now=ago
    )
    c = await client("bob")
    body = (await c.get("/api/schedules")).json()
    rows = {s["name"]: s for s in body["items"]}
    assert sorted(rows) == ["late", "nightly", "tick"]
    nightly = rows["nightly"]
    assert (nightly["type"], nightly["queue"], nightly["expression"]) == (
        "report",
        "reports",
        "0 7 * * *",
    )
    assert nightly["timezone"] == "Europe/Berlin" and nightly["kwargs"] == '{"full": true}'
    utc = datetime.fromisoformat(nightly["next_run_utc"].replace("Z", "+00:00"))
    local = datetime.fromisoformat(nightly["next_run_local"])
    assert nightly["next_run_utc"].endswith("Z") and utc == local and utc > datetime.now(UTC)
    assert local.strftime("%H:%M") == "07:00" and local.utcoffset() in (
        timedelta(hours=1),
        timedelta(hours=2),
    )
    assert (nightly["last_run_at"], nightly["last_job_id"], nightly["last_outcome"]) == (
        None,
        None,
        None,
    )
    assert nightly["paused"] is False and nightly["orphaned"] is False
    assert nightly["edited"] is False and nightly["edited_by"] is None
    assert nightly["declared"] == {
        "expression": "0 7 * * *",
        "cron": "0 7 * * *",
        "every_seconds": None,
        "timezone": "Europe/Berlin",
        "kwargs": '{"full": true}',
    }
    assert (nightly["misfire"], nightly["overlap"], nightly["lag_seconds"]) == ("latest", False, 0)
    assert rows["tick"]["expression"] == "every 60 s" and rows["tick"]["every_seconds"] == 60
    assert (nightly["expires_after_seconds"], rows["tick"]["expires_after_seconds"]) == (900, None)
    late = rows["late"]
    assert late["orphaned"] is True  # no running worker declared it in the last 60 s
    assert 9 * 60 - 1 <= late["lag_seconds"] <= 10 * 60 + 30


async def test_the_detail_holds_the_history_newest_first(app: App, client: Client) -> None:
    first = await app.backend.schedule_trigger("nightly", actor="ops")
    second = await app.backend.schedule_trigger("nightly", actor="ops2")
    c = await client("bob")
    detail = (await c.get(path("nightly"))).json()
    assert detail["name"] == "nightly" and detail["expression"] == "0 7 * * *"
    history = detail["history"]
    assert [(r["outcome"], r["job_id"], r["detail"]) for r in history] == [
        ("triggered", second, "triggered by ops2"),
        ("triggered", first, "triggered by ops"),
    ]
    assert history[0]["slot"].endswith("Z") and history[0]["recorded_at"]
    assert detail["last_job_id"] == second and detail["last_outcome"] == "pending"
    limited = (await c.get(path("nightly") + "?limit=1")).json()
    assert [r["job_id"] for r in limited["history"]] == [second]
    assert (await c.get(path("nightly") + "?limit=0")).status_code == 422


async def test_operator_actions_change_storage(app: App, client: Client) -> None:
    backend = app.backend
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}

    r = await c.post(path("nightly", "pause"), headers=h)
    assert r.status_code == 200 and r.json()["paused"] is True
    stored = await backend.schedule_get("nightly")
    assert stored is not None and stored.paused and stored.last_modified_by == "alice"

    r = await c.post(path("nightly", "resume"), headers=h)
    assert r.status_code == 200 and r.json()["paused"] is False
    stored = await backend.schedule_get("nightly")
    assert stored is not None and not stored.paused

    r = await c.post(path("nightly", "trigger"), headers=h)
    assert r.status_code == 200
    job_id = r.json()["job_id"]
    job = await backend.job_get(job_id)
    assert job is not None and job.type == "report" and job.queue == "reports"
    assert job.created_by == "schedule:nightly" and json.loads(job.payload) == {"full": True}
    [record] = await backend.schedule_history("nightly")
    assert (record.outcome, record.job_id, record.detail) == (
        "triggered",
        job_id,
        "triggered by alice",
    )

    edit = {"cron": "30 6 * * 1-5", "timezone": "America/New_York", "kwargs": {"full": False}}
    r = await c.post(path("nightly", "edit"), json=edit, headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["expression"] == "30 6 * * 1-5" and body["edited"] is True
    assert body["edited_by"] == "alice" and body["declared"]["expression"] == "0 7 * * *"
    stored = await backend.schedule_get("nightly")
    assert stored is not None
    assert (stored.cron, stored.timezone, stored.edited_by) == (
        "30 6 * * 1-5",
        "America/New_York",
        "alice",
    )
    assert json.loads(stored.kwargs) == {"full": False}
    assert stored.next_slot is not None and stored.next_slot.minute == 30

    r = await c.post(path("nightly", "edit"), json={"every_seconds": 300}, headers=h)
    assert r.status_code == 200 and r.json()["expression"] == "every 300 s"
    stored = await backend.schedule_get("nightly")
    assert stored is not None and (stored.cron, stored.every_seconds) == (None, 300)

    r = await c.post(path("nightly", "reset"), headers=h)
    assert r.status_code == 200 and r.json()["edited"] is False
    stored = await backend.schedule_get("nightly")
    assert stored is not None
    assert (stored.cron, stored.every_seconds, stored.timezone) == (
        "0 7 * * *",
        None,
        "Europe/Berlin",
    )
    assert stored.kwargs == '{"full": true}' and stored.edited_by is None
    assert stored.last_modified_by == "alice"


async def test_readonly_and_forged_requests_change_nothing(app: App, client: Client) -> None:
    backend = app.backend
    before = await backend.schedule_get("nightly")
    assert before is not None
    readonly = await client("bob")
    admin = await client("alice")
    for action, body in (
        ("pause", None),
        ("resume", None),
        ("trigger", None),
        ("edit", {"cron": "* * * * *"}),
        ("reset", None),
    ):
        r = await readonly.post(
            path("nightly", action), json=body, headers={"x-csrf-token": csrf(readonly)}
        )
        assert r.status_code == 403 and "admin" in r.json()["error"], action
        r = await admin.post(path("nightly", action), json=body)  # no CSRF header
        assert r.status_code == 403 and "CSRF" in r.json()["error"], action
    after = await backend.schedule_get("nightly")
    assert after is not None and after.revision == before.revision and not after.paused
    assert after.edited_by is None and after.last_modified_by is None
    assert await backend.schedule_history("nightly") == []
    assert (await backend.stats_summary()).pending == 0
    page = (await readonly.get("/")).text
    for control in ("sch-pause", "sch-trigger", "sch-edit", "sch-reset", "sch-form"):
        assert control not in page


BAD_EDITS: list[tuple[Any, str, str]] = [
    ({"cron": "61 * * * *"}, "cron", "not a valid cron"),
    ({"cron": "* * *"}, "cron", "5 fields"),
    ({"cron": ""}, "cron", "cron expression"),
    ({"cron": "* * * * *", "every_seconds": 60}, "cron", "not both"),
    ({"every_seconds": 0.5}, "every_seconds", "between 1"),
    ({"every_seconds": "often"}, "every_seconds", "number of seconds"),
    ({"timezone": "Mars/Base"}, "timezone", "IANA"),
    ({"timezone": 7}, "timezone", "IANA"),
    ({"kwargs": [1, 2]}, "kwargs", "JSON object"),
    ({"kwargs": '{"full": false}'}, "kwargs", "JSON object"),
    ({"kwargs": {"blob": "x" * 2_000_000}}, "kwargs", "at most"),
    ({}, "cron", "nothing to change"),
]


async def test_bad_edits_name_the_field_and_change_nothing(app: App, client: Client) -> None:
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    for body, field, reason in BAD_EDITS:
        r = await c.post(path("nightly", "edit"), json=body, headers=h)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["field"] == field and reason in r.json()["error"], (body, r.text)
    r = await c.post(
        path("nightly", "edit"),
        content="{not json",
        headers={**h, "content-type": "application/json"},
    )
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    stored = await app.backend.schedule_get("nightly")
    assert stored is not None and stored.revision == 1 and stored.edited_by is None
    assert (stored.cron, stored.timezone, stored.kwargs) == (
        "0 7 * * *",
        "Europe/Berlin",
        '{"full": true}',
    )


async def test_an_unknown_schedule_is_404(app: App, client: Client) -> None:
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.get(path("nope"))
    assert r.status_code == 404 and "nope" in r.json()["error"]
    for action, body in (
        ("pause", None),
        ("resume", None),
        ("trigger", None),
        ("edit", {"cron": "* * * * *"}),
        ("reset", None),
    ):
        r = await c.post(path("nope", action), json=body, headers=h)
        assert r.status_code == 404 and "nope" in r.json()["error"], action
    assert (await app.backend.stats_summary()).pending == 0


async def test_a_name_with_a_slash_and_markup_is_one_path_segment(app: App, client: Client) -> None:
    name = "reports/daily <img src=x onerror=alert(1)>"
    await app.backend.schedules_declare([declared(name)])
    c = await client("alice")
    detail = await c.get(path(name))
    assert detail.status_code == 200 and detail.json()["name"] == name
    assert detail.headers["content-type"].startswith("application/json")
    r = await c.post(path(name, "pause"), headers={"x-csrf-token": csrf(c)})
    assert r.status_code == 200 and r.json()["name"] == name
    stored = await app.backend.schedule_get(name)
    assert stored is not None and stored.paused
    other = await app.backend.schedule_get("nightly")
    assert other is not None and not other.paused


async def test_every_action_is_audited_with_its_actor(app: App, client: Client) -> None:
    admin = await client("alice")
    h = {"x-csrf-token": csrf(admin)}
    with captured() as lines:
        for action in ("pause", "resume", "trigger", "reset"):
            assert (await admin.post(path("nightly", action), headers=h)).status_code == 200
        r = await admin.post(
            path("nightly", "edit"),
            json={"cron": "15 5 * * *", "kwargs": {"secret": "k-4242"}},
            headers=h,
        )
        assert r.status_code == 200
    for action in ("pause", "resume", "trigger", "reset", "edit"):
        line = only(lines, Event.ADMIN_COMPLETED, action=f"schedules.{action}")
        assert (line["actor"], line["target"], line["rows"]) == ("alice", "nightly", 1)
    assert only(lines, Event.ADMIN_COMPLETED, action="schedules.edit")["fields"] == "cron,kwargs"
    assert "k-4242" not in repr(lines)  # the audit names the fields, never the kwargs
    readonly = await client("bob")
    with captured() as lines:
        r = await readonly.post(
            path("nightly", "trigger"), headers={"x-csrf-token": csrf(readonly)}
        )
        assert r.status_code == 403
        r = await admin.post(path("nightly", "edit"), json={"timezone": "Nowhere"}, headers=h)
        assert r.status_code == 422
    refused = only(lines, Event.ADMIN_REJECTED, action="schedules.trigger")
    assert (refused["actor"], refused["status"]) == ("bob", 403)
    invalid = only(lines, Event.ADMIN_REJECTED, action="schedules.edit")
    assert (invalid["actor"], invalid["status"]) == ("alice", 422)
    assert "timezone" in invalid["reason"]

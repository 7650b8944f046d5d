"""The Deck's bulk actions through its JSON API (httpx against the ASGI app): "all matching the
filter" on Active (cancel) and Archive (requeue as new, delete) act on exactly the previewed set,
need the pinned filter and the typed word, name a bad cap or filter field, are admin-only with
CSRF and audited with their actor; run-now makes a delayed job due and refuses any other with
its state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from tests.ops.test_events import captured, only

from chokaq.app import App
from chokaq.logs import Event
from chokaq.models import JobFilter, JobStatus, Pillar, SucceedMove

from .conftest import Client, csrf


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def _archived(app: App, n: int, queue: str = "reports") -> list[str]:
    """``n`` jobs run and succeeded the way a worker would (fetch, then a succeed move)."""
    ids = [str(await app.enqueue_raw("report", '{"m":1}', queue=queue)) for _ in range(n)]
    claimed = await app.backend.jobs_fetch(worker_id="w-test", limit=n, queues=[queue], start=True)
    await app.backend.jobs_finalize(moves=[SucceedMove(c.lease, 0.1) for c in claimed])
    return ids


async def test_cancel_all_matching_acts_on_the_preview_and_asks_running_jobs(
    app: App, client: Client
) -> None:
    pending = [str(await app.enqueue_raw("mail", "{}", queue="mail")) for _ in range(3)]
    [running] = await app.backend.jobs_fetch(
        worker_id="w-test", limit=1, queues=["mail"], start=True
    )
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    pv = (await c.post("/api/jobs/preview", json={"filter": {"queue": "mail"}, "cap": 100})).json()
    assert (pv["matched"], pv["will_affect"], pv["cap"]) == (3, 3, 100)
    assert pv["filter"]["until"] is not None and set(pv["sample_ids"]) == set(pending)
    late = [str(await app.enqueue_raw("mail", "{}", queue="mail")) for _ in range(2)]

    body = {"filter": pv["filter"], "cap": 100}
    r = await c.post("/api/jobs/cancel-by-filter", json=body, headers=h)
    assert r.status_code == 422 and r.json()["field"] == "confirm" and "CANCEL" in r.json()["error"]
    unpinned = {"filter": {"queue": "mail"}, "cap": 100, "confirm": "CANCEL"}
    r = await c.post("/api/jobs/cancel-by-filter", json=unpinned, headers=h)
    assert r.status_code == 422 and r.json()["field"] == "filter.until"
    with captured() as lines:
        r = await c.post(
            "/api/jobs/cancel-by-filter", json={**body, "confirm": "CANCEL"}, headers=h
        )
    assert r.status_code == 200, r.text
    done = r.json()
    assert done["requested"] == [running.id] and done["affected"] == 3
    assert sorted(done["cancelled"]) == sorted(set(pending) - {running.id})
    line = only(lines, Event.ADMIN_COMPLETED, action="jobs.cancel_by_filter")
    assert (line["actor"], line["rows"], line["cap"]) == ("alice", 3, 100)
    assert "queue=mail" in line["target"]
    for job_id in late:
        view = await app.backend.job_get(job_id)
        assert view is not None and view.status is JobStatus.PENDING
    view = await app.backend.job_get(running.id)
    assert view is not None and view.cancelled_by == "alice" and view.cancel_requested_at


async def test_archive_requeue_as_new_and_delete_act_on_the_preview(
    app: App, client: Client
) -> None:
    old = await _archived(app, 3)
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    pv = (
        await c.post("/api/archive/preview", json={"filter": {"queue": "reports"}, "cap": 10})
    ).json()
    assert (pv["matched"], pv["will_affect"]) == (3, 3)
    later = await _archived(app, 1)  # finished after the preview
    body = {"filter": pv["filter"], "cap": 10}
    with captured() as lines:
        r = await c.post("/api/archive/requeue-by-filter", json=body, headers=h)
    assert r.status_code == 200, r.text  # fewer than 25: no typed word needed
    made = r.json()["requeued"]
    assert sorted(m["archived_id"] for m in made) == sorted(old)
    assert only(lines, Event.ADMIN_COMPLETED, action="archive.requeue_by_filter")["rows"] == 3
    for pair in made:
        new = await app.backend.job_get(pair["new_id"])
        assert new is not None and new.pillar is Pillar.HOT
        assert (new.created_by, new.last_modified_by) == (f"requeue:{pair['archived_id']}", "alice")
    summary = await app.backend.stats_summary()

    r = await c.post("/api/archive/delete-by-filter", json=body, headers=h)
    assert r.status_code == 422 and "DELETE" in r.json()["error"]
    with captured() as lines:
        r = await c.post(
            "/api/archive/delete-by-filter", json={**body, "confirm": "DELETE"}, headers=h
        )
    assert r.status_code == 200 and sorted(r.json()["ids"]) == sorted(old)
    line = only(lines, Event.ADMIN_COMPLETED, action="archive.delete_by_filter")
    assert (line["actor"], line["rows"]) == ("alice", 3)
    left = await app.backend.jobs_page(pillar=Pillar.ARCHIVE, filter=JobFilter(queue="reports"))
    assert [j.id for j in left.items] == later
    after = await app.backend.stats_summary()
    assert after.succeeded_total == summary.succeeded_total == 4


async def test_requeue_of_25_or_more_needs_the_typed_word(app: App, client: Client) -> None:
    await _archived(app, 25)
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    pv = (await c.post("/api/archive/preview", json={"filter": {}, "cap": 100})).json()
    body = {"filter": pv["filter"], "cap": 100}
    r = await c.post("/api/archive/requeue-by-filter", json=body, headers=h)
    assert r.status_code == 422 and "REQUEUE" in r.json()["error"]
    r = await c.post(
        "/api/archive/requeue-by-filter", json={**body, "confirm": "REQUEUE"}, headers=h
    )
    assert r.json()["affected"] == 25


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/jobs/preview", {"filter": {}, "cap": 0}, "cap"),
        ("/api/jobs/preview", {"filter": {}, "cap": 10_001}, "cap"),
        ("/api/archive/preview", {"filter": {}, "cap": "many"}, "cap"),
        ("/api/archive/preview", {"filter": [], "cap": 5}, "filter"),
        ("/api/archive/preview", {"filter": {"status": "pending"}}, "filter.status"),
        ("/api/jobs/preview", {"filter": {"reason": "timeout"}}, "filter.failure_reason"),
        ("/api/archive/delete-by-filter", {"filter": {}, "confirm": "DELETE"}, "filter.until"),
        ("/api/jobs/run-now", {"ids": []}, "ids"),
        ("/api/jobs/run-now", {"ids": ["nope"]}, "ids[0]"),
    ],
)
async def test_bad_input_is_refused_naming_the_field(
    app: App, client: Client, path: str, body: dict[str, object], field: str
) -> None:
    c = await client("alice")
    r = await c.post(path, json=body, headers={"x-csrf-token": csrf(c)})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


async def test_bulk_actions_are_admin_only_with_csrf(app: App, client: Client) -> None:
    [job] = await _archived(app, 1)
    delayed = str(await app.enqueue_raw("later", "{}", delay_seconds=3600))
    readonly, admin = await client("bob"), await client("alice")
    pv = (await readonly.post("/api/archive/preview", json={"filter": {}})).json()
    assert pv["matched"] == 1  # a preview is a read: the read-only role may look
    assert (await readonly.post("/api/jobs/preview", json={"filter": {}})).status_code == 200
    actions = [
        ("/api/jobs/cancel-by-filter", {"filter": pv["filter"], "confirm": "CANCEL"}),
        ("/api/archive/requeue-by-filter", {"filter": pv["filter"], "confirm": "REQUEUE"}),
        ("/api/archive/delete-by-filter", {"filter": pv["filter"], "confirm": "DELETE"}),
        ("/api/jobs/run-now", {"ids": [delayed]}),
    ]
    for path, body in actions:
        r = await readonly.post(path, json=body, headers={"x-csrf-token": csrf(readonly)})
        assert r.status_code == 403 and "admin" in r.json()["error"], path
        r = await admin.post(path, json=body)  # no CSRF header
        assert r.status_code == 403 and "CSRF" in r.json()["error"], path
    kept = await app.backend.job_get(job)
    assert kept is not None and kept.pillar is Pillar.ARCHIVE
    view = await app.backend.job_get(delayed)
    assert view is not None and view.scheduled_at is not None
    assert view.scheduled_at > datetime.now(UTC) + timedelta(minutes=30)


async def test_run_now_makes_a_delayed_job_due_and_refuses_others_with_a_reason(
    app: App, client: Client
) -> None:
    delayed = [str(await app.enqueue_raw("later", "{}", delay_seconds=3600)) for _ in range(2)]
    due = str(await app.enqueue_raw("later", "{}"))
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    with captured() as lines:
        r = await c.post("/api/jobs/run-now", json={"ids": [delayed[0]]}, headers=h)
    assert r.status_code == 200 and r.json()["moved"] == [delayed[0]]
    line = only(lines, Event.ADMIN_COMPLETED, action="jobs.run_now")
    assert (line["actor"], line["rows"]) == ("alice", 1)
    view = await app.backend.job_get(delayed[0])
    assert view is not None and view.scheduled_at is not None
    assert view.scheduled_at <= datetime.now(UTC) and view.last_modified_by == "alice"
    again = await c.post("/api/jobs/run-now", json={"ids": [delayed[0]]}, headers=h)
    assert again.status_code == 409
    assert (
        "is pending" in again.json()["error"] and "scheduled in the future" in again.json()["error"]
    )
    mixed = await c.post("/api/jobs/run-now", json={"ids": [delayed[1], due]}, headers=h)
    assert mixed.json()["moved"] == [delayed[1]] and mixed.json()["refused"] == [due]
    many = [str(await app.enqueue_raw("later", "{}", delay_seconds=3600)) for _ in range(25)]
    r = await c.post("/api/jobs/run-now", json={"ids": many}, headers=h)
    assert r.status_code == 422 and "RUN" in r.json()["error"]
    r = await c.post("/api/jobs/run-now", json={"ids": many, "confirm": "RUN"}, headers=h)
    assert len(r.json()["moved"]) == 25

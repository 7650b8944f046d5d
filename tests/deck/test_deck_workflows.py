"""The Deck's results and workflows API through httpx against the ASGI app, on both backends (a
SQLite file and a private PostgreSQL schema): the inspector's view of a job (state, result,
parents, children, workflow), the blocked and waiting filters, the waiting and blocked counts
per queue, the workflow view, and cancelling a workflow (admin only, typed confirmation, CSRF,
audited), with bad ids answered by 4xx and a reason."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.conftest import Store
from tests.ops.test_events import captured, only

from chokaq.app import App
from chokaq.logs import Event
from chokaq.models import FailureReason, Pillar, SucceedMove

from .conftest import Client, csrf, diamond

UNKNOWN = "01900000-0000-7000-8000-000000000000"


@pytest.fixture
async def app(store: Store) -> AsyncIterator[App]:
    chokaq_app = App(store.url, schema=store.schema, auto_migrate=True)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


def by_id(links: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {link["id"]: link for link in links}


async def test_the_inspector_shows_state_result_and_relatives(app: App, client: Client) -> None:
    ids = await diamond(app, result='{"total": 3, "note": "<b>x</b>"}')
    c = await client("bob")

    d = (await c.get(f"/api/jobs/{ids['d']}")).json()
    assert (d["pillar"], d["status"], d["state"]) == ("hot", "waiting", "blocked")
    assert d["workflow_id"] == ids["a"] and d["parents_left"] == 1 and d["children"] == []
    assert by_id(d["parents"]) == {
        ids["b"]: {
            "id": ids["b"],
            "type": "step",
            "state": "failed",
            "failure_reason": "fatal_error",
            "any_outcome": False,
        },
        ids["c"]: {
            "id": ids["c"],
            "type": "step",
            "state": "succeeded",
            "failure_reason": None,
            "any_outcome": False,
        },
    }
    assert d["after_outcome"] == "success"
    assert d["relatives_limit"] == 1000

    a = (await c.get(f"/api/jobs/{ids['a']}")).json()
    assert (a["pillar"], a["state"], a["workflow_id"]) == ("archive", "succeeded", ids["a"])
    assert a["result"] == '{"total": 3, "note": "<b>x</b>"}' and a["result_error"] is None
    assert a["parents"] == []
    assert {k: v["state"] for k, v in by_id(a["children"]).items()} == {
        ids["b"]: "failed",
        ids["c"]: "succeeded",
    }

    # The failed job's waiting child is blocked by it, and says so.
    b = (await c.get(f"/api/jobs/{ids['b']}")).json()
    assert (b["state"], b["failure_reason"], b["error"]) == (
        "failed",
        "fatal_error",
        "ValueError: b broke",
    )
    assert [(k["id"], k["state"]) for k in b["children"]] == [(ids["d"], "blocked")]

    # A job outside any workflow, and a result that was not kept.
    alone = await app.enqueue_raw("solo", {}, queue="solo")
    view = (await c.get(f"/api/jobs/{alone}")).json()
    assert (view["state"], view["workflow_id"], view["parents"], view["children"]) == (
        "pending",
        None,
        [],
        [],
    )
    [claimed] = await app.backend.jobs_fetch(worker_id="w", limit=1, queues=["solo"], start=True)
    too_big = "the return value is 2000000 bytes of JSON; at most 1048576 are kept"
    await app.backend.jobs_finalize(
        moves=[SucceedMove(claimed.lease, 0.01, result=None, result_error=too_big)]
    )
    view = (await c.get(f"/api/jobs/{alone}")).json()
    assert (view["state"], view["result"], view["result_error"]) == ("succeeded", None, too_big)


async def test_the_listing_filters_blocked_and_waiting_jobs(app: App, client: Client) -> None:
    ids = await diamond(app, c_runs=False)  # c pending, d waiting on it and on the failed b
    first = app.raw("step", {}, queue="other")
    then = app.raw("step", {}, queue="other", after=[first])
    await app.enqueue_many([first, then])
    c = await client("bob")

    async def listed(query: str) -> dict[str, str]:
        r = await c.get("/api/jobs?source=active&" + query)
        assert r.status_code == 200, r.text
        return {j["id"]: j["state"] for j in r.json()["items"]}

    assert await listed("blocked=true") == {ids["d"]: "blocked"}
    assert await listed("status=waiting") == {ids["d"]: "waiting", then.id: "waiting"}
    assert await listed("blocked=false") == {
        ids["c"]: "pending",
        first.id: "pending",
        then.id: "waiting",
    }
    assert await listed("status=waiting&blocked=false&queue=other") == {then.id: "waiting"}

    for query, field in (
        ("source=active&blocked=maybe", "blocked"),
        ("source=dlq&blocked=true", "blocked"),
        ("source=archive&blocked=false", "blocked"),
        ("source=active&status=blocked", "status"),
    ):
        r = await c.get("/api/jobs?" + query)
        assert r.status_code == 422 and r.json()["field"] == field, (query, r.text)
        assert r.json()["error"]
    r = await c.post("/api/dlq/preview", json={"filter": {"blocked": True}, "cap": 10})
    assert r.status_code == 422 and r.json()["field"] == "filter.blocked"


async def test_the_queues_count_waiting_and_blocked_jobs(app: App, client: Client) -> None:
    await diamond(app, c_runs=False)
    first = app.raw("step", {}, queue="other")
    await app.enqueue_many([first, app.raw("step", {}, queue="other", after=[first])])
    c = await client("bob")
    snap = (await c.get("/api/overview")).json()
    queues = {q["name"]: q for q in snap["queues"]}
    assert (queues["wf"]["waiting"], queues["wf"]["blocked"]) == (1, 1)
    assert (queues["wf-side"]["pending"], queues["wf-side"]["waiting"]) == (1, 0)
    assert (queues["other"]["pending"], queues["other"]["waiting"]) == (1, 1)
    assert queues["other"]["blocked"] == 0
    assert snap["summary"]["waiting"] == 2


async def test_the_workflow_view_lists_every_job_by_depth(app: App, client: Client) -> None:
    ids = await diamond(app)
    c = await client("bob")
    r = await c.get(f"/api/workflows/{ids['a']}")
    assert r.status_code == 200, r.text
    wf = r.json()
    assert (wf["id"], wf["total"], wf["depth"], wf["finished"], wf["truncated"]) == (
        ids["a"],
        4,
        3,
        False,
        False,
    )
    jobs = {j["id"]: j for j in wf["jobs"]}
    assert (wf["jobs"][0]["id"], wf["jobs"][-1]["id"]) == (ids["a"], ids["d"])
    assert {n: (jobs[i]["depth"], jobs[i]["state"]) for n, i in ids.items()} == {
        "a": (0, "succeeded"),
        "b": (1, "failed"),
        "c": (1, "succeeded"),
        "d": (2, "blocked"),
    }
    assert sorted(jobs[ids["d"]]["parents"]) == sorted([ids["b"], ids["c"]])
    assert jobs[ids["b"]]["parents"] == [ids["a"]] and jobs[ids["a"]]["parents"] == []
    assert (jobs[ids["b"]]["failure_reason"], jobs[ids["b"]]["error"]) == (
        "fatal_error",
        "ValueError: b broke",
    )
    assert (jobs[ids["d"]]["type"], jobs[ids["d"]]["queue"]) == ("join", "wf")
    assert wf["counts"] == {"succeeded": 2, "failed": 1, "blocked": 1}

    cut = (await c.get(f"/api/workflows/{ids['a']}?limit=2")).json()
    assert (cut["total"], cut["truncated"], cut["finished"]) == (2, True, False)
    assert cut["jobs"][0]["id"] == ids["a"]

    member = await c.get(f"/api/workflows/{ids['d']}")  # a member's id is not the workflow's
    assert member.status_code == 404 and "first job" in member.json()["error"]
    for path, status, field in (
        (f"/api/workflows/{UNKNOWN}", 404, None),
        ("/api/workflows/not-a-uuid", 422, "id"),
        (f"/api/workflows/{ids['a'].upper()}", 422, "id"),
        (f"/api/workflows/{ids['a']}?limit=0", 422, "limit"),
        (f"/api/workflows/{ids['a']}?limit=10001", 422, "limit"),
        (f"/api/workflows/{ids['a']}?limit=many", 422, "limit"),
    ):
        r = await c.get(path)
        assert r.status_code == status and r.json()["error"], (path, r.text)
        assert r.json().get("field") == field, (path, r.text)


async def test_a_job_on_any_outcome_says_so_and_is_not_blocked(app: App, client: Client) -> None:
    ids = await diamond(app)  # b failed, c succeeded
    e = await app.enqueue_raw(
        "join", {"n": "e"}, queue="wf-any", after=[ids["b"], ids["c"]], after_outcome="any"
    )
    c = await client("bob")
    view = (await c.get(f"/api/jobs/{e}")).json()
    assert (view["state"], view["after_outcome"]) == ("pending", "any")
    assert {p["id"]: p["any_outcome"] for p in view["parents"]} == {ids["b"]: True, ids["c"]: True}
    wf = (await c.get(f"/api/workflows/{ids['a']}")).json()
    jobs = {j["id"]: j for j in wf["jobs"]}
    assert (jobs[e]["state"], jobs[e]["any_outcome"]) == ("pending", True)
    assert (jobs[ids["d"]]["state"], jobs[ids["d"]]["any_outcome"]) == ("blocked", False)


async def test_an_admin_cancels_a_workflow_and_it_is_audited(app: App, client: Client) -> None:
    ids = await diamond(app, c_runs=False)  # c pending, d blocked by b
    c = await client("alice")
    with captured() as lines:
        r = await c.post(
            f"/api/workflows/{ids['a']}/cancel",
            json={"confirm": "CANCEL"},
            headers={"x-csrf-token": csrf(c)},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert sorted(body["cancelled"]) == sorted([ids["c"], ids["d"]])
    assert (body["requested"], body["not_found"]) == ([], [])
    line = only(lines, Event.ADMIN_COMPLETED, action="workflows.cancel")
    assert (line["actor"], line["target"], line["rows"]) == ("alice", ids["a"], 2)

    d = await app.backend.job_get(ids["d"])
    assert d is not None and d.pillar is Pillar.DLQ
    assert d.failure_reason is FailureReason.DEPENDENCY_FAILED and d.cancelled_by == "alice"
    assert d.error is not None and ids["b"] in d.error
    side = await app.backend.job_get(ids["c"])
    assert side is not None and side.failure_reason is FailureReason.CANCELLED
    assert side.cancelled_by == "alice"

    wf = (await c.get(f"/api/workflows/{ids['a']}")).json()
    assert wf["finished"] is True and wf["counts"] == {"succeeded": 1, "failed": 3}
    view = (await c.get(f"/api/jobs/{ids['d']}")).json()
    assert (view["state"], view["failure_reason"]) == ("failed", "dependency_failed")

    again = await c.post(
        f"/api/workflows/{ids['a']}/cancel",
        json={"confirm": "CANCEL"},
        headers={"x-csrf-token": csrf(c)},
    )
    assert again.status_code == 200 and again.json()["cancelled"] == []


async def test_cancelling_a_workflow_is_refused_without_role_csrf_word_or_workflow(
    app: App, client: Client
) -> None:
    ids = await diamond(app, c_runs=False)
    readonly = await client("bob")
    admin = await client("alice")
    path = f"/api/workflows/{ids['a']}/cancel"
    with captured() as lines:
        r = await readonly.post(
            path, json={"confirm": "CANCEL"}, headers={"x-csrf-token": csrf(readonly)}
        )
        assert r.status_code == 403 and "admin" in r.json()["error"]
    refused = only(lines, Event.ADMIN_REJECTED, action="workflows.cancel")
    assert (refused["actor"], refused["status"]) == ("bob", 403)

    r = await admin.post(path, json={"confirm": "CANCEL"})  # no CSRF header
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    h = {"x-csrf-token": csrf(admin)}
    for body in ({}, {"confirm": "cancel"}, {"confirm": True}):
        r = await admin.post(path, json=body, headers=h)
        assert r.status_code == 422 and r.json()["field"] == "confirm", (body, r.text)
    r = await admin.post(
        path, content="{not json", headers={**h, "content-type": "application/json"}
    )
    assert r.status_code == 400
    for bad, status in (
        (f"/api/workflows/{UNKNOWN}/cancel", 404),
        (f"/api/workflows/{ids['d']}/cancel", 404),
        ("/api/workflows/x'--/cancel", 422),
    ):
        r = await admin.post(bad, json={"confirm": "CANCEL"}, headers=h)
        assert r.status_code == status and r.json()["error"], (bad, r.text)
    assert (await admin.get(path)).status_code == 405

    # Nothing moved.
    d = (await admin.get(f"/api/jobs/{ids['d']}")).json()
    side = (await admin.get(f"/api/jobs/{ids['c']}")).json()
    assert (d["state"], side["state"]) == ("blocked", "pending")
    page = (await readonly.get("/")).text
    assert "wf-cancel" not in page


async def test_the_openapi_document_describes_the_workflow_routes(client: Client) -> None:
    c = await client("bob")
    doc = (await c.get("/api/openapi.json")).json()
    view = doc["paths"]["/api/workflows/{id}"]["get"]
    assert {p["name"] for p in view["parameters"]} == {"id", "limit"}
    cancel = doc["paths"]["/api/workflows/{id}/cancel"]["post"]
    assert "403" in cancel["responses"] and "CANCEL" in cancel["summary"]
    props = cancel["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert props == {"confirm": {"type": "string"}}
    jobs = doc["paths"]["/api/jobs"]["get"]
    assert "blocked" in {p["name"] for p in jobs["parameters"]}
    assert "dependency_failed" in doc["components"]["schemas"]["FailureReason"]["enum"]

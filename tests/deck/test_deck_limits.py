"""The Deck's limits API through httpx against the ASGI app, on both backends (a SQLite file
and a private PostgreSQL schema): the list with each limit's load and where its values come
from, what set and reset change in storage, the admin role and CSRF, bad input answered with
4xx naming the field and nothing written, the audit lines, and the jobs filter by partition."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.conftest import Store
from tests.ops.test_events import captured, only

from chokaq.app import App
from chokaq.logs import Event
from chokaq.models import NewJob, TypeLimit

from .conftest import Client, csrf


@pytest.fixture
async def app(store: Store) -> AsyncIterator[App]:
    chokaq_app = App(store.url, schema=store.schema, auto_migrate=True)

    # Registered here, as in the code the Deck is started with: the Deck knows its queue.
    @chokaq_app.job(queue="partners", rate_limit="10/s", partition_concurrency=1)
    async def sync() -> None: ...

    await chokaq_app.open()
    # What a worker serving these types records when it starts.
    await chokaq_app.backend.limits_declare(
        limits=[TypeLimit("sync", "10/s", 1), TypeLimit("report", "5/m")]
    )
    yield chokaq_app
    await chokaq_app.close()


def partitioned(partition: str | None) -> NewJob:
    # A NewJob, not ``app.raw``: raw drops its ``partition`` option (it never reaches NewJob).
    return NewJob(type="sync", queue="partners", partition=partition)


async def busy_partitions(app: App) -> None:
    """sync jobs in two partitions, "big" (4) and "small" (1); one of each is running."""
    await app.enqueue_many(
        [partitioned(p) for p, n in (("big", 4), ("small", 1)) for _ in range(n)]
    )
    claim = await app.backend.jobs_claim(worker_id="w-test", limit=10, start=True)
    assert sorted(j.partition for j in claim.jobs) == ["big", "small"]


def rows(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{r['scope']}:{r['name']}": r for r in body["items"]}


async def test_the_list_shows_each_limit_its_source_and_its_load(app: App, client: Client) -> None:
    await busy_partitions(app)
    await app.backend.limit_set(scope="queue", name="partners", rate_limit="2/s", actor="ops")
    c = await client("bob")
    listed = rows((await c.get("/api/limits")).json())
    assert sorted(listed) == ["queue:partners", "type:report", "type:sync"]
    sync = listed["type:sync"]
    assert (sync["queue"], sync["rate_limit"], sync["rate_source"]) == ("partners", "10/s", "code")
    assert (sync["partition_concurrency"], sync["concurrency_source"]) == (1, "code")
    # Three waiting in "big", all held: its one slot is taken; "small" has nothing waiting.
    assert (sync["pending"], sync["held"], sync["running"], sync["partitions"]) == (3, 3, 2, 2)
    assert sync["top_partitions"] == [
        {"partition": "big", "waiting": 3, "running": 1},
        {"partition": "small", "waiting": 0, "running": 1},
    ]
    assert sync["current_rate"] == pytest.approx(0.2)  # two starts over the last 10 s
    report = listed["type:report"]
    assert report["queue"] is None  # not registered in the Deck's app: not known
    assert (report["rate_limit"], report["partition_concurrency"]) == ("5/m", None)
    assert (report["concurrency_source"], report["limited"]) == (None, True)
    queue = listed["queue:partners"]
    assert (queue["rate_limit"], queue["rate_source"], queue["last_modified_by"]) == (
        "2/s",
        "operator",
        "ops",
    )
    # The live snapshot carries the same rows, and the queue table its rate.
    snap = (await c.get("/api/overview")).json()
    assert rows({"items": snap["limits"]}).keys() == listed.keys()
    [partners] = [q for q in snap["queues"] if q["name"] == "partners"]
    assert partners["rate_limit"] == "2/s"


async def test_an_admin_sets_and_resets_limits_and_storage_follows(
    app: App, client: Client
) -> None:
    backend = app.backend
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}

    async def stored(key: str) -> Any:
        return {f"{i.scope}:{i.name}": i for i in await backend.limits_list()}.get(key)

    r = await c.post(
        "/api/limits/set", json={"scope": "type", "name": "sync", "rate_limit": "5/m"}, headers=h
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["rate_limit"], body["rate_source"], body["declared_rate_limit"]) == (
        "5/m",
        "operator",
        "10/s",
    )
    assert body["concurrency_source"] == "code" and body["last_modified_by"] == "alice"
    info = await stored("type:sync")
    assert (info.rate_limit, info.rate_set, info.concurrency_set) == ("5/m", True, False)

    r = await c.post(
        "/api/limits/set",
        json={"scope": "type", "name": "sync", "partition_concurrency": 3},
        headers=h,
    )
    assert r.json()["partition_concurrency"] == 3 and r.json()["rate_limit"] == "5/m"
    r = await c.post(
        "/api/limits/set", json={"scope": "type", "name": "sync", "rate_limit": None}, headers=h
    )
    # The operator's "none" stands over the code's rate until a reset.
    assert (r.json()["rate_limit"], r.json()["rate_source"]) == (None, "operator")
    info = await stored("type:sync")
    assert (info.rate_limit, info.rate_set, info.partition_concurrency) == (None, True, 3)

    r = await c.post("/api/limits/reset", json={"scope": "type", "name": "sync"}, headers=h)
    assert r.status_code == 200
    assert (r.json()["rate_limit"], r.json()["partition_concurrency"]) == ("10/s", 1)
    assert r.json()["rate_source"] == r.json()["concurrency_source"] == "code"
    info = await stored("type:sync")
    assert not info.rate_set and not info.concurrency_set and info.last_modified_by == "alice"

    await app.enqueue_raw("sync", {}, queue="partners")  # the queue table lists it

    async def queue_rate() -> Any:
        snap = (await c.get("/api/overview")).json()
        [partners] = [q for q in snap["queues"] if q["name"] == "partners"]
        return partners["rate_limit"]

    r = await c.post(
        "/api/limits/set",
        json={"scope": "queue", "name": "partners", "rate_limit": "2/s"},
        headers=h,
    )
    assert r.json()["rate_limit"] == "2/s" and r.json()["rate_source"] == "operator"
    assert await queue_rate() == "2/s"  # the change is seen at once, not after the cache's age
    r = await c.post("/api/limits/reset", json={"scope": "queue", "name": "partners"}, headers=h)
    assert r.status_code == 200 and r.json()["rate_limit"] is None
    assert await stored("queue:partners") is None  # a queue's code declares nothing: gone
    assert await queue_rate() is None


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"scope": "job", "name": "sync", "rate_limit": "1/s"}, "scope", "'queue' or 'type'"),
    ({"name": "sync", "rate_limit": "1/s"}, "scope", "'queue' or 'type'"),
    ({"scope": "type", "rate_limit": "1/s"}, "name", "must be a string"),
    ({"scope": "type", "name": " ", "rate_limit": "1/s"}, "name", "blank"),
    ({"scope": "type", "name": "sync", "rate_limit": "10"}, "rate_limit", "N/s, N/m or N/h"),
    ({"scope": "type", "name": "sync", "rate_limit": "10/d"}, "rate_limit", "is not a rate"),
    ({"scope": "type", "name": "sync", "rate_limit": "0/s"}, "rate_limit", "out of range"),
    ({"scope": "type", "name": "sync", "rate_limit": "1000000/s"}, "rate_limit", "out of range"),
    ({"scope": "type", "name": "sync", "rate_limit": ""}, "rate_limit", "is not a rate"),
    ({"scope": "type", "name": "sync", "rate_limit": 10}, "rate_limit", "such as '10/s'"),
    (
        {"scope": "type", "name": "sync", "partition_concurrency": 0},
        "partition_concurrency",
        "1 and 10000",
    ),
    (
        {"scope": "type", "name": "sync", "partition_concurrency": 10_001},
        "partition_concurrency",
        "1 and 10000",
    ),
    (
        {"scope": "type", "name": "sync", "partition_concurrency": "3"},
        "partition_concurrency",
        "integer",
    ),
    (
        {"scope": "type", "name": "sync", "partition_concurrency": True},
        "partition_concurrency",
        "integer",
    ),
    (
        {"scope": "queue", "name": "partners", "partition_concurrency": 2},
        "partition_concurrency",
        "job types only",
    ),
    ({"scope": "type", "name": "sync"}, "rate_limit", "nothing to change"),
    # A good value beside a bad one: nothing of the request is written.
    (
        {"scope": "type", "name": "sync", "rate_limit": "1/h", "partition_concurrency": 0},
        "partition_concurrency",
        "1 and 10000",
    ),
    (
        {"scope": "queue", "name": "new", "rate_limit": "1/h", "partition_concurrency": 1},
        "partition_concurrency",
        "job types only",
    ),
]


async def test_bad_input_is_422_naming_the_field_and_changes_nothing(
    app: App, client: Client
) -> None:
    before = await app.backend.limits_list()
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    for body, field, reason in BAD:
        r = await c.post("/api/limits/set", json=body, headers=h)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["field"] == field and reason in r.json()["error"], (body, r.text)
    r = await c.post(
        "/api/limits/set",
        content="{not json",
        headers={**h, "content-type": "application/json"},
    )
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    r = await c.post("/api/limits/reset", json={"scope": "type", "name": "nothing"}, headers=h)
    assert r.status_code == 404 and "nothing" in r.json()["error"]
    r = await c.post("/api/limits/reset", json={"scope": "job", "name": "sync"}, headers=h)
    assert r.status_code == 422 and r.json()["field"] == "scope"
    assert await app.backend.limits_list() == before


async def test_readonly_and_forged_requests_change_nothing(app: App, client: Client) -> None:
    before = await app.backend.limits_list()
    readonly = await client("bob")
    admin = await client("alice")
    assert (await readonly.get("/api/limits")).status_code == 200
    for path, body in (
        ("/api/limits/set", {"scope": "type", "name": "sync", "rate_limit": "1/h"}),
        ("/api/limits/reset", {"scope": "type", "name": "sync"}),
    ):
        r = await readonly.post(path, json=body, headers={"x-csrf-token": csrf(readonly)})
        assert r.status_code == 403 and "admin" in r.json()["error"], path
        r = await admin.post(path, json=body)  # no CSRF header
        assert r.status_code == 403 and "CSRF" in r.json()["error"], path
    assert await app.backend.limits_list() == before


async def test_every_limit_action_is_audited_with_its_actor(app: App, client: Client) -> None:
    admin = await client("alice")
    h = {"x-csrf-token": csrf(admin)}
    with captured() as lines:
        r = await admin.post(
            "/api/limits/set",
            json={"scope": "type", "name": "sync", "rate_limit": "5/m", "partition_concurrency": 2},
            headers=h,
        )
        assert r.status_code == 200
        r = await admin.post("/api/limits/reset", json={"scope": "type", "name": "sync"}, headers=h)
        assert r.status_code == 200
    done = only(lines, Event.ADMIN_COMPLETED, action="limits.set")
    assert (done["actor"], done["target"], done["rows"], done["scope"]) == (
        "alice",
        "sync",
        1,
        "type",
    )
    assert (done["rate_limit"], done["partition_concurrency"]) == ("5/m", 2)
    reset = only(lines, Event.ADMIN_COMPLETED, action="limits.reset")
    assert (reset["actor"], reset["target"], reset["scope"]) == ("alice", "sync", "type")
    readonly = await client("bob")
    with captured() as lines:
        r = await readonly.post(
            "/api/limits/reset",
            json={"scope": "type", "name": "sync"},
            headers={"x-csrf-token": csrf(readonly)},
        )
        assert r.status_code == 403
        r = await admin.post(
            "/api/limits/set",
            json={"scope": "type", "name": "sync", "rate_limit": "fast"},
            headers=h,
        )
        assert r.status_code == 422
    refused = only(lines, Event.ADMIN_REJECTED, action="limits.reset")
    assert (refused["actor"], refused["status"]) == ("bob", 403)
    invalid = only(lines, Event.ADMIN_REJECTED, action="limits.set")
    assert (invalid["actor"], invalid["status"]) == ("alice", 422)
    assert "rate_limit" in invalid["reason"]


async def test_the_jobs_table_filters_by_partition(app: App, client: Client) -> None:
    evil = "<img src=x onerror=alert(1)>"
    ids = await app.enqueue_many([partitioned(p) for p in (evil, evil, "other", None)])
    mine = [str(i) for i in ids[:2]]
    c = await client("bob")
    page = (await c.get("/api/jobs", params={"partition": evil})).json()
    assert page["total"] == 2 and sorted(j["id"] for j in page["items"]) == sorted(mine)
    assert {j["partition"] for j in page["items"]} == {evil}
    assert (await c.get("/api/jobs")).json()["total"] == 4
    view = (await c.get(f"/api/jobs/{mine[0]}")).json()
    assert view["partition"] == evil
    r = await c.get("/api/jobs", params={"partition": "x" * 300})
    assert r.status_code == 422 and r.json()["field"] == "partition"
    preview = await c.post("/api/dlq/preview", json={"filter": {"partition": evil}, "cap": 10})
    assert preview.json()["filter"]["partition"] == evil


async def test_openapi_lists_the_limits_routes(client: Client) -> None:
    from chokaq.deck.limits import ROUTES

    c = await client("bob")
    doc = (await c.get("/api/openapi.json")).json()
    for route in ROUTES:
        op = doc["paths"][route.doc_path][route.method.lower()]
        assert ("403" in op["responses"]) == route.admin
    props = doc["paths"]["/api/limits/set"]["post"]["requestBody"]["content"]["application/json"]
    assert set(props["schema"]["properties"]) == {
        "scope",
        "name",
        "rate_limit",
        "partition_concurrency",
    }
    assert "partition" in [p["name"] for p in doc["paths"]["/api/jobs"]["get"]["parameters"]]

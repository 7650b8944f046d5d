"""The Deck's JSON API through httpx against the ASGI app (no browser): roles, CSRF,
validation answered with 4xx and a message, escaping, mounting and the OpenAPI document."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from chokaq.app import App
from chokaq.deck import Credentials, Principal, Role, create_deck
from chokaq.deck.serve import build_server, is_loopback
from chokaq.errors import ConfigurationError
from chokaq.models import FailMove, FailureReason, JobFilter, Pillar

from .conftest import USERS, Client, basic, csrf


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def dead_letter(
    app: App,
    n: int,
    *,
    error: str = "boom",
    reason: FailureReason = FailureReason.FATAL_ERROR,
    payload: str = '{"a":1}',
    queue: str = "default",
    type: str = "job",
) -> list[str]:
    """Put ``n`` jobs into the DLQ the way a worker would (fetch, then a fail move)."""
    backend = app.backend
    ids = [await app.enqueue_raw(type, payload, queue=queue) for _ in range(n)]
    claimed = await backend.jobs_fetch(worker_id="w-test", limit=n, queues=[queue], start=True)
    await backend.jobs_finalize(
        moves=[FailMove(lease=c.lease, reason=reason, error=error) for c in claimed]
    )
    return [str(i) for i in ids]


async def test_page_sets_csrf_cookie_and_security_headers(client: Client) -> None:
    c = await client("alice")
    r = await c.get("/")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-frame-options"] == "DENY"
    cookie = r.headers.get("set-cookie", "")
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert f'content="{csrf(c)}"' in r.text
    assert "onclick" not in r.text and "<script>" not in r.text.replace("<script src", "")


async def test_cookies_are_secure_behind_tls(app: App) -> None:
    deck = create_deck(app, credentials=Credentials(users=USERS))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=deck), base_url="https://deck.test"
    ) as c:
        page = await c.get("/", headers=basic("alice"))
        assert "secure" in page.headers["set-cookie"].lower()
        login = await c.post("/login", data={"username": "alice", "password": "alice-pw"})
        cookie = login.headers["set-cookie"].lower()
        assert "secure" in cookie and "httponly" in cookie and "samesite=strict" in cookie


async def test_unauthenticated_requests_are_refused(client: Client) -> None:
    c = await client(None)
    assert (await c.get("/api/overview")).status_code == 401
    page = await c.get("/")
    assert page.status_code == 303 and page.headers["location"].endswith("/login")
    assert (await c.get("/api/events")).status_code == 401
    wrong = await c.get(
        "/api/overview",
        headers={"authorization": "Basic " + base64.b64encode(b"alice:nope").decode()},
    )
    assert wrong.status_code == 401


async def test_login_form_sets_a_session_cookie(client: Client) -> None:
    c = await client(None)
    bad = await c.post("/login", data={"username": "alice", "password": "x"})
    assert bad.status_code == 401 and "Wrong credentials" in bad.text
    ok = await c.post("/login", data={"username": "bob", "password": "bob-pw"})
    assert ok.status_code == 303
    assert "httponly" in ok.headers["set-cookie"].lower()
    me = await c.get("/api/me")
    assert me.json() == {"name": "bob", "role": "readonly"}


async def test_readonly_reads_but_every_mutation_is_403(app: App, client: Client) -> None:
    [job] = await dead_letter(app, 1)
    c = await client("bob")
    assert (await c.get("/api/overview")).status_code == 200
    assert (await c.get(f"/api/jobs/{job}")).status_code == 200
    headers = {"x-csrf-token": csrf(c)}
    forged = [
        ("/api/jobs/cancel", {"ids": [job]}),
        ("/api/dlq/resurrect", {"ids": [job]}),
        ("/api/dlq/purge", {"ids": [job], "confirm": "PURGE"}),
        (f"/api/jobs/{job}/edit", {"payload": "{}"}),
        ("/api/dlq/purge-by-filter", {"filter": {}, "cap": 10, "confirm": "PURGE"}),
        ("/api/dlq/requeue-by-filter", {"filter": {}, "cap": 10}),
        ("/api/queues", {"queue": "default", "paused": True}),
        ("/api/circuits/close", {"key": "job"}),
        ("/api/workers/concurrency", {"worker_id": "w", "concurrency": 2}),
    ]
    for path, body in forged:
        r = await c.post(path, json=body, headers=headers)
        assert r.status_code == 403, path
        assert "admin" in r.json()["error"]
    assert (await app.backend.job_get(job)) is not None  # nothing happened
    page = (await c.get("/")).text
    for control in ("bulk-purge", "insp-purge", "ed-requeue", "preview-purge"):
        assert control not in page


async def test_mutation_without_csrf_token_is_refused(app: App, client: Client) -> None:
    [job] = await dead_letter(app, 1)
    c = await client("alice")
    body = {"ids": [job], "confirm": "PURGE"}
    r = await c.post("/api/dlq/purge", json=body)
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    r = await c.post("/api/dlq/purge", json=body, headers={"x-csrf-token": "forged"})
    assert r.status_code == 403
    assert (await app.backend.job_get(job)) is not None
    r = await c.post("/api/dlq/purge", json=body, headers={"x-csrf-token": csrf(c)})
    assert r.status_code == 200 and r.json()["deleted"] == [job]


async def test_bearer_token_needs_no_csrf(app: App, client: Client) -> None:
    [job] = await dead_letter(app, 1)
    c = await client(None)
    r = await c.post(
        "/api/dlq/resurrect", json={"ids": [job]}, headers={"authorization": "Bearer tok-admin"}
    )
    assert r.status_code == 200 and r.json()["moved"] == [job]
    view = await app.backend.job_get(job)
    assert view is not None and view.pillar is Pillar.HOT
    assert view.last_modified_by == "token-admin"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/api/jobs?source=nowhere", None, 422),
        ("GET", "/api/jobs?page_size=0", None, 422),
        ("GET", "/api/jobs?page=abc", None, 422),
        ("GET", "/api/jobs?sort=evil;drop", None, 422),
        ("GET", "/api/jobs?since=yesterday", None, 422),
        ("GET", "/api/jobs?since=2030-01-02T00:00:00Z&until=2030-01-01T00:00:00Z", None, 422),
        ("GET", "/api/jobs?reason=bogus", None, 422),
        ("GET", "/api/jobs?search=" + "x" * 1001, None, 422),
        ("GET", "/api/jobs/not-a-uuid", None, 422),
        ("GET", "/api/jobs/01900000-0000-7000-8000-000000000000", None, 404),
        ("GET", "/api/series?window=forever", None, 422),
        ("GET", "/api/nothing-here", None, 404),
        ("POST", "/api/jobs/cancel", "not json", 400),
        ("POST", "/api/jobs/cancel", [], 400),
        ("POST", "/api/jobs/cancel", {"ids": []}, 422),
        ("POST", "/api/jobs/cancel", {"ids": ["x"]}, 422),
        ("POST", "/api/jobs/cancel", {"ids": "abc"}, 422),
        ("POST", "/api/dlq/purge", {"ids": ["01900000-0000-7000-8000-000000000000"]}, 422),
        ("POST", "/api/dlq/preview", {"filter": {"reason": "nope"}}, 422),
        ("POST", "/api/dlq/preview", {"filter": {}, "cap": 0}, 422),
        ("POST", "/api/dlq/preview", {"filter": {"status": "pending"}}, 422),
        ("POST", "/api/dlq/purge-by-filter", {"filter": {}, "confirm": "PURGE"}, 422),
        ("POST", "/api/queues", {"queue": ""}, 422),
        ("POST", "/api/queues", {"queue": "q", "paused": "yes"}, 422),
        ("POST", "/api/queues", {"queue": "q", "max_workers": 0}, 422),
        ("POST", "/api/queues", {"queue": "q", "zombie_timeout_seconds": -1}, 422),
        ("POST", "/api/workers/concurrency", {"worker_id": "w", "concurrency": 0}, 422),
        ("POST", "/api/workers/concurrency", {"worker_id": "w", "concurrency": 5}, 404),
        ("POST", "/api/circuits/close", {"key": None}, 422),
        ("DELETE", "/api/jobs/cancel", None, 405),
    ],
)
async def test_bad_requests_get_4xx_with_a_message(
    client: Client, method: str, path: str, body: Any, status: int
) -> None:
    c = await client("alice")
    headers = {"x-csrf-token": csrf(c), "content-type": "application/json"}
    content = None if body is None else (body if isinstance(body, str) else json.dumps(body))
    r = await c.request(method, path, content=content, headers=headers)
    assert r.status_code == status, r.text
    assert r.json()["error"]


async def test_edit_validates_payload_on_the_server(app: App, client: Client) -> None:
    [job] = await dead_letter(app, 1)
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post(f"/api/jobs/{job}/edit", json={"payload": "{not json"}, headers=h)
    assert r.status_code == 422 and r.json()["field"] == "payload"
    r = await c.post(f"/api/jobs/{job}/edit", json={"priority": "high"}, headers=h)
    assert r.status_code == 422 and r.json()["field"] == "priority"
    r = await c.post(f"/api/jobs/{job}/edit", json={"tags": ["a,b"]}, headers=h)
    assert r.status_code == 422
    r = await c.post(
        f"/api/jobs/{job}/edit",
        json={"payload": '{"a":2}', "tags": ["fixed"], "priority": 7},
        headers=h,
    )
    assert r.status_code == 200
    view = await app.backend.job_get(job)
    assert view is not None and view.payload == '{"a":2}' and view.tags == ("fixed",)
    assert view.last_modified_by == "alice"


async def test_save_and_requeue_moves_the_repaired_job_back(app: App, client: Client) -> None:
    [job] = await dead_letter(app, 1, payload='{"amount":-5}')
    c = await client("alice")
    r = await c.post(
        f"/api/jobs/{job}/edit",
        json={"payload": '{"amount":5}', "priority": 3, "requeue": True},
        headers={"x-csrf-token": csrf(c)},
    )
    assert r.json() == {"saved": True, "requeued": True}
    view = await app.backend.job_get(job)
    assert view is not None and view.pillar is Pillar.HOT
    assert view.payload == '{"amount":5}' and view.priority == 3 and view.attempt_count == 0


async def test_cancel_records_the_operator(app: App, client: Client) -> None:
    job = await app.enqueue_raw("job", {})
    c = await client("alice")
    r = await c.post("/api/jobs/cancel", json={"ids": [job]}, headers={"x-csrf-token": csrf(c)})
    assert r.json()["cancelled"] == [job]
    view = await app.backend.job_get(job)
    assert view is not None and view.failure_reason is FailureReason.CANCELLED
    assert view.cancelled_by == "alice"


async def test_bulk_of_25_or_more_needs_typed_confirmation(app: App, client: Client) -> None:
    ids = await dead_letter(app, 25)
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post("/api/dlq/resurrect", json={"ids": ids}, headers=h)
    assert r.status_code == 422 and "RETRY" in r.json()["error"]
    r = await c.post("/api/dlq/resurrect", json={"ids": ids, "confirm": "RETRY"}, headers=h)
    assert len(r.json()["moved"]) == 25


async def test_purge_by_filter_removes_exactly_the_previewed_rows(app: App, client: Client) -> None:
    doomed = await dead_letter(app, 3, error="ValueError: card declined", queue="pay")
    keep = await dead_letter(app, 2, error="KeyError: sku", queue="pay")
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    pv = (
        await c.post(
            "/api/dlq/preview",
            json={
                "filter": {"queue": "pay", "search": "declined", "reason": "fatal_error"},
                "cap": 100,
            },
            headers=h,
        )
    ).json()
    assert pv["matched"] == 3 and pv["will_affect"] == 3 and set(pv["sample_ids"]) == set(doomed)
    late = await dead_letter(app, 1, error="ValueError: card declined", queue="pay")
    r = await c.post(
        "/api/dlq/purge-by-filter", json={"filter": pv["filter"], "cap": 100}, headers=h
    )
    assert r.status_code == 422  # no typed confirmation
    r = await c.post(
        "/api/dlq/purge-by-filter",
        json={"filter": pv["filter"], "cap": 100, "confirm": "PURGE"},
        headers=h,
    )
    assert sorted(r.json()["ids"]) == sorted(doomed)
    left = await app.backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(queue="pay"))
    assert sorted(j.id for j in left.items) == sorted(keep + late)


async def test_user_data_is_returned_as_data_and_the_page_escapes(app: App, client: Client) -> None:
    evil = "<script>alert(1)</script>"
    [job] = await dead_letter(app, 1, payload=json.dumps({"x": evil}), error=evil, queue=evil)
    c = await client("alice")
    view = (await c.get(f"/api/jobs/{job}")).json()
    assert view["queue"] == evil and json.loads(view["payload"]) == {"x": evil}
    assert (await c.get("/api/jobs")).headers["content-type"].startswith("application/json")
    # Server-rendered names are escaped by Jinja autoescape.
    page = await create_deck_page_with_user(app, name=evil)
    assert evil not in page and "&lt;script&gt;" in page


async def create_deck_page_with_user(app: App, *, name: str) -> str:
    deck = create_deck(app, authorizer=lambda request: Principal(name, Role.ADMIN))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=deck), base_url="http://deck.test"
    ) as c:
        return (await c.get("/")).text


async def test_overview_series_and_queues(app: App, client: Client) -> None:
    await dead_letter(app, 2, queue="mail")
    await app.enqueue_raw("job", {}, queue="mail")
    c = await client("bob")
    snap = (await c.get("/api/overview")).json()
    assert snap["summary"]["pending"] == 1 and snap["summary"]["failed_total"] == 2
    assert snap["throughput"]["failed_1m"] == 2
    [mail] = [q for q in snap["queues"] if q["name"] == "mail"]
    assert mail["pending"] == 1 and mail["failed_total"] == 2 and mail["lag_level"] == "ok"
    assert snap["top_errors"][0]["count"] == 2
    # The failures are seconds old: in the series' tail (the newest seconds, one by one).
    series = (await c.get("/api/series?window=hour")).json()
    failed = sum(series["points"]["failed"]) + sum(p["failed"] for p in series["tail"])
    assert series["width_seconds"] == 10 and failed == 2  # an hour in at most 600 bars
    assert (await c.get("/api/series?window=2w")).json()["width_seconds"] == 3600


async def test_overview_names_jobs_of_a_type_no_worker_has_a_handler_for(
    app: App, client: Client
) -> None:
    # A real worker that serves the queue but has no handler for the type releases the jobs.
    from chokaq import WorkerSettings

    job_ids = [await app.enqueue_raw("invoice.render", {}, queue="billing") for _ in range(3)]
    await app.enqueue_raw("other", {}, queue="billing")  # pending, never released: no notice
    worker_app = App(app.url, worker=WorkerSettings(queues=("*",), poll_interval_seconds=0.02))

    @worker_app.job(queue="billing")
    async def other() -> None: ...

    worker = worker_app.create_worker()
    task = asyncio.create_task(worker.run())
    try:
        for _ in range(500):
            views = [await app.backend.job_get(i) for i in job_ids]
            if all(v is not None and v.last_error for v in views):
                break
            await asyncio.sleep(0.02)
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=30)
    c = await client("bob")
    snap = (await c.get("/api/overview")).json()
    [notice] = snap["notices"]
    assert (notice["kind"], notice["queue"], notice["type"], notice["count"]) == (
        "no_handler",
        "billing",
        "invoice.render",
        3,
    )
    assert "3 pending jobs of type 'invoice.render'" in notice["message"]
    assert "no worker that claimed them has a handler" in notice["message"]


async def test_circuits_merge_worker_snapshots(app: App, client: Client) -> None:
    from chokaq.models import WorkerInfo

    now = datetime.now(UTC)
    for wid, state, failures in (("w1", "closed", 2), ("w2", "open", 5)):
        await app.backend.worker_beat(
            WorkerInfo(
                id=wid,
                hostname="h",
                pid=1,
                queues=(),
                concurrency=4,
                desired_concurrency=None,
                running=0,
                state="running",
                started_at=now,
                heartbeat_at=now,
                circuits=json.dumps(
                    [
                        {
                            "key": "charge",
                            "state": state,
                            "failures": failures,
                            "reset_in_seconds": 12.0 if state == "open" else None,
                        }
                    ]
                ),
            )
        )
    c = await client("alice")
    snap = (await c.get("/api/overview")).json()
    [charge] = snap["circuits"]
    assert sorted(charge.pop("workers")) == ["w1", "w2"]
    assert charge == {"key": "charge", "state": "open", "failures": 5, "reset_in_seconds": 12.0}
    h = {"x-csrf-token": csrf(c)}
    r = await c.post("/api/circuits/close", json={"key": "charge"}, headers=h)
    assert r.json()["workers_asked"] == 2
    r = await c.post(
        "/api/workers/concurrency", json={"worker_id": "w1", "concurrency": 3}, headers=h
    )
    assert r.json()["workers_asked"] == 1
    control = await app.backend.worker_beat(
        WorkerInfo(
            id="w1",
            hostname="h",
            pid=1,
            queues=(),
            concurrency=4,
            desired_concurrency=None,
            running=0,
            state="running",
            started_at=now,
            heartbeat_at=now,
        )
    )
    assert control.desired_concurrency == 3 and control.close_circuits == ("charge",)


async def test_queue_controls(app: App, client: Client) -> None:
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post("/api/queues", json={"queue": "mail", "paused": True}, headers=h)
    assert r.status_code == 404 and "create" in r.json()["error"]  # a typo is not a queue
    assert "mail" not in [q.name for q in await app.backend.queue_list()]
    r = await c.post(
        "/api/queues", json={"queue": "mail", "paused": True, "create": True}, headers=h
    )
    assert r.json()["paused"] is True
    r = await c.post("/api/queues", json={"queue": "mail", "active": False}, headers=h)
    assert r.json()["active"] is False
    r = await c.post(
        "/api/queues",
        json={"queue": "mail", "max_workers": 3, "zombie_timeout_seconds": 120},
        headers=h,
    )
    assert r.json()["max_workers"] == 3 and r.json()["zombie_timeout_seconds"] == 120
    r = await c.post("/api/queues", json={"queue": "mail", "max_workers": None}, headers=h)
    assert r.json()["max_workers"] is None and r.json()["zombie_timeout_seconds"] == 120


async def test_a_zombie_timeout_below_the_heartbeat_floor_is_refused(
    app: App, client: Client
) -> None:
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post(
        "/api/queues", json={"queue": "default", "zombie_timeout_seconds": 1}, headers=h
    )
    assert r.status_code == 422
    assert "zombie_timeout_seconds" in r.text and "heartbeat" in r.text
    [queue] = [q for q in await app.backend.queue_list() if q.name == "default"]
    assert queue.zombie_timeout_seconds is None


async def test_authorizer_may_be_async_and_return_a_role(app: App) -> None:
    async def authorizer(request: Request) -> Role | None:
        return {"a": Role.ADMIN, "r": Role.READONLY}.get(request.headers.get("x-who", ""))

    deck = create_deck(app, authorizer=authorizer)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=deck), base_url="http://deck.test"
    ) as c:
        assert (await c.get("/api/me")).status_code == 401
        assert (await c.get("/api/me", headers={"x-who": "r"})).json()["role"] == "readonly"
        assert (await c.get("/api/me", headers={"x-who": "a"})).json()["role"] == "admin"


async def test_mounts_under_a_prefix_in_a_host_app(app: App) -> None:
    async def home(request: Request) -> PlainTextResponse:
        return PlainTextResponse("host")

    deck = create_deck(app, authorizer=lambda request: Principal("ops", Role.ADMIN))
    host = Starlette(routes=[Route("/", home), Mount("/ops/chokaq", app=deck)])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=host), base_url="http://host.test"
    ) as c:
        assert (await c.get("/")).text == "host"
        page = await c.get("/ops/chokaq/")
        assert page.status_code == 200
        assert '<script type="module" src="/ops/chokaq/static/js/main.js">' in page.text
        assert 'content="/ops/chokaq"' in page.text
        assert "Path=/ops/chokaq/" in page.headers["set-cookie"]
        js = await c.get("/ops/chokaq/static/js/api.js")
        assert js.status_code == 200 and "EventSource" in js.text
        assert (await c.get("/ops/chokaq/api/me")).json() == {"name": "ops", "role": "admin"}
        doc = (await c.get("/ops/chokaq/api/openapi.json")).json()
        assert "/ops/chokaq/api/jobs" in doc["paths"]
        job = await app.enqueue_raw("job", {})
        r = await c.post(
            "/ops/chokaq/api/jobs/cancel",
            json={"ids": [job]},
            headers={"x-csrf-token": page.cookies["chokaq_deck_csrf"]},
        )
        assert r.json()["cancelled"] == [job]


async def test_openapi_lists_every_route_and_marks_admin_ones(client: Client) -> None:
    from chokaq.deck.app import ROUTES

    c = await client("bob")
    doc = (await c.get("/api/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    for route in ROUTES:
        op = doc["paths"][route.doc_path][route.method.lower()]
        assert ("403" in op["responses"]) == route.admin
    pause = doc["paths"]["/api/schedules/{name}/pause"]["post"]
    assert [p["name"] for p in pause["parameters"]] == ["name"]
    edit = doc["paths"]["/api/schedules/{name}/edit"]["post"]
    assert edit["requestBody"]["content"]["application/json"]["schema"]["properties"]["kwargs"] == {
        "type": "object"
    }


def test_refuses_to_bind_beyond_loopback_without_auth(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("CHOKAQ_DECK_TOKEN", "CHOKAQ_DECK_READONLY_TOKEN", "CHOKAQ_DECK_USERS"):
        monkeypatch.delenv(var, raising=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    with pytest.raises(ConfigurationError, match="refusing"):
        build_server(app, host="0.0.0.0", port=0)
    assert build_server(app, host="127.0.0.1", port=0) is not None
    monkeypatch.setenv("CHOKAQ_DECK_USERS", "alice:pw:admin,bob:pw2")
    assert build_server(app, host="0.0.0.0", port=0) is not None
    monkeypatch.setenv("CHOKAQ_DECK_USERS", "alice:pw:root")
    with pytest.raises(ConfigurationError, match="admin or readonly"):
        build_server(app, host="0.0.0.0", port=0)


async def test_event_stream_sends_a_snapshot(app: App) -> None:
    """The SSE endpoint's first event is a full snapshot (read through the ASGI app)."""
    deck = create_deck(app, poll_interval_seconds=0.05)
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/events",
        "raw_path": b"/api/events",
        "query_string": b"",
        "headers": [],
        "root_path": "",
        "scheme": "http",
        "server": ("t", 80),
        "client": ("c", 1),
        "http_version": "1.1",
        "app": deck,
    }
    chunks: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> MutableMapping[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if b"event: snapshot" in b"".join(chunks):
                done.set()

    await asyncio.wait_for(deck(scope, receive, send), timeout=10)
    text = b"".join(chunks).decode()
    data = text.split("event: snapshot\ndata: ", 1)[1].split("\n", 1)[0]
    assert set(json.loads(data)) >= {"summary", "throughput", "queues", "workers", "circuits"}


async def test_expired_jobs_are_listed_by_their_reason_and_hot_ones_show_their_expiry(
    app: App, client: Client
) -> None:
    c = await client("alice")
    # Enqueued on a clock just before its expiry (an expiry in the past is refused).
    expiry = datetime(2001, 1, 1, tzinfo=UTC)
    [written] = await app.backend.jobs_enqueue(
        [app.raw("job", "{}", expires_at=expiry)], now=expiry - timedelta(seconds=1)
    )
    late = written.id
    soon = await app.enqueue_raw("job", "{}", queue="later", expires_after_seconds=600)
    assert not await app.backend.jobs_fetch(worker_id="w-test", limit=5, queues=["default"])
    listed = (await c.get("/api/jobs?source=dlq&reason=expired")).json()
    assert [(j["id"], j["failure_reason"]) for j in listed["items"]] == [(late, "expired")]
    shown = (await c.get(f"/api/jobs/{late}")).json()
    assert shown["error"] == "Expired: not started by 2001-01-01 00:00:00 UTC"
    assert (await c.get(f"/api/jobs/{soon}")).json()["expires_at"].endswith("Z")


async def test_the_inspector_shows_the_streams_length_and_last_items(
    app: App, client: Client
) -> None:
    backend = app.backend
    quiet = await app.enqueue_raw("flow", {}, queue="quiet")
    job = await app.enqueue_raw("flow", {})
    [claimed] = await backend.jobs_fetch(
        worker_id="w-test", limit=1, queues=["default"], start=True
    )
    for index in range(23):
        assert await backend.streams_emit(lease=claimed.lease, index=index, item=str(index))
    bob = await client("bob")
    shown = (await bob.get(f"/api/jobs/{job}")).json()["stream"]
    assert shown["length"] == 23
    assert [(i["index"], i["item"]) for i in shown["items"]] == [(n, str(n)) for n in range(3, 23)]
    assert shown["items"][0]["created_at"].endswith("Z")
    assert (await bob.get(f"/api/jobs/{quiet}")).json()["stream"] == {"length": 0, "items": []}


async def test_the_inspector_shows_steps_and_an_admin_sends_the_event(
    app: App, client: Client
) -> None:
    backend = app.backend
    job = await app.enqueue_raw("flow", {})
    [claimed] = await backend.jobs_fetch(worker_id="w-test", limit=1, start=True)
    await backend.steps_record(lease=claimed.lease, name="charge", value='{"id": 7}')
    assert (await backend.durable_wait(lease=claimed.lease, name="wait#1", key="ok-7")).suspended
    bob = await client("bob")
    shown = (await bob.get(f"/api/jobs/{job}")).json()
    assert shown["state"] == "suspended"
    assert [(s["name"], s["kind"], s["state"]) for s in shown["steps"]] == [
        ("charge", "step", "done"),
        ("wait#1", "wait", "pending"),
    ]
    listed = (await bob.get("/api/jobs", params={"source": "active", "status": "suspended"})).json()
    assert [row["id"] for row in listed["items"]] == [job]
    refused = await bob.post(
        "/api/events/send", json={"key": "ok-7"}, headers={"x-csrf-token": csrf(bob)}
    )
    assert refused.status_code == 403
    alice = await client("alice")
    h = {"x-csrf-token": csrf(alice)}
    bad = await alice.post("/api/events/send", json={"key": "", "data": 1}, headers=h)
    assert bad.status_code == 422 and "key" in bad.json()["error"]
    sent = await alice.post("/api/events/send", json={"key": "ok-7", "data": {"a": 1}}, headers=h)
    assert sent.json() == {"woken": job}
    assert (await backend.job_get(job)).status.name == "PENDING"

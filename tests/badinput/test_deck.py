"""The Deck under bad input and hostile callers (SQLite; the API is backend-agnostic):

* every route of the app's route table walked as anonymous, read-only, an admin session without
  the CSRF header, and an admin: roles and CSRF are enforced server-side on every one;
* cookies HttpOnly, SameSite and Secure behind TLS; a CSP forbidding inline scripts on every
  response, and a page without inline scripts;
* a table of bad requests, each answered 4xx naming the field, with the store unchanged;
* a bounded schemathesis fuzz from the OpenAPI document: no 5xx.
"""

from __future__ import annotations

import base64
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.routing import Mount, Route
from tests.conftest import Store

from chokaq import App
from chokaq.deck import Credentials, Role, create_deck
from chokaq.deck.app import ROUTES

from .conftest import Seeded, seed

USERS = {"alice": ("alice-pw", Role.ADMIN), "bob": ("bob-pw", Role.READONLY)}
TOKEN = "fuzz-admin-token"
# Reachable without a session by design: the login form, and leaving.
PUBLIC = {("/login", "GET"), ("/login", "POST"), ("/logout", "POST")}
# Finding, reported: the OpenAPI document is served to anonymous callers (it holds no data).
# Readable without a login on purpose: the API's description, and liveness (it says only
# that the process answers; /metrics and /health/ready need a login, docs/observability.md).
ANONYMOUS_READABLE = {("/api/openapi.json", "GET"), ("/health/live", "GET")}


def credentials() -> Credentials:
    return Credentials(users=USERS, admin_token=TOKEN)


@pytest.fixture
async def seeded_sqlite(tmp_path: Path) -> AsyncIterator[Seeded]:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'deck.db'}", "chokaq")
    app = App(store.url)
    await app.open()
    try:
        yield await seed(app, store)
    finally:
        await app.close()


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{USERS[user][0]}".encode()).decode()
    return {"authorization": f"Basic {token}"}


def client(app: App, base_url: str = "http://deck.test", **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_deck(app, credentials=credentials())),
        base_url=base_url,
        headers=headers,
    )


def routes() -> list[tuple[str, str]]:
    """(path, method) of every route in the Deck's route table (HEAD folded into GET)."""
    deck = create_deck(App("sqlite:///unused.db"), credentials=credentials())
    out = []
    for route in deck.routes:
        if isinstance(route, Route):
            for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
                out.append((route.path, method))
        else:
            assert isinstance(route, Mount) and route.path == "/static"
    return out


ADMIN_PATHS = {(r.path, r.method) for r in ROUTES if r.admin}


async def call(c: httpx.AsyncClient, path: str, method: str, **kw: Any) -> httpx.Response:
    path = path.replace("{id}", str(uuid.uuid4()))
    return await c.request(method, path, **kw)


def test_the_walk_covers_every_api_route() -> None:
    walked = set(routes())
    assert {(r.path, r.method) for r in ROUTES} <= walked
    assert ("/api/events", "GET") in walked and ("/", "GET") in walked
    # Every mutation of the API is an admin route (preview is a read that takes a body).
    posts = {(p, m) for p, m in walked if m == "POST" and p.startswith("/api/")}
    previews = {"/api/dlq/preview", "/api/jobs/preview", "/api/archive/preview"}
    assert posts - ADMIN_PATHS == {(path, "POST") for path in previews}


async def test_every_route_enforces_roles_and_csrf_server_side(seeded_sqlite: Seeded) -> None:
    app = seeded_sqlite.app
    before = seeded_sqlite.snapshot()
    async with client(app) as anon, client(app, **basic("bob")) as bob, client(app) as alice:
        login = await alice.post("/login", data={"username": "alice", "password": "alice-pw"})
        assert login.status_code == 303
        assert (await alice.get("/")).status_code == 200  # sets the CSRF cookie
        token = alice.cookies.get("chokaq_deck_csrf")
        assert token
        for path, method in routes():
            body = {"json": {}} if method == "POST" and path.startswith("/api/") else {}
            anon_r = await call(anon, path, method, **body)
            if (path, method) in PUBLIC | ANONYMOUS_READABLE:
                assert anon_r.status_code < 500, (path, method)
            elif path == "/":
                assert anon_r.status_code == 303 and anon_r.headers["location"].endswith("/login")
            else:
                assert anon_r.status_code == 401, (path, method, anon_r.status_code)
            if (path, method) in PUBLIC or path == "/api/events":
                # The event stream never ends, and httpx's ASGI transport reads whole bodies:
                # its authenticated side is walked over real HTTP in the fuzz test below.
                continue
            bob_r = await call(bob, path, method, **body)
            no_csrf = await call(alice, path, method, **body)
            if (path, method) in ADMIN_PATHS:
                assert bob_r.status_code == 403, (path, method)
                assert no_csrf.status_code == 403, (path, method)
                assert "CSRF" in no_csrf.json()["error"]
                wrong = await call(alice, path, method, headers={"x-csrf-token": "x" * 43}, **body)
                assert wrong.status_code == 403, (path, method)
            else:
                assert bob_r.status_code not in (401, 403), (path, method, bob_r.status_code)
                assert no_csrf.status_code not in (401, 403), (path, method)
        # Nothing refused above changed a row.
        assert seeded_sqlite.snapshot() == before
        for path, method in sorted(ADMIN_PATHS):
            ok = await call(alice, path, method, json={}, headers={"x-csrf-token": token})
            assert ok.status_code not in (401, 403, 500), (path, method, ok.text)


async def test_cookies_and_content_security_policy(seeded_sqlite: Seeded) -> None:
    app = seeded_sqlite.app
    async with client(app, base_url="https://deck.test") as c:
        login = await c.post("/login", data={"username": "bob", "password": "bob-pw"})
        page = await c.get("/")
        for response in (login, page):
            for cookie in response.headers.get_list("set-cookie"):
                lowered = cookie.lower()
                assert "httponly" in lowered and "samesite=strict" in lowered, cookie
                assert "secure" in lowered, cookie
        responses = [page, login, await c.get("/api/nope"), await c.get("/static/nope.js")]
        async with client(app) as anon:
            responses.append(await anon.get("/api/overview"))
        for response in responses:
            csp = response.headers["content-security-policy"]
            script_src = re.search(r"script-src ([^;]*)", csp)
            assert script_src and "'unsafe-inline'" not in script_src.group(1), csp
            assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        html = page.text
        for tag in re.findall(r"<script\b[^>]*>", html, flags=re.I):
            assert "src=" in tag, tag  # no inline script blocks
        assert not re.search(r"\son[a-z]+\s*=", html, flags=re.I)  # no inline event handlers
        assert "javascript:" not in html.lower()


BAD: list[tuple[str, str, str, dict[str, Any], str]] = [
    # (name, method, path, request kwargs, field named in the answer)
    ("body not JSON", "POST", "/api/jobs/cancel", {"content": b"{nope"}, "body"),
    ("body an array", "POST", "/api/dlq/resurrect", {"json": [1, 2]}, "body"),
    ("ids missing", "POST", "/api/jobs/cancel", {"json": {}}, "ids"),
    ("ids not uuids", "POST", "/api/dlq/purge", {"json": {"ids": ["' OR 1=1 --"]}}, "ids[0]"),
    ("ids too many", "POST", "/api/jobs/cancel", {"json": {"ids": ["x"] * 1001}}, "ids"),
    ("purge unconfirmed", "POST", "/api/dlq/purge", {"json": {"ids": ["{dead}"]}}, "confirm"),
    (
        "edit payload not JSON",
        "POST",
        "/api/jobs/{dead}/edit",
        {"json": {"payload": "{"}},
        "payload",
    ),
    (
        "edit payload NUL",
        "POST",
        "/api/jobs/{dead}/edit",
        {"json": {"payload": '"\x00"'}},
        "payload",
    ),
    (
        "edit payload huge",
        "POST",
        "/api/jobs/{pending}/edit",
        {"json": {"payload": '"' + "x" * 1_000_001 + '"'}},
        "payload",
    ),
    ("edit tags comma", "POST", "/api/jobs/{dead}/edit", {"json": {"tags": ["a,b"]}}, "tags[0]"),
    ("edit tags not list", "POST", "/api/jobs/{dead}/edit", {"json": {"tags": "a"}}, "tags"),
    (
        "edit priority",
        "POST",
        "/api/jobs/{pending}/edit",
        {"json": {"priority": 10**9}},
        "priority",
    ),
    ("edit requeue type", "POST", "/api/jobs/{dead}/edit", {"json": {"requeue": "yes"}}, "requeue"),
    ("edit bad id", "POST", "/api/jobs/1%20OR%201=1/edit", {"json": {"priority": 1}}, "id"),
    ("queue blank", "POST", "/api/queues", {"json": {"queue": "", "paused": True}}, "queue"),
    ("queue NUL", "POST", "/api/queues", {"json": {"queue": "a\x00", "paused": True}}, "queue"),
    ("queue paused type", "POST", "/api/queues", {"json": {"queue": "q", "paused": "y"}}, "paused"),
    (
        "queue workers",
        "POST",
        "/api/queues",
        {"json": {"queue": "q", "max_workers": 0}},
        "max_workers",
    ),
    ("circuit key", "POST", "/api/circuits/close", {"json": {"key": " "}}, "key"),
    (
        "concurrency",
        "POST",
        "/api/workers/concurrency",
        {"json": {"worker_id": "w", "concurrency": 0}},
        "concurrency",
    ),
    ("filter not object", "POST", "/api/dlq/preview", {"json": {"filter": "x"}}, "filter"),
    ("filter cap", "POST", "/api/dlq/preview", {"json": {"cap": 10**6}}, "cap"),
    ("filter ids", "POST", "/api/dlq/preview", {"json": {"filter": {"ids": ["x'"]}}}, "ids"),
    (
        "by-filter unpinned",
        "POST",
        "/api/dlq/purge-by-filter",
        {"json": {"confirm": "PURGE"}},
        "until",
    ),
    ("jobs source", "GET", "/api/jobs?source=secrets", {}, "source"),
    ("jobs sort", "GET", "/api/jobs?sort=id;DROP%20TABLE%20x", {}, "sort"),
    ("jobs page", "GET", "/api/jobs?page=-1", {}, "page"),
    ("jobs page size", "GET", "/api/jobs?page_size=100000", {}, "page_size"),
    ("jobs since", "GET", "/api/jobs?since=yesterday", {}, "since"),
    ("jobs status", "GET", "/api/jobs?status=%3Cscript%3E", {}, "status"),
    ("jobs reason", "GET", "/api/jobs?source=dlq&reason=boom", {}, "reason"),
    ("jobs search long", "GET", "/api/jobs?search=" + "s" * 1001, {}, "search"),
    ("jobs queue control", "GET", "/api/jobs?queue=a%0Ab", {}, "queue"),
    ("job bad id", "GET", "/api/jobs/%3Cscript%3E", {}, "id"),
    ("series window", "GET", "/api/series?window=forever", {}, "window"),
    ("errors limit", "GET", "/api/errors?limit=abc", {}, "limit"),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
async def test_bad_requests_are_4xx_naming_the_field_and_change_nothing(
    seeded_sqlite: Seeded, method: str, path: str, kwargs: dict[str, Any], field: str
) -> None:
    s = seeded_sqlite
    path = path.replace("{dead}", s.dead).replace("{pending}", s.pending)
    if (
        "json" in kwargs
        and isinstance(kwargs["json"], dict)
        and kwargs["json"].get("ids") == ["{dead}"]
    ):
        kwargs = {"json": {"ids": [s.dead]}}
    before = s.snapshot()
    async with client(s.app, authorization=f"Bearer {TOKEN}") as c:
        response = await c.request(method, path, **kwargs)
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    answer = response.json()
    assert field in (answer.get("field") or answer["error"]), answer
    assert s.snapshot() == before


async def test_hostile_text_comes_back_as_data(seeded_sqlite: Seeded) -> None:
    s = seeded_sqlite
    hostile = "<script>alert('x')</script>' OR 1=1 --"
    job_id = await s.app.enqueue_raw(hostile, {"h": hostile}, queue="q", tags=["<b>x</b>"])
    async with client(s.app, authorization=f"Bearer {TOKEN}") as c:
        one = await c.get(f"/api/jobs/{job_id}")
        assert one.headers["content-type"].startswith("application/json")
        assert one.json()["type"] == hostile
        found = await c.get("/api/jobs", params={"search": hostile[:20]})
        assert [j["id"] for j in found.json()["items"]] == [job_id]
        none = await c.get("/api/jobs", params={"search": "%", "source": "dlq"})
        assert none.json()["total"] == 0


# -- schemathesis -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The Deck over real HTTP (uvicorn in a thread) on a seeded SQLite file."""
    import asyncio

    import uvicorn

    url = f"sqlite:///{tmp_path / 'fuzz.db'}"
    store = Store("sqlite", url, "chokaq")

    async def prepare() -> None:
        app = App(url)
        await app.open()
        await seed(app, store)
        await app.close()

    asyncio.run(prepare())
    port = _free_port()
    deck = create_deck(App(url), credentials=credentials(), close_app_on_shutdown=True)
    server = uvicorn.Server(
        uvicorn.Config(deck, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_fuzzing_the_api_from_its_openapi_document_finds_no_5xx(served: str) -> None:
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings

    schema = schemathesis.openapi.from_url(f"{served}/api/openapi.json")
    failures: list[str] = []
    seen = 0
    with requests.Session() as session:
        session.headers["authorization"] = f"Bearer {TOKEN}"
        for result in schema.get_all_operations():
            operation = result.ok()

            @settings(
                max_examples=40,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy())
            def fuzz(case: Any) -> None:
                nonlocal seen
                seen += 1
                # A timeout guards against a hang, not a speed: a starved machine may take seconds.
                response = case.call(base_url=served, session=session, timeout=60)
                if response.status_code >= 500:
                    failures.append(
                        f"{case.method} {case.formatted_path} {case.query} {case.body!r}: "
                        f"{response.status_code} {response.text[:200]}"
                    )

            fuzz()
    assert seen > 200
    assert failures == []
    # The event stream, over real HTTP: refused anonymously, open to the read-only role.
    assert requests.get(f"{served}/api/events", timeout=5).status_code == 401
    bob = requests.get(f"{served}/api/events", headers=basic("bob"), stream=True, timeout=5)
    with bob:
        assert bob.status_code == 200
        assert bob.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    ("host", "refused"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("", True),  # every interface, to the socket layer
        ("10.1.2.3", True),
        ("deck.example.com", True),
        ("127.1", True),  # ambiguous shorthand: refused rather than guessed
        ("127.0.0.1", False),
        ("127.0.0.2", False),
        ("::1", False),
        ("[::1]", False),
        ("localhost", False),
    ],
)
def test_binds_beyond_loopback_need_authentication(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, refused: bool
) -> None:
    from chokaq.deck.serve import build_server
    from chokaq.errors import ConfigurationError

    for var in ("CHOKAQ_DECK_TOKEN", "CHOKAQ_DECK_READONLY_TOKEN", "CHOKAQ_DECK_USERS"):
        monkeypatch.delenv(var, raising=False)
    app = App(f"sqlite:///{tmp_path / 'bind.db'}")
    if refused:
        with pytest.raises(ConfigurationError, match="refusing"):
            build_server(app, host=host, port=0)
        monkeypatch.setenv("CHOKAQ_DECK_TOKEN", "t" * 32)
    assert build_server(app, host=host, port=0) is not None

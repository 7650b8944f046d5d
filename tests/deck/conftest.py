"""Fixtures of The Deck's tests: a SQLite file per test, httpx clients on the Deck's ASGI app,
the Deck served by a real uvicorn server in a thread, a real worker subprocess, and Chromium
through Playwright.

Browser tests skip when /usr/bin/chromium is missing, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from tests.conftest import schedule_declaration

from chokaq.app import App
from chokaq.deck import Credentials, Role, create_deck
from chokaq.models import FailMove, FailureReason, SucceedMove

HERE = Path(__file__).parent
CHROMIUM = "/usr/bin/chromium"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
SCREENSHOTS = HERE.parent.parent / "docs" / "screenshots"
USERS = {"alice": ("alice-pw", Role.ADMIN), "bob": ("bob-pw", Role.READONLY)}

T = TypeVar("T")


def run(coro_fn: Callable[[App], Awaitable[T]], url: str) -> T:
    """Run ``coro_fn(app)`` on a fresh, opened App of ``url`` (for sync browser tests)."""

    async def go() -> T:
        app = App(url)
        await app.open()
        try:
            return await coro_fn(app)
        finally:
            await app.close()

    # Playwright's sync API keeps an event loop running on this thread: use another one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


def wait_for(predicate: Callable[[], Any], *, timeout: float = 15.0, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what or predicate}")
        time.sleep(0.1)


async def diamond(
    app: App,
    *,
    result: str = '{"total": 3}',
    c_runs: bool = True,
    type: str = "step",
    error: str = "ValueError: b broke",
) -> dict[str, str]:
    """A diamond workflow, a -> (b, c) -> d, moved the way a worker would move it: a succeeds
    with ``result``, b fails for good (FATAL_ERROR, ``error``), c succeeds unless ``c_runs`` is
    false (then it stays pending), so d is blocked. a, b and d are on queue ``wf``, c on
    ``wf-side`` (so each can be claimed alone). Returns the ids by name."""
    a = app.raw(type, {"n": "a"}, queue="wf")
    b = app.raw(type, {"n": "b"}, queue="wf", after=[a])
    c = app.raw(type, {"n": "c"}, queue="wf-side", after=[a])
    d = app.raw("join", {"n": "d"}, queue="wf", after=[b, c])
    await app.enqueue_many([a, b, c, d])
    backend = app.backend

    async def claim(queue: str) -> Any:
        [claimed] = await backend.jobs_fetch(
            worker_id="w-test", limit=10, queues=[queue], start=True
        )
        return claimed

    first = await claim("wf")
    await backend.jobs_finalize(moves=[SucceedMove(first.lease, 0.01, result=result)])
    broken = await claim("wf")
    await backend.jobs_finalize(
        moves=[FailMove(lease=broken.lease, reason=FailureReason.FATAL_ERROR, error=error)]
    )
    if c_runs:
        side = await claim("wf-side")
        await backend.jobs_finalize(moves=[SucceedMove(side.lease, 0.01)])
    assert (first.id, broken.id) == (a.id, b.id)
    return {"a": str(a.id), "b": str(b.id), "c": str(c.id), "d": str(d.id)}


# A schedule as a worker's code would declare it: 07:00 Berlin time unless told.
declared = partial(
    schedule_declaration,
    type="report",
    queue="reports",
    cron="0 7 * * *",
    every_seconds=None,
    timezone="Europe/Berlin",
    kwargs='{"full": true}',
    overlap=False,
)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'deck.db'}"


def csrf(c: httpx.AsyncClient) -> str:
    """The CSRF token the page handed this client (the cookie it set, also in a meta tag)."""
    return str(c.cookies.get("chokaq_deck_csrf"))


def basic(user: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{USERS[user][0]}".encode()).decode()
    return {"authorization": f"Basic {token}"}


Client = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture
async def client(app: App) -> AsyncIterator[Client]:
    """``await client(user)``: an httpx client authenticated as alice/bob (basic auth) that has
    loaded the page once, so it holds the CSRF cookie (``csrf(client)``). The test module
    provides the opened ``app`` fixture (on SQLite, or on each backend)."""
    opened: list[httpx.AsyncClient] = []

    async def make(user: str | None = "alice", **deck_options: Any) -> httpx.AsyncClient:
        deck_options.setdefault("credentials", Credentials(users=USERS, admin_token="tok-admin"))
        deck = create_deck(app, **deck_options)
        c = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=deck),
            base_url="http://deck.test",
            headers=basic(user) if user else {},
        )
        opened.append(c)
        if user:
            page = await c.get("/")
            assert page.status_code == 200
        return c

    yield make
    for c in opened:
        await c.aclose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """The Deck on a real uvicorn server in a thread; ``restart()`` drops every connection.
    ``deck_options`` go to ``create_deck``. The server trusts X-Forwarded-For from 127.0.0.1
    (uvicorn's default), so a test may speak for several client addresses."""

    def __init__(self, db_url: str, **deck_options: Any) -> None:
        self.db_url = db_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = App(db_url)
        deck_options.setdefault("credentials", Credentials(users=USERS))
        self.deck = create_deck(self.app, session_secret="deck-tests", **deck_options)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        import uvicorn

        config = uvicorn.Config(
            self.deck,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        wait_for(lambda: self._server.started, timeout=10, what="uvicorn to start")

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._server = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def deck_server(db_url: str) -> Iterator[Served]:
    """The Deck (users alice=admin, bob=readonly) served over real HTTP."""
    run(lambda app: asyncio.sleep(0), db_url)  # create and migrate the file first
    served = Served(db_url)
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def worker(db_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker subprocess (``python -m chokaq worker``) running ``sample_app``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "CHOKAQ_DATABASE_URL": db_url,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "chokaq", "worker", "--app", "sample_app:app", "--concurrency", "8"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if os.environ.get("DECK_TEST_WORKER_LOG") and proc.stderr is not None:
            sys.stderr.write(proc.stderr.read().decode(errors="replace")[-4000:])
        if proc.stderr is not None:
            proc.stderr.close()


def _browser_unavailable() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _browser_unavailable()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    from playwright.sync_api import expect, sync_playwright

    # expect() polls until its condition holds; its default deadline of 5 s is a timing margin
    # that a busy CI machine overran (a live view waits for the next shared snapshot, which a
    # slow store reuses for up to 5 s). A passing test never waits for the deadline.
    expect.set_options(timeout=15_000)
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


@pytest.fixture
def login(browser: Any, deck_server: Served) -> Iterator[Callable[[str], Any]]:
    """``login("alice")`` -> a Playwright page signed in through the login form; ``theme``
    picks one, and other keywords are the browser context's (``viewport``, ``timezone_id``,
    ``device_scale_factor``...; the viewport is 1,400 x 1,000 unless given)."""
    contexts: list[Any] = []

    def open_as(user: str, *, theme: str | None = None, **context_options: Any) -> Any:
        context = browser.new_context(
            **{"viewport": {"width": 1400, "height": 1000}, **context_options}
        )
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.js_errors = errors
        page.goto(deck_server.url + "/")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", USERS[user][0])
        page.click("button[type=submit]")
        page.wait_for_selector("#conn.online", timeout=10_000)
        if theme:
            page.select_option("#theme", theme)
        return page

    yield open_as
    for context in contexts:
        context.close()

"""Paging the jobs table in Chromium: next, previous, first and last by cursor, the page in
the link, and the count labelled "about" when the server estimated it (PostgreSQL, with the
exact-count bound lowered so that a few rows are "many")."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from tests.conftest import PG_URL, drop_schema, require_postgres

from chokaq.app import App
from chokaq.deck import Credentials, create_deck
from chokaq.deck.paging import encode_cursor
from chokaq.storage import paging

from .conftest import USERS, Served, run, wait_for

ROWS = 60  # with the default page of 50: one full page and a short one


class ServedOnPostgres(Served):
    """The Deck over real HTTP on a fresh PostgreSQL schema."""

    def __init__(self, schema: str) -> None:
        super().__init__(f"sqlite:///unused-{schema}.db")
        self.app = App(PG_URL, schema=schema)
        self.deck = create_deck(
            self.app, credentials=Credentials(users=USERS), session_secret="deck-tests"
        )


@pytest.fixture
def pg_deck(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedOnPostgres]:
    require_postgres()
    # The server runs in this process: a bound of 5 makes 60 rows an estimated count.
    monkeypatch.setattr(paging, "COUNT_EXACT_UP_TO", 5)
    schema = f"t_{uuid.uuid4().hex[:16]}"
    served = ServedOnPostgres(schema)

    async def fill(app: App) -> None:
        for i in range(ROWS):
            await app.enqueue_raw("page.me", {"n": i})

    # Playwright's sync API keeps an event loop running on this thread: use another one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _with_app(schema, fill)).result()
    served.start()
    try:
        yield served
    finally:
        served.stop()
        drop_schema(schema)


async def _with_app(schema: str, fn: Any) -> None:
    app = App(PG_URL, schema=schema, auto_migrate=True)
    await app.open()
    try:
        await fn(app)
    finally:
        await app.close()


def _open(browser: Any, url: str) -> Any:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.js_errors = errors
    page.goto(url + "/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", USERS["alice"][0])
    page.click("button[type=submit]")
    page.wait_for_selector("#conn.online", timeout=10_000)
    return page


def _ids(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#job-rows tr", "rows => rows.map(r => r.dataset.id)"))


def _rows_become(page: Any, count: int, other_than: list[str] | None = None) -> list[str]:
    """Wait until the table shows ``count`` rows (and not the ``other_than`` ones)."""
    page.wait_for_function(
        "([n, old]) => { const ids = Array.from(document.querySelectorAll('#job-rows tr'))"
        ".map(r => r.dataset.id); return ids.length === n && !ids.some(i => old.includes(i)); }",
        arg=[count, other_than or []],
        timeout=15_000,
    )
    return _ids(page)


def test_next_previous_first_last_and_the_estimate_label(
    browser: Any, pg_deck: ServedOnPostgres
) -> None:
    page = _open(browser, pg_deck.url)
    first = _rows_become(page, 50)
    info = page.locator("#page-info")
    assert info.get_attribute("data-estimated") == "true"
    assert "about" in (info.text_content() or "")
    assert (info.get_attribute("title") or "").startswith("The total is the database's estimate")
    assert page.is_disabled("#prev") and page.is_disabled("#first")
    page.click("#next")
    second = _rows_become(page, ROWS - 50, other_than=first)
    assert len(set(first) | set(second)) == ROWS
    wait_for(
        lambda: (page.text_content("#page-info") or "").startswith("Page 2 of about"),
        what="page 2 of about N",
    )
    assert "cursor=after." in page.evaluate("window.location.hash")
    assert page.is_disabled("#next") and page.is_disabled("#last")
    page.reload()  # the page is in the link
    assert _rows_become(page, ROWS - 50, other_than=first) == second
    page.click("#prev")
    assert _rows_become(page, 50, other_than=second) == first
    page.click("#last")
    last = _rows_become(page, 50, other_than=first[: ROWS - 50])
    assert last[-(ROWS - 50) :] == second
    page.click("#first")
    assert _rows_become(page, 50, other_than=second) == first
    assert page.evaluate("window.location.hash") == "#tab=active"
    assert [e for e in page.js_errors if "Failed to load resource" not in e] == []
    page.context.close()


def test_an_exact_count_is_not_labelled_and_a_foreign_cursor_falls_back_to_page_one(
    browser: Any, deck_server: Served
) -> None:
    async def fill(app: App) -> None:
        for i in range(30):
            await app.enqueue_raw("page.me", {"n": i})

    run(fill, deck_server.db_url)
    page = _open(browser, deck_server.url)
    page.select_option("select[name=page_size]", "25")
    page.click("#filters button[type=submit]")
    first = _rows_become(page, 25)
    page.click("#next")
    _rows_become(page, 5, other_than=first)
    text = page.text_content("#page-info") or ""
    assert text.startswith("Page 2 of 2") and "about" not in text
    assert page.get_attribute("#page-info", "data-estimated") == "false"
    # Changing the order drops the cursor (it belongs to the other order): page 1 again.
    page.select_option("select[name=order]", "asc")
    wait_for(lambda: "cursor=" not in page.evaluate("window.location.hash"), what="no cursor")
    page.select_option("select[name=order]", "desc")
    # A link whose cursor belongs to another sort (made with other settings) is refused by
    # the server: the page says why, shows page 1 and drops the cursor from the link.
    token = encode_cursor("type", True, "page.me", first[0])
    page.goto(f"{deck_server.url}/#tab=active&page_size=25&cursor=after.{token}&page=2")
    page.wait_for_selector(".toast.bad")
    hash_now = lambda: page.evaluate("window.location.hash")  # noqa: E731
    wait_for(lambda: hash_now() == "#tab=active&page_size=25", what="the cursor dropped")
    assert _rows_become(page, 25) == first
    page.context.close()


# Counts the page's list requests (the table's /api/jobs) in the page itself: a call made in
# the promise chain of a render is counted before any later evaluate runs.
_COUNT_LIST_REQUESTS = """
window.__listRequests = [];
const plainFetch = window.fetch;
window.fetch = function (url, options) {
  if (String(url).includes("/api/jobs?")) { window.__listRequests.push(String(url)); }
  return plainFetch.call(this, url, options);
};
"""


@pytest.fixture
def quiet_deck(db_url: str) -> Iterator[Served]:
    """The Deck with one live snapshot per connection (the next would come in an hour), so
    that every list request a test counts is one the page made of its own accord."""
    run(lambda app: asyncio.sleep(0), db_url)
    served = Served(db_url, poll_interval_seconds=3600)
    served.start()
    yield served
    served.stop()


def test_a_link_costs_one_list_request_and_the_first_snapshot_one_more(
    browser: Any, quiet_deck: Served
) -> None:
    async def fill(app: App) -> None:
        for i in range(12):
            await app.enqueue_raw("link.me" if i % 3 else "link.other", {"n": i})

    run(fill, quiet_deck.db_url)
    page = _open(browser, quiet_deck.url)
    page.add_init_script(_COUNT_LIST_REQUESTS)
    # A fresh load of a link naming a tab and a filter: the table is asked for once, with both,
    # and once more by the live stream's first snapshot (which may be newer than that read);
    # the stream's opening itself asks for nothing (this Deck sends no second snapshot).
    page.goto(f"{quiet_deck.url}/?fresh#tab=active&type=link.me&page_size=25")
    _rows_become(page, 8)
    page.wait_for_function("window.__listRequests.length >= 2", timeout=15_000)
    _rows_become(page, 8)
    requests = page.evaluate("window.__listRequests")
    assert len(requests) == 2, requests
    assert all("source=active" in r and "type=link.me" in r for r in requests), requests
    # A link followed within the page (another tab and filter at once): one request more.
    page.evaluate("window.location.hash = '#tab=active&type=link.other&page_size=25'")
    _rows_become(page, 4)
    requests = page.evaluate("window.__listRequests")
    assert len(requests) == 3 and "type=link.other" in requests[2], requests
    assert [e for e in page.js_errors if "Failed to load resource" not in e] == []
    page.context.close()

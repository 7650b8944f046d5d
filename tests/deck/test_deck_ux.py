"""What the operator reads in The Deck, in real Chromium against a real server: bidi and
invisible characters shown as markers (never obeyed), ids by their distinguishing tail,
durations in human units, local times with UTC on hover, a selection that stays what the
operator ticked while live refresh pauses, deep links that carry the filters and sort, and a
layout that no 255-character name widens (at 1,024 px and on a 390 px phone)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from chokaq.app import App
from chokaq.models import FailMove, FailureReason, JobFilter, NewJob, Pillar, SucceedMove

from .conftest import Client, Served, csrf, run, wait_for

browser = pytest.mark.browser

SPOOF = "\u202eRTL-fdp.exe"  # reads "exe.pdf-LTR" when the override is obeyed
SPOOF_PAYLOAD = json.dumps({"file": SPOOF}, ensure_ascii=False)  # the raw character, unescaped
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def open_page(login: Callable[..., Any], deck_server: Served) -> Callable[..., Any]:
    """``open_page("alice", width=390, timezone="Asia/Kolkata")``: a signed-in page in a
    context of that viewport and time zone; ``fragment`` opens that deep link after sign-in."""

    def open_as(
        user: str = "alice",
        *,
        width: int = 1400,
        height: int = 1000,
        timezone: str = "UTC",
        fragment: str = "",
    ) -> Any:
        page = login(user, viewport={"width": width, "height": height}, timezone_id=timezone)
        if fragment:
            # Loaded afresh with the link, as a pasted link is: a fragment-only navigation of
            # the open page relies on its hashchange racing the page's own first link write.
            page.goto(deck_server.url + "/#" + fragment)
            page.reload()
            page.wait_for_selector("#conn.online", timeout=10_000)
        return page

    return open_as


def seed(url: str, jobs: list[NewJob], *, fail: str | None = None, took: float = 0.0) -> list[str]:
    """Enqueue ``jobs``; then, with ``fail``, dead-letter them with that error, or with
    ``took`` > 0, archive them as succeeded after ``took`` seconds."""

    async def go(app: App) -> list[str]:
        backend = app.backend
        ids = [r.id for r in await backend.jobs_enqueue(jobs, now=T0)]
        if fail is None and not took:
            return ids
        claimed = await backend.jobs_fetch(
            worker_id="seed", limit=len(jobs), queues=sorted({j.queue for j in jobs}), start=True
        )
        if fail is not None:
            moves: list[Any] = [
                FailMove(lease=c.lease, reason=FailureReason.FATAL_ERROR, error=fail)
                for c in claimed
            ]
        else:
            moves = [SucceedMove(c.lease, took) for c in claimed]
        assert all(await backend.jobs_finalize(moves=moves))
        return ids

    return run(go, url)


def no_js_errors(page: Any) -> None:
    assert page.js_errors == []


# -- 7. bidi spoofing -----------------------------------------------------------------------------

# Every character userText() must mark, as the page's text must never hold it raw.
RAW_INVISIBLE = "(?![\\t\\n\\r])[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\u115f\\u1160\\u3164\\uffa0]"


def raw_invisible_texts(page: Any) -> list[str]:
    """The page's text nodes (outside scripts) that still hold an invisible character."""
    return list(
        page.evaluate(
            """(pattern) => {
              const re = new RegExp(pattern, "u");
              const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
              const found = [];
              for (let n = walk.nextNode(); n; n = walk.nextNode()) {
                if (n.parentElement.closest("script, textarea")) { continue; }
                if (re.test(n.data)) { found.push(n.data); }
              }
              for (const e of document.querySelectorAll("[title]")) {
                if (re.test(e.title)) { found.push("title: " + e.title); }
              }
              return found;
            }""",
            RAW_INVISIBLE,
        )
    )


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def test_the_api_refuses_invisible_names_with_the_code_point(client: Client) -> None:
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post("/api/queues", json={"queue": "\u202e", "paused": True}, headers=h)
    assert r.status_code == 422
    assert r.json()["error"] == (
        "queue: must not contain invisible or bidirectional characters (found U+202E)"
    )
    r = await c.get("/api/jobs", params={"queue": "pay\u200b"})
    assert r.status_code == 422 and "U+200B" in r.json()["error"]


def reads_left_to_right(page: Any, selector: str, text: str) -> bool:
    """Whether the first and last characters of ``text`` inside ``selector`` are drawn in
    that order from left to right (an obeyed U+202E draws them mirrored)."""
    return bool(
        page.evaluate(
            """([selector, text]) => {
              const root = document.querySelector(selector);
              const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
              for (let n = walk.nextNode(); n; n = walk.nextNode()) {
                const at = n.data.indexOf(text);
                if (at < 0) { continue; }
                const box = (i) => { const r = document.createRange(); r.setStart(n, i);
                  r.setEnd(n, i + 1); return r.getBoundingClientRect(); };
                return box(at).left < box(at + text.length - 1).left;
              }
              return null;
            }""",
            [selector, text],
        )
    )


def plant_queue(url: str, old: str, new: str) -> None:
    """Rename a queue with raw SQL: rows written before names refused bidi characters."""
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        conn.execute("UPDATE chokaq_jobs_hot SET queue = ? WHERE queue = ?", (new, old))
        conn.execute("UPDATE chokaq_queues SET name = ? WHERE name = ?", (new, old))
        conn.execute("UPDATE chokaq_stats_summary SET queue = ? WHERE queue = ?", (new, old))
    finally:
        conn.close()


@browser
def test_bidi_and_invisible_characters_show_as_markers(open_page: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    # Partitions, payloads and errors are data: stored as given, so The Deck must defuse them.
    [spoofed] = seed(
        url,
        [NewJob(type="upload", queue="files", partition=SPOOF, payload=SPOOF_PAYLOAD)],
        fail="ValueError: refused " + SPOOF + "\u200b\u0085",
    )
    [broken] = seed(url, [NewJob(type="upload", queue="files", partition="two\nlines")], fail="E")
    [legacy] = seed(url, [NewJob(type="legacy", queue="old")])
    plant_queue(url, "old", "\u202e")  # an invisible queue, from before the name check
    page = open_page(fragment="tab=dlq")
    row = f"#job-rows tr[data-id='{spoofed}']"
    page.wait_for_selector(row)
    partition = f"{row} .chip.part"
    assert page.text_content(partition) == "\u27e8U+202E\u27e9RTL-fdp.exe"
    assert page.locator(f"{partition} .ctl").count() == 1
    assert reads_left_to_right(page, partition, "RTL-fdp.exe")
    error = f"{row} .err"
    assert page.text_content(error) == (
        "ValueError: refused \u27e8U+202E\u27e9RTL-fdp.exe\u27e8U+200B\u27e9\u27e8U+0085\u27e9"
    )
    assert reads_left_to_right(page, error, "RTL-fdp.exe")
    # On one line a newline is marked too (a <pre> keeps it, below).
    broken_part = f"#job-rows tr[data-id='{broken}'] .chip.part"
    assert page.text_content(broken_part) == "two\u27e8U+000A\u27e9lines"
    # The inspector: payload, error and partition alike.
    page.click(row)
    page.wait_for_selector("#insp-banner.dlq")
    assert "\u27e8U+202E\u27e9RTL-fdp.exe" in page.text_content("#insp-payload")
    assert reads_left_to_right(page, "#insp-payload", "RTL-fdp.exe")
    assert page.locator("#insp-error .ctl").count() == 3
    assert page.text_content("#insp-fields dd[data-field=partition]") == (
        "\u27e8U+202E\u27e9RTL-fdp.exe"
    )
    # The editor's textarea cannot draw markers: its hint names what it holds.
    page.click("#insp-edit")
    assert page.text_content("#ed-json") == "Valid JSON · holds invisible characters: U+202E"
    page.click("#drawer-close")
    # The invisible queue is a visible marker, in the queues panel and in the jobs table.
    page.click("#source button[data-source=active]")
    cell = f"#job-rows tr[data-id='{legacy}'] td[data-col=queue]"
    page.wait_for_selector(cell)
    assert page.text_content(cell) == "\u27e8U+202E\u27e9"
    assert page.locator(cell).bounding_box()["width"] > 10
    queue_cell = "#queue-rows tr[data-key='\u202e'] td.qname"
    page.wait_for_selector(queue_cell)
    assert page.text_content(queue_cell) == "\u27e8U+202E\u27e9"
    # Nowhere on the page (cells, chips, tooltips, top errors) is a raw one left.
    wait_for(lambda: page.locator("#error-rows li").count() == 2, what="the top errors")
    assert raw_invisible_texts(page) == []
    no_js_errors(page)


# -- 12. ids, durations, times, tries ---------------------------------------------------------


@browser
def test_ids_durations_local_times_and_tries(open_page: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    fast = seed(url, [NewJob(type="fast", queue="q1", max_attempts=5)], took=0.00001299399997378714)
    slow = seed(url, [NewJob(type="slow", queue="q2", max_attempts=3)], took=184.2)
    mid = seed(url, [NewJob(type="mid", queue="q3")], took=2.5)
    page = open_page(timezone="Asia/Kolkata", fragment="tab=archive")  # UTC+05:30
    cells = {}
    for name, [job_id] in (("fast", fast), ("slow", slow), ("mid", mid)):
        row = f"#job-rows tr[data-id='{job_id}']"
        page.wait_for_selector(row)
        cells[name] = {
            col: page.text_content(f"{row} td[data-col={col}]")
            for col in ("id", "progress", "tries")
        }
        # The id shows its random tail (its head is the time, the same on a busy page); the
        # whole id is on hover and is what a copy of the cell yields.
        assert cells[name]["id"] == "\u2026" + job_id[-8:]
        assert page.get_attribute(f"{row} td[data-col=id]", "title") == job_id
        copied = page.evaluate(
            """(sel) => {
              const cell = document.querySelector(sel);
              window.getSelection().selectAllChildren(cell);
              const ev = new ClipboardEvent("copy", {clipboardData: new DataTransfer(),
                bubbles: true, cancelable: true});
              cell.dispatchEvent(ev);
              return ev.clipboardData.getData("text/plain");
            }""",
            f"{row} td[data-col=id]",
        )
        assert copied == job_id
    assert cells["fast"]["progress"] == "13 µs"
    assert cells["mid"]["progress"] == "2.5 s"
    assert cells["slow"]["progress"] == "3 m 4 s"
    assert cells["fast"]["tries"] == "1 / 5"
    assert cells["slow"]["tries"] == "1 / 3"
    assert cells["mid"]["tries"] == "1 / \u2013"  # no maximum of its own: the default's
    # The inspector: a local time (Kolkata), UTC on hover; the duration in units.
    page.click(f"#job-rows tr[data-id='{fast[0]}']")
    page.wait_for_selector("#insp-banner.archive")
    created = "#insp-fields dd[data-field=created_at]"
    assert page.text_content(created) == "2026-03-01 17:30:00"
    assert page.get_attribute(created, "title") == "2026-03-01 12:00:00.000 UTC"
    assert page.text_content("#insp-fields dd[data-field=duration_seconds]") == "13 µs"
    no_js_errors(page)


# -- 10. selection and live refresh -----------------------------------------------------------


def fail_now(url: str, n: int, queue: str = "pay") -> list[str]:
    async def go(app: App) -> list[str]:
        ids = [str(await app.enqueue_raw("charge", {"n": i}, queue=queue)) for i in range(n)]
        claimed = await app.backend.jobs_fetch(worker_id="w", limit=n, queues=[queue], start=True)
        await app.backend.jobs_finalize(
            moves=[
                FailMove(lease=c.lease, reason=FailureReason.FATAL_ERROR, error="CardDeclined")
                for c in claimed
            ]
        )
        return ids

    return run(go, url)


def shown_ids(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#job-rows tr", "rows => rows.map(r => r.dataset.id)"))


@browser
def test_selection_stays_what_the_operator_saw(open_page: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    older = fail_now(url, 5)
    seen = fail_now(url, 25)
    page = open_page(fragment="tab=dlq&page_size=25")
    wait_for(lambda: sorted(shown_ids(page)) == sorted(seen), what="the newest 25 failures")
    # The pause counts from the lifetime counters: let the snapshot have all 30 first.
    wait_for(lambda: page.text_content("#c-failed") == "30", what="the snapshot")
    assert page.text_content("#live-state") == "LIVE"
    page.check("#select-all")
    assert page.text_content("#selected-count") == "25 selected"
    wait_for(lambda: page.text_content("#live-state") == "PAUSED · 25 selected", what="pause")
    # New failures arrive: the table holds still and says how many.
    newer = fail_now(url, 5)
    wait_for(
        lambda: page.text_content("#live-state") == "PAUSED · 25 selected · 5 failed since",
        what="the count of new failures",
    )
    assert sorted(shown_ids(page)) == sorted(seen)
    assert page.get_attribute("#jobs", "data-live") == "paused"
    # The purge applies to exactly the 25 ticked, not to the newest 25 of the moment.
    page.click("#bulk-purge")
    assert "Purge 25 DLQ job(s)?" in page.text_content("#confirm-title")
    page.fill("#confirm-input", "PURGE")
    page.click("#confirm-yes")
    wait_for(lambda: page.text_content("#live-state") == "LIVE", what="live again")
    wait_for(lambda: sorted(shown_ids(page)) == sorted(older + newer), what="the rest")
    left = run(lambda app: app.backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter()), url)
    assert sorted(j.id for j in left.items) == sorted(older + newer)
    no_js_errors(page)


@browser
def test_live_refresh_pauses_by_hand_and_while_a_job_is_open(
    open_page: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    first = fail_now(url, 2)
    page = open_page("bob", fragment="tab=dlq")  # a read-only operator pauses too
    wait_for(lambda: sorted(shown_ids(page)) == sorted(first), what="the first failures")
    wait_for(lambda: page.text_content("#c-failed") == "2", what="the snapshot")
    page.click("#live-toggle")
    assert page.text_content("#live-state") == "PAUSED · by hand"
    assert page.get_attribute("#live-toggle", "aria-pressed") == "true"
    more = fail_now(url, 3)
    wait_for(
        lambda: page.text_content("#live-state") == "PAUSED · by hand · 3 failed since",
        what="the count of new failures",
    )
    assert sorted(shown_ids(page)) == sorted(first)
    page.click("#live-toggle")  # resume: the table catches up at once
    wait_for(lambda: sorted(shown_ids(page)) == sorted(first + more), what="all failures")
    assert page.text_content("#live-state") == "LIVE"
    wait_for(lambda: page.text_content("#c-failed") == "5", what="the snapshot")
    # An open job pauses the table until the drawer closes.
    page.click(f"#job-rows tr[data-id='{first[0]}']")
    wait_for(lambda: page.text_content("#live-state") == "PAUSED · a job is open", what="pause")
    last = fail_now(url, 1)
    wait_for(lambda: "1 failed since" in page.text_content("#live-state"), what="the count")
    assert last[0] not in shown_ids(page)
    page.keyboard.press("Escape")
    wait_for(lambda: last[0] in shown_ids(page), what="the table to catch up")
    assert page.text_content("#live-state") == "LIVE"
    no_js_errors(page)


# -- 14. deep links: filters and sort -----------------------------------------------------------


def fragment_of(page: Any) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(page.evaluate("location.hash").lstrip("#")))


@browser
def test_deep_link_carries_filters_and_sort(open_page: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    card = seed(url, [NewJob(type="charge", queue="pay", tags=("eu",))], fail="CardDeclined: x")
    seed(url, [NewJob(type="refund", queue="pay")], fail="Timeout: y")
    seed(url, [NewJob(type="charge", queue="ship")], fail="CardDeclined: z")
    page = open_page(timezone="Europe/Berlin")
    page.click("#source button[data-source=dlq]")
    form = "#filters"
    page.fill(f"{form} input[name=queue]", "pay")
    page.fill(f"{form} input[name=search]", "CardDeclined")
    page.select_option(f"{form} select[name=sort]", "type")
    page.select_option(f"{form} select[name=order]", "asc")
    page.select_option(f"{form} select[name=page_size]", "25")
    page.fill(f"{form} input[name=since]", "2026-03-01T13:00")  # Berlin: 12:00 UTC
    page.click(f"{form} button[type=submit]")
    wait_for(lambda: shown_ids(page) == card, what="the filtered table")
    assert fragment_of(page) == {
        "tab": "dlq",
        "search": "CardDeclined",
        "queue": "pay",
        "since": "2026-03-01T12:00:00.000Z",
        "sort": "type",
        "order": "asc",
        "page_size": "25",
    }
    link = page.evaluate("location.hash").lstrip("#")
    # The link, opened elsewhere (another zone), shows the same view.
    other = open_page("bob", timezone="America/New_York", fragment=link)
    wait_for(lambda: shown_ids(other) == card, what="the linked view")
    assert other.input_value(f"{form} input[name=queue]") == "pay"
    assert other.input_value(f"{form} input[name=search]") == "CardDeclined"
    assert other.input_value(f"{form} select[name=sort]") == "type"
    assert other.input_value(f"{form} select[name=order]") == "asc"
    assert other.input_value(f"{form} select[name=page_size]") == "25"
    assert other.input_value(f"{form} input[name=since]") == "2026-03-01T07:00"
    assert other.get_attribute("#source button[data-source=dlq]", "class") == "on"
    # Clearing the filters clears them from the link.
    other.click("#clear-filters")
    wait_for(lambda: fragment_of(other) == {"tab": "dlq"}, what="a bare link")
    # A bad part (an unknown sort, a page size not offered, a malformed time) is dropped.
    bad = "tab=archive&sort=evil&page_size=7&since=yesterday&type=charge"
    third = open_page("bob", fragment=bad)
    wait_for(lambda: fragment_of(third) == {"tab": "archive", "type": "charge"}, what="cleanup")
    assert third.input_value(f"{form} select[name=sort]") == "date"
    assert third.input_value(f"{form} select[name=page_size]") == "50"
    no_js_errors(page)
    no_js_errors(other)
    no_js_errors(third)


# -- 16. layout -------------------------------------------------------------------------------

LONG = "q" * 200 + "-long-name-" + "z" * 44  # 255 characters


@browser
def test_layout_fits_1024_and_a_phone_with_255_character_names(
    open_page: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    assert len(LONG) == 255
    tags = ("t" * 100, "u" * 100)
    long_job = NewJob(type=LONG, queue=LONG, partition=LONG, tags=tags, created_by="c" * 100)
    seed(url, [long_job], fail="E" * 3000)
    seed(url, [NewJob(type=LONG, queue=LONG, tags=tags, created_by="c" * 100)], took=1.0)
    [active] = seed(url, [NewJob(type=LONG, queue=LONG, partition=LONG, tags=tags)])
    run(lambda app: app.backend.limit_set(scope="type", name=LONG, rate_limit="5/s"), url)
    for width, height in ((1024, 768), (390, 844)):
        page = open_page(width=width, height=height)
        for tab in ("active", "archive", "dlq"):
            page.click(f"#source button[data-source={tab}]")
            page.wait_for_selector("#job-rows tr")
            page.wait_for_selector("#queue-rows tr")
            page.wait_for_selector("#limit-rows tr")
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, f"{tab} at {width} px: the page is {wide} px wide"
        # The long name is cut in its cell, whole on hover; the table scrolls inside itself.
        cell = "#job-rows tr td[data-col=queue]"
        assert page.get_attribute(cell, "title") == LONG
        cut = page.eval_on_selector(f"{cell} > bdi", "b => b.scrollWidth > b.clientWidth")
        assert cut, "the name is cut with an ellipsis"
        table_box = page.eval_on_selector(
            "#jobs .scroll", "s => [s.scrollWidth, s.clientWidth, s.getBoundingClientRect().right]"
        )
        assert table_box[2] <= width
        if width == 390:
            assert table_box[0] > table_box[1], "the table scrolls inside its panel"
        # The drawer with the long job open fits too.
        page.click("#source button[data-source=active]")
        page.click(f"#job-rows tr[data-id='{active}']")
        page.wait_for_selector("#insp-banner.hot")
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"the drawer at {width} px: the page is {wide} px wide"
        assert page.eval_on_selector("#drawer", "d => d.scrollWidth <= d.clientWidth")
        page.keyboard.press("Escape")
        no_js_errors(page)

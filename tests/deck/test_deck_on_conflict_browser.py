"""The Deck shows enqueue conflicts (``on_conflict``, issue 36) in a real browser: the queue
table counts the replaced and superseded enqueues, and the inspector says which job superseded
a running one (with a link that opens it) and which job the new one supersedes."""

from __future__ import annotations

from typing import Any

from chokaq.app import App

from .conftest import Served, run


async def conflicts(app: App) -> dict[str, str]:
    """A running job superseded by a latest-wins enqueue, whose new job is then replaced."""
    latest = {"idempotency_key": "doc-<7>", "on_conflict": "cancel_running", "queue": "docs"}
    first = await app.enqueue_raw("publish", {"rev": 1}, **latest)
    await app.backend.jobs_fetch(worker_id="w", limit=1, queues=["docs"], start=True)
    second = await app.enqueue_raw("publish", {"rev": 2}, **latest)
    third = await app.enqueue_raw("publish", {"rev": 3}, **{**latest, "on_conflict": "replace"})
    assert (first.outcome, second.outcome, third.outcome) == ("inserted", "superseded", "replaced")
    return {"first": str(first), "second": str(second)}


def test_queue_counts_and_the_inspectors_supersession_links(
    login: Any, deck_server: Served
) -> None:
    ids = run(conflicts, deck_server.db_url)
    page = login("bob")
    row = "#queue-rows tr[data-key=docs]"
    page.wait_for_selector(f"{row} td[data-col=replaced] >> text=1")
    assert page.text_content(f"{row} td[data-col=superseded]") == "1"

    page.goto(f"{deck_server.url}/#job={ids['first']}")
    superseded = page.wait_for_selector("#insp-superseded:not([hidden])")
    assert "Superseded by" in superseded.text_content()
    assert "asked to stop" in superseded.text_content()
    assert page.locator("#insp-supersedes").is_hidden()
    page.click(f"#insp-superseded button[data-job='{ids['second']}']")
    page.wait_for_selector(f"#insp-supersedes button[data-job='{ids['first']}']")
    assert page.locator("#insp-superseded").is_hidden()
    assert page.js_errors == []

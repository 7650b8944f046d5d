"""A job's failed attempts and the DLQ's error families in The Deck: the inspector's API lists the
attempts newest first and the drawer shows them; the top-errors panel names normalised families
and a click on one filters the DLQ to exactly its members (API through httpx, then Chromium)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from chokaq.app import App
from chokaq.models import FailMove, FailureReason, RetryMove

from .conftest import Client, Served, csrf, run
from .test_deck_browser import no_js_errors


async def fail_attempts(app: App, errors: list[str], *, queue: str = "default") -> str:
    """One job that fails once per error the way a worker records it: a retry for each but the
    last, which dead-letters it (TRANSIENT). Returns its id."""
    job_id = str(await app.enqueue_raw("charge", '{"card": 1}', queue=queue))
    for i, error in enumerate(errors):
        [claimed] = await app.backend.jobs_fetch(
            worker_id=f"w{i + 1}", limit=1, queues=[queue], start=True
        )
        last = i == len(errors) - 1
        move: Any = (
            FailMove(claimed.lease, FailureReason.TRANSIENT, error, duration_seconds=0.5)
            if last
            else RetryMove(claimed.lease, error, duration_seconds=1.5)
        )
        assert await app.backend.jobs_finalize(moves=[move]) == [True]
    return job_id


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def test_the_inspector_lists_failed_attempts_newest_first(app: App, client: Client) -> None:
    job_id = await fail_attempts(app, ["ValueError: one\nTraceback", "KeyError: 'two'"])
    c = await client("bob")
    job = (await c.get(f"/api/jobs/{job_id}")).json()
    attempts = job["attempts"]
    assert [(a["seq"], a["attempt"], a["worker_id"]) for a in attempts] == [
        (2, 2, "w2"),
        (1, 1, "w1"),
    ]
    assert [a["failure_reason"] for a in attempts] == ["transient", None]
    assert [a["error"] for a in attempts] == ["KeyError: 'two'", "ValueError: one\nTraceback"]
    assert [a["duration_seconds"] for a in attempts] == [0.5, 1.5]
    assert all(a["failed_at"].endswith("Z") and a["started_at"] for a in attempts)
    fresh = str(await app.enqueue_raw("charge", "{}"))
    assert (await c.get(f"/api/jobs/{fresh}")).json()["attempts"] == []


async def test_top_errors_name_families_and_the_dlq_filters_on_one(
    app: App, client: Client
) -> None:
    members = [
        await fail_attempts(app, [f"CardError: card {n} declined for '{who}'"])
        for n, who in ((4242, "ann"), (1111, "bob"), (7, "cy"))
    ]
    other = await fail_attempts(app, ["CardError: card declined"])
    c = await client("bob")
    groups = (await c.get("/api/errors")).json()
    assert groups[0]["family"] == "CardError: card <n> declined for <str>"
    assert groups[0]["count"] == 3 and groups[0]["failure_reason"] == "transient"
    assert {g["family"]: g["count"] for g in groups}["CardError: card declined"] == 1
    family = groups[0]["family"]
    page = (await c.get("/api/jobs", params={"source": "dlq", "family": family})).json()
    assert {j["id"] for j in page["items"]} == set(members) and page["total"] == 3
    assert other not in {j["id"] for j in page["items"]}
    too_long = await c.get("/api/jobs", params={"source": "dlq", "family": "x" * 161})
    assert too_long.status_code == 422 and "family" in too_long.json()["error"]
    admin = await client("alice")
    preview = await admin.post(
        "/api/dlq/preview",
        json={"filter": {"family": family}, "cap": 10},
        headers={"x-csrf-token": csrf(admin)},
    )
    assert preview.status_code == 200, preview.text
    assert preview.json()["matched"] == 3


def test_the_drawer_shows_attempts_and_a_family_click_filters_the_dlq(
    login: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    errors = ["TimeoutError: gateway 10.0.0.7 slow\nTraceback (most recent call last):\n  x"]
    errors += ["TimeoutError: gateway 10.0.0.9 slow\nTraceback (most recent call last):\n  y"]
    job_id = run(lambda app: fail_attempts(app, errors), url)
    sibling = run(lambda app: fail_attempts(app, ["TimeoutError: gateway 10.0.0.1 slow"]), url)
    stranger = run(lambda app: fail_attempts(app, ["KeyError: 'sku'"]), url)
    page = login("alice")
    family = "TimeoutError: gateway <n>.<n> slow"
    page.wait_for_selector(f"#error-rows li >> text={family}")
    page.click(f"#error-rows li >> text={family}")
    page.wait_for_selector("#source button[data-source=dlq].on")
    assert page.input_value("#filters input[name=family]") == family
    page.wait_for_selector(f"#job-rows tr[data-id='{sibling}']")
    page.wait_for_selector(f"#job-rows tr[data-id='{job_id}']")
    assert page.locator(f"#job-rows tr[data-id='{stranger}']").count() == 0
    assert page.locator("#job-rows tr").count() == 2
    page.click(f"#job-rows tr[data-id='{job_id}']")
    page.wait_for_selector("#insp-attempts li[data-seq='2']")
    items = page.locator("#insp-attempts li")
    assert items.count() == 2
    assert page.text_content("#insp-attempts-note") == "(2, newest first)"
    newest, oldest = items.nth(0), items.nth(1)
    assert newest.get_attribute("data-seq") == "2" and oldest.get_attribute("data-seq") == "1"
    assert "#2" in newest.text_content() and "final: transient" in newest.text_content()
    assert "w2" in newest.text_content() and "500 ms" in newest.text_content()
    assert "retried" in oldest.text_content() and "1.5 s" in oldest.text_content()
    assert newest.locator("summary").text_content() == "TimeoutError: gateway 10.0.0.9 slow"
    assert not newest.locator("pre").is_visible()  # the traceback is one click away
    newest.locator("summary").click()
    assert newest.locator("pre").text_content() == errors[1]
    page.click("#filters button[type=reset]")
    page.wait_for_selector(f"#job-rows tr[data-id='{stranger}']")
    assert page.input_value("#filters input[name=family]") == ""
    no_js_errors(page)

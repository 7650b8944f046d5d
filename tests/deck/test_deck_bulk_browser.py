"""The Deck's bulk actions in Chromium (Playwright) against a real server: "all matching the
filter" on Active (cancel) and on Archive (requeue as new, delete) with the preview and the typed
word, acting on exactly the previewed set while jobs keep arriving; a changed filter discards the
preview; "Run now" on a delayed job makes a real worker subprocess run it."""

from __future__ import annotations

from typing import Any

import pytest

from chokaq.app import App
from chokaq.models import JobFilter, Pillar, SucceedMove

from .conftest import Served, run, wait_for

pytestmark = pytest.mark.browser


def delayed(url: str, n: int, queue: str) -> list[str]:
    """``n`` jobs due in an hour (no worker takes them meanwhile)."""

    async def go(app: App) -> list[str]:
        return [
            str(await app.enqueue_raw("quick", {"n": i}, queue=queue, delay_seconds=3600))
            for i in range(n)
        ]

    return run(go, url)


def archived(url: str, n: int, queue: str, priority: int = 10) -> list[str]:
    """``n`` jobs run and succeeded the way a worker would (a higher ``priority`` than the
    queue's other pending jobs makes sure these are the ones claimed)."""

    async def go(app: App) -> list[str]:
        ids = [
            str(await app.enqueue_raw("quick", {"n": i}, queue=queue, priority=priority))
            for i in range(n)
        ]
        claimed = await app.backend.jobs_fetch(worker_id="seed", limit=n, queues=[queue])
        await app.backend.jobs_finalize(moves=[SucceedMove(c.lease, 0.01) for c in claimed])
        return ids

    return run(go, url)


def listed(url: str, pillar: Pillar, queue: str) -> list[Any]:
    page = run(
        lambda app: app.backend.jobs_page(
            pillar=pillar, filter=JobFilter(queue=queue), page_size=1000
        ),
        url,
    )
    return list(page.items)


def filter_queue(page: Any, queue: str, total: int) -> None:
    page.fill("#filters input[name=queue]", queue)
    page.click("#filters button[type=submit]")
    wait_for(
        lambda: page.get_attribute("#jobs", "data-total") == str(total),
        what=f"{total} rows listed",
    )


def confirm_with(page: Any, word: str | None) -> None:
    page.click("#preview-confirm")
    page.wait_for_selector("#confirm[open]")
    if word is None:
        assert page.is_enabled("#confirm-yes")
    else:
        assert page.is_disabled("#confirm-yes")
        page.fill("#confirm-input", word.lower())
        assert page.is_disabled("#confirm-yes")
        page.fill("#confirm-input", word)
    page.click("#confirm-yes")


def test_active_cancel_all_matching_cancels_exactly_the_previewed_jobs(
    login: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    doomed = delayed(url, 30, "batch")
    spared = delayed(url, 3, "other")
    page = login("alice")
    filter_queue(page, "batch", 30)
    page.click("#preview-cancel")
    page.wait_for_selector("#preview-count")
    assert page.text_content("#preview-count") == "30"
    page.fill("#filters input[name=search]", "x")  # a changed filter discards the preview
    assert page.is_hidden("#preview")
    page.fill("#filters input[name=search]", "")
    page.click("#preview-cancel")
    page.wait_for_selector("#preview-count")
    assert "active jobs" in page.text_content("#preview")
    late = delayed(url, 2, "batch")  # arrives after the preview
    confirm_with(page, "CANCEL")
    page.wait_for_selector(".toast >> text=Cancelled 30, stop requested for 0")
    left = listed(url, Pillar.HOT, "batch")
    assert sorted(j.id for j in left) == sorted(late)
    dead = listed(url, Pillar.DLQ, "batch")
    assert sorted(j.id for j in dead) == sorted(doomed)
    assert {j.cancelled_by for j in dead} == {"alice"}
    assert len(listed(url, Pillar.HOT, "other")) == len(spared)
    assert page.js_errors == []


def test_archive_requeue_as_new_and_delete_by_filter(login: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    old = archived(url, 4, "reports")
    page = login("alice")
    page.click("#source button[data-source=archive]")
    assert page.is_visible("#preview-archive-delete") and page.is_hidden("#preview-cancel")
    filter_queue(page, "reports", 4)
    page.click("#preview-archive-requeue")
    page.wait_for_selector("#preview-count")
    assert page.text_content("#preview-count") == "4"
    confirm_with(page, None)  # fewer than 25: no typed word
    page.wait_for_selector(".toast >> text=4 job(s) requeued as new")
    fresh = listed(url, Pillar.HOT, "reports")
    assert sorted(j.created_by for j in fresh) == sorted(f"requeue:{i}" for i in old)
    assert len(listed(url, Pillar.ARCHIVE, "reports")) == 4  # the archive is history: kept

    page.click("#preview-archive-delete")
    page.wait_for_selector("#preview-count")
    late = archived(url, 1, "reports", priority=100)  # finished after the preview
    confirm_with(page, "DELETE")
    page.wait_for_selector(".toast >> text=4 job(s) deleted")
    assert [j.id for j in listed(url, Pillar.ARCHIVE, "reports")] == late
    summary = run(lambda app: app.backend.stats_summary(), url)
    assert summary.succeeded_total == 5  # lifetime counters keep what happened
    assert page.js_errors == []


def test_run_now_makes_a_real_worker_run_a_delayed_job(
    login: Any, deck_server: Served, worker: Any
) -> None:
    url = deck_server.db_url
    [later] = delayed(url, 1, "default")
    page = login("alice")
    row = f"#job-rows tr[data-id='{later}']"
    page.wait_for_selector(f"{row} .row-run-now")
    page.click(f"{row} .row-run-now")
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm-yes")
    page.wait_for_selector(".toast >> text=Due now: 1")

    def ran() -> bool:
        view = run(lambda app: app.backend.job_get(later), url)
        return view is not None and view.pillar is Pillar.ARCHIVE

    wait_for(ran, timeout=30, what="the worker to run the job")
    view = run(lambda app: app.backend.job_get(later), url)
    assert view.last_modified_by == "alice" and view.attempt_count == 1
    assert page.js_errors == []

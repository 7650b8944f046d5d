""" "Why the wait" end to end: Chromium (Playwright) against a real uvicorn server on a SQLite
file, and a real worker subprocess (``lag_app``) started half-way. Before it starts, the banner
names each queue with due jobs and no live worker, and the panel gives "no worker" as their
reason; once it serves them the banner goes; its ``send`` handler fails until the type's circuit
opens, and the panel then says the due ``send`` jobs are deferred by that circuit, with a link
to it. Every wait is on a condition (Playwright's ``expect`` and locator waits), never on time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import expect

from chokaq.app import App
from chokaq.models import NewJob

from .conftest import HERE, Served, run

pytestmark = pytest.mark.browser

# Generous: the worker subprocess imports chokaq and the app on a machine other tests share.
WAIT_MS = 30_000


@contextmanager
def lag_worker(db_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``chokaq worker`` running ``lag_app`` (it serves queues emails and reports)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "CHOKAQ_DATABASE_URL": db_url,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "chokaq", "worker", "--app", "lag_app:app"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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


def enqueue(url: str, jobs: list[NewJob]) -> None:
    async def go(app: App) -> None:
        await app.enqueue_many(jobs)

    run(go, url)


def row(page: Any, queue: str, job_type: str) -> Any:
    return (
        page.locator("#wait-rows tr")
        .filter(has=page.locator("td[data-col=queue]", has_text=queue))
        .filter(has=page.locator("td[data-col=type]", has_text=job_type))
    )


def test_the_banner_and_the_panel_say_why_jobs_wait(login: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    # The sends come first (older and of a higher priority): the worker's two slots take them
    # before the long reports, so that they fail and open the circuit.
    enqueue(
        url, [NewJob(type="send", queue="emails", max_attempts=1, priority=20) for _ in range(2)]
    )
    enqueue(url, [NewJob(type="report", queue="reports") for _ in range(6)])
    page = login("bob")

    banner = page.locator("#unserved li")
    expect(banner).to_have_count(2, timeout=WAIT_MS)
    expect(banner.nth(0)).to_have_text("queue 'emails': 2 due jobs, no live worker serves it")
    expect(banner.nth(1)).to_have_text("queue 'reports': 6 due jobs, no live worker serves it")
    reports = row(page, "reports", "report")
    expect(reports.locator("td[data-col=reason]")).to_have_text("no worker", timeout=WAIT_MS)
    expect(reports.locator("td[data-col=due]")).to_have_text("6")
    expect(page.locator("#waits-counts")).to_contain_text("8 without a worker")

    with lag_worker(url):
        # The worker serves both queues: the banner goes at the next snapshot after its beat.
        expect(page.locator("#unserved")).to_be_hidden(timeout=WAIT_MS)
        # Two reports run (concurrency 2, each 30 s long); four wait for a slot.
        expect(reports.locator("td[data-col=reason]")).to_have_text(
            "waiting for a slot", timeout=WAIT_MS
        )
        expect(reports.locator("td[data-col=due]")).to_have_text("4", timeout=WAIT_MS)
        # Both sends failed: the circuit of send opened.
        circuit = page.locator("#circuit-rows tr", has_text="send")
        expect(circuit.locator("td").nth(1)).to_have_text("OPEN", timeout=WAIT_MS)

        enqueue(url, [NewJob(type="send", queue="emails", max_attempts=1) for _ in range(3)])
        sends = row(page, "emails", "send")
        expect(sends.locator("td[data-col=reason]")).to_have_text("circuit open", timeout=WAIT_MS)
        expect(sends.locator("td[data-col=due]")).to_have_text("3")
        expect(sends.locator("td[data-col=detail]")).to_contain_text(
            "deferred by the open circuit of 'send' on every worker serving the queue (1)"
        )
        expect(page.locator("#unserved")).to_be_hidden()
        sends.locator("button.circuit-link").click()
        expect(circuit).to_have_class("flash")
    assert page.js_errors == []


def test_names_in_the_banner_and_the_panel_are_inert_text(login: Any, deck_server: Served) -> None:
    # Names with bidi controls are refused at the seam (tests/deck/test_deck_ux.py); markup is not.
    evil = "<img src=x onerror=window.__pwned=1>evil"
    enqueue(deck_server.db_url, [NewJob(type=evil, queue=evil)])
    page = login("bob")
    banner = page.locator("#unserved li")
    expect(banner).to_have_text(f"queue {evil!r}: 1 due job, no live worker serves it")
    expect(row(page, "evil", "evil").locator("td[data-col=reason]")).to_have_text("no worker")
    assert page.locator("#unserved img, #wait-rows img").count() == 0
    # Each name sits in its own isolating element: it cannot reorder what follows it.
    assert page.locator("#unserved bdi, #wait-rows bdi").count() >= 3
    assert page.evaluate("window.__pwned") is None
    assert page.js_errors == []

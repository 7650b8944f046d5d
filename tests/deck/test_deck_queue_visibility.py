"""Hide and pause are two things in The Deck: Hide only leaves a queue out of the queue list (its
jobs are still claimed), Pause stops workers claiming its jobs and asks first. Through the API
(httpx) and in Chromium, and through ``chokaq queue hide``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chokaq.app import App

from .conftest import Client, Served, csrf, run
from .test_deck_browser import no_js_errors

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def test_hide_changes_the_list_only_and_pause_stops_claims(app: App, client: Client) -> None:
    job_id = str(await app.enqueue_raw("job", "{}", queue="mail"))
    c = await client("alice")
    h = {"x-csrf-token": csrf(c)}
    r = await c.post("/api/queues", json={"queue": "mail", "hidden": True}, headers=h)
    assert r.status_code == 200, r.text
    assert (r.json()["hidden"], r.json()["paused"], r.json()["active"]) == (True, False, True)
    [mail] = [q for q in (await c.get("/api/overview")).json()["queues"] if q["name"] == "mail"]
    assert mail["hidden"] is True and mail["pending"] == 1
    claimed = await app.backend.jobs_fetch(worker_id="w", limit=5, queues=["mail"])
    assert [j.id for j in claimed] == [job_id]  # a hidden queue is still served
    await app.enqueue_raw("job", "{}", queue="mail")
    r = await c.post("/api/queues", json={"queue": "mail", "paused": True}, headers=h)
    assert r.json()["paused"] is True and r.json()["hidden"] is True
    assert await app.backend.jobs_fetch(worker_id="w", limit=5, queues=["mail"]) == []
    r = await c.post("/api/queues", json={"queue": "mail", "hidden": False}, headers=h)
    assert r.json()["hidden"] is False and r.json()["paused"] is True
    readonly = await client("bob")
    refused = await readonly.post(
        "/api/queues",
        json={"queue": "mail", "hidden": True},
        headers={"x-csrf-token": csrf(readonly)},
    )
    assert refused.status_code == 403


def test_hide_pause_and_their_explanations_in_the_page(login: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    run(lambda app: app.enqueue_raw("job", "{}", queue="mail"), url)
    page = login("alice")
    row = "#queue-rows tr[data-key=mail]"
    page.wait_for_selector(row)
    hide, pause = page.locator(f"{row} .q-hide"), page.locator(f"{row} .q-pause")
    assert "Its jobs still run" in hide.get_attribute("title")
    assert "stop claiming" in pause.get_attribute("title")
    hide.click()
    page.wait_for_selector(row, state="detached")
    info = run(lambda app: app.backend.queue_get("mail"), url)
    assert (info.hidden, info.paused, info.active) == (True, False, True)
    page.check("#show-hidden")
    page.wait_for_selector(f"{row} >> text=ACTIVE · HIDDEN")
    page.locator(f"{row} .q-pause").click()  # asks first: dismissing it changes nothing
    page.wait_for_selector("#confirm[open]")
    assert "stop claiming" in page.text_content("#confirm-text")
    page.click("#confirm-no")
    assert not run(lambda app: app.backend.queue_get("mail"), url).paused
    page.locator(f"{row} .q-pause").click()
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm-yes")
    page.wait_for_selector(f"{row} >> text=PAUSED · HIDDEN")
    assert run(lambda app: app.backend.queue_get("mail"), url).paused
    page.locator(f"{row} .q-hide").click()
    page.uncheck("#show-hidden")
    page.wait_for_selector(f"{row} >> text=PAUSED")
    page.locator(f"{row} .q-pause").click()  # Resume does not ask
    page.wait_for_selector(f"{row} >> text=ACTIVE")
    info = run(lambda app: app.backend.queue_get("mail"), url)
    assert (info.hidden, info.paused) == (False, False)
    no_js_errors(page)


def test_the_cli_hides_and_unhides_a_queue(db_url: str) -> None:
    run(lambda app: app.enqueue_raw("job", "{}", queue="mail"), db_url)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO)))}

    def chokaq(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "chokaq", *args, "--database", db_url],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = chokaq("queue", "hide", "mail")
    assert done.returncode == 0, done.stderr
    assert "hidden from the Deck's queue list" in done.stdout
    assert run(lambda app: app.backend.queue_get("mail"), db_url).hidden
    listed = chokaq("queue", "list")
    assert "hidden in the Deck" in listed.stdout
    assert chokaq("queue", "hide", "typo").returncode != 0  # a typo is not a queue
    assert chokaq("queue", "unhide", "mail").returncode == 0
    assert not run(lambda app: app.backend.queue_get("mail"), db_url).hidden

"""Batch handlers in The Deck: a job's inspector says which batch it ran in and lists its
siblings; the Batches panel shows each batch type's settings and batch sizes (API and browser);
a type name is user text (escaped)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chokaq import Batched
from chokaq.app import App
from chokaq.models import NewJob, SucceedMove

from .conftest import Client, Served, run
from .test_deck_browser import no_js_errors

EVIL = "<img src=x onerror=alert(1)>"


def declare(app: App) -> None:
    """The batch type the Deck's app declares (as a worker's would)."""

    @app.job(name="embed", batch_size=100, batch_wait_seconds=0.5, batch_key="tenant")
    async def embed(batch: list[Batched[dict[str, Any]]]) -> list[int]:
        return [1] * len(batch)


async def ran_as_batches(app: App, type: str, sizes: list[int]) -> list[list[str]]:
    """Enqueue and run batches of ``sizes`` jobs of ``type`` as a worker would (claimed as one
    batch each, then succeeded); the ids of each batch."""
    batches = []
    for size in sizes:
        jobs = [NewJob(type, json.dumps({"tenant": "t1", "text": "x"})) for _ in range(size)]
        await app.enqueue_many(jobs)
        claim = await app.backend.jobs_claim_batch(
            worker_id="w1", type=type, limit=size, wait_seconds=0, key="tenant"
        )
        await app.backend.jobs_finalize(moves=[SucceedMove(j.lease, 0.1) for j in claim.jobs])
        batches.append([job.id for job in claim.jobs])
    return batches


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    declare(chokaq_app)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def test_the_inspector_names_the_batch_and_its_siblings(app: App, client: Client) -> None:
    [ids] = await ran_as_batches(app, "embed", [3])
    c = await client("bob")
    data = (await c.get(f"/api/jobs/{ids[0]}")).json()
    [batch] = data["batches"]
    assert batch["size"] == 3 and batch["attempt"] == 1 and batch["worker_id"] == "w1"
    assert sorted(batch["siblings"]) == sorted(ids[1:])


async def test_the_batches_api_shows_each_types_sizes(app: App, client: Client) -> None:
    await ran_as_batches(app, "embed", [3, 5])
    await ran_as_batches(app, EVIL, [2])
    c = await client("bob")
    [embed] = (await c.get("/api/batches")).json()["types"]
    assert (embed["type"], embed["batch_size"], embed["batch_key"]) == ("embed", 100, "tenant")
    assert (embed["batches"], embed["jobs"], embed["max_size"], embed["mean_size"]) == (2, 8, 5, 4)
    assert [b["size"] for b in embed["recent"]] == [5, 3]  # newest first
    [evil] = (await c.get("/api/batches", params={"type": EVIL})).json()["types"]
    assert (evil["batches"], evil["batch_size"]) == (1, None)  # recorded, not declared here
    refused = await c.get("/api/batches", params={"since_seconds": "0"})
    assert refused.status_code == 422 and "since_seconds" in refused.json()["error"]


def test_operator_sees_batch_sizes_and_a_jobs_batch(login: Any, deck_server: Served) -> None:
    declare(deck_server.app)
    [_, second] = run(lambda app: ran_as_batches(app, "embed", [4, 2]), deck_server.db_url)
    page = login("bob")
    row = "#batch-rows tr"
    page.wait_for_selector(row)
    cells = [page.text_content(f"{row} td >> nth={i}") for i in range(9)]
    assert cells[0] == "embed" and cells[1] == "100" and cells[3] == "tenant"
    assert cells[4:8] == ["2", "6", "3", "4"]
    assert cells[8] == "2 4"
    page.click("#source button[data-source=archive]")
    page.wait_for_selector(f"#job-rows tr[data-id='{second[0]}']")
    page.click(f"#job-rows tr[data-id='{second[0]}']")
    page.wait_for_selector("#insp-batches li")
    assert page.text_content("#insp-batches-note") == "(1, newest first)"
    links = page.locator("#insp-batches li .job-link")
    assert links.count() == 1 and links.nth(0).get_attribute("data-job") == second[1]
    assert "2 job(s)" in page.text_content("#insp-batches li")
    no_js_errors(page)

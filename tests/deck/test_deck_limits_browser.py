"""The Limits panel, the queue table's rate and the jobs table's partition filter end to end:
Chromium (Playwright) against a real uvicorn server on a SQLite file. Every wait is on a
condition (Playwright's ``expect`` and locator waits), never on time."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from chokaq.app import App
from chokaq.models import NewJob, TypeLimit

from .conftest import Served, run

pytestmark = pytest.mark.browser

EVIL = "<img src=x onerror=alert(1)>"


def seed(url: str, partitions: dict[str | None, int], *, claim: bool = True) -> None:
    """sync jobs on queue partners, ``n`` per partition; the code declares sync's limits
    (10/s, one running job per partition) as a worker would; one job per partition runs."""

    async def go(app: App) -> None:
        await app.backend.limits_declare(limits=[TypeLimit("sync", "10/s", 1)])
        # NewJob, not app.raw: raw drops its partition option.
        jobs = [
            NewJob(type="sync", queue="partners", partition=p)
            for p, n in partitions.items()
            for _ in range(n)
        ]
        await app.enqueue_many(jobs)
        if claim:
            await app.backend.jobs_claim(worker_id="seed", limit=100, start=True)

    run(go, url)


def stored(url: str, key: str) -> Any:
    async def go(app: App) -> Any:
        return {f"{i.scope}:{i.name}": i for i in await app.backend.limits_list()}.get(key)

    return run(go, url)


def watch_dialogs(page: Any) -> list[str]:
    """Messages of every alert() the page opens (an injected handler would open one)."""
    opened: list[str] = []

    def on_dialog(dialog: Any) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return opened


def test_an_admin_reads_and_steers_a_limited_type(login: Any, deck_server: Served) -> None:
    url = deck_server.db_url

    # The Deck's app registers sync (as the code it is started with would): its queue is known.
    @deck_server.app.job(queue="partners")
    async def sync() -> None: ...

    seed(url, {"acct:big": 4, "acct:small": 2, EVIL: 1})
    page = login("alice")
    dialogs = watch_dialogs(page)
    row = page.locator("#limit-rows tr[data-key='type:sync']")
    expect(row).to_be_visible()
    expect(row.locator("td[data-col=queue]")).to_have_text("partners")
    expect(row.locator(".l-rate")).to_have_value("10/s")
    expect(row).to_have_attribute("data-rate-source", "code")
    expect(row.locator("td[data-col=rate] .src")).to_have_text("CODE")
    expect(row.locator(".l-conc")).to_have_value("1")
    # One running job per partition, the rest held back by the cap: 3 + 1 waiting, all held.
    expect(row.locator("td[data-col=running]")).to_have_text("3")
    expect(row.locator("td[data-col=waiting]")).to_have_text("4")
    expect(row.locator("td[data-col=held]")).to_have_text("4")
    parts = row.locator("td[data-col=partitions] li")
    expect(parts).to_have_count(3)
    expect(parts.nth(0).locator("button.part")).to_have_text("acct:big")
    expect(parts.nth(0)).to_have_attribute("data-waiting", "3")
    expect(parts.nth(1).locator("button.part")).to_have_text("acct:small")
    # The partition with markup is a text node in its button: no element, no handler ran.
    expect(parts.nth(2).locator("button.part")).to_have_text(EVIL)
    assert page.locator("#limits img").count() == 0

    # An edit of the rate: the row says an operator set it, and storage holds it with the actor.
    row.locator(".l-rate").fill("5/m")
    row.locator(".l-rate").press("Enter")
    expect(row).to_have_attribute("data-rate-source", "operator")
    expect(row.locator("td[data-col=rate] .src")).to_have_text("OPERATOR")
    expect(row.locator("td[data-col=rate] .declared")).to_have_text(" code: 10/s")
    info = stored(url, "type:sync")
    assert (info.rate_limit, info.rate_set, info.last_modified_by) == ("5/m", True, "alice")

    # A bad rate is refused by the server, which names the field; storage keeps the last one.
    row.locator(".l-rate").fill("fast")
    row.locator(".l-rate").press("Enter")
    expect(page.locator(".toast.bad", has_text="rate_limit")).to_be_visible()
    assert stored(url, "type:sync").rate_limit == "5/m"

    # Back to the code's declaration.
    row.locator(".l-reset").click()
    page.click("#confirm-yes")
    expect(row).to_have_attribute("data-rate-source", "code")
    expect(row.locator(".l-rate")).to_have_value("10/s")
    assert not stored(url, "type:sync").rate_set

    # A queue's rate, edited where its other limits are: the Limits panel lists it.
    queue = page.locator("#queue-rows tr[data-key=partners]")
    queue.locator(".q-rate").fill("2/s")
    queue.locator(".q-rate").press("Enter")
    limited = page.locator("#limit-rows tr[data-key='queue:partners']")
    expect(limited.locator(".l-rate")).to_have_value("2/s")
    assert stored(url, "queue:partners").rate_limit == "2/s"
    queue.locator(".q-rate").fill("")
    queue.locator(".q-rate").press("Enter")
    expect(limited).to_have_count(0)
    assert stored(url, "queue:partners") is None
    assert dialogs == []
    assert [e for e in page.js_errors if "422" not in e] == []


def test_the_partition_filter_narrows_the_jobs_table(login: Any, deck_server: Served) -> None:
    seed(deck_server.db_url, {"acct:a": 2, "acct:b": 3, EVIL: 1, None: 1}, claim=False)
    page = login("alice")
    dialogs = watch_dialogs(page)
    expect(page.locator("#jobs")).to_have_attribute("data-total", "7")
    page.fill("#filters input[name=partition]", "acct:a")
    page.click("#filters button[type=submit]")
    expect(page.locator("#jobs")).to_have_attribute("data-total", "2")
    expect(page.locator("#job-rows tr")).to_have_count(2)
    expect(page.locator("#job-rows tr .chip.part")).to_have_text(["acct:a", "acct:a"])

    # A top partition of the Limits panel filters the table to it; markup stays text.
    row = page.locator("#limit-rows tr[data-key='type:sync']")
    row.locator("button.part", has_text="onerror").click()
    expect(page.locator("#filters input[name=partition]")).to_have_value(EVIL)
    expect(page.locator("#filters input[name=type]")).to_have_value("sync")
    expect(page.locator("#jobs")).to_have_attribute("data-total", "1")
    expect(page.locator("#job-rows tr")).to_have_count(1)
    expect(page.locator("#job-rows tr .chip.part")).to_have_text(EVIL)

    # The inspector shows the partition, as text.
    page.locator("#job-rows tr").click()
    expect(page.locator("#insp-fields dd[data-field=partition]")).to_have_text(EVIL)
    assert page.locator("#job-rows img, #drawer img, #limits img").count() == 0
    assert dialogs == []
    assert page.js_errors == []


def test_readonly_sees_the_limits_without_edit_controls(login: Any, deck_server: Served) -> None:
    seed(deck_server.db_url, {"acct:a": 2})
    run(
        lambda app: app.backend.limit_set(
            scope="queue", name="partners", rate_limit="2/s", actor="alice"
        ),
        deck_server.db_url,
    )
    page = login("bob")
    row = page.locator("#limit-rows tr[data-key='type:sync']")
    expect(row.locator("td[data-col=rate]")).to_have_text("10/s CODE")
    expect(row.locator("td[data-col=concurrency]")).to_have_text("1 CODE")
    expect(row.locator("td[data-col=queue]")).to_have_text("\u2013")  # not registered here: a dash
    expect(page.locator("#queue-rows tr[data-key=partners] td[data-col=rate]")).to_have_text("2/s")
    expect(page.locator("#limit-rows tr[data-key='queue:partners'] .src")).to_have_text("OPERATOR")
    controls = ".l-rate, .l-conc, .l-reset, .q-rate, #limits button:not(.part)"
    assert page.locator(controls).count() == 0
    assert page.js_errors == []

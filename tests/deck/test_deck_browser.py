"""The Deck end to end: Chromium (Playwright) against a real uvicorn server and a real worker
subprocess, on a SQLite file. With CHOKAQ_SCREENSHOTS=1 it also rewrites docs/screenshots/*.png
for the README."""

from __future__ import annotations

import functools
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chokaq.app import App
from chokaq.models import (
    FailMove,
    FailureReason,
    JobFilter,
    NewJob,
    Pillar,
    ScheduleDeclaration,
    SucceedMove,
    WorkerInfo,
)

from .conftest import SCREENSHOTS, Served, declared, diamond, run, wait_for

pytestmark = pytest.mark.browser


def dead_letter(
    url: str,
    n: int,
    *,
    error: str,
    queue: str = "default",
    type: str = "charge",
    payload: Any = None,
    tags: tuple[str, ...] = (),
) -> list[str]:
    async def go(app: App) -> list[str]:
        ids = [
            str(await app.enqueue_raw(type, payload or {"n": i}, queue=queue, tags=tags))
            for i in range(n)
        ]
        claimed = await app.backend.jobs_fetch(
            worker_id="seed", limit=n, queues=[queue], start=True
        )
        await app.backend.jobs_finalize(
            moves=[
                FailMove(lease=c.lease, reason=FailureReason.FATAL_ERROR, error=error)
                for c in claimed
            ]
        )
        return ids

    return run(go, url)


def enqueue(url: str, type: str, payloads: list[dict[str, Any]], **options: Any) -> list[str]:
    async def go(app: App) -> list[str]:
        return [str(await app.enqueue_raw(type, p, **options)) for p in payloads]

    return run(go, url)


def job(url: str, job_id: str) -> Any:
    return run(lambda app: app.backend.job_get(job_id), url)


def chart_filled(page: Any, jobs: int) -> bool:
    return int(page.get_attribute("#chart", "data-total") or 0) >= jobs


def no_js_errors(page: Any, *, expected: str = "") -> None:
    assert [e for e in page.js_errors if not (expected and expected in e)] == []


def test_live_counts_progress_and_chart_move(login: Any, deck_server: Served, worker: Any) -> None:
    page = login("alice")
    # The steady job runs 10 s: longer than the live view may reuse one snapshot on a busy
    # machine (5 s), so a reload of the table lands while it runs whatever the machine's load.
    enqueue(deck_server.db_url, "steady", [{"steps": 40, "step_seconds": 0.25}])
    enqueue(deck_server.db_url, "quick", [{"n": i} for i in range(40)], delay=1.0)
    start_until = int(page.get_attribute("#chart", "data-until") or 0)
    # Counts change without a reload.
    wait_for(
        lambda: page.text_content("#c-succeeded") not in ("\u2013", "0"),
        timeout=30,
        what="succeeded > 0",
    )
    # The progress bar of the running job moves.
    bar = "#job-rows tr[data-status=processing] .bar"
    page.wait_for_selector(bar, timeout=30_000)
    first = int(page.get_attribute(bar, "aria-valuenow") or 0)
    wait_for(
        lambda: (
            page.query_selector(bar) is None
            or int(page.get_attribute(bar, "aria-valuenow") or 0) > first
        ),
        what="progress to move",
    )
    # The chart moves: its right edge follows the clock, and it shows what was processed.
    wait_for(
        lambda: int(page.get_attribute("#chart", "data-until") or 0) > start_until,
        what="chart to advance",
    )
    wait_for(
        lambda: int(page.get_attribute("#chart", "data-total") or 0) >= 40,
        what="chart to show 40 jobs",
    )
    wait_for(lambda: page.text_content("#c-succeeded") == "41", timeout=60, what="all 41 succeeded")
    assert page.text_content("#conn") == "ONLINE"
    assert page.locator("#worker-rows tr").count() == 1
    no_js_errors(page)


def test_operator_fixes_a_dlq_payload_and_requeues_it(
    login: Any, deck_server: Served, worker: Any
) -> None:
    [bad] = enqueue(deck_server.db_url, "charge", [{"amount": -5}])
    wait_for(
        lambda: (j := job(deck_server.db_url, bad)) and j.pillar is Pillar.DLQ,
        what="the job to fail",
    )
    page = login("alice")
    page.click("#source button[data-source=dlq]")
    # The exception's class by its name in the row, in full in its title and the inspector.
    chip = f"#job-rows tr[data-id='{bad}'] .chip.exc"
    assert page.text_content(chip) == "FatalError"
    assert page.get_attribute(chip, "title") == "chokaq.errors.FatalError"
    page.click(f"#job-rows tr[data-id='{bad}']")
    page.wait_for_selector("#insp-banner.dlq")
    assert "amount must not be negative" in page.text_content("#insp-error")
    kind = page.text_content("#insp-fields dd[data-field=error_type]")
    assert kind == "chokaq.errors.FatalError"
    page.click("#insp-edit")
    page.fill("#ed-payload", '{"amount": 5')
    assert page.is_disabled("#ed-requeue")  # checked in the browser first
    assert "Invalid JSON" in page.text_content("#ed-json")
    page.fill("#ed-payload", '{"amount": 5}')
    page.click("#ed-requeue")
    page.wait_for_selector("#insp-banner.archive", timeout=30_000)
    view = job(deck_server.db_url, bad)
    assert view.pillar is Pillar.ARCHIVE and json.loads(view.payload) == {"amount": 5}
    assert view.last_modified_by == "alice"
    no_js_errors(page)


def test_bulk_purge_by_filter_removes_exactly_the_previewed_rows(
    login: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    doomed = dead_letter(url, 30, error="CardDeclined: insufficient funds", queue="pay")
    keep = dead_letter(url, 4, error="Timeout talking to bank", queue="pay")
    page = login("alice")
    page.click("#source button[data-source=dlq]")
    page.fill("#filters input[name=search]", "CardDeclined")
    page.fill("#filters input[name=queue]", "pay")
    page.click("#filters button[type=submit]")
    wait_for(lambda: page.get_attribute("#jobs", "data-total") == "30", what="30 rows listed")
    page.fill("#cap", "100")
    page.click("#preview-purge")
    page.wait_for_selector("#preview-count")
    assert page.text_content("#preview-count") == "30"
    late = dead_letter(url, 2, error="CardDeclined: after preview", queue="pay")
    page.click("#preview-confirm")
    page.wait_for_selector("#confirm[open]")
    assert page.is_disabled("#confirm-yes")
    page.fill("#confirm-input", "purge")
    assert page.is_disabled("#confirm-yes")
    page.fill("#confirm-input", "PURGE")
    page.click("#confirm-yes")
    page.wait_for_selector(".toast >> text=30 job(s) purged")
    left = run(
        lambda app: app.backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(queue="pay")), url
    )
    assert sorted(j.id for j in left.items) == sorted(keep + late)
    assert not set(doomed) & {j.id for j in left.items}
    no_js_errors(page)


def test_cancel_a_running_job_from_the_page(login: Any, deck_server: Served, worker: Any) -> None:
    [long] = enqueue(deck_server.db_url, "steady", [{"steps": 200, "step_seconds": 0.1}])
    page = login("alice")
    row = f"#job-rows tr[data-id='{long}'][data-status=processing]"
    page.wait_for_selector(row, timeout=30_000)
    page.click(f"{row} .row-cancel")
    page.fill("#confirm-input", "CANCEL")
    page.click("#confirm-yes")
    wait_for(lambda: job(deck_server.db_url, long).pillar is Pillar.DLQ, what="the job to stop")
    view = job(deck_server.db_url, long)
    assert view.failure_reason is FailureReason.CANCELLED and view.cancelled_by == "alice"
    page.click("#source button[data-source=dlq]")
    page.wait_for_selector(f"#job-rows tr[data-id='{long}']")
    assert "alice" in page.text_content(f"#job-rows tr[data-id='{long}']")
    no_js_errors(page)


def test_readonly_sees_no_destructive_controls_and_is_refused(
    login: Any, deck_server: Served
) -> None:
    [dead] = dead_letter(deck_server.db_url, 1, error="boom")
    page = login("bob")
    page.click("#source button[data-source=dlq]")
    page.wait_for_selector(f"#job-rows tr[data-id='{dead}']")
    page.click(f"#job-rows tr[data-id='{dead}']")
    page.wait_for_selector("#insp-banner.dlq")
    page.wait_for_selector("#queue-rows tr")
    controls = (
        "button.danger, .row-cancel, .row-retry, #bulk, #insp-actions, #editor, "
        ".q-pause, .q-hide, .c-close, .w-concurrency, .sel, #preview-purge"
    )
    assert page.locator(controls).count() == 0
    forged = page.evaluate(
        """async (id) => {
        const csrf = document.querySelector('meta[name=csrf-token]').content;
        const r = await fetch('api/dlq/purge', {method: 'POST',
          headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
          body: JSON.stringify({ids: [id], confirm: 'PURGE'})});
        return r.status;
    }""",
        dead,
    )
    assert forged == 403
    assert job(deck_server.db_url, dead) is not None
    admin = login("alice")
    no_token = admin.evaluate(
        """async (id) => {
        const r = await fetch('api/dlq/purge', {method: 'POST',
          headers: {'Content-Type': 'application/json'},
          body: JSON.stringify({ids: [id], confirm: 'PURGE'})});
        return r.status;
    }""",
        dead,
    )
    assert no_token == 403
    assert job(deck_server.db_url, dead) is not None
    no_js_errors(page, expected="403 (Forbidden)")


def test_the_inspector_shows_the_streams_last_items_inert(login: Any, deck_server: Served) -> None:
    evil = "<img src=x onerror=window.__pwned=3>"

    async def go(app: App) -> str:
        job_id = str(await app.enqueue_raw("report", {}, queue="streams"))
        [c] = await app.backend.jobs_fetch(
            worker_id="seed", limit=1, queues=["streams"], start=True
        )
        for index in range(25):
            item = json.dumps({"n": index, "note": evil})
            assert await app.backend.streams_emit(lease=c.lease, index=index, item=item)
        await app.backend.jobs_finalize(moves=[SucceedMove(c.lease, 1.0)])
        return job_id

    job_id = run(go, deck_server.db_url)
    page = login("alice")
    page.check("#show-hidden")
    page.click("#source button[data-source=archive]")
    page.wait_for_selector(f"#job-rows tr[data-id='{job_id}']")
    page.click(f"#job-rows tr[data-id='{job_id}']")
    page.wait_for_selector("#insp-stream li[data-index='24']")
    assert page.locator("#insp-stream li").count() == 20
    assert page.get_attribute("#insp-stream li >> nth=0", "data-index") == "5"
    assert "the last 20 of 25" in page.text_content("#insp-stream-note")
    assert evil in page.text_content("#insp-stream")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#drawer img").count() == 0
    no_js_errors(page)


def test_script_payload_renders_inert(login: Any, deck_server: Served) -> None:
    evil = "<script>window.__pwned = 1</script><img src=x onerror=window.__pwned=2>"
    [dead] = dead_letter(
        deck_server.db_url,
        1,
        error=evil,
        queue=evil,
        type=evil,
        payload={"note": evil},
        tags=("<b>tag</b>",),
    )
    page = login("alice")
    page.check("#show-hidden")
    page.wait_for_selector("#queue-rows tr")
    page.click("#source button[data-source=dlq]")
    page.wait_for_selector(f"#job-rows tr[data-id='{dead}']")
    page.click(f"#job-rows tr[data-id='{dead}']")
    page.wait_for_selector("#insp-banner.dlq")
    page.wait_for_selector("#error-rows li")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert evil in page.text_content("#insp-error")
    assert evil in page.text_content("#insp-payload")
    assert evil in page.text_content("#queue-rows")
    assert "<b>tag</b>" in page.text_content("#job-rows")
    assert page.locator("#job-rows img, #queue-rows img, #drawer img, #errors img").count() == 0
    no_js_errors(page)


def test_reconnects_and_reconciles_after_a_dropped_connection(
    login: Any, deck_server: Served
) -> None:
    page = login("alice")
    wait_for(lambda: page.text_content("#c-pending") == "0", what="initial counts")
    deck_server.stop()
    page.wait_for_selector("#conn.offline", timeout=10_000)
    enqueue(deck_server.db_url, "quick", [{}, {}, {}], delay=3600.0)
    deck_server.start()
    page.wait_for_selector("#conn.online", timeout=15_000)
    wait_for(lambda: page.text_content("#c-pending") == "3", what="counts reconciled")
    wait_for(lambda: page.locator("#job-rows tr .due").count() == 3, what="delayed rows")


def seed_showcase(url: str) -> str:
    """A varied store for the screenshots: queues, delayed and failed jobs, two workers, and a
    workflow with a failed branch; returns the id of its blocked job."""
    dead_letter(
        url,
        12,
        error="CardDeclined: insufficient funds (card ending 4242)",
        queue="payments",
        tags=("checkout",),
    )
    dead_letter(
        url,
        5,
        error="TimeoutError: bank API did not answer in 30 s",
        queue="payments",
        type="refund",
    )
    dead_letter(url, 3, error="KeyError: 'sku'", queue="emails", type="send_receipt")
    enqueue(url, "send_receipt", [{"order": i} for i in range(8)], queue="emails", delay=900.0)
    enqueue(url, "report", [{"day": "2026-11-30"}], queue="reports", delay=600.0)

    async def workers(app: App) -> None:
        now = datetime.now(UTC)
        await app.backend.queue_pause(name="reports", paused=True, actor="alice")
        await app.backend.queue_configure(
            name="payments", max_workers=4, zombie_timeout_seconds=120
        )
        for wid, host, circuits in (
            (
                "w-1",
                "app-1",
                [
                    {"key": "charge", "state": "open", "failures": 5, "reset_in_seconds": 21.5},
                    {"key": "refund", "state": "closed", "failures": 1, "reset_in_seconds": None},
                ],
            ),
            (
                "w-2",
                "app-2",
                [
                    {
                        "key": "send_receipt",
                        "state": "half_open",
                        "failures": 5,
                        "reset_in_seconds": 0,
                    }
                ],
            ),
        ):
            await app.backend.worker_beat(
                WorkerInfo(
                    id=wid,
                    hostname=host,
                    pid=4242,
                    queues=("payments", "emails"),
                    concurrency=16,
                    desired_concurrency=None,
                    running=3,
                    state="running",
                    started_at=now,
                    heartbeat_at=now,
                    circuits=json.dumps(circuits),
                )
            )

    run(workers, url)
    declare(
        url,
        declared("nightly-report", type="report", queue="reports"),
        declared(
            "sync-inventory",
            type="sync",
            queue="default",
            cron=None,
            every_seconds=300,
            timezone="UTC",
            kwargs='{"full": false}',
        ),
    )

    async def steer(app: App) -> None:
        await app.backend.schedule_edit("sync-inventory", actor="alice", every_seconds=120)
        await app.backend.schedule_pause("nightly-report", actor="alice")
        await app.backend.schedule_trigger("nightly-report", actor="alice")

    run(steer, url)

    async def limits(app: App) -> None:
        # Operators' settings, so that the worker's own declarations leave them alone; the
        # reports queue is paused, so its partitioned jobs wait.
        await app.backend.limit_set(
            scope="queue", name="payments", rate_limit="20/s", actor="alice"
        )
        await app.backend.limit_set(
            scope="type", name="report", rate_limit="30/m", partition_concurrency=2, actor="alice"
        )
        tenants = {"tenant:acme": 5, "tenant:globex": 3, "tenant:initech": 1}
        await app.enqueue_many(
            [
                NewJob(type="report", queue="reports", partition=tenant)
                for tenant, n in tenants.items()
                for _ in range(n)
            ]
        )

    run(limits, url)
    ids = run(lambda app: diamond(app, result=json.dumps({"total": 3}), type="fetch_feed"), url)
    return ids["d"]


PANELS = (
    "overview",
    "waits",
    "queues",
    "limits",
    "jobs",
    "schedules",
    "errors",
    "circuits",
    "workers",
)


def test_screenshots_of_every_panel_in_both_themes(
    login: Any, deck_server: Served, worker: Any, tmp_path: Path
) -> None:
    # The README's pictures are rewritten only on request (CHOKAQ_SCREENSHOTS=1), so that a
    # test run leaves the work tree clean; otherwise they go to a temporary folder.
    folder = SCREENSHOTS if os.environ.get("CHOKAQ_SCREENSHOTS") == "1" else tmp_path
    url = deck_server.db_url
    blocked = seed_showcase(url)
    enqueue(url, "quick", [{"n": i} for i in range(60)])
    enqueue(url, "steady", [{"steps": 400, "step_seconds": 0.1} for _ in range(2)])
    folder.mkdir(parents=True, exist_ok=True)
    for theme in ("blueprint", "carbon"):
        page = login("alice", theme=theme)
        page.click("#chart-window button[data-window='5m']")
        page.wait_for_selector("#job-rows tr[data-status=processing] .bar", timeout=15_000)
        wait_for(functools.partial(chart_filled, page, 60), what="the chart to fill")
        page.wait_for_selector("#circuit-rows tr")
        page.wait_for_selector("#schedule-rows tr")
        page.wait_for_selector("#limit-rows tr[data-key='type:report'] .part")
        page.wait_for_timeout(600)
        page.screenshot(path=str(folder / f"deck-{theme}.png"), full_page=True)
        page.click("#schedule-rows tr >> text=nightly-report")
        page.wait_for_selector("#sch-history tr[data-outcome=triggered]")
        for panel in PANELS:
            page.locator(f"#{panel}").screenshot(path=str(folder / f"{panel}-{theme}.png"))
        # The chart's hover read-out, over the newest bars.
        chart = page.locator("#chart")

        def hovering(page: Any = page, chart: Any = chart) -> bool:
            box = chart.bounding_box()  # the panel screenshots above scrolled the page
            chart.hover(position={"x": box["width"] * 0.9, "y": box["height"] / 2})
            return page.get_attribute("#chart-tip", "data-bucket") is not None

        wait_for(hovering, what="the chart's read-out")
        page.locator("#overview").screenshot(path=str(folder / f"chart-hover-{theme}.png"))
        page.mouse.move(0, 0)
        # A frozen selection: the table pauses while rows are selected.
        page.click("#job-rows tr .sel >> nth=0")
        page.wait_for_selector("#live-state.paused")
        page.locator("#jobs").screenshot(path=str(folder / f"selection-{theme}.png"))
        page.click("#clear-selection")
        # Archive: requeue as new, everything matching the filter, after a preview.
        page.click("#source button[data-source=archive]")
        page.wait_for_selector("#job-rows tr")
        page.click("#preview-archive-requeue")
        page.wait_for_selector("#preview-count")
        page.locator("#jobs").screenshot(path=str(folder / f"archive-preview-{theme}.png"))
        page.click("#source button[data-source=dlq]")
        page.wait_for_selector("#job-rows tr .chip")
        page.click("#error-rows li >> nth=0")
        page.wait_for_selector("#job-rows tr")
        page.click("#preview-purge")
        page.wait_for_selector("#preview-count")
        page.locator("#jobs").screenshot(path=str(folder / f"dlq-{theme}.png"))
        page.click("#preview-confirm")
        page.fill("#confirm-input", "PUR")
        page.screenshot(path=str(folder / f"confirm-{theme}.png"))
        page.click("#confirm-no")
        page.click("#job-rows tr >> nth=0")
        page.wait_for_selector("#insp-banner.dlq")
        page.locator("#drawer").screenshot(path=str(folder / f"inspector-{theme}.png"))
        if page.locator("#insp-attempts li").count():
            page.click("#insp-attempts li summary >> nth=0")  # one traceback open
            page.locator("#drawer").screenshot(path=str(folder / f"attempts-{theme}.png"))
        page.click("#insp-edit")
        page.locator("#drawer").screenshot(path=str(folder / f"editor-{theme}.png"))
        # A blocked job of a workflow, then the workflow itself.
        page.click("#drawer-close")
        page.click("#source button[data-source=active]")
        page.click("#clear-filters")  # the DLQ's error family was a filter
        page.check("#filters input[name=blocked]")
        page.click("#filters button[type=submit]")
        page.click(f"#job-rows tr[data-id='{blocked}']")
        page.wait_for_selector("#drawer[data-state=blocked] #insp-parents li[data-state=failed]")
        page.locator("#drawer").screenshot(path=str(folder / f"blocked-{theme}.png"))
        page.click("#insp-workflow-link")
        page.wait_for_selector(f".wf-job[data-id='{blocked}'][data-state=blocked]")
        page.locator("#drawer").screenshot(path=str(folder / f"workflow-{theme}.png"))
        page.uncheck("#filters input[name=blocked]")
        page.click("#filters button[type=submit]")
        assert page.evaluate("localStorage.getItem('chokaq-deck-theme')") == theme
        # A phone: one column, the tables scroll inside their panels.
        page.click("#drawer-close")
        page.set_viewport_size({"width": 390, "height": 844})
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(folder / f"phone-{theme}.png"))
        page.set_viewport_size({"width": 1400, "height": 1000})
        no_js_errors(page)
    # The theme is remembered per browser: a reload keeps Carbon.
    page.reload()
    assert page.get_attribute("html", "data-theme") == "carbon"
    names = sorted(p.name for p in folder.glob("*.png"))
    assert len(names) >= 2 * (len(PANELS) + 11)


def declare(url: str, *schedules: ScheduleDeclaration) -> None:
    run(lambda app: app.backend.schedules_declare(list(schedules)), url)


def schedule(url: str, name: str) -> Any:
    return run(lambda app: app.backend.schedule_get(name), url)


def history(url: str, name: str) -> Any:
    return run(lambda app: app.backend.schedule_history(name), url)


def test_operator_steers_a_schedule_from_its_panel(login: Any, deck_server: Served) -> None:
    url = deck_server.db_url
    name = "hourly report"
    evil = "<img src=x onerror=window.__pwned=1>"
    declare(
        url,
        declared(
            name,
            type="quick",
            queue="default",
            cron=None,
            every_seconds=3600,
            expires_after_seconds=600,
        ),
        declared(evil, kwargs=json.dumps({"note": evil})),
    )
    page = login("alice")
    rows = "#schedule-rows tr"
    wait_for(lambda: page.locator(rows).count() == 2, what="two schedules listed")
    # Markup in a name or in kwargs is text, everywhere it shows.
    page.locator(rows, has_text="onerror").click()
    page.wait_for_selector("#sch-fields dd[data-field=kwargs]")
    assert page.text_content("#sch-name") == evil
    assert evil in page.text_content("#sch-fields dd[data-field=kwargs]")
    assert evil in page.text_content("#schedule-rows")
    assert page.locator("#schedules img").count() == 0
    assert page.evaluate("window.__pwned") is None

    page.locator(rows, has_text=name).click()
    page.wait_for_selector("#sch-fields dd[data-field=timing] >> text=every 3600 s")
    assert page.text_content("#sch-name") == name
    assert "on default, priority" in page.text_content("#sch-fields dd[data-field=job]")
    assert page.text_content("#sch-fields dd[data-field=expires]").startswith("10 m after")

    page.click("#sch-pause")
    wait_for(lambda: schedule(url, name).paused, what="storage to show it paused")
    page.wait_for_selector("#schedule-detail[data-paused=true] #sch-pause >> text=Resume")
    page.wait_for_selector(f"{rows}[data-paused=true] >> text=PAUSED")

    page.click("#sch-trigger")
    page.click("#confirm-yes")
    [run_record] = wait_for(lambda: history(url, name), what="a triggered run in the history")
    assert (run_record.outcome, run_record.detail) == ("triggered", "triggered by alice")
    job_id = run_record.job_id
    assert job(url, job_id).created_by == f"schedule:{name}"
    page.wait_for_selector(f"#job-rows tr[data-id='{job_id}']")  # the job appears
    triggered = f"#sch-history tr[data-outcome=triggered] .job-link[data-job='{job_id}']"
    page.wait_for_selector(triggered)
    page.click(triggered)  # the history links to the job's inspector
    page.wait_for_selector(f"#insp-fields dd[data-field=id] >> text={job_id}")
    page.click("#drawer-close")

    page.click("#sch-edit")
    page.select_option("#sch-kind", "cron")
    page.fill("#sch-expr", "61 * * * *")
    page.fill("#sch-tz", "America/New_York")
    page.fill("#sch-kwargs", '{"n": ')
    assert page.is_disabled("#sch-save")  # checked in the browser first
    page.fill("#sch-kwargs", '{"n": 2}')
    page.click("#sch-save")
    page.wait_for_selector(".toast.bad >> text=not a valid cron expression")
    assert schedule(url, name).edited_by is None  # refused by the server, nothing changed
    page.fill("#sch-expr", "*/15 * * * *")
    page.click("#sch-save")
    wait_for(lambda: schedule(url, name).edited_by == "alice", what="the edit to be stored")
    edited = schedule(url, name)
    assert (edited.cron, edited.every_seconds, edited.timezone) == (
        "*/15 * * * *",
        None,
        "America/New_York",
    )
    assert json.loads(edited.kwargs) == {"n": 2}
    page.wait_for_selector(f"{rows}[data-edited=true] .marker.edited")
    page.wait_for_selector("#sch-fields dd[data-field=declared] >> text=every 3600 s")

    page.click("#sch-reset")
    page.click("#confirm-yes")
    wait_for(lambda: schedule(url, name).edited_by is None, what="the reset to be stored")
    reset = schedule(url, name)
    assert (reset.cron, reset.every_seconds, reset.kwargs) == (None, 3600, '{"full": true}')
    page.wait_for_selector(f"{rows}[data-edited=false] >> text={name}")
    page.click("#sch-pause")  # Resume
    wait_for(lambda: not schedule(url, name).paused, what="storage to show it resumed")
    assert page.evaluate("window.__pwned") is None
    no_js_errors(page, expected="422")


def test_readonly_sees_schedules_without_controls(login: Any, deck_server: Served) -> None:
    declare(deck_server.db_url, declared("nightly"))
    page = login("bob")
    page.click("#schedule-rows tr >> text=nightly")
    page.wait_for_selector("#sch-fields dd[data-field=timing] >> text=0 7 * * * (Europe/Berlin)")
    assert page.locator("#sch-actions, #sch-form, #sch-pause, #sch-reset").count() == 0
    no_js_errors(page)


def test_operator_follows_a_blocked_workflow_and_cancels_it(
    login: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    evil = "<img src=x onerror=window.__pwned=1>"
    ids = run(lambda app: diamond(app, result=json.dumps({"total": 3, "note": evil})), url)
    a, b, c, d = ids["a"], ids["b"], ids["c"], ids["d"]
    enqueue(url, "quick", [{}], delay=3600.0)  # active, not blocked: the filter leaves it out
    page = login("alice")
    # The queue table counts the blocked job; the blocked filter lists it alone.
    page.wait_for_selector("#queue-rows tr[data-key=wf] td[data-col=blocked] >> text=1")
    assert page.text_content("#queue-rows tr[data-key=wf] td[data-col=waiting]") == "1"
    page.wait_for_selector("#jobs[data-total='2']")
    page.check("#filters input[name=blocked]")
    page.click("#filters button[type=submit]")
    page.wait_for_selector("#jobs[data-total='1']")
    row = f"#job-rows tr[data-id='{d}'][data-status=blocked]"
    page.wait_for_selector(row)

    # The inspector shows d blocked, its parents with their states, and its workflow.
    page.click(row)
    page.wait_for_selector("#drawer[data-state=blocked]")
    assert "BLOCKED" in page.text_content("#insp-banner")
    page.wait_for_selector(f"#insp-parents li[data-id='{b}'][data-state=failed] >> text=FAILED")
    assert "fatal_error" in page.text_content(f"#insp-parents li[data-id='{b}']")
    page.wait_for_selector(f"#insp-parents li[data-id='{c}'][data-state=succeeded]")
    assert page.text_content("#insp-children") == "none"
    assert page.is_hidden("#insp-result-box")  # nothing to show before it has run

    # The workflow view lists every job by step, d blocked in the last one.
    page.click("#insp-workflow-link")
    page.wait_for_selector(
        f"#wf-levels .wf-level[data-depth='2'] .wf-job[data-id='{d}'][data-state=blocked]"
    )
    assert page.locator("#wf-levels .wf-job").count() == 4
    assert (
        page.locator(
            f".wf-level[data-depth='0'] .wf-job[data-id='{a}'][data-state=succeeded]"
        ).count()
        == 1
    )
    assert page.locator(".wf-level[data-depth='1'] .wf-job").count() == 2
    assert "ValueError: b broke" in page.text_content(f".wf-job[data-id='{b}']")
    assert page.text_content("#wf-counts .count[data-state=blocked]").strip() == "BLOCKED 1"

    # A step's link opens the job: a's result is shown as text, pretty-printed.
    page.click(f".wf-job[data-id='{a}'] .job-link")
    page.wait_for_selector("#drawer[data-state=succeeded] #insp-result-box:not([hidden])")
    assert json.loads(page.text_content("#insp-result")) == {"total": 3, "note": evil}
    page.wait_for_selector(f"#insp-children li[data-id='{b}'][data-state=failed]")

    # Cancel the workflow (typed confirmation): d goes to the DLQ as dependency_failed.
    page.click("#drawer-tabs [data-tab=workflow]")
    page.wait_for_selector("#workflow[data-finished=false]")
    assert page.text_content("#wf-banner").startswith("WORKFLOW · UNFINISHED · 4 job(s)")
    assert page.text_content("#wf-id") == a
    page.click("#wf-cancel")
    page.wait_for_selector("#confirm[open]")
    assert page.is_disabled("#confirm-yes")
    page.fill("#confirm-input", "CANCEL")
    page.click("#confirm-yes")
    page.wait_for_selector(".toast >> text=Workflow cancelled: 1 job(s) to the DLQ")
    view = wait_for(
        lambda: (j := job(url, d)) and j.pillar is Pillar.DLQ and j, what="d to be failed"
    )
    assert view.failure_reason is FailureReason.DEPENDENCY_FAILED and view.cancelled_by == "alice"
    page.wait_for_selector(
        f"#workflow[data-finished=true] .wf-job[data-id='{d}'][data-state=failed]"
    )
    assert page.is_disabled("#wf-cancel")
    assert page.text_content("#wf-banner").startswith("WORKFLOW · FINISHED")
    page.click(f".wf-job[data-id='{d}'] .job-link")
    page.wait_for_selector("#insp-banner.dlq >> text=DEPENDENCY_FAILED")
    assert b in page.text_content("#insp-error")
    assert page.locator("#drawer img, #job-rows img").count() == 0
    assert page.evaluate("window.__pwned") is None
    no_js_errors(page)


def test_readonly_sees_a_workflow_without_its_cancel_button(
    login: Any, deck_server: Served
) -> None:
    ids = run(diamond, deck_server.db_url)
    page = login("bob")
    page.select_option("#filters select[name=status]", "waiting")
    page.click("#filters button[type=submit]")
    page.click(f"#job-rows tr[data-id='{ids['d']}']")
    page.wait_for_selector("#drawer[data-state=blocked]")
    page.click("#drawer-tabs [data-tab=workflow]")
    page.wait_for_selector(f"#workflow .wf-job[data-id='{ids['d']}'][data-state=blocked]")
    assert page.locator("#wf-cancel, #wf-actions, #confirm").count() == 0
    no_js_errors(page)


def test_operator_finds_expired_jobs_by_reason_and_sees_a_pending_jobs_expiry(
    login: Any, deck_server: Served
) -> None:
    url = deck_server.db_url
    # Enqueued on a clock just before its expiry (an expiry in the past is refused).
    expiry = datetime(2001, 1, 1, tzinfo=UTC)
    [written] = run(
        lambda app: app.backend.jobs_enqueue(
            [app.raw("report", {"n": 1}, queue="stale", expires_at=expiry)],
            now=expiry - timedelta(seconds=1),
        ),
        url,
    )
    late = written.id
    [soon] = enqueue(url, "report", [{"n": 2}], queue="fresh", expires_after_seconds=600)
    claimed = run(
        lambda app: app.backend.jobs_fetch(worker_id="seed", limit=5, queues=["stale"]), url
    )
    assert claimed == []  # the claim buried the expired job instead of handing it out
    page = login("alice")
    page.click(f"#job-rows tr[data-id='{soon}']")
    page.wait_for_selector("#insp-fields dd[data-field=expires_at]")
    page.click("#drawer-close")
    page.click("#source button[data-source=dlq]")
    page.select_option("#filters select[name=reason]", "expired")
    page.click("#filters button[type=submit]")
    page.wait_for_selector(f"#job-rows tr[data-id='{late}']")
    page.click(f"#job-rows tr[data-id='{late}']")
    page.wait_for_selector("#insp-banner.dlq >> text=EXPIRED")
    assert page.text_content("#insp-error") == "Expired: not started by 2001-01-01 00:00:00 UTC"
    no_js_errors(page)


def test_a_link_opens_the_tab_and_the_job_and_esc_closes_the_drawer(
    login: Any, deck_server: Served
) -> None:
    [dead] = dead_letter(deck_server.db_url, 1, error="boom")
    page = login("alice")
    page.goto(f"{deck_server.url}/#tab=dlq&job={dead}")
    page.wait_for_selector("#source button[data-source=dlq].on")
    page.wait_for_selector(f"#insp-fields dd[data-field=id] >> text={dead}")
    assert not page.is_hidden("#drawer")
    page.keyboard.press("Escape")
    page.wait_for_selector("#drawer", state="hidden")
    assert page.evaluate("window.location.hash") == "#tab=dlq"  # the job left the link
    page.click(f"#job-rows tr[data-id='{dead}']")
    page.wait_for_function(f"window.location.hash === '#tab=dlq&job={dead}'")
    page.reload()  # the link survives a reload
    page.wait_for_selector(f"#insp-fields dd[data-field=id] >> text={dead}")
    page.goto(f"{deck_server.url}/#tab=nowhere&job=not-an-id")  # a bad link: the default view
    page.wait_for_selector("#source button[data-source=active].on")
    assert page.is_hidden("#drawer")
    no_js_errors(page)

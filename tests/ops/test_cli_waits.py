"""``chokaq stats`` says why jobs wait, as The Deck does: a line per queue with due jobs and no
live worker, the "Why the wait" table with a reason per queue and type, and the same in
``--json`` (``waits``), and the store metrics' gauge of those due jobs, on both backends."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from chokaq.app import App
from chokaq.metrics import StoreMetrics
from chokaq.models import NewJob, WorkerInfo

from .conftest import Cli, on_store
from .test_endpoints import samples, value


def _worker(queues: tuple[str, ...]) -> WorkerInfo:
    now = datetime.now(UTC)
    return WorkerInfo("w-cli", "h", 1, queues, 4, None, 0, "running", now, now)


def test_stats_names_queues_without_a_worker_and_the_reasons(cli: Cli, store: Any) -> None:
    cli("migrate")

    async def seed(backend: Any) -> None:
        await backend.jobs_enqueue([NewJob(type="send", queue="mail") for _ in range(2)])
        await backend.jobs_enqueue([NewJob(type="build", queue="ci", delay_seconds=3600)])
        await backend.jobs_enqueue([NewJob(type="tick", queue="served")])
        await backend.worker_beat(_worker(("served",)))

    on_store(store, seed)
    out = cli("stats").output
    assert "! queue 'mail': 2 due jobs, no live worker serves it" in out
    assert "Why the wait" in out
    lines = {tuple(line.split()[:3]): line for line in out.splitlines() if line.strip()}
    assert "no_worker" in next(v for k, v in lines.items() if k[:2] == ("│", "mail"))
    assert "capacity" in next(v for k, v in lines.items() if k[:2] == ("│", "served"))
    assert "delayed" in next(v for k, v in lines.items() if k[:2] == ("│", "ci"))
    assert "due: 2 without a worker" in out

    waits = json.loads(cli("stats", "--json").stdout)["waits"]
    assert [(u["queue"], u["due"]) for u in waits["unserved"]] == [("mail", 2)]
    reasons = {(r["queue"], r["type"]): r["reason"] for r in waits["rows"]}
    assert reasons == {
        ("mail", "send"): "no_worker",
        ("served", "tick"): "capacity",
        ("ci", "build"): "delayed",
    }
    assert waits["counts"]["no_worker"] == 2 and waits["at"].endswith("Z")


def test_store_metrics_gauge_due_jobs_in_queues_no_worker_serves(store: Any) -> None:
    async def scrape() -> str:
        app = App(store.url, schema=store.schema, auto_migrate=True)
        await app.open()
        try:
            backend = app.backend
            await backend.jobs_enqueue([NewJob(type="send", queue="mail") for _ in range(2)])
            await backend.jobs_enqueue([NewJob(type="tick", queue="served")])
            await backend.worker_beat(_worker(("served",)))
            return (await StoreMetrics(app).render()).decode()
        finally:
            await app.close()

    data = samples(asyncio.run(scrape()))
    assert value(data, "chokaq_queue_due_unserved", queue="mail") == 2
    assert ("chokaq_queue_due_unserved", frozenset({("queue", "served")})) in data
    assert value(data, "chokaq_queue_due_unserved", queue="served") == 0

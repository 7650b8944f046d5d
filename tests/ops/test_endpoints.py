"""Metrics and health endpoints over HTTP: a real worker subprocess with --metrics-port,
scraped with httpx after a known workload; the Deck's routes through ASGI, and ``chokaq deck``
as a subprocess serving them behind its login."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chokaq import App, Pillar
from chokaq.http import deck_routes

from .conftest import free_port, until
from .ops_app import build

REPO = Path(__file__).resolve().parents[2]


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(data: dict[Any, float], name: str, **labels: str) -> float:
    return data.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def worker_process(
    store: Any, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = free_port()
    log_path = tmp_path / "worker.log"
    env = {
        **os.environ,
        "CHOKAQ_DATABASE_URL": store.url,
        "CHOKAQ_SCHEMA": store.schema,
        "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO))),
    }
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chokaq",
                "worker",
                "--app",
                "tests.ops.ops_app:app",
                "--metrics-port",
                str(port),
                "--json-logs",
                "--migrate",
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield proc, port, log_path
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


async def test_worker_serves_metrics_and_health_matching_the_workload(
    store: Any, worker_process: tuple[subprocess.Popen[bytes], int, Path], emitted_events: Any
) -> None:
    proc, port, log_path = worker_process
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=5) as http:

        async def up() -> bool:
            try:
                return (await http.get("/health/live")).status_code == 200
            except httpx.TransportError:
                assert proc.poll() is None, log_path.read_text()
                return False

        await until(up, timeout=30)
        app: App = build(store.url, store.schema)
        h = app.handlers
        await app.enqueue_many(
            [h["ok"].prepare(n=i) for i in range(5)]
            + [h["poison"].prepare(n=i) for i in range(2)]
            + [h["flaky"].prepare(n=0), h["slow"].prepare(n=0), h["spawner"].prepare(children=3)]
        )

        async def drained() -> bool:
            s = await app.backend.stats_summary()
            return s.pending + s.fetched + s.processing == 0 and s.succeeded_total == 9

        await until(drained, timeout=30)

        async def scraped() -> dict[Any, float] | None:
            data = samples((await http.get("/metrics")).text)
            done = value(
                data, "chokaq_jobs_dlq_total", queue="mail", type="flaky", reason="TRANSIENT"
            )
            return data if done else None  # the finalizer reports after the commit

        data = await until(scraped, timeout=10)
        await app.close()

        ok = {"queue": "default", "type": "ok"}
        assert value(data, "chokaq_jobs_completed_total", **ok) == 8  # 5 + 3 children
        assert value(data, "chokaq_jobs_completed_total", queue="default", type="spawner") == 1
        assert value(data, "chokaq_jobs_enqueued_total", **ok) == 3  # enqueued in the worker
        assert (
            value(
                data, "chokaq_jobs_dlq_total", queue="default", type="poison", reason="FATAL_ERROR"
            )
            == 2
        )
        assert (
            value(data, "chokaq_jobs_dlq_total", queue="default", type="slow", reason="TIMEOUT")
            == 1
        )
        assert value(data, "chokaq_jobs_retried_total", queue="mail", type="flaky") == 1
        assert (
            value(data, "chokaq_jobs_failed_total", queue="mail", type="flaky", outcome="retried")
            == 1
        )
        assert (
            value(
                data,
                "chokaq_jobs_failed_total",
                queue="mail",
                type="flaky",
                outcome="dead_lettered",
            )
            == 1
        )
        assert value(data, "chokaq_job_duration_seconds_count", **ok) == 8
        # One queue-lag observation per execution: 8 ok, 1 spawner, 2 poison, 2 flaky, 1 slow.
        lag_count = sum(
            v for (n, _), v in data.items() if n == "chokaq_job_queue_lag_seconds_count"
        )
        assert lag_count == 14
        assert value(data, "chokaq_worker_concurrency") == 10
        assert value(data, "chokaq_storage_operation_seconds_count", operation="jobs_claim") > 0

        live = await http.get("/health/live")
        assert live.status_code == 200
        body = live.json()
        assert body["status"] == "healthy" and body["checks"]["worker"]["state"] == "running"
        ready = await http.get("/health/ready")
        assert ready.status_code == 200, ready.text
        checks = ready.json()["checks"]
        assert set(checks) == {"storage", "worker", "queue_lag", "schedules"}
        assert checks["storage"]["schema_version"] == checks["storage"]["latest_version"]
        assert (await http.get("/nope")).status_code == 404

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    events = {line.get("event_id") for line in lines}
    emitted_events.add(events, "the worker subprocess of test_worker_serves_metrics_and_health")
    assert {1000, 1001, 1008} <= events  # started, stopped, serving metrics and health


async def test_deck_routes_serve_store_metrics_and_health(store: Any) -> None:
    from starlette.applications import Starlette

    from .conftest import seed

    await seed(store, ok=2, poison=1, flaky=0)
    app = App(store.url, schema=store.schema)
    await app.open()
    [dead] = (await app.backend.jobs_page(pillar=Pillar.DLQ)).items
    [archived, _] = (await app.backend.jobs_page(pillar=Pillar.ARCHIVE)).items
    await app.enqueue_raw("child", {}, after=[dead.id])  # blocked: its parent is in the DLQ
    await app.enqueue_raw("child", {}, after=[archived.id, dead.id])  # blocked too
    waits = app.raw("parent", {})
    await app.enqueue_many([waits, app.raw("child", {}, after=[waits])])  # waiting only
    asgi = Starlette(routes=deck_routes(app))
    transport = httpx.ASGITransport(app=asgi)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://deck") as http:
            data = samples((await http.get("/metrics")).text)
            assert value(data, "chokaq_queue_succeeded_total", queue="default") == 2
            assert value(data, "chokaq_queue_failed_total", queue="default") == 1
            assert value(data, "chokaq_queue_pending", queue="default") == 1  # "parent"
            assert value(data, "chokaq_queue_waiting", queue="default") == 3
            assert value(data, "chokaq_queue_blocked", queue="default") == 2
            active = ("chokaq_schedules", frozenset({("state", "active")}))
            assert data[active] == 0  # served, and none declared
            ready = await http.get("/health/ready")
            assert ready.status_code == 200 and ready.json()["status"] == "healthy"
            assert set(ready.json()["checks"]) == {"storage", "queue_lag", "schedules"}
            assert (await http.get("/health/live")).json()["status"] == "healthy"
    finally:
        await app.close()


@pytest.fixture
def deck_process(tmp_path: Path) -> Iterator[Any]:
    """``deck(*flags, **env)``: ``chokaq deck`` as a subprocess on a free loopback port against
    the SQLite file ``tmp_path/deck.db``, with only the Deck credentials given in ``env``;
    returns its base URL once it answers. Every one started is stopped at the end."""
    url = f"sqlite:///{tmp_path / 'deck.db'}"
    started: list[subprocess.Popen[bytes]] = []

    def deck(*flags: str, **deck_env: str) -> str:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHOKAQ_DECK_")}
        env |= deck_env | {"PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO)))}
        command = [sys.executable, "-m", "chokaq", "deck", "--database", url, "--port", str(port)]
        with open(tmp_path / f"deck-{port}.log", "wb") as log:
            proc = subprocess.Popen(
                [*command, *flags], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        started.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(base + "/health/live", timeout=1).status_code == 200:
                    return base
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (tmp_path / f"deck-{port}.log").read_text(errors="replace")
                pytest.fail(f"chokaq deck did not answer:\n{text[-3000:]}")
            time.sleep(0.1)

    async def seed() -> None:
        app = build(url)
        try:
            await app.enqueue_many([app.handlers["ok"].prepare(n=i) for i in range(2)])
            await app.handlers["flaky"].enqueue(n=1)
        finally:
            await app.close()

    asyncio.run(seed())
    try:
        yield deck
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def test_chokaq_deck_serves_store_metrics_and_health_behind_its_login(deck_process: Any) -> None:
    base = deck_process(CHOKAQ_DECK_READONLY_TOKEN="tok-ro")
    scraper = {"authorization": "Bearer tok-ro"}
    assert httpx.get(base + "/metrics").status_code == 401  # it names the queues
    assert httpx.get(base + "/health/ready").status_code == 401
    assert httpx.get(base + "/metrics", headers={"authorization": "Bearer nope"}).status_code == 401
    page = httpx.get(base + "/metrics", headers=scraper)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain; version=0.0.4")
    data = samples(page.text)
    assert value(data, "chokaq_queue_pending", queue="default") == 2
    assert value(data, "chokaq_queue_pending", queue="mail") == 1
    ready = httpx.get(base + "/health/ready", headers=scraper)
    assert ready.status_code == 200
    checks = ready.json()["checks"]
    assert set(checks) == {"storage", "queue_lag", "schedules"}
    assert checks["storage"]["status"] == checks["schedules"]["status"] == "healthy"
    # The seeded jobs wait with no worker, so the lag check turns degraded once they have waited
    # 5 s, however long the busy machine took to get here: its status follows its own figure.
    lag = checks["queue_lag"]
    late = lag["worst_queue_max_lag_seconds"] > lag["degraded_seconds"]
    assert lag["status"] == ("degraded" if late else "healthy")
    assert ready.json()["status"] == lag["status"]
    live = httpx.get(base + "/health/live")  # no login: it says only that the Deck answers
    assert live.status_code == 200 and live.json()["status"] == "healthy"


def test_chokaq_deck_public_metrics_opens_metrics_and_health_only(deck_process: Any) -> None:
    base = deck_process("--public-metrics", CHOKAQ_DECK_TOKEN="tok-admin")
    page = httpx.get(base + "/metrics")
    assert page.status_code == 200
    assert value(samples(page.text), "chokaq_queue_pending", queue="default") == 2
    assert httpx.get(base + "/health/ready").status_code == 200
    assert httpx.get(base + "/api/overview").status_code == 401  # the Deck itself stays shut
    assert httpx.get(base + "/", follow_redirects=False).status_code == 303  # to the login


def test_chokaq_deck_on_loopback_without_credentials_serves_metrics_openly(
    deck_process: Any,
) -> None:
    base = deck_process()  # no credentials: only loopback, where the whole Deck is open
    assert httpx.get(base + "/metrics").status_code == 200
    assert httpx.get(base + "/health/ready").status_code == 200

"""The Deck's "Why the wait" through httpx against the ASGI app, on both backends (a SQLite file
and a private PostgreSQL schema): pending jobs by queue and type with the reason their due jobs
do not run (no live worker, a paused queue, a circuit open on every worker serving the queue, a
limit holding them, a wait for a slot) and the jobs not due yet (retrying, delayed, on parents);
the banner of queues with due jobs no live worker serves, in the live snapshot too.

Workers are registered as a worker registers itself (``worker_beat`` with the circuit snapshot
a worker publishes); the browser test runs a real worker subprocess."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.conftest import Store

from chokaq.app import App
from chokaq.models import NewJob, TypeLimit, WorkerInfo

from .conftest import Client


@pytest.fixture
async def app(store: Store) -> AsyncIterator[App]:
    chokaq_app = App(store.url, schema=store.schema, auto_migrate=True)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


def worker(worker_id: str, queues: tuple[str, ...], circuits: list[dict[str, Any]]) -> WorkerInfo:
    now = datetime.now(UTC)
    return WorkerInfo(
        id=worker_id,
        hostname="h",
        pid=1,
        queues=queues,
        concurrency=4,
        desired_concurrency=None,
        running=0,
        state="running",
        started_at=now,
        heartbeat_at=now,
        circuits=json.dumps(circuits),
    )


OPEN = {"key": "send", "state": "open", "failures": 5, "reset_in_seconds": 12.0}
CLOSED = {"key": "send", "state": "closed", "failures": 0, "reset_in_seconds": None}


def by_group(body: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["queue"], r["type"]): r for r in body["rows"]}


async def test_due_jobs_in_a_queue_no_worker_serves_say_so_and_raise_the_banner(
    app: App, client: Client
) -> None:
    await app.enqueue_many([NewJob(type="send", queue="emails") for _ in range(3)])
    await app.enqueue_many([NewJob(type="tick", queue="busy")])
    await app.backend.worker_beat(worker("w-busy", ("busy",), []))
    c = await client("bob")  # any signed-in role reads it

    body = (await c.get("/api/lag")).json()
    rows = by_group(body)
    assert rows[("emails", "send")]["reason"] == "no_worker"
    assert rows[("emails", "send")]["due"] == 3
    assert rows[("emails", "send")]["lag_seconds"] >= 0
    assert rows[("busy", "tick")]["reason"] == "capacity"
    assert body["unserved"] == [
        {
            "queue": "emails",
            "due": 3,
            "more": False,
            "message": "queue 'emails': 3 due jobs, no live worker serves it",
        }
    ]
    assert body["counts"]["no_worker"] == 3 and body["counts"]["capacity"] == 1

    snap = (await c.get("/api/overview")).json()
    assert [u["queue"] for u in snap["unserved"]] == ["emails"]
    assert by_group(snap["waits"])[("emails", "send")]["reason"] == "no_worker"

    # A worker started without a queue list serves every queue: the banner goes.
    await app.backend.worker_beat(worker("w-all", (), []))
    body = (await c.get("/api/lag")).json()
    assert body["unserved"] == []
    assert by_group(body)[("emails", "send")]["reason"] == "capacity"


async def test_a_circuit_open_on_every_worker_serving_the_queue_defers_the_type(
    app: App, client: Client
) -> None:
    await app.enqueue_many([NewJob(type="send", queue="emails") for _ in range(4)])
    await app.enqueue_many([NewJob(type="other", queue="emails")])
    await app.backend.worker_beat(worker("w1", ("emails",), [OPEN]))
    c = await client("bob")

    rows = by_group((await c.get("/api/lag")).json())
    send = rows[("emails", "send")]
    assert send["reason"] == "circuit" and send["circuit"] == "send"
    assert "every worker serving the queue (1)" in send["detail"]
    assert "next probe in 12 s" in send["detail"]
    assert rows[("emails", "other")]["reason"] == "capacity"

    # Another worker serves the queue with the circuit closed: it drains the type.
    await app.backend.worker_beat(worker("w2", ("emails", "sms"), [CLOSED]))
    send = by_group((await c.get("/api/lag")).json())[("emails", "send")]
    assert send["reason"] == "capacity"
    assert "circuit open on 1 of 2 workers" in send["detail"]
    assert send["circuit"] == "send"


async def test_limits_pauses_and_jobs_not_due_yet_have_their_reasons(
    app: App, client: Client
) -> None:
    backend = app.backend
    await backend.limits_declare(limits=[TypeLimit("sync", None, 1)])
    await app.enqueue_many(
        [NewJob(type="sync", queue="partners", partition="big") for _ in range(3)]
    )
    claim = await backend.jobs_claim(worker_id="w-test", limit=10, start=True)
    assert len(claim.jobs) == 1  # one partition, concurrency 1: the other two are held
    await app.enqueue_many([NewJob(type="mail", queue="stopped")])
    await backend.queue_pause(name="stopped", paused=True, actor="ops")
    await app.enqueue_many([NewJob(type="later", queue="partners", delay_seconds=3600)])
    await backend.worker_beat(worker("w-all", (), []))
    c = await client("bob")

    body = (await c.get("/api/lag")).json()
    rows = by_group(body)
    sync = rows[("partners", "sync")]
    assert (sync["reason"], sync["due"], sync["held"]) == ("limit", 2, 2)
    assert "partition concurrency 1" in sync["detail"]
    assert rows[("stopped", "mail")]["reason"] == "paused"
    later = rows[("partners", "later")]
    assert (later["reason"], later["due"], later["delayed"]) == ("delayed", 0, 1)
    assert later["lag_seconds"] is None and later["next_due_at"] is not None
    assert body["unserved"] == []  # a paused queue is not "unserved": it is paused
    assert body["counts"]["limit"] == 2 and body["counts"]["delayed"] == 1


async def test_a_spent_queue_rate_holds_and_a_hidden_queue_is_paused(
    app: App, client: Client
) -> None:
    backend = app.backend
    await backend.limit_set(scope="queue", name="slow", rate_limit="1/h", actor="ops")
    await app.enqueue_many([NewJob(type="job", queue="slow") for _ in range(3)])
    claim = await backend.jobs_claim(worker_id="w-test", limit=10, queues=["slow"], start=True)
    assert len(claim.jobs) == 1  # the hour's one start is spent
    await app.enqueue_many([NewJob(type="job", queue="gone")])
    await backend.queue_activate(name="gone", active=False, actor="ops")
    await backend.worker_beat(worker("w-all", (), []))
    c = await client("bob")

    rows = by_group((await c.get("/api/lag")).json())
    slow = rows[("slow", "job")]
    assert (slow["reason"], slow["due"], slow["held"]) == ("limit", 2, 2)
    assert slow["detail"] == "held by the queue's rate (1/h)"
    assert rows[("gone", "job")]["reason"] == "paused"
    assert "hidden" in rows[("gone", "job")]["detail"]


async def test_the_list_is_capped_and_a_bad_limit_is_a_422(app: App, client: Client) -> None:
    await app.enqueue_many([NewJob(type=f"t{i}", queue="q") for i in range(3)])
    c = await client("bob")
    body = (await c.get("/api/lag", params={"limit": "2"})).json()
    assert len(body["rows"]) == 2 and body["truncated"] is True
    assert (await c.get("/api/lag")).json()["truncated"] is False
    for bad in ("0", "1001", "x"):
        r = await c.get("/api/lag", params={"limit": bad})
        assert r.status_code == 422 and r.json()["field"] == "limit", r.text
    exactly = (await c.get("/api/lag", params={"limit": "3"})).json()
    assert len(exactly["rows"]) == 3 and exactly["truncated"] is False

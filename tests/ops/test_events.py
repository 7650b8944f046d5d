"""Every catalogued log event is emitted by a tested path, and the docs list exactly the
catalogue.

The events that no other test drives are driven here, each by a short real scenario that
asserts its fields: The Deck's real ASGI app through httpx (and a real uvicorn server for its
start), the CLI through its entry point, real SQLite files, a real worker; the worker's fault
and race paths are driven in ``test_runtime_events.py``. The last test of the session
(``tests/conftest.py`` orders it last) checks that every ``Event`` member was emitted somewhere
in the run, so a new event without a tested path fails the suite.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from chokaq import App, ThrottledError
from chokaq.deck import Credentials, Principal, Role, create_deck
from chokaq.deck.serve import build_server
from chokaq.logs import Event, logger
from chokaq.runtime.events import Events
from chokaq.runtime.maintenance import Maintenance, run_retention

from .conftest import Cli, seed
from .test_cli import dlq_ids

TESTS = Path(__file__).resolve().parents[1]
DOCS = TESTS.parent / "docs"
USERS = {"alice": ("alice-pw", Role.ADMIN), "bob": ("bob-pw", Role.READONLY)}


class _Keep(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        data = getattr(record, "chokaq", None)
        if isinstance(data, dict):
            self.lines.append({**data, "level": record.levelno})
        return True


@contextmanager
def captured(level: int = logging.INFO) -> Iterator[list[dict[str, Any]]]:
    """The chokaq log lines emitted inside the block (a filter, so that the logger keeps no
    handler and the CLI still writes its lines to stderr)."""
    keep = _Keep()
    old = logger.level
    logger.setLevel(level)
    logger.addFilter(keep)
    try:
        yield keep.lines
    finally:
        logger.removeFilter(keep)
        logger.setLevel(old)


def only(lines: list[dict[str, Any]], event: Event, **match: Any) -> dict[str, Any]:
    """The one line of ``event`` whose fields include ``match``."""
    found = [
        line
        for line in lines
        if line["event_id"] == event and all(line.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, (event.name, match, lines)
    return found[0]


# -- The Deck ---------------------------------------------------------------------------------


@pytest.fixture
async def deck_app(tmp_path: Path) -> AsyncIterator[App]:
    app = App(f"sqlite:///{tmp_path / 'deck.db'}")
    await app.open()
    yield app
    await app.close()


async def dead_letter(app: App, n: int, queue: str = "default") -> list[str]:
    """``n`` DLQ rows made the way a worker makes them (a handler raising FatalError)."""
    from chokaq import FatalError

    @app.job(queue=queue, max_attempts=1)
    async def doomed(n: int = 0) -> None:
        raise FatalError(f"doomed {n}")

    ids = [str(await doomed.enqueue(n=i)) for i in range(n)]
    await app.create_worker(burst=True, queues=[queue]).run()
    return ids


@asynccontextmanager
async def deck_client(app: App, user: str) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on the Deck's ASGI app, logged in as ``user`` (basic auth), holding the
    CSRF cookie the page set."""
    token = base64.b64encode(f"{user}:{USERS[user][0]}".encode()).decode()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_deck(app, credentials=Credentials(users=USERS))),
        base_url="http://deck.test",
        headers={"authorization": f"Basic {token}"},
    ) as c:
        assert (await c.get("/")).status_code == 200
        yield c


def _csrf(c: httpx.AsyncClient) -> dict[str, str]:
    return {"x-csrf-token": str(c.cookies.get("chokaq_deck_csrf"))}


async def test_deck_purge_by_ids_and_by_filter_log_admin_completed(deck_app: App) -> None:
    ids = await dead_letter(deck_app, 3)
    async with deck_client(deck_app, "alice") as c:
        with captured() as lines:
            r = await c.post(
                "/api/dlq/purge", json={"ids": ids[:2], "confirm": "PURGE"}, headers=_csrf(c)
            )
            assert r.status_code == 200 and len(r.json()["deleted"]) == 2
        line = only(lines, Event.ADMIN_COMPLETED)
        assert (line["actor"], line["action"], line["target"], line["rows"]) == (
            "alice",
            "dlq.purge",
            "2 id(s)",
            2,
        )
        preview = await c.post("/api/dlq/preview", json={"filter": {"queue": "default"}})
        pinned = preview.json()["filter"]
        with captured() as lines:
            r = await c.post(
                "/api/dlq/purge-by-filter",
                json={"filter": pinned, "cap": 10, "confirm": "PURGE"},
                headers=_csrf(c),
            )
            assert r.status_code == 200 and r.json()["affected"] == 1
        line = only(lines, Event.ADMIN_COMPLETED)
        assert (line["actor"], line["action"], line["rows"]) == ("alice", "dlq.purge_by_filter", 1)
        assert "queue=default" in line["target"] and "until=" in line["target"]
        with captured() as lines:
            r = await c.post(
                "/api/queues", json={"queue": "default", "paused": True}, headers=_csrf(c)
            )
            assert r.status_code == 200
        line = only(lines, Event.ADMIN_COMPLETED)
        assert (line["action"], line["target"], line["rows"]) == ("queues.pause", "default", 1)


async def test_deck_edit_logs_the_fields_never_the_payload(deck_app: App) -> None:
    [job_id] = await dead_letter(deck_app, 1)
    async with deck_client(deck_app, "alice") as c:
        with captured() as lines:
            r = await c.post(
                f"/api/jobs/{job_id}/edit",
                json={"payload": '{"n": 4242}', "tags": ["x"]},
                headers=_csrf(c),
            )
            assert r.status_code == 200, r.text
    line = only(lines, Event.ADMIN_COMPLETED)
    assert (line["action"], line["target"], line["fields"]) == ("dlq.edit", job_id, "payload,tags")
    assert "4242" not in repr(lines)


async def test_deck_refusals_log_admin_rejected(deck_app: App) -> None:
    ids = await dead_letter(deck_app, 1)
    body = {"ids": ids, "confirm": "PURGE"}
    async with deck_client(deck_app, "bob") as readonly:
        with captured() as lines:
            r = await readonly.post("/api/dlq/purge", json=body, headers=_csrf(readonly))
            assert r.status_code == 403
    line = only(lines, Event.ADMIN_REJECTED)
    assert (line["actor"], line["action"], line["status"]) == ("bob", "dlq.purge", 403)
    assert "admin role" in line["reason"] and line["level"] == logging.WARNING
    async with deck_client(deck_app, "alice") as admin:
        with captured() as lines:
            assert (await admin.post("/api/dlq/purge", json=body)).status_code == 403
            r = await admin.post("/api/dlq/purge", json={"ids": ids}, headers=_csrf(admin))
            assert r.status_code == 422
        assert "CSRF" in only(lines, Event.ADMIN_REJECTED, status=403)["reason"]
        assert "confirm" in only(lines, Event.ADMIN_REJECTED, status=422)["reason"]
        assert not [line for line in lines if line["event_id"] == Event.ADMIN_COMPLETED]


async def test_deck_unexpected_error_logs_deck_request_failed(deck_app: App) -> None:
    def broken(request: Any) -> Principal:
        raise RuntimeError("the host's authorizer has a bug")

    deck = create_deck(deck_app, authorizer=broken)
    transport = httpx.ASGITransport(app=deck, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://deck.test") as c:
        with captured() as lines:
            r = await c.get("/api/me")
    assert r.status_code == 500 and r.json() == {"error": "internal error"}
    line = only(lines, Event.DECK_REQUEST_FAILED)
    assert (line["method"], line["path"], line["error_type"]) == ("GET", "/api/me", "RuntimeError")
    assert "bug" not in repr(line) and line["level"] == logging.ERROR


async def test_deck_server_start_logs_deck_started(deck_app: App) -> None:
    server = build_server(deck_app, host="127.0.0.1", port=0, log_level="warning")
    with captured() as lines:
        task = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(20):
                while not server.started:
                    await asyncio.sleep(0.02)
        finally:
            server.should_exit = True
            await task
    line = only(lines, Event.DECK_STARTED)
    assert (line["host"], line["port"], line["auth"]) == ("127.0.0.1", 0, False)


# -- The CLI ----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Any:
    class S:
        kind = "sqlite"
        url = f"sqlite:///{tmp_path / 'jobs.db'}"
        schema = "chokaq"

    return S()


def test_cli_dlq_requeue_and_purge_log_admin_completed(sqlite_store: Any) -> None:
    cli = Cli(sqlite_store)
    asyncio.run(seed(sqlite_store, ok=1, poison=3, flaky=0))
    poison = dlq_ids(sqlite_store)
    with captured() as lines:
        result = cli("dlq", "purge", poison[0], "--actor", "ops-anna")
    line = only(lines, Event.ADMIN_COMPLETED)
    assert (line["actor"], line["action"], line["target"], line["rows"]) == (
        "ops-anna",
        "dlq.purge",
        "1 id(s)",
        1,
    )
    assert "[6001 admin_completed]" in result.stderr and "actor=ops-anna" in result.stderr
    with captured() as lines:
        cli("dlq", "requeue", "--reason", "fatal_error", "--yes")
    line = only(lines, Event.ADMIN_COMPLETED)
    assert line["actor"].startswith("cli:")
    assert (line["action"], line["target"], line["rows"]) == (
        "dlq.requeue_by_filter",
        "reason=fatal_error",
        2,
    )
    with captured() as lines:
        cli("dlq", "purge", "--yes", expect=2)
    line = only(lines, Event.ADMIN_REJECTED)
    assert line["action"] == "dlq.purge_by_filter" and "--all" in line["reason"]
    with captured() as lines:
        cli("queue", "pause", "default", "--actor", "ops-anna")
        cli("queue", "limit", "default", "--max-workers", "3", "--actor", "ops-anna")
        cli("purge", "--no-metrics")
    assert only(lines, Event.ADMIN_COMPLETED, action="queues.pause")["target"] == "default"
    assert only(lines, Event.ADMIN_COMPLETED, action="queues.limits")["max_workers"] == 3
    retention = only(lines, Event.ADMIN_COMPLETED, action="retention.purge")
    assert retention["target"] == "archive>7d dlq>30d" and retention["rows"] == 0


def test_cli_migrate_logs_started_and_completed_with_the_versions(sqlite_store: Any) -> None:
    cli = Cli(sqlite_store)
    with captured() as lines:
        cli("migrate")
    started = only(lines, Event.MIGRATION_STARTED)
    completed = only(lines, Event.MIGRATION_COMPLETED)
    assert started["from_version"] == 0 and started["to_version"] >= 1
    assert completed["versions"][-1] == started["to_version"]
    with captured() as lines:
        cli("migrate")
    assert [line["event_id"] for line in lines] == []  # already current: nothing to say


async def test_a_failed_migration_logs_migration_failed(tmp_path: Path) -> None:
    path = tmp_path / "taken.db"
    with sqlite3.connect(path) as conn:  # a table of that name, not ours: the install fails
        conn.execute("CREATE TABLE chokaq_jobs_hot (x INTEGER)")
    app = App(f"sqlite:///{path}")
    with captured() as lines:
        with pytest.raises(Exception) as raised:
            await app.open()
        await app.close()
    started = only(lines, Event.MIGRATION_STARTED)
    failed = only(lines, Event.MIGRATION_FAILED)
    assert failed["from_version"] == started["from_version"] == 0
    assert failed["error_type"] == type(raised.value).__name__ and failed["level"] == logging.ERROR
    assert not [line for line in lines if line["event_id"] == Event.MIGRATION_COMPLETED]


# -- The runtime ------------------------------------------------------------------------------


async def test_throttled_retry_logs_job_throttled_retry(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.job(max_attempts=3)
    async def partner(n: int = 0) -> None:
        raise ThrottledError("429 Too Many Requests", retry_after_seconds=30)

    job_id = str(await partner.enqueue())
    try:
        with captured() as lines:
            # Not due again for 30 s, past this burst's horizon: it stops with the retry left.
            await app.create_worker(burst=True, burst_horizon_seconds=1).run()
    finally:
        await app.close()
    line = only(lines, Event.JOB_THROTTLED_RETRY)
    assert (line["job_id"], line["type"], line["retry_after"]) == (job_id, "partner", 30)
    scheduled = only(lines, Event.JOB_RETRY_SCHEDULED)
    assert scheduled["job_id"] == job_id


async def test_maintenance_logs_rescue_started_and_metrics_rolled_up(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.job()
    async def ok(n: int = 0) -> None:
        return None

    await app.enqueue_many([ok.prepare(n=i) for i in range(3)])
    try:
        await app.create_worker(burst=True).run()
        worker = app.create_worker()
        backend = app.backend
        leadership = backend.leadership("maintenance", holder=worker.id)
        maintenance = Maintenance(
            backend, worker.settings, leadership, Events(), worker_id=worker.id
        )
        with captured(logging.DEBUG) as lines:
            await maintenance.tick()
            later = datetime.now(UTC) + timedelta(hours=3)
            done = await run_retention(backend, worker.settings, now=later)
        await maintenance.close()
    finally:
        await app.close()
    rescue = only(lines, Event.RESCUE_STARTED)
    assert rescue["worker_id"] == worker.id and rescue["level"] == logging.DEBUG
    assert done["rolled_up"] > 0
    assert only(lines, Event.METRICS_ROLLED_UP)["buckets"] == done["rolled_up"]


async def test_debug_events_job_succeeded_and_enqueue_duplicate(tmp_path: Path) -> None:
    # Both are DEBUG (one per job would be noise at INFO), so the session's INFO recorder
    # only sees them here.
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.job()
    async def ok(n: int = 0) -> None:
        return None

    try:
        with captured(logging.DEBUG) as lines:
            first = await ok.enqueue(idempotency_key="k-1")
            again = await ok.enqueue(idempotency_key="k-1")
            await app.create_worker(burst=True).run()
    finally:
        await app.close()
    assert str(first) == str(again)
    assert only(lines, Event.ENQUEUE_DUPLICATE)["level"] == logging.DEBUG
    assert only(lines, Event.JOB_SUCCEEDED)["job_id"] == str(first)


# -- the catalogue ----------------------------------------------------------------------------


def test_the_docs_list_exactly_the_catalogue() -> None:
    text = (DOCS / "observability.md").read_text(encoding="utf-8")
    listed = {(int(i), name) for i, name in re.findall(r"^\| (\d{4}) \| `(\w+)` \|", text, re.M)}
    assert listed == {(e.value, e.name.lower()) for e in Event}


def _whole_suite(session: pytest.Session) -> bool:
    ran = {Path(str(item.path)).resolve() for item in session.items}
    on_disk = {p.resolve() for p in TESTS.rglob("test_*.py")}
    narrowed = session.config.getoption("keyword") or session.config.getoption("markexpr")
    return ran >= on_disk and not narrowed and not session.config.getoption("deselect")


def test_every_catalogued_event_is_emitted_by_a_tested_path(
    request: pytest.FixtureRequest, emitted_events: Any
) -> None:
    if not _whole_suite(request.session):
        pytest.skip("checks the whole suite's log events: run every test module, unfiltered")
    emitted = emitted_events.whole_run(request.session)
    missing = sorted(f"{e.value} {e.name}" for e in Event if e.value not in emitted)
    assert not missing, f"catalogued but never emitted by a test: {missing}"
    unknown = sorted(set(emitted) - {e.value for e in Event})
    assert not unknown, f"emitted but not catalogued: {unknown}"

"""Shared fixtures: a real SQLite file per test and a private PostgreSQL schema per test.

PostgreSQL tests need a server (``CHOKAQ_TEST_PG_URL``, default the local trust-auth server).
Without one they skip with the reason shown; under ``CI=true`` they fail instead, since CI must
run them.

Every chokaq log event a test emits (in this process, or in a subprocess whose JSON log a test
reads and adds) is recorded in the session's ``emitted_events``, and the check that every
catalogued event was emitted (tests/ops/test_events.py) runs last.

Under pytest-xdist (``./dev test`` runs the suite in several worker processes) two things are
shared between the workers through files in the run's temporary directory: the events each worker
recorded, so that the catalogue check sees the whole run's (it waits for every other test to
finish), and a lock on the shared PostgreSQL server, which a test that restarts the server holds
alone (marker ``restarts_postgres``) while every other PostgreSQL test holds it shared.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from chokaq.models import Capabilities, ScheduleDeclaration
from chokaq.storage import Backend, create_backend

PG_URL = os.environ.get("CHOKAQ_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

_pg_state: dict[str, str | None] = {}

_current_test = ["(outside a test)"]
LAST_CHECK = "tests/ops/test_events.py::test_every_catalogued_event_is_emitted_by_a_tested_path"


class _EventRecorder(logging.Filter):
    """Records the event id of every chokaq log record. A filter on the logger itself, not a
    handler, so it also sees the records of code that replaces the logger's handlers (the
    CLI's ``configure_logging``)."""

    def __init__(self) -> None:
        super().__init__()
        self.emitted: dict[int, str] = {}  # event id -> the first test that emitted it

    def filter(self, record: logging.LogRecord) -> bool:
        data = getattr(record, "chokaq", None)
        if isinstance(data, dict) and "event_id" in data:
            self.emitted.setdefault(int(data["event_id"]), _current_test[0])
        return True


class EmittedEvents:
    """The event ids emitted so far in this session, with the first test that emitted each."""

    def __init__(self, recorder: _EventRecorder) -> None:
        self._recorder = recorder

    @property
    def ids(self) -> dict[int, str]:
        return dict(self._recorder.emitted)

    def add(self, ids: Iterable[object], where: str) -> None:
        """Record the ``event_id`` values of a subprocess's JSON log lines."""
        for event_id in ids:
            if isinstance(event_id, int):
                self._recorder.emitted.setdefault(event_id, where)

    def whole_run(self, session: pytest.Session, *, stalled: float = 600.0) -> dict[int, str]:
        """``ids`` of the whole run: under xdist, once every other test of the session has
        finished in whichever worker ran it, the union of what each worker recorded. Fails when
        no other test has finished for ``stalled`` seconds (a worker died, or ``-x`` stopped
        the run), longer than any one test takes."""
        if _shared_dir(session.config) is None:
            return self.ids
        others = len(session.items) - 1
        last, deadline = -1, 0.0
        while (finished := _finished_elsewhere()) < others:
            if finished != last:
                last, deadline = finished, time.monotonic() + stalled
            elif time.monotonic() > deadline:
                pytest.fail(f"{finished} of the other {others} tests done; none for {stalled} s")
            time.sleep(0.2)
        emitted: dict[int, str] = {}
        for record in _worker_records():
            for event_id, where in record["emitted"].items():
                emitted.setdefault(int(event_id), where)
        return emitted


# One for the process: the last test's record is written after the session's fixtures are gone.
_recorder = _EventRecorder()


@pytest.fixture(scope="session", autouse=True)
def emitted_events() -> Iterator[EmittedEvents]:
    # INFO (not DEBUG: that switches the worker to its verbose path) so that INFO events
    # reach the recorder; it is the level an operator runs with.
    logger = logging.getLogger("chokaq")
    level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addFilter(_recorder)
    yield EmittedEvents(_recorder)
    logger.removeFilter(_recorder)
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def _name_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    _current_test[0] = request.node.nodeid
    yield
    _current_test[0] = "(outside a test)"


def _on_postgres(item: pytest.Item) -> bool:
    """Whether ``item`` runs on the PostgreSQL server through a fixture: ``pg_store``,
    ``pg_app``, or ``store`` parametrized to it by the test (an indirect parameter does not
    carry the mark of the fixture's own ``postgres`` parameter)."""
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    chosen = callspec.params.get("store") if callspec is not None else None
    return bool(names & {"pg_store", "pg_app"}) or chosen == "postgres"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the PostgreSQL server are marked ``postgres`` however they reach it, and tests
    that drive Chromium (the ``browser`` fixture) ``browser``, marked in their module or not (the
    quick tier, ``-m "not postgres and not browser ..."``, runs without a server or a browser).
    The catalogue check needs every other test to have run: it goes last."""
    for item in items:
        if item.get_closest_marker("postgres") is None and _on_postgres(item):
            item.add_marker(pytest.mark.postgres)
        if item.get_closest_marker("browser") is None and "browser" in getattr(
            item, "fixturenames", ()
        ):
            item.add_marker(pytest.mark.browser)
    last = [item for item in items if item.nodeid == LAST_CHECK]
    items[:] = [item for item in items if item.nodeid != LAST_CHECK] + last


# -- sharing between xdist workers ----------------------------------------------------------

# Modules whose tests one xdist worker runs, one after another, with the other modules of their
# group; every other test is scheduled on its own. pytest-xdist's ``xdist_group`` marker cannot
# do this under pytest 9.2 (it renames node ids through an attribute pytest no longer reads).
XDIST_GROUPS = {
    # Fixed Redis databases and broker queues, flushed by each run.
    "tests/bench/test_bench_brokers.py": "brokers",
    "tests/bench/test_bench_short.py": "brokers",
    # The mypy runs share one cache in the worker's temporary directory.
    "tests/typing/test_typing.py": "typing",
}


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return XDIST_GROUPS.get(nodeid.split("::", 1)[0], nodeid)

    return Grouped(config, log)


_shared: dict[str, Path | None] = {}
_finished = [0]


def _shared_dir(config: pytest.Config) -> Path | None:
    """The directory every xdist worker of this run shares (the parent of each worker's own
    base temporary directory); None outside xdist."""
    if "dir" not in _shared:
        worker = getattr(config, "workerinput", None)
        if worker is None:
            _shared["dir"] = None
        else:
            base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
            shared = base.parent / "chokaq-shared"
            shared.mkdir(exist_ok=True)
            _shared["dir"] = shared
            _shared["record"] = shared / f"events-{worker['workerid']}.json"
    return _shared["dir"]


def pytest_sessionstart(session: pytest.Session) -> None:
    _shared_dir(session.config)


def pytest_runtest_logfinish(nodeid: str) -> None:
    """Under xdist, after each test: how many tests this worker has finished and the events it
    has recorded, written whole (a rename), for the catalogue check of whichever worker runs it."""
    record = _shared.get("record")
    if record is None:
        return
    _finished[0] += 1
    partial = record.with_suffix(".part")
    data = {"finished": _finished[0], "emitted": _recorder.emitted}
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, record)


def _worker_records() -> list[dict[str, Any]]:
    shared = _shared["dir"]
    assert shared is not None
    return [json.loads(p.read_text(encoding="utf-8")) for p in shared.glob("events-*.json")]


def _finished_elsewhere() -> int:
    return sum(int(record["finished"]) for record in _worker_records())


@contextlib.contextmanager
def _server_lock(config: pytest.Config, *, alone: bool) -> Iterator[None]:
    """Hold the shared PostgreSQL server, alone or beside others. A test that waits to hold it
    alone keeps the gate, so that the tests queued after it wait too, instead of sharing the
    server on and on while it never gets its turn."""
    shared = _shared_dir(config)
    if shared is None:
        yield
        return
    with open(shared / "postgres.gate", "a") as gate, open(shared / "postgres.lock", "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _postgres_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under xdist, every PostgreSQL test holds the server shared, and one that restarts it
    holds it alone."""
    node = request.node
    if node.get_closest_marker("restarts_postgres") is not None:
        with _server_lock(request.config, alone=True):
            yield
    elif node.get_closest_marker("postgres") is not None:
        with _server_lock(request.config, alone=False):
            yield
    else:
        yield


def postgres_unavailable() -> str | None:
    """None when the test server answers, else why not (checked once per session)."""
    if "reason" not in _pg_state:
        try:
            import psycopg

            with psycopg.connect(PG_URL, connect_timeout=3) as conn:
                conn.execute("select 1")
            _pg_state["reason"] = None
        except Exception as exc:
            _pg_state["reason"] = f"PostgreSQL not reachable at {PG_URL}: {exc}".strip()
    return _pg_state["reason"]


def require_postgres() -> None:
    reason = postgres_unavailable()
    if reason is not None:
        if IN_CI:
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@dataclass
class Store:
    """Where one test's data lives: the URL and schema, to open more backends or workers on.

    Tests that depend on what a database can do skip by ``capabilities``, never by its name;
    ``dialect`` ("sqlite" or "postgres") only picks the client for the few tests that read the
    tables with plain SQL."""

    dialect: str
    url: str
    schema: str

    def backend(self, **options: object) -> Backend:
        return create_backend(self.url, schema=self.schema, **options)

    @property
    def capabilities(self) -> Capabilities:
        return self.backend().capabilities


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store on each backend (not migrated)."""
    if request.param == "sqlite":
        yield Store("sqlite", f"sqlite:///{tmp_path / 'jobs.db'}", "chokaq")
        return
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield Store("postgres", PG_URL, schema)
    finally:
        drop_schema(schema)


@pytest.fixture
async def open_backend(store: Store) -> AsyncIterator[Callable[..., Awaitable[Backend]]]:
    """A factory of opened, migrated backends on this test's store (each its own connections)."""
    opened: list[Backend] = []

    async def factory(**options: object) -> Backend:
        backend = store.backend(**options)
        await backend.open()
        await backend.migrate()
        opened.append(backend)
        return backend

    yield factory
    for backend in opened:
        await backend.close()


@pytest.fixture
async def backend(open_backend: Callable[..., Awaitable[Backend]]) -> Backend:
    """One opened, migrated backend on a fresh store."""
    return await open_backend()


@pytest.fixture
def pg_store() -> Iterator[Store]:
    """A fresh PostgreSQL schema only (for PostgreSQL-specific tests)."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        yield Store("postgres", PG_URL, schema)
    finally:
        drop_schema(schema)


class Raw:
    """Plain SQL on the store, outside any backend. ``table("jobs_dlq")`` names a table."""

    def __init__(self, url: str, schema: str) -> None:
        self.dialect = "sqlite" if url.startswith("sqlite:") else "postgres"
        self.schema = schema
        if self.dialect == "sqlite":
            path = url.removeprefix("sqlite:///")
            self._conn: Any = sqlite3.connect(path, isolation_level=None, timeout=30)
        else:
            import psycopg

            self._conn = psycopg.connect(url, autocommit=True)

    def table(self, name: str) -> str:
        if self.dialect == "sqlite":
            return f"{self.schema}_{name}"
        return f'"{self.schema}".{name}'

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``{jobs_hot}`` and friends are replaced by table names)."""
        names = {
            n: self.table(n)
            for n in (
                "jobs_hot",
                "jobs_archive",
                "jobs_dlq",
                "stats_summary",
                "metric_buckets",
                "queues",
                "workers",
            )
        }
        text = sql.format(**names)
        if self.dialect == "postgres":
            text = text.replace("?", "%s")
        cursor = self._conn.execute(text, params)
        return list(cursor.fetchall()) if cursor.description else []

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def raw(store: Store) -> Iterator[Raw]:
    """A plain driver connection (sqlite3 or psycopg) on the test's store, for the few tests
    that must plant a row the seam would refuse, or read a catalog."""
    conn = Raw(store.url, store.schema)
    yield conn
    conn.close()


_DECLARATION = ScheduleDeclaration(
    name="tick",
    type="tick",
    queue="default",
    priority=10,
    cron=None,
    every_seconds=60.0,
    timezone="UTC",
    kwargs="{}",
    misfire="latest",
    overlap=True,
)


def schedule_declaration(name: str = "tick", **fields: Any) -> ScheduleDeclaration:
    """A schedule as a worker's code declares it: type ``tick`` on ``default``, every 60 s,
    no kwargs, ``misfire="latest"``, overlap allowed; ``fields`` replace any of these."""
    return replace(_DECLARATION, name=name, **fields)

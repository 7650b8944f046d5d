"""The torture rig shared by the torture run (``torture.py``) and its partition scenario
(``torture_partition.py``): a run's ``Config`` and ``Report``, control of the shared PostgreSQL
server, raw reads of a run's store, the worker subprocesses, and setting up and releasing a
run's store and client.

Owns those pieces only; the workload, the scenarios and the checks live in the two scripts, and
this module must not import either of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chokaq import App  # noqa: E402

PG_URL = os.environ.get("CHOKAQ_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
PG_CLUSTER = ("15", "main")

# Event ids (chokaq.logs.Event) the checks look for in the workers' JSON logs.
STORAGE_UNAVAILABLE, STORAGE_RECOVERED, FINALIZE_RETRYING = 1006, 1007, 1014
LOOP_CRASHED, SIDE_TASK_DIED = 1002, 1003
SHUTDOWN_REQUEUED, LEASE_LOST, NOT_APPLIED = 2004, 2008, 2100


@dataclass
class Config:
    """One run. Durations are seconds."""

    backend: str = "postgres"
    url: str = PG_URL
    schema: str = ""
    workers: int = 4
    seconds: float = 30.0
    batch_every_seconds: float = 0.25
    kill_every_seconds: float = 4.0
    term_every_seconds: float = 7.0
    restart_postgres: bool = True
    pause_queues: bool = True
    drain_timeout_seconds: float = 90.0
    concurrency: int = 8
    zombie_timeout_seconds: float = 3.0
    fetched_timeout_seconds: float = 3.0
    rescue_interval_seconds: float = 0.5
    leadership_lease_seconds: float = 2.0
    stop_leader: bool = True
    seed: int = 0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="torture-")))
    keep_schema: bool = False


@dataclass
class Report:
    """The figures of one run and what went wrong (empty ``violations``: the run passed)."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    # What ``verify`` looked at (workers, producer's book, samples), to check the checks.
    context: dict[str, Any] = field(default_factory=dict, repr=False)

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.violations.append(message)

    @property
    def passed(self) -> bool:
        return not self.violations

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "figures": self.figures,
            "violations": self.violations,
        }


# -- PostgreSQL server control (shared with everyone on this machine: restart once, never leave
# it stopped) ------------------------------------------------------------------------------


def _pg_ctl(action: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, action],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# A shutdown waits for its checkpoint, which on a busy disk has taken minutes (seen: 231 s,
# after a run of tests that created and dropped thousands of tables).
RESTART_DEADLINE_SECONDS = 600.0


def _accepting() -> bool:
    return (
        subprocess.run(
            ["pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432"], capture_output=True
        ).returncode
        == 0
    )


def ensure_postgres_running(deadline_seconds: float = RESTART_DEADLINE_SECONDS) -> None:
    """Until the cluster accepts connections: start it whenever it is down (a shutdown still
    in progress is waited out; the safety net of every restart)."""
    give_up = time.monotonic() + deadline_seconds
    while not _accepting():
        if time.monotonic() > give_up:
            raise RuntimeError("PostgreSQL did not come back up")
        with contextlib.suppress(subprocess.TimeoutExpired):
            if _pg_ctl("status", timeout=30).returncode != 0:  # 3: not running
                _pg_ctl("start", timeout=max(30.0, give_up - time.monotonic()))
        time.sleep(0.5)


def restart_postgres() -> float:
    """Restart the cluster once; returns how long it took until it accepted connections again.
    Always leaves it running (or raises when it would not come back within the deadline). A
    restart command that gave up waiting for a slow shutdown is not a failure: the cluster is
    started as soon as the shutdown ends."""
    started = time.monotonic()
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _pg_ctl("restart", timeout=RESTART_DEADLINE_SECONDS)
    finally:
        ensure_postgres_running()
    return time.monotonic() - started


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (``T`` in ``/proc/<pid>/task/*/stat``)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True  # gone: nothing of it runs
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            continue  # a thread that just ended
        if state not in ("T", "t"):
            return False
    return True


def freeze(pid: int, sqlite_path: str | None = None, timeout: float = 10.0) -> None:
    """SIGSTOP ``pid`` and return once every one of its threads has stopped.

    With ``sqlite_path``, while holding that file's write lock: a process frozen inside a write
    transaction would hold the one write lock of the file and stop every process on it, leader
    or not (SQLite's single writer, which the leadership scenarios do not measure). The lock is
    released only once the process has stopped: ``kill`` returns before the signal takes effect,
    and a thread running on another core meanwhile could take the lock the moment it is released
    (seen in the soak: a worker frozen for 60 s with the file's lock, every other one waiting).
    """
    conn = None
    if sqlite_path is not None:
        conn = sqlite3.connect(sqlite_path, timeout=30, isolation_level=None)
    try:
        if conn is not None:
            conn.execute("BEGIN IMMEDIATE")
        os.kill(pid, signal.SIGSTOP)
        give_up = time.monotonic() + timeout
        while not stopped(pid):
            if time.monotonic() > give_up:
                raise RuntimeError(f"process {pid} did not stop within {timeout} s of SIGSTOP")
            time.sleep(0.001)
        if conn is not None:
            conn.execute("ROLLBACK")
    finally:
        if conn is not None:
            conn.close()


# -- direct reads of the store (checks only; the product itself never runs SQL outside its
# backends) ---------------------------------------------------------------------------------


class Store:
    """Raw read access to one run's tables, on either backend."""

    def __init__(self, config: Config) -> None:
        self.kind = config.backend
        self.url = config.url
        self.schema = config.schema

    def table(self, name: str) -> str:
        # The schema is one of ours (validated by chokaq: [A-Za-z_][A-Za-z0-9_]*).
        if self.kind == "postgres":
            return f'"{self.schema}".{name}'
        return f"{self.schema}_{name}" if not name.startswith("torture_") else name

    def rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.url, autocommit=True, connect_timeout=3) as conn:
                return conn.execute(query.replace("?", "%s"), params).fetchall()
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), timeout=30)
        try:
            return conn.execute(query, params).fetchall()
        finally:
            conn.close()

    def execute(self, query: str) -> None:
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(query)
            return
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), timeout=30)
        try:
            conn.execute(query)
            conn.commit()
        finally:
            conn.close()

    def now_expr(self) -> str:
        return "extract(epoch from now())" if self.kind == "postgres" else str(time.time())

    def epoch(self, column: str) -> str:
        return f"extract(epoch from {column})" if self.kind == "postgres" else column

    def drop(self) -> None:
        if self.kind == "postgres":
            self.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


# -- worker processes ---------------------------------------------------------------------


@dataclass
class WorkerProc:
    """One worker subprocess and its JSON log."""

    index: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    started_at: float
    fate: str = "running"  # running, killed, terminated, stopped
    exit_code: int | None = None
    _ready: bool = False

    def ready(self) -> bool:
        """Whether it logged "worker started" (its SIGTERM handler is installed by then: a
        SIGTERM during interpreter start-up kills a process before any job is claimed)."""
        if not self._ready:
            with contextlib.suppress(FileNotFoundError), open(self.log_path, "rb") as log:
                self._ready = b'"event_id": 1000' in log.read(65536)
        return self._ready

    def events(self) -> list[dict[str, Any]]:
        out = []
        with contextlib.suppress(FileNotFoundError):
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    with contextlib.suppress(ValueError):
                        out.append(json.loads(line))
        return out


def worker_env(config: Config, url: str | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "CHOKAQ_DATABASE_URL": url or config.url,
        "CHOKAQ_SCHEMA": config.schema,
        "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO))),
        "TORTURE_CONCURRENCY": str(config.concurrency),
        "TORTURE_ZOMBIE_TIMEOUT": str(config.zombie_timeout_seconds),
        "TORTURE_FETCHED_TIMEOUT": str(config.fetched_timeout_seconds),
        "TORTURE_RESCUE_INTERVAL": str(config.rescue_interval_seconds),
        "TORTURE_LEASE": str(config.leadership_lease_seconds),
    }


def spawn_worker(
    config: Config,
    index: int,
    *,
    prefix: list[str] | None = None,
    url: str | None = None,
    queues: str | None = None,
) -> WorkerProc:
    log_path = config.workdir / f"worker-{index}.log"
    args = [sys.executable, "-m", "chokaq", "worker", "--app", "scripts.torture_app:app"]
    args += ["--json-logs"]
    if queues:
        args += ["--queues", queues]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*(prefix or []), *args],
            cwd=REPO,
            env=worker_env(config, url),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return WorkerProc(index, proc, log_path, time.monotonic())


def stop_worker(worker: WorkerProc, sig: int, fate: str) -> None:
    if worker.proc.poll() is None:
        worker.proc.send_signal(sig)
    worker.fate = fate


def reap(worker: WorkerProc, timeout: float = 20.0) -> None:
    try:
        worker.exit_code = worker.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        worker.proc.kill()
        worker.exit_code = worker.proc.wait(timeout=10)
        worker.fate = f"{worker.fate}+hung"


# -- a run's store and client ---------------------------------------------------------------


def setup_store(config: Config) -> Store:
    if not config.schema:
        config.schema = f"torture_{uuid.uuid4().hex[:10]}"
    if config.backend == "sqlite":
        config.url = f"sqlite:///{config.workdir / 'torture.db'}"
        config.schema = "chokaq"
    return Store(config)


async def prepare(config: Config, store: Store) -> App:
    from scripts import torture_app as t

    client = App(config.url, schema=config.schema, auto_migrate=True)
    await client.open()
    if config.backend == "postgres":
        store.execute(t.LEDGER_PG.format(schema=f'"{config.schema}"'))
    else:
        store.execute("PRAGMA journal_mode=WAL")
        store.execute(t.LEDGER_SQLITE)
    return client


def kill_all(workers: list[WorkerProc]) -> None:
    """Kill every worker still running (a scenario's last resort; the checks are done)."""
    for w in workers:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait(timeout=10)


async def release(client: App, store: Store, config: Config) -> None:
    """Close the scenario's client and drop its store unless asked to keep it."""
    with contextlib.suppress(Exception):
        await client.close()
    if not config.keep_schema:
        with contextlib.suppress(Exception):
            store.drop()

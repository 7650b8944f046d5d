"""The job systems on PostgreSQL the end-to-end parts drive, each behind the same small surface
(bench/brokers.py puts Celery and RQ behind it too): a fresh store, bulk enqueue, enqueue one job,
count unfinished jobs, load finished history, and the worker's command line (burst: drain, then
exit; serve: run until terminated, appending each job's pickup latency to a file when asked),
which bench/outside.py times from outside.

chokaq (PostgreSQL or SQLite; its ``chokaq worker`` CLI, async or plain def handler), PgQueuer
(asyncpg, its fastest driver) and procrastinate (psycopg 3). Peers run with their documented
defaults plus the knobs the issue names (concurrency 10; PgQueuer also at batch 10 with no cap,
its own benchmark's setting). Bench code may hold SQL.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import psycopg

from bench.measure import child_env, fresh_database
from bench.outside import WORK_DB, redis_url

# -- worker sources -------------------------------------------------------------------------------
# Each reads URL, MODE (burst | serve), CONCURRENCY and, for PgQueuer, BATCH and CAP from the
# environment, and does the handler work WORK_SOURCE defines.

# The same work per job in every system's handler: nothing ("noop"), or one round trip to Redis
# ("incr": INCR of the run's counter, which the harness polls: that is how it sees every job
# done without a burst mode). COUNT=1 adds the INCR to a no-op for a system whose burst exit
# cannot mark the end (none, or a slow one).
# A handler given a "sent" wall-clock time first appends time.time() - sent to LAT_FILE.
WORK_SOURCE = r"""
import os, time
LAT = os.environ.get("LAT_FILE")
COUNTER, WORK_REDIS = os.environ.get("COUNTER", ""), os.environ.get("WORK_REDIS", "")
# No counter (a pickup run): nothing to count, and no INCR after the latency is written.
INCR = bool(COUNTER) and (os.environ.get("WORK") == "incr" or os.environ.get("COUNT") == "1")
_sync_clients, _async_clients = {}, []

def _latency(sent):
    if LAT and sent:
        with open(LAT, "a") as f:
            f.write(f"{time.time() - sent}\n")

def work_sync(sent=0.0):
    _latency(sent)
    if INCR:
        # One client per process: a forked child must not use its parent's sockets.
        if os.getpid() not in _sync_clients:
            import redis
            _sync_clients[os.getpid()] = redis.Redis.from_url(WORK_REDIS)
        _sync_clients[os.getpid()].incr(COUNTER)

async def work_async(sent=0.0):
    _latency(sent)
    if INCR:
        if not _async_clients:
            import redis.asyncio
            _async_clients.append(redis.asyncio.Redis.from_url(WORK_REDIS))
        await _async_clients[0].incr(COUNTER)
"""

# chokaq runs as users run it: ``chokaq worker --app bench_chokaq_app:app`` on this module.
CHOKAQ_APP = (
    WORK_SOURCE
    + r"""
from chokaq import App

app = App(os.environ["URL"], schema="chokaq", auto_migrate=False)

if os.environ.get("HANDLER") == "def":
    @app.job(name="noop")
    def noop(i: int = 0, sent: float = 0.0) -> None:
        work_sync(sent)
else:
    @app.job(name="noop")
    async def noop(i: int = 0, sent: float = 0.0) -> None:
        await work_async(sent)
"""
)

PGQUEUER_WORKER = (
    WORK_SOURCE
    + r"""
import asyncio
import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.types import QueueExecutionMode

async def main():
    conn = await asyncpg.connect(os.environ["URL"])
    pgq = PgQueuer.from_asyncpg_connection(conn)

    @pgq.entrypoint("noop")
    async def noop(job) -> None:
        await work_async(float(job.payload.decode()) if job.payload else 0.0)

    cap = int(os.environ["CAP"]) or None
    mode = (QueueExecutionMode.drain if os.environ["MODE"] == "burst"
            else QueueExecutionMode.continuous)
    await pgq.run(batch_size=int(os.environ["BATCH"]), max_concurrent_tasks=cap, mode=mode)

asyncio.run(main())
"""
)

PROCRASTINATE_WORKER = (
    WORK_SOURCE
    + r"""
import asyncio, logging
import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["URL"]))

@app.task(name="noop")
async def noop(i: int = 0, sent: float = 0.0) -> None:
    await work_async(sent)

async def main():
    async with app.open_async():
        await app.run_worker_async(concurrency=int(os.environ["CONCURRENCY"]),
                                   wait=os.environ["MODE"] != "burst", install_signal_handlers=True)

logging.disable(logging.WARNING)
asyncio.run(main())
"""
)

WORKS = ("noop", "incr")


def with_work(system: Any, work: str) -> Any:
    """A copy of ``system`` whose handler does ``work`` (the no-op keeps the plain key)."""
    if work not in WORKS:
        raise ValueError(f"work must be one of {', '.join(WORKS)}, got {work!r}")
    if work == "noop":
        if system.worker_env.get("COUNT") == "1":
            # The INCR is only there to count a burn-down's jobs; a pickup run does not do it.
            return replace(system, label=f"{system.label}, no-op (burn-down: + counting INCR)")
        return system
    label = f"{system.label}, one Redis INCR per job"
    env = {**system.worker_env, "WORK": work}
    return replace(system, key=f"{system.key}+{work}", label=label, worker_env=env, client=None)


def work_of(key: str) -> str:
    return key.partition("+")[2] or "noop"


class Surface(Protocol):
    """What the peers part needs of a system (System here; CelerySystem and RQSystem in
    bench/brokers.py). ``store`` is whatever ``store()`` yields: a database URL, or for a
    broker ``<broker URL>|<queue>``."""

    key: str
    label: str
    worker_env: dict[str, str]
    ends_by_exit: bool  # its burst exit marks the end of a burn-down (else: the Redis counter)
    database: bool  # history and the steady load apply (they read the database's tables)
    hurry_after: float | None  # a second SIGTERM after this many seconds of stopping

    def store(self) -> contextlib.AbstractContextManager[str]: ...
    def launch(
        self, store: str, mode: str, folder: Path, **extra: str
    ) -> tuple[list[str], dict[str, str]]: ...
    def unfinished(self, store: str) -> int: ...
    async def open(self, store: str, install: bool) -> None: ...
    async def close(self) -> None: ...
    async def enqueue_bulk(self, count: int, batch: int = 10_000) -> float: ...
    async def enqueue_one(self, sent: float) -> None: ...

    max_jobs: int | None  # jobs per burn-down at most (None: the run's number)
    burn_down_only: bool  # a further configuration: no history, pickup or steady load


@dataclass
class System:
    """One system under test and the configuration its worker runs with."""

    key: str
    label: str
    worker_source: str
    worker_env: dict[str, str] = field(default_factory=dict)
    client: Any = None
    # Every PostgreSQL system here has a burst mode (run until nothing is left, then exit) whose
    # exit marks the end of its burn-down, and keeps its jobs in the database, so the history
    # and steady sections apply to it.
    ends_by_exit: bool = True
    database: bool = True
    hurry_after: float | None = None
    # Jobs per burn-down at most (None: the run's number), for a system too slow to drain the
    # run's number in every round; jobs/s is a rate, and the report names the cap.
    max_jobs: int | None = None
    # A further configuration of a system already measured: burn-downs only (no history,
    # pickup or steady load of its own).
    burn_down_only: bool = False

    # -- the store and the worker's command line -----------------------------------------------

    @contextlib.contextmanager
    def store(self) -> Iterator[str]:
        """A fresh, empty database; its URL."""
        with fresh_database(family(self.key)) as url:
            yield url

    def launch(
        self, store: str, mode: str, folder: Path, **extra: str
    ) -> tuple[list[str], dict[str, str]]:
        """The worker's command line and environment; chokaq's is its CLI on an app module
        written into ``folder`` (``mode`` burst adds ``--burst``)."""
        env = child_env(URL=store, MODE=mode, WORK_REDIS=redis_url(WORK_DB), **self.worker_env)
        env.update(extra)
        if family(self.key) != "chokaq":
            return [sys.executable, "-c", self.worker_source], env
        (folder / "bench_chokaq_app.py").write_text(CHOKAQ_APP)
        env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
        argv = [sys.executable, "-m", "chokaq", "worker", "--app", "bench_chokaq_app:app"]
        argv += ["--concurrency", self.worker_env.get("CONCURRENCY", "10")]
        return argv + (["--burst"] if mode == "burst" else []), env

    def unfinished(self, store: str) -> int:
        return unfinished(store, self.key)

    # -- lifecycle in the parent process ----------------------------------------------------------

    async def open(self, url: str, install: bool) -> None:
        if family(self.key) == "chokaq":
            from chokaq import App

            app = App(url, schema="chokaq", auto_migrate=install)

            @app.job(name="noop")
            async def noop(i: int = 0, sent: float = 0.0) -> None:
                return None

            await app.open()
            self.client = (app, noop)
        elif self.key.startswith("pgqueuer"):
            import asyncpg
            from pgqueuer.db import AsyncpgDriver
            from pgqueuer.queries import Queries

            conn = await asyncpg.connect(url)
            queries = Queries(AsyncpgDriver(conn))
            if install:
                await queries.install()
            self.client = (conn, queries)
        else:
            import procrastinate

            app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

            @app.task(name="noop")
            async def noop(i: int = 0, sent: float = 0.0) -> None:
                return None

            await app.open_async()
            if install:
                await app.schema_manager.apply_schema_async()
            self.client = (app, noop)

    async def close(self) -> None:
        if self.client is None:
            return
        if family(self.key) in ("chokaq", "pgqueuer"):
            await self.client[0].close()
        else:
            await self.client[0].close_async()
        self.client = None

    async def enqueue_bulk(self, count: int, batch: int = 10_000) -> float:
        """Bulk-enqueue ``count`` no-op jobs in batches; returns jobs/s."""
        started = time.perf_counter()
        for first in range(0, count, batch):
            size = min(batch, count - first)
            if family(self.key) == "chokaq":
                app, noop = self.client
                await app.enqueue_many([noop.prepare(i=first + k) for k in range(size)])
            elif self.key.startswith("pgqueuer"):
                _, queries = self.client
                await queries.enqueue(
                    ["noop"] * size, [str(first + k).encode() for k in range(size)], [0] * size
                )
            else:
                _, noop = self.client
                await noop.batch_defer_async(*({"i": first + k} for k in range(size)))
        return count / (time.perf_counter() - started)

    async def enqueue_one(self, sent: float) -> None:
        """One job whose handler reports ``time.time() - sent`` (PgQueuer: in the payload)."""
        if family(self.key) == "chokaq":
            _, noop = self.client
            await noop.enqueue(sent=sent)
        elif self.key.startswith("pgqueuer"):
            _, queries = self.client
            await queries.enqueue("noop", repr(sent).encode(), 0)
        else:
            _, noop = self.client
            await noop.defer_async(sent=sent)


# -- SQL read from the parent: unfinished jobs, history ------------------------------------------

UNFINISHED_SQL = {
    "chokaq": "SELECT count(*) FROM chokaq.jobs_hot",
    "pgqueuer": "SELECT count(*) FROM pgqueuer",
    "procrastinate": "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')",
}

# Finished history in each system's own place for it: chokaq's archive (and lifetime counter),
# PgQueuer's log table (done jobs leave its queue table; one aggregated 'successful' row each),
# procrastinate's jobs table (succeeded rows stay there by default).
HISTORY_SQL = {
    "chokaq": [
        # Oldest first, as jobs finish; ids are UUIDv7 of the creation time, as chokaq makes
        # them (48 bits of Unix milliseconds, the version nibble 7, the rest random).
        """INSERT INTO chokaq.jobs_archive (id, queue, type, payload, priority, attempt_count,
               worker_id, created_at, started_at, finished_at, duration_seconds)
           SELECT encode(set_byte(overlay(r PLACING substring(int8send(
                      floor(extract(epoch FROM c) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
                      6, (get_byte(r, 6) & 15) | 112), 'hex')::uuid,
                  'default', 'noop', '{"i": ' || g || '}', 10, 1, 'bench',
                  c, f - interval '1 millisecond', f, 0.001
           FROM (SELECT g, f, f - interval '1 second' AS c, uuid_send(gen_random_uuid()) AS r
                 FROM (SELECT g, now() - g * interval '5 millisecond' AS f
                       FROM generate_series(1, %(rows)s) AS g) AS s) AS t
           ORDER BY g DESC""",
        """UPDATE chokaq.stats_summary SET succeeded_total = succeeded_total + %(rows)s
           WHERE queue = 'default'""",
        "VACUUM ANALYZE chokaq.jobs_archive",
    ],
    "pgqueuer": [
        """INSERT INTO pgqueuer_log (created, job_id, status, priority, entrypoint, aggregated)
           SELECT now() - g * interval '5 millisecond', g, 'successful', 0, 'noop', true
           FROM generate_series(1, %(rows)s) AS g""",
        "SELECT setval('pgqueuer_id_seq', %(rows)s)",
        "VACUUM ANALYZE pgqueuer_log",
    ],
    "procrastinate": [
        """INSERT INTO procrastinate_jobs (queue_name, task_name, args, status, attempts)
           SELECT 'default', 'noop', jsonb_build_object('i', g), 'succeeded', 1
           FROM generate_series(1, %(rows)s) AS g""",
        "VACUUM ANALYZE procrastinate_jobs",
    ],
}


def family(key: str) -> str:
    """The system a configuration key belongs to: "pgqueuer-best+incr" -> "pgqueuer"."""
    return key.partition("+")[0].split("-")[0]


def unfinished(url: str, key: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(UNFINISHED_SQL[family(key)]).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


def load_history(url: str, key: str, rows: int) -> None:
    """Store ``rows`` finished jobs where the system keeps them, then settle the database as
    history that has been there a while would be: vacuumed (hint bits and visibility map set,
    statistics current) and checkpointed, so that the burn-down after it does not pay for the
    bulk load's own aftermath (a checkpoint flushing the load, first-touch page writes)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in HISTORY_SQL[family(key)]:
            conn.execute(statement, {"rows": rows} if "%(rows)s" in statement else None)  # type: ignore[arg-type]
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")


def data_schema(key: str) -> str:
    return "chokaq" if family(key) == "chokaq" else "public"


def postgres_systems(include_peers: bool) -> list[System]:
    """chokaq and, when installed and asked for, the peers in the configurations compared."""
    systems = [System("chokaq", "chokaq (concurrency 10)", CHOKAQ_APP, {"CONCURRENCY": "10"})]
    if not include_peers:
        return systems
    found = peers_available()
    return systems + [s for s in pg_peers() if found[family(s.key)]]


def pg_peers() -> list[System]:
    """PgQueuer (capped at 10, and its best) and procrastinate, installed or not."""
    return [
        System(
            "pgqueuer-c10",
            "PgQueuer (batch 5, cap 10)",
            PGQUEUER_WORKER,
            {"CONCURRENCY": "10", "BATCH": "5", "CAP": "10"},
        ),
        System(
            "pgqueuer-best",
            "PgQueuer best (batch 10, uncapped)",
            PGQUEUER_WORKER,
            {"CONCURRENCY": "0", "BATCH": "10", "CAP": "0"},
        ),
        System(
            "procrastinate",
            "procrastinate (concurrency 10)",
            PROCRASTINATE_WORKER,
            {"CONCURRENCY": "10"},
            # About 500 jobs/s here: 10,000 jobs keep a round within reason.
            max_jobs=10_000,
        ),
    ]


def chokaq_wide() -> System:
    """chokaq at concurrency 100: the nearest to PgQueuer's best, which has no cap at all (a
    claim takes as many jobs as there are free slots, so the cap sets its batch size)."""
    return System(
        "chokaq-c100",
        "chokaq (concurrency 100)",
        CHOKAQ_APP,
        {"CONCURRENCY": "100"},
        burn_down_only=True,
    )


def chokaq_def() -> System:
    """chokaq with a plain ``def`` handler, which its worker runs in a thread pool."""
    return System(
        "chokaq-def",
        "chokaq, plain def handler (threads, concurrency 10)",
        CHOKAQ_APP,
        {"CONCURRENCY": "10", "HANDLER": "def"},
    )


def peers_available() -> dict[str, bool]:
    found = {}
    for name in ("pgqueuer", "procrastinate", "asyncpg"):
        try:
            __import__(name)
            found[name] = True
        except ImportError:
            found[name] = False
    found["pgqueuer"] = found["pgqueuer"] and found.pop("asyncpg")
    return found

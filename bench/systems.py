"""The job systems the end-to-end parts drive, each behind the same small surface: install into a
fresh database, bulk enqueue, enqueue one job, count unfinished jobs, load finished history, and
the source of a worker subprocess (burst: drain and print elapsed seconds and peak RSS; serve:
run until terminated, appending each job's pickup latency to a file when asked).

chokaq (PostgreSQL or SQLite), PgQueuer (asyncpg, its fastest driver) and procrastinate (psycopg
3). Peers run with their documented defaults plus the knobs the issue names (concurrency 10;
PgQueuer also at batch 10 with no cap, its own benchmark's setting). Bench code may hold SQL.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

# -- worker subprocess sources -------------------------------------------------------------------
# Each reads URL, MODE (burst | serve), CONCURRENCY and, for PgQueuer, BATCH and CAP from the
# environment. A handler given a "sent" wall-clock time appends time.time() - sent to LAT_FILE.

CHOKAQ_WORKER = r"""
import asyncio, os, time
from chokaq import App

def peak_rss_kb():
    # VmHWM is this process's own peak RSS; getrusage's ru_maxrss survives exec and would
    # report the parent's RSS at fork time when that is larger.
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
app = App(os.environ["URL"], schema="chokaq", auto_migrate=False)
LAT = os.environ.get("LAT_FILE")

@app.job()
async def noop(i: int = 0, sent: float = 0.0) -> None:
    if LAT and sent:
        with open(LAT, "a") as f:
            f.write(f"{time.time() - sent}\n")

async def main():
    await app.open()
    begin = time.time()
    t = time.perf_counter()
    await app.run_worker(burst=os.environ["MODE"] == "burst",
                         concurrency=int(os.environ["CONCURRENCY"]))
    elapsed = time.perf_counter() - t
    print(elapsed, peak_rss_kb(), begin, time.time())
    await app.close()

asyncio.run(main())
"""

PGQUEUER_WORKER = r"""
import asyncio, os, time
from datetime import timedelta

def peak_rss_kb():
    # VmHWM is this process's own peak RSS; getrusage's ru_maxrss survives exec and would
    # report the parent's RSS at fork time when that is larger.
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.types import QueueExecutionMode
LAT = os.environ.get("LAT_FILE")

async def main():
    conn = await asyncpg.connect(os.environ["URL"])
    pgq = PgQueuer.from_asyncpg_connection(conn)

    @pgq.entrypoint("noop")
    async def noop(job) -> None:
        if LAT and job.payload:
            sent = float(job.payload.decode())
            with open(LAT, "a") as f:
                f.write(f"{time.time() - sent}\n")

    cap = int(os.environ["CAP"]) or None
    mode = (QueueExecutionMode.drain if os.environ["MODE"] == "burst"
            else QueueExecutionMode.continuous)
    begin = time.time()
    t = time.perf_counter()
    await pgq.run(batch_size=int(os.environ["BATCH"]), max_concurrent_tasks=cap, mode=mode)
    elapsed = time.perf_counter() - t
    print(elapsed, peak_rss_kb(), begin, time.time())

asyncio.run(main())
"""

PROCRASTINATE_WORKER = r"""
import asyncio, logging, os, time
import procrastinate

def peak_rss_kb():
    # VmHWM is this process's own peak RSS; getrusage's ru_maxrss survives exec and would
    # report the parent's RSS at fork time when that is larger.
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
LAT = os.environ.get("LAT_FILE")
app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["URL"]))

@app.task(name="noop")
async def noop(i: int = 0, sent: float = 0.0) -> None:
    if LAT and sent:
        with open(LAT, "a") as f:
            f.write(f"{time.time() - sent}\n")

async def main():
    async with app.open_async():
        begin = time.time()
        t = time.perf_counter()
        await app.run_worker_async(concurrency=int(os.environ["CONCURRENCY"]),
                                   wait=os.environ["MODE"] != "burst", install_signal_handlers=True)
        elapsed = time.perf_counter() - t
    print(elapsed, peak_rss_kb(), begin, time.time())

logging.disable(logging.WARNING)
asyncio.run(main())
"""


@dataclass
class System:
    """One system under test and the configuration its worker runs with."""

    key: str
    label: str
    worker_source: str
    worker_env: dict[str, str] = field(default_factory=dict)
    client: Any = None

    # -- lifecycle in the parent process ----------------------------------------------------------

    async def open(self, url: str, install: bool) -> None:
        if self.key == "chokaq":
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
        if self.key == "chokaq" or self.key.startswith("pgqueuer"):
            await self.client[0].close()
        else:
            await self.client[0].close_async()
        self.client = None

    async def enqueue_bulk(self, count: int, batch: int = 10_000) -> float:
        """Bulk-enqueue ``count`` no-op jobs in batches; returns jobs/s."""
        started = time.perf_counter()
        for first in range(0, count, batch):
            size = min(batch, count - first)
            if self.key == "chokaq":
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
        if self.key == "chokaq":
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
    return "pgqueuer" if key.startswith("pgqueuer") else key


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
    return "chokaq" if key == "chokaq" else "public"


def postgres_systems(include_peers: bool) -> list[System]:
    """chokaq and, when installed and asked for, the peers in the configurations compared."""
    systems = [System("chokaq", "chokaq (concurrency 10)", CHOKAQ_WORKER, {"CONCURRENCY": "10"})]
    if not include_peers:
        return systems
    if peers_available()["pgqueuer"]:
        systems.append(
            System(
                "pgqueuer-c10",
                "PgQueuer (batch 5, cap 10)",
                PGQUEUER_WORKER,
                {"CONCURRENCY": "10", "BATCH": "5", "CAP": "10"},
            )
        )
        systems.append(
            System(
                "pgqueuer-best",
                "PgQueuer best (batch 10, uncapped)",
                PGQUEUER_WORKER,
                {"CONCURRENCY": "0", "BATCH": "10", "CAP": "0"},
            )
        )
    if peers_available()["procrastinate"]:
        systems.append(
            System(
                "procrastinate",
                "procrastinate (concurrency 10)",
                PROCRASTINATE_WORKER,
                {"CONCURRENCY": "10"},
            )
        )
    return systems


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

"""Retention under load on PostgreSQL: purge 100,000 of 1,000,000 archived rows while a worker
keeps processing a steady stream of no-op jobs, and compare the worker's throughput before and
during the purge (the goal: within 20 %).

Set-up: a fresh schema; 1,000,000 archive rows inserted with one INSERT ... SELECT
generate_series (100,000 of them finished 30 days ago, the rest within the last hour). A worker
subprocess (``chokaq worker``, concurrency 10) drains no-op jobs that this process keeps topped
up (a backlog of 1,000 to 3,000 pending), so the worker is never starved and its throughput is
its capacity. Throughput is read from the lifetime counter (``stats_summary``), so it counts
commits, not callbacks. The purge is the same batched operation ``chokaq purge`` runs (1,000
rows per short transaction, SKIP LOCKED, resting as long as each batch took: ``--rest 1``),
from this process's own connection; ``--rest 0`` purges flat out for comparison.

Run: python bench/retention.py [--rows 1000000] [--old 100000] [--baseline-seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from chokaq import App  # noqa: E402
from chokaq.models import Pillar  # noqa: E402
from chokaq.runtime.maintenance import purge_pillar  # noqa: E402

PG_URL = os.environ.get("CHOKAQ_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")

# The worker's own retention pass is pushed out of the way so that the purge measured here is
# the only one (otherwise the elected worker deletes the old rows during the warm-up).
WORKER_APP = """
import os
from chokaq import App, WorkerSettings
app = App(
    os.environ["CHOKAQ_DATABASE_URL"],
    schema=os.environ["CHOKAQ_SCHEMA"],
    worker=WorkerSettings(retention_archive_days=3650, retention_dlq_days=3650),
)

@app.job()
async def noop(i: int) -> None:
    return None
"""

# Bench code may hold SQL: the archive is filled directly, far faster than a million jobs run.
FILL = """
INSERT INTO {table} (id, queue, type, payload, tags, priority, attempt_count, worker_id,
                     created_at, started_at, finished_at, duration_seconds)
SELECT gen_random_uuid(), 'default', 'noop', '{{"i": ' || g || '}}', NULL, 10, 1, 'bench',
       f - interval '1 second', f - interval '1 millisecond', f, 0.001
FROM (
    SELECT g, CASE WHEN g <= %(old)s
                   THEN now() - interval '30 days' - g * interval '1 millisecond'
                   ELSE now() - (g %% 3600000) * interval '1 millisecond' END AS f
    FROM generate_series(1, %(rows)s) AS g
) AS s
"""


def prepare(schema: str, rows: int, old: int) -> None:
    async def migrate() -> None:
        app = App(PG_URL, schema=schema, auto_migrate=True)
        await app.open()
        await app.close()

    asyncio.run(migrate())
    table = sql.Identifier(schema, "jobs_archive")
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        started = time.perf_counter()
        conn.execute(sql.SQL(FILL).format(table=table), {"rows": rows, "old": old})
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
        print(
            f"filled {rows:,} archive rows ({old:,} old) in {time.perf_counter() - started:.1f} s"
        )


def drop(schema: str) -> None:
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def measure(app: App, seconds: float) -> tuple[int, float]:
    """Jobs committed as succeeded over ``seconds``."""
    before = (await app.backend.stats_summary()).succeeded_total
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    after = (await app.backend.stats_summary()).succeeded_total
    return after - before, time.perf_counter() - started


async def produce(app: App, stop: asyncio.Event) -> None:
    handle = app.handlers["noop"]
    i = 0
    while not stop.is_set():
        summary = await app.backend.stats_summary()
        if summary.pending < 1000:
            await app.enqueue_many([handle.prepare(i=i + k) for k in range(2000)])
            i += 2000
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=0.05)


async def run(schema: str, args: argparse.Namespace, app_dir: str) -> None:
    app = App(PG_URL, schema=schema)

    @app.job()
    async def noop(i: int) -> None:
        return None

    await app.open()
    stop = asyncio.Event()
    producer = asyncio.create_task(produce(app, stop))
    env = {
        **os.environ,
        "CHOKAQ_DATABASE_URL": PG_URL,
        "CHOKAQ_SCHEMA": schema,
        "PYTHONPATH": f"{app_dir}{os.pathsep}{REPO / 'src'}",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chokaq",
            "worker",
            "--app",
            "bench_app:app",
            "--concurrency",
            str(args.concurrency),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await measure(app, args.warmup_seconds)
        base_jobs, base_seconds = await measure(app, args.baseline_seconds)
        baseline = base_jobs / base_seconds

        cutoff = datetime.now(UTC) - timedelta(days=7)
        before = (await app.backend.stats_summary()).succeeded_total
        started = time.perf_counter()
        deleted = await purge_pillar(
            app.backend, Pillar.ARCHIVE, cutoff, step=args.step, rest_ratio=args.rest
        )
        purge_seconds = time.perf_counter() - started
        during_jobs = (await app.backend.stats_summary()).succeeded_total - before
        during = during_jobs / purge_seconds

        after_jobs, after_seconds = await measure(app, args.baseline_seconds / 2)
        after = after_jobs / after_seconds
    finally:
        stop.set()
        await producer
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        await app.close()

    print(f"rows: {args.rows:,}, old: {args.old:,}, rest ratio: {args.rest:g}, step: {args.step}")
    ratio = during / baseline if baseline else float("nan")
    print(
        f"purged {deleted:,} archive rows in {purge_seconds:.2f} s "
        f"({deleted / purge_seconds:,.0f} rows/s)"
    )
    print(f"throughput before the purge: {baseline:,.0f} jobs/s", end=" ")
    print(f"({base_jobs:,} in {base_seconds:.1f} s)")
    print(f"throughput during the purge: {during:,.0f} jobs/s", end=" ")
    print(f"({during_jobs:,} in {purge_seconds:.1f} s)")
    print(f"throughput after the purge:  {after:,.0f} jobs/s")
    print(f"during / before: {ratio:.2f} ({'within' if ratio >= 0.8 else 'NOT within'} 20 %)")
    if deleted != args.old:
        print(f"UNEXPECTED: deleted {deleted:,}, expected exactly {args.old:,}")
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--old", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--step", type=int, default=1000, help="rows per purge call")
    parser.add_argument(
        "--rest", type=float, default=4.0, help="rest this many times each batch's duration"
    )
    parser.add_argument("--warmup-seconds", type=float, default=3.0)
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    args = parser.parse_args()
    schema = f"bench_retention_{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as app_dir:
        Path(app_dir, "bench_app.py").write_text(WORKER_APP)
        try:
            prepare(schema, args.rows, args.old)
            asyncio.run(run(schema, args, app_dir))
        finally:
            drop(schema)


if __name__ == "__main__":
    main()

"""Storage throughput without a worker: bulk enqueue, then a fetch + succeed batch loop.

For each backend (a SQLite file in a temporary directory; PostgreSQL in a fresh schema that is
dropped afterwards) this enqueues ``--jobs`` jobs in batches of 10,000 and reports jobs/s, then
drains them with ``jobs_fetch(limit=100, start=True)`` followed by one ``jobs_finalize`` of
SucceedMoves per batch and reports fetch+succeed jobs/s. ``--runs`` repeats everything on a fresh
store and prints each run and the median.

    .venv/bin/python bench/storage_loop.py --jobs 20000 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import analyze
from chokaq.models import NewJob, SucceedMove
from chokaq.storage import Backend, create_backend

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
ENQUEUE_BATCH = 10_000
FETCH_BATCH = 100


async def drain(backend: Backend) -> int:
    """The storage loop: fetch ``FETCH_BATCH`` with start, then one finalize of successes per
    batch, until nothing is left; returns how many jobs it finished."""
    done = 0
    while claimed := await backend.jobs_fetch(worker_id="bench", limit=FETCH_BATCH, start=True):
        moves = [SucceedMove(lease=c.lease, duration_seconds=0.0) for c in claimed]
        done += sum(await backend.jobs_finalize(moves=moves))
    return done


async def _run_once(url: str, schema: str, jobs: int) -> tuple[float, float]:
    backend = create_backend(url, schema=schema)
    await backend.open()
    try:
        await backend.migrate()
        started = time.perf_counter()
        for first in range(0, jobs, ENQUEUE_BATCH):
            size = min(ENQUEUE_BATCH, jobs - first)
            batch = [NewJob(type="bench.noop", payload='{"n": 1}') for _ in range(size)]
            await backend.jobs_enqueue(batch)
        enqueue_rate = jobs / (time.perf_counter() - started)
        analyze(url, schema)  # as autovacuum would after the fill (PostgreSQL only)

        started = time.perf_counter()
        done = await drain(backend)
        loop_rate = done / (time.perf_counter() - started)
        if done != jobs:
            raise SystemExit(f"{url.split(':')[0]}: drained {done} of {jobs} jobs")
        return enqueue_rate, loop_rate
    finally:
        await backend.close()


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def _run_backend(kind: str, jobs: int, pg_url: str) -> tuple[float, float]:
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            return await _run_once(f"sqlite:///{Path(folder) / 'bench.db'}", "chokaq", jobs)
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        return await _run_once(pg_url, schema, jobs)
    finally:
        _drop_schema(pg_url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per run (default 20000)")
    parser.add_argument("--runs", type=int, default=1, help="runs per backend (default 1)")
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgres"],
        action="append",
        help="backend to measure (repeatable; default both)",
    )
    parser.add_argument("--pg-url", default=PG_URL, help=f"PostgreSQL URL (default {PG_URL})")
    args = parser.parse_args()

    print(f"{'backend':<10} {'run':>6} {'enqueue jobs/s':>16} {'fetch+succeed jobs/s':>22}")
    for kind in args.backend or ["sqlite", "postgres"]:
        enqueue_rates, loop_rates = [], []
        for run in range(1, args.runs + 1):
            enqueue_rate, loop_rate = asyncio.run(_run_backend(kind, args.jobs, args.pg_url))
            enqueue_rates.append(enqueue_rate)
            loop_rates.append(loop_rate)
            print(f"{kind:<10} {run:>6} {enqueue_rate:>16,.0f} {loop_rate:>22,.0f}", flush=True)
        if args.runs > 1:
            print(
                f"{kind:<10} {'median':>6} {statistics.median(enqueue_rates):>16,.0f}"
                f" {statistics.median(loop_rates):>22,.0f}"
            )


if __name__ == "__main__":
    main()

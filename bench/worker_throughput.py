"""Worker throughput and pickup latency, end to end, on SQLite and PostgreSQL.

Burn-down: bulk-enqueue N no-op jobs, then one worker process (concurrency 10) drains them in
burst mode; prints enqueue jobs/s, processing jobs/s and the worker's peak RSS. Pickup: an idle
worker, single jobs enqueued one at a time; prints p50/p95/p99 of (started - enqueued).
Each figure is the median of --runs runs, with min and max. Run: python bench/worker_throughput.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import analyze

REPO = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("CHOKAQ_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")

WORKER = r"""
import asyncio, os, resource, sys, time
from chokaq import App
app = App(os.environ["URL"], schema=os.environ["SCHEMA"], auto_migrate=False)

@app.job()
async def noop(i: int) -> None:
    return None

async def main():
    await app.open()
    t = time.perf_counter()
    await app.run_worker(burst=True, concurrency=int(os.environ["CONCURRENCY"]))
    elapsed = time.perf_counter() - t
    # VmHWM is this process's own peak RSS (ru_maxrss survives exec: it would report the
    # parent's RSS at fork time when that is larger).
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(f"{elapsed} {rss}")
    await app.close()

asyncio.run(main())
"""

PICKUP = r"""
import asyncio, os, sys, time, json
from chokaq import App
app = App(os.environ["URL"], schema=os.environ["SCHEMA"], auto_migrate=False)
lat_file = os.environ["LAT_FILE"]

@app.job()
async def ping(sent: float) -> None:
    with open(lat_file, "a") as f:
        f.write(f"{time.time()} {sent}\n")

asyncio.run(app.run_worker(concurrency=10))
"""


async def prepare(url: str, schema: str, jobs: int) -> float:
    from chokaq import App
    from chokaq.models import NewJob

    app = App(url, schema=schema, auto_migrate=True)
    await app.open()
    batch = [NewJob(type="noop", payload=f'{{"i":{i}}}') for i in range(jobs)]
    t = time.perf_counter()
    for start in range(0, jobs, 10_000):
        await app.enqueue_many(batch[start : start + 10_000])
    elapsed = time.perf_counter() - t
    await app.close()
    return jobs / elapsed


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def env_for(url: str, schema: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "URL": url, "SCHEMA": schema, "PYTHONPATH": str(REPO / "src"), **extra}


def burn_down(backend: str, jobs: int, concurrency: int) -> tuple[float, float, float]:
    tmp = tempfile.mkdtemp()
    if backend == "sqlite":
        url, schema = f"sqlite:///{tmp}/bench.db", "chokaq"
    else:
        url, schema = PG_URL, f"bench_{uuid.uuid4().hex[:10]}"
    try:
        enqueue_rate = asyncio.run(prepare(url, schema, jobs))
        analyze(url, schema)  # as autovacuum would after the fill (PostgreSQL only)
        out = subprocess.run(
            [sys.executable, "-c", WORKER],
            env=env_for(url, schema, CONCURRENCY=str(concurrency)),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        elapsed, rss_kb = float(out[0]), int(out[1])
        return enqueue_rate, jobs / elapsed, rss_kb / 1024
    finally:
        if backend == "postgres":
            drop_schema(schema)


async def _pickup(
    url: str, schema: str, count: int, lat_file: str
) -> tuple[list[float], list[float]]:
    """Latencies in ms, measured from just before the enqueue call and from its return (the
    commit): the first includes the enqueue round trip, the second is the pickup alone."""
    from chokaq import App

    app = App(url, schema=schema, auto_migrate=True)
    await app.open()
    proc = subprocess.Popen(
        [sys.executable, "-c", PICKUP], env=env_for(url, schema, LAT_FILE=lat_file)
    )
    try:
        await asyncio.sleep(2.0)  # let the worker start and go idle
        committed: dict[float, float] = {}
        for _ in range(count):
            sent = time.time()
            await app.enqueue_raw("ping", {"sent": sent})
            committed[sent] = time.time()
            await asyncio.sleep(0.02)  # about 50 jobs/s
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if Path(lat_file).exists() and len(Path(lat_file).read_text().split()) >= count:
                break
            await asyncio.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        await app.close()
    from_call, from_commit = [], []
    for line in Path(lat_file).read_text().splitlines():
        started, sent = map(float, line.split())
        from_call.append((started - sent) * 1000)
        from_commit.append((started - committed.get(sent, sent)) * 1000)
    return from_call, from_commit


def pickup(backend: str, count: int) -> tuple[float, float, float, float, float]:
    """p50, p95, p99 from the enqueue call; p50, p99 from its commit."""
    tmp = tempfile.mkdtemp()
    if backend == "sqlite":
        url, schema = f"sqlite:///{tmp}/bench.db", "chokaq"
    else:
        url, schema = PG_URL, f"bench_{uuid.uuid4().hex[:10]}"
    try:
        from_call, from_commit = asyncio.run(_pickup(url, schema, count, f"{tmp}/lat.txt"))
    finally:
        if backend == "postgres":
            drop_schema(schema)
    q = statistics.quantiles(from_call, n=100)
    c = statistics.quantiles(from_commit, n=100)
    return q[49], q[94], q[98], c[49], c[98]


def fmt(values: list[float], unit: str = "") -> str:
    return (
        f"{statistics.median(values):,.0f}{unit} (min {min(values):,.0f}, max {max(values):,.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--pickups", type=int, default=200)
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--skip-pickup", action="store_true")
    args = parser.parse_args()
    print(f"jobs={args.jobs} concurrency={args.concurrency} runs={args.runs} cpus={os.cpu_count()}")
    for backend in args.backends.split(","):
        enq, proc, rss = [], [], []
        for _ in range(args.runs):
            e, p, r = burn_down(backend, args.jobs, args.concurrency)
            enq.append(e)
            proc.append(p)
            rss.append(r)
            print(f"  {backend} run: enqueue {e:,.0f}/s, process {p:,.0f}/s, peak RSS {r:.0f} MiB")
        print(
            f"{backend}: enqueue {fmt(enq, '/s')}; process {fmt(proc, '/s')}; "
            f"worker peak RSS {fmt(rss, ' MiB')}"
        )
        if not args.skip_pickup:
            p50s, p95s, p99s, c50s, c99s = [], [], [], [], []
            for _ in range(args.runs):
                p50, p95, p99, c50, c99 = pickup(backend, args.pickups)
                p50s.append(p50)
                p95s.append(p95)
                p99s.append(p99)
                c50s.append(c50)
                c99s.append(c99)
                print(
                    f"  {backend} pickup run: from the enqueue call p50 {p50:.2f} ms, "
                    f"p95 {p95:.2f} ms, p99 {p99:.2f} ms; from its commit p50 {c50:.2f} ms, "
                    f"p99 {c99:.2f} ms"
                )
            print(
                f"{backend}: pickup from the enqueue call p50 {statistics.median(p50s):.2f} ms, "
                f"p95 {statistics.median(p95s):.2f} ms, p99 {statistics.median(p99s):.2f} ms; "
                f"from its commit p50 {statistics.median(c50s):.2f} ms, "
                f"p99 {statistics.median(c99s):.2f} ms"
            )
    _ = resource  # the worker reports its own peak RSS


if __name__ == "__main__":
    main()

"""Where a burn-down's time goes: the CLI worker beside its own storage statements' ceiling.

For each round, on a fresh PostgreSQL database: bulk-enqueue ``--jobs`` no-op jobs, then drain
them two ways, alternating which goes first:

* ``worker``: ``python -m chokaq worker --app ... --concurrency 10 --burst``, as a user runs it;
* ``loop``: bench/storage_loop.py's loop in this process (fetch 100 with start, one finalize of
  successes per batch, one connection): the ceiling the worker's own statements allow.

For each it prints jobs/s and, per job: the client's CPU (the worker process's user + system
time; for the loop, this process's), the server's CPU (every postgres process, from /proc), and
the transactions the server committed (``pg_stat_database.xact_commit``; each autocommit
statement is one). ``--cprofile FILE`` also writes the worker's cProfile of one extra run, and
``--stages`` prints its CPU by stage (our code, psycopg, the event loop).

    .venv/bin/python bench/worker_profile.py --jobs 20000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

from bench.measure import analyze, child_env, fresh_database, postgres_cpu_seconds, spread
from bench.outside import measure
from bench.storage_loop import drain
from bench.systems import CHOKAQ_APP

CONCURRENCY = "10"
PROFILED = """
import cProfile, runpy, sys, time
sys.argv = ["chokaq", *{argv!r}]
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(runpy.run_module, "chokaq", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
profile.dump_stats({out!r})
"""


def _commits(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        assert row is not None
        return int(row[0])


def _commits_settled(url: str) -> int:
    # The statistics collector publishes a backend's counts when it goes idle or exits: read
    # after a fresh snapshot so that the worker's last statements are in.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
    return _commits(url)


async def _enqueue(url: str, jobs: int) -> None:
    from chokaq import App

    app = App(url, schema="chokaq", auto_migrate=True)

    @app.job(name="noop")
    async def noop(i: int = 0, sent: float = 0.0) -> None:
        return None

    async with app:
        for first in range(0, jobs, 10_000):
            await noop.enqueue_many([{"i": first + k} for k in range(min(10_000, jobs - first))])


def _worker(url: str, folder: Path, jobs: int, cprofile: Path | None = None) -> dict[str, float]:
    (folder / "bench_chokaq_app.py").write_text(CHOKAQ_APP)
    env = child_env(URL=url, MODE="burst", WORK_REDIS="", COUNTER="")
    env["PYTHONPATH"] = f"{folder}{os.pathsep}{env['PYTHONPATH']}"
    argv = ["-m", "chokaq", "worker", "--app", "bench_chokaq_app:app"]
    argv += ["--concurrency", os.environ.get("BENCH_CONCURRENCY", CONCURRENCY), "--burst"]
    if cprofile is not None:
        # CPU time (process_time), not cProfile's default wall clock: a wall-clock profile
        # charges the time the loop waits for the server to whatever was waiting.
        argv = ["-c", PROFILED.format(out=str(cprofile), argv=argv[2:])]
    argv = [sys.executable, *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server, commits = postgres_cpu_seconds(), _commits(url)
    seen = measure(argv, env, folder / "worker.log")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "jobs_s": jobs / seen.elapsed_s,
        "client_cpu_us": client / jobs * 1e6,
        "server_cpu_us": (postgres_cpu_seconds() - server) / jobs * 1e6,
        "xacts_per_job": (_commits_settled(url) - commits) / jobs,
        "peak_rss_mib": seen.peak_rss_kb / 1024,
    }


async def _loop(url: str, jobs: int) -> dict[str, float]:
    from chokaq.storage import create_backend

    backend = create_backend(url, schema="chokaq")
    await backend.open()
    try:
        server, commits = postgres_cpu_seconds(), _commits(url)
        cpu = time.process_time()
        started = time.perf_counter()
        done = await drain(backend)
        elapsed = time.perf_counter() - started
        client = time.process_time() - cpu
    finally:
        await backend.close()
    if done != jobs:
        raise RuntimeError(f"the loop drained {done} of {jobs} jobs")
    return {
        "jobs_s": jobs / elapsed,
        "client_cpu_us": client / jobs * 1e6,
        "server_cpu_us": (postgres_cpu_seconds() - server) / jobs * 1e6,
        "xacts_per_job": (_commits_settled(url) - commits) / jobs,
    }


def one(kind: str, jobs: int, cprofile: Path | None = None) -> dict[str, float]:
    with fresh_database("chokaqprof") as url, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_enqueue(url, jobs))
        analyze(url)  # as autovacuum would after the fill
        if kind == "worker":
            return _worker(url, Path(tmp), jobs, cprofile)
        return asyncio.run(_loop(url, jobs))


STAGES = (
    ("psycopg (client side of each statement)", ("psycopg",)),
    ("asyncio event loop", ("asyncio",)),
    ("chokaq storage (queries, rows)", ("chokaq/storage",)),
    ("chokaq runtime (claims, executor, finalizer)", ("chokaq/runtime",)),
    ("chokaq other (app, serializer, context, logs)", ("chokaq/",)),
)


def stages(path: Path) -> list[tuple[str, float]]:
    """Own (not cumulative) time of the profile's functions, summed by where they live."""
    stats: Any = pstats.Stats(str(path))
    totals: dict[str, float] = {name: 0.0 for name, _ in STAGES}
    totals["other (interpreter, builtins, C calls)"] = 0.0
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():
        for name, marks in STAGES:
            if any(mark in filename for mark in marks):
                totals[name] += own
                break
        else:
            totals["other (interpreter, builtins, C calls)"] += own
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cprofile", type=Path, help="write the worker's cProfile of one more run")
    p.add_argument("--stages", action="store_true", help="print the profile's time by stage")
    args = p.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"worker": [], "loop": []}
    for round_no in range(1, args.rounds + 1):
        order = ("worker", "loop") if round_no % 2 else ("loop", "worker")
        for kind in order:
            r = one(kind, args.jobs)
            runs[kind].append(r)
            print(f"round {round_no} {kind}: " + ", ".join(f"{k} {v:,.2f}" for k, v in r.items()))
    print()
    for kind, rs in runs.items():
        for key in rs[0] if rs else ():
            s = spread([r[key] for r in rs])
            print(f"{kind:<7} {key:<15} {s['median']:>10,.2f} ({s['min']:,.2f}-{s['max']:,.2f})")
    if runs["worker"] and runs["loop"]:
        ratio = [
            w["jobs_s"] / lp["jobs_s"] for w, lp in zip(runs["worker"], runs["loop"], strict=True)
        ]
        print(f"worker / loop: {statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})")
    if args.cprofile or args.stages:
        path = args.cprofile or Path(tempfile.gettempdir()) / "chokaq-worker.prof"
        r = one("worker", args.jobs, path)
        print(f"\nprofiled run: {r['jobs_s']:,.0f} jobs/s under cProfile; profile in {path}")
        for name, seconds in stages(path):
            print(f"  {name:<48} {seconds / args.jobs * 1e6:>8.1f} us/job")


if __name__ == "__main__":
    main()

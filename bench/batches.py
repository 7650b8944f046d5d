"""Batch handlers against one job per call: the same work, jobs/s, in the same run.

    .venv/bin/python bench/batches.py                     # both backends, every kind of work
    .venv/bin/python bench/batches.py --rounds 1 --jobs 5000 --backends sqlite

For each backend, each kind of work (``noop``: nothing, the engine's own cost; ``insert``: one
INSERT statement and commit per call into a table of the same database, a bulk insert; ``api``:
5 ms per call whatever its size, a remote embedding or bulk API) and each round, the two
handlers of ``bench/batches_app.py`` are measured in
alternation (which goes first alternates between rounds): ``jobs`` jobs of the type are seeded
into a fresh SQLite file or PostgreSQL schema, the tables analyzed, then the real CLI worker,
``python -m chokaq worker --app bench.batches_app:app --concurrency 10 --burst``, is timed from
its start to its exit (interpreter start and imports included): jobs/s = jobs / that time; and
over its run alone, from its ``worker_started`` log line to its ``worker_stopped`` line (the
drain). The ratios batched/single are taken within each round. Writes
``bench/results/batches.json`` and a table to stdout (pasted into bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import PG_URL, REPO, analyze, child_env, machine_notes, run_script
from bench.worker_throughput import drop_schema

KINDS = ("single", "batched")
WORKS = ("noop", "insert", "api")
OUT = Path(__file__).resolve().parent / "results" / "batches.json"

SEED = r"""
import asyncio, os
from bench.batches_app import app, handle

async def main():
    jobs = int(os.environ["JOBS"])
    app.auto_migrate = True
    await app.open()
    for first in range(0, jobs, 10_000):
        await app.enqueue_many(
            [handle.prepare(n=first + k) for k in range(min(10_000, jobs - first))]
        )
    await app.close()
    print("seeded")

asyncio.run(main())
"""


def _store(backend: str, tmp: Path) -> tuple[str, str]:
    if backend == "sqlite":
        return f"sqlite:///{tmp / f'{uuid.uuid4().hex[:8]}.db'}", "chokaq"
    return PG_URL, f"bench_batches_{uuid.uuid4().hex[:8]}"


def _sink(backend: str, url: str, schema: str, tmp: Path) -> str:
    """Where the insert work writes: a table in the same PostgreSQL database (the schema's),
    or a SQLite file beside the store (SQLite has one writer per file)."""
    if backend == "sqlite":
        return str(tmp / f"sink-{uuid.uuid4().hex[:8]}.db")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{schema}".bench_sink (n integer)')
    return f"{url}?options=-csearch_path%3D{schema}"


def _run_seconds(log: str) -> float:
    """From the worker's JSON log: the seconds from its ``worker_started`` line to its
    ``worker_stopped`` line (what it took to drain, without the interpreter's start)."""
    times: dict[int, float] = {}
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event_id") in (1000, 1001):
            stamp = datetime.fromisoformat(record["time"].replace("Z", "+00:00"))
            times[record["event_id"]] = stamp.timestamp()
    return times[1001] - times[1000]


def measure(backend: str, kind: str, work: str, jobs: int, tmp: Path) -> tuple[float, float]:
    """Seed ``jobs`` jobs of ``kind``, then time the burst CLI worker: jobs/s from its start
    to its exit, and jobs/s over its run (from its started line to its stopped line)."""
    url, schema = _store(backend, tmp)
    env = {
        "CHOKAQ_DATABASE_URL": url,
        "CHOKAQ_SCHEMA": schema,
        "PYTHONPATH": f"{REPO / 'src'}:{REPO}",
        "CHOKAQ_BENCH_KIND": kind,
    }
    try:
        run_script(SEED, JOBS=str(jobs), **env)
        analyze(url, schema if backend == "postgres" else None)
        sink = _sink(backend, url, schema, tmp) if work == "insert" else ""
        exit_file = tmp / f"exit-{uuid.uuid4().hex[:8]}"
        argv = [sys.executable, "-m", "chokaq", "worker", "--app", "bench.batches_app:app"]
        argv += ["--concurrency", "10", "--burst", "--json-logs"]
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            cwd=REPO,
            env=child_env(
                **env,
                CHOKAQ_BENCH_WORK=work,
                CHOKAQ_BENCH_SINK=sink,
                EXIT_FILE=str(exit_file),
            ),
            capture_output=True,
            text=True,
            timeout=900,
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"the worker exited with {done.returncode}: {done.stderr[-2000:]!r}")
        handled = int(exit_file.read_text().split()[0])
        if handled != jobs:
            raise RuntimeError(f"the worker handled {handled} of {jobs} jobs")
        return jobs / elapsed, jobs / _run_seconds(done.stdout + done.stderr)
    finally:
        if backend == "postgres":
            drop_schema(schema)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--works", default=",".join(WORKS))
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    figures: dict[str, Any] = {"jobs": args.jobs, "rounds": args.rounds, "cells": []}
    for backend in args.backends.split(","):
        for work in args.works.split(","):
            runs: dict[str, list[float]] = {kind: [] for kind in KINDS}
            drains: dict[str, list[float]] = {kind: [] for kind in KINDS}
            ratios: list[float] = []
            drain_ratios: list[float] = []
            for round_ in range(args.rounds):
                order = KINDS if round_ % 2 == 0 else KINDS[::-1]
                with tempfile.TemporaryDirectory() as tmp:
                    got = {
                        kind: measure(backend, kind, work, args.jobs, Path(tmp)) for kind in order
                    }
                for kind in KINDS:
                    runs[kind].append(got[kind][0])
                    drains[kind].append(got[kind][1])
                ratios.append(got["batched"][0] / got["single"][0])
                drain_ratios.append(got["batched"][1] / got["single"][1])
            cell = {
                "backend": backend,
                "work": work,
                "runs": runs,
                "ratios": ratios,
                "drains": drains,
                "drain_ratios": drain_ratios,
            }
            figures["cells"].append(cell)
            print(_row(cell), flush=True)
    figures["machine"] = machine_notes()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2, default=str))


def _fmt(values: list[float], digits: str = ",.0f") -> str:
    mid = statistics.median(values)
    if len(values) == 1:
        return format(mid, digits)
    return f"{mid:{digits}} ({min(values):{digits}}-{max(values):{digits}})"


def _row(cell: dict[str, Any]) -> str:
    runs, drains = cell["runs"], cell["drains"]
    return (
        f"| {cell['backend']} | {cell['work']} | {_fmt(runs['single'])} | "
        f"{_fmt(runs['batched'])} | {_fmt(cell['ratios'], '.1f')}x | "
        f"{_fmt(drains['single'])} | {_fmt(drains['batched'])} | "
        f"{_fmt(cell['drain_ratios'], '.1f')}x |"
    )


if __name__ == "__main__":
    main()

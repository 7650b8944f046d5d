"""Part 4: scaling out on PostgreSQL, and a paper estimate of one server's capacity.

``jobs`` no-op jobs are bulk-enqueued into a fresh database, then 1, 2 and 4 ``chokaq worker
--burst`` processes (concurrency 10 each) drain them together; throughput = jobs / (last
worker's exit - first worker's start), both seen from outside. Around the drain the CPU time of
every postgres process (utime + stime from /proc) and the WAL position are read, giving
PostgreSQL CPU seconds per job and WAL bytes per job. On a 2-core machine that also runs the
workers this shows contention, not scale.

The estimate divides a server's usable CPU by the measured CPU per job. It assumes the per-job
cost stays flat as concurrency grows (no lock or WAL-flush bottleneck), which is optimistic.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import analyze, fresh_database, postgres_cpu_seconds, spread, wal_lsn
from bench.systems import postgres_systems

PROCESSES = (1, 2, 4)
SERVER_VCPUS = (2, 4, 8, 16, 32)
USABLE_CPU = 0.7  # headroom kept for vacuum, checkpoints and the rest of the server's work


def enqueue_chokaq(url: str, jobs: int, install: bool = True) -> float:
    system = postgres_systems(include_peers=False)[0]

    async def go() -> float:
        await system.open(url, install=install)
        try:
            return await system.enqueue_bulk(jobs)
        finally:
            await system.close()

    return asyncio.run(go())


def drain_with_processes(url: str, jobs: int, processes: int) -> float:
    """Start ``processes`` burst CLI workers at once; jobs/s from the first start to the last
    exit, seen from outside (polled every 5 ms)."""
    system = postgres_systems(include_peers=False)[0]
    with tempfile.TemporaryDirectory() as folder:
        argv, env = system.launch(url, "burst", Path(folder))
        logs = [Path(folder) / f"worker{i}.log" for i in range(processes)]
        started = time.perf_counter()
        procs = []
        for log in logs:  # stderr to files: a full pipe would stall a worker that logs
            with log.open("wb") as err:
                procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err))
        while any(proc.poll() is None for proc in procs):
            time.sleep(0.005)
        ended = time.perf_counter()
        for proc, log in zip(procs, logs, strict=True):
            if proc.returncode != 0:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"worker failed:\n{tail}")
    return jobs / (ended - started)


def _one(jobs: int, processes: int) -> dict[str, float]:
    with fresh_database("scale") as url:
        enqueue_chokaq(url, jobs)
        analyze(url)  # as autovacuum would after the fill
        cpu_before, wal_before = postgres_cpu_seconds(), wal_lsn(url)
        rate = drain_with_processes(url, jobs, processes)
        cpu_after, wal_after = postgres_cpu_seconds(), wal_lsn(url)
    return {
        "process_jobs_s": rate,
        "pg_cpu_ms_per_job": (cpu_after - cpu_before) / jobs * 1000,
        "wal_bytes_per_job": (wal_after - wal_before) / jobs,
    }


def run(*, jobs: int, runs: int) -> dict[str, Any]:
    raw: dict[int, list[dict[str, float]]] = {n: [] for n in PROCESSES}
    for round_no in range(1, runs + 1):
        for n in PROCESSES:
            r = _one(jobs, n)
            raw[n].append(r)
            print(
                f"  round {round_no} {n} process(es): {r['process_jobs_s']:,.0f}/s, "
                f"PG CPU {r['pg_cpu_ms_per_job']:.3f} ms/job, WAL {r['wal_bytes_per_job']:,.0f} "
                "B/job",
                flush=True,
            )
    figures = {str(n): {k: spread([r[k] for r in v]) for k in v[0]} for n, v in raw.items()}
    cpu_ms = figures["1"]["pg_cpu_ms_per_job"]["median"]
    wal = figures["1"]["wal_bytes_per_job"]["median"]
    estimate = [
        {
            "vcpus": v,
            "jobs_s": v * USABLE_CPU / (cpu_ms / 1000) if cpu_ms > 0 else float("nan"),
            "wal_mib_s": v * USABLE_CPU / (cpu_ms / 1000) * wal / 2**20 if cpu_ms > 0 else 0.0,
        }
        for v in SERVER_VCPUS
    ]
    return {
        "config": {
            "jobs": jobs,
            "concurrency_per_process": 10,
            "runs": runs,
            "usable_cpu_fraction": USABLE_CPU,
        },
        "figures": figures,
        "runs": {str(n): v for n, v in raw.items()},
        "estimate": estimate,
    }

"""Part 4: scaling out on PostgreSQL, and a paper estimate of one server's capacity.

``jobs`` no-op jobs are bulk-enqueued into a fresh database, then 1, 2 and 4 chokaq worker
processes (concurrency 10 each) drain them together; throughput = jobs / (last worker's end -
first worker's start). Around the drain the CPU time of every postgres process (utime + stime
from /proc) and the WAL position are read, giving PostgreSQL CPU seconds per job and WAL bytes
per job. On a 2-core machine that also runs the workers this shows contention, not scale.

The estimate divides a server's usable CPU by the measured CPU per job. It assumes the per-job
cost stays flat as concurrency grows (no lock or WAL-flush bottleneck), which is optimistic.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from bench.measure import (
    child_env,
    fresh_database,
    postgres_cpu_seconds,
    spread,
    wal_lsn,
)
from bench.systems import CHOKAQ_WORKER, System

PROCESSES = (1, 2, 4)
SERVER_VCPUS = (2, 4, 8, 16, 32)
USABLE_CPU = 0.7  # headroom kept for vacuum, checkpoints and the rest of the server's work


def enqueue_chokaq(url: str, jobs: int, install: bool = True) -> float:
    system = System("chokaq", "chokaq", CHOKAQ_WORKER)

    async def go() -> float:
        await system.open(url, install=install)
        try:
            return await system.enqueue_bulk(jobs)
        finally:
            await system.close()

    return asyncio.run(go())


def drain_with_processes(url: str, jobs: int, processes: int) -> float:
    """Start ``processes`` burst workers at once; jobs/s over first start to last end."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHOKAQ_WORKER],
            env=child_env(URL=url, MODE="burst", CONCURRENCY="10"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    spans = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed:\n{err[-3000:]}")
        fields = out.split()
        spans.append((float(fields[2]), float(fields[3])))
    return jobs / (max(end for _, end in spans) - min(begin for begin, _ in spans))


def _one(jobs: int, processes: int) -> dict[str, float]:
    with fresh_database("scale") as url:
        enqueue_chokaq(url, jobs)
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

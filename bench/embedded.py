"""Part 3: the embedded backend (SQLite): burn-down, pickup latency, and how many worker
processes sharing one SQLite file still gain throughput (1, 2, 3 and 4 processes, concurrency
10 each, one database file in a fresh temporary directory per run).
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import percentile, spread
from bench.outside import measure
from bench.scale import drain_with_processes, enqueue_chokaq
from bench.systems import System, postgres_systems

PROCESSES = (1, 2, 3, 4)


def _url(folder: str) -> str:
    return f"sqlite:///{Path(folder) / 'bench.db'}"


def burn_down(jobs: int) -> dict[str, float]:
    """Bulk-enqueue, then one ``chokaq worker --burst`` timed from outside until it exits."""
    with tempfile.TemporaryDirectory() as folder:
        url = _url(folder)
        enqueue_rate = enqueue_chokaq(url, jobs)
        argv, env = _chokaq().launch(url, "burst", Path(folder))
        seen = measure(argv, env, Path(folder) / "worker.log")
    return {
        "enqueue_jobs_s": enqueue_rate,
        "process_jobs_s": jobs / seen.elapsed_s,
        "peak_rss_mib": seen.peak_rss_kb / 1024,
    }


def _chokaq() -> System:
    return postgres_systems(include_peers=False)[0]


def pickup(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        url, lat = _url(folder), str(Path(folder) / "lat.txt")
        system = _chokaq()

        async def drive() -> None:
            await system.open(url, install=True)
            argv, env = system.launch(url, "serve", Path(folder), LAT_FILE=lat)
            proc = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                await system.enqueue_one(time.time())
                deadline = time.monotonic() + 60
                while not Path(lat).exists() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                Path(lat).unlink(missing_ok=True)
                await asyncio.sleep(1.0)
                for _ in range(count):
                    await system.enqueue_one(time.time())
                    await asyncio.sleep(0.02)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if Path(lat).exists() and len(Path(lat).read_text().split()) >= count:
                        break
                    await asyncio.sleep(0.05)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
                await system.close()

        asyncio.run(drive())
        ms = [float(x) * 1000 for x in Path(lat).read_text().split()]
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
    }


def processes(jobs: int, n: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        url = _url(folder)
        enqueue_chokaq(url, jobs)
        return drain_with_processes(url, jobs, n)


def run(*, jobs: int, pickups: int, runs: int) -> dict[str, Any]:
    burn, pick = [], []
    multi: dict[int, list[float]] = {n: [] for n in PROCESSES}
    for round_no in range(1, runs + 1):
        burn.append(burn_down(jobs))
        pick.append(pickup(pickups))
        for n in PROCESSES:
            multi[n].append(processes(jobs, n))
        print(
            f"  round {round_no} sqlite: process {burn[-1]['process_jobs_s']:,.0f}/s, pickup p50 "
            f"{pick[-1]['p50_ms']:.2f} ms, processes "
            + ", ".join(f"{n}: {multi[n][-1]:,.0f}/s" for n in PROCESSES),
            flush=True,
        )
    return {
        "config": {"jobs": jobs, "pickups": pickups, "runs": runs, "concurrency": 10},
        "burn_down": {k: spread([r[k] for r in burn]) for k in burn[0]},
        "pickup": {k: spread([r[k] for r in pick]) for k in pick[0]},
        "processes": {str(n): spread(v) for n, v in multi.items()},
        "runs": {
            "burn_down": burn,
            "pickup": pick,
            "processes": {str(n): v for n, v in multi.items()},
        },
    }

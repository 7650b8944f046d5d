"""``chokaq worker --processes 2`` against ``--processes 1``: a burn-down of seeded jobs by the
real CLI worker (``--burst --concurrency 10``), timed from its start to its exit, in one run,
the two alternating (which goes first alternates between rounds), the 2/1 ratio taken within
each round; medians and min-max over the rounds.

    .venv/bin/python bench/processes.py                       # SQLite, both handlers
    .venv/bin/python bench/processes.py --backends sqlite,postgres --rounds 5

Two handlers: ``burn``, about a millisecond of pure Python per job (``--spin`` loop steps),
where a second process can use a second core; and bench/compare.py's no-op, where the store's
claim and finalize round trips are the work. Each burn-down gets a fresh SQLite file or
PostgreSQL schema; a run is refused unless every job was archived.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.compare import APP_MODULE, CONCURRENCY, Tree, fresh_store, tree_for
from bench.measure import analyze, child_env, run_script, spread

APP = (
    APP_MODULE
    + '''
SPIN = int(os.environ.get("CHOKAQ_BENCH_SPIN", "36000"))

@app.job(name="burn")
async def burn(i: int = 0) -> None:
    """About a millisecond of pure Python: it holds its process's core (and event loop)."""
    global handled
    handled += 1
    x = 0
    for k in range(SPIN):
        x += k * k
'''
)

SEED = r"""
import asyncio, os
from chokaq_compare_app import app

async def main():
    handle = app.handlers[os.environ["TYPE"]]
    jobs = int(os.environ["JOBS"])
    app.auto_migrate = True
    await app.open()
    for first in range(0, jobs, 10_000):
        batch = range(first, min(jobs, first + 10_000))
        await app.enqueue_many([handle.prepare(i=k) for k in batch])
    await app.close()
    print(jobs)

asyncio.run(main())
"""

COUNT = r"""
import asyncio
from chokaq_compare_app import app

async def main():
    await app.open()
    summary = await app.backend.stats_summary()
    await app.close()
    print(summary.succeeded_total, summary.pending + summary.processing)

asyncio.run(main())
"""


def burn_down(tree: Tree, backend: str, kind: str, jobs: int, processes: int, spin: int) -> float:
    """jobs/s of one burst burn-down by ``processes`` worker processes."""
    with fresh_store(backend) as (url, schema, tmp):
        env = tree.env(url, schema, TYPE=kind, JOBS=str(jobs), CHOKAQ_BENCH_SPIN=str(spin))
        run_script(SEED, 900, **env)
        analyze(url, schema)  # as autovacuum would after the fill (PostgreSQL only)
        argv = [sys.executable, "-m", "chokaq", "worker", "--app", "chokaq_compare_app:app"]
        argv += ["--concurrency", str(CONCURRENCY), "--burst", "--processes", str(processes)]
        log = tmp / "worker.log"
        started = time.perf_counter()
        with log.open("wb") as err:
            code = subprocess.run(
                argv, env=child_env(**env), cwd=tmp, stdout=err, stderr=err, timeout=900
            ).returncode
        elapsed = time.perf_counter() - started
        done, left = (int(v) for v in run_script(COUNT, 300, **env))
        if code != 0 or done != jobs or left:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"exit {code}, {done} archived, {left} left of {jobs}\n{tail}")
        return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--burn-jobs", type=int, default=3000)
    parser.add_argument("--noop-jobs", type=int, default=10_000)
    parser.add_argument(
        "--spin", type=int, default=36_000, help="loop steps per burn job (36,000: about 1 ms here)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chokaq-processes-") as app_dir:
        (Path(app_dir) / "chokaq_compare_app.py").write_text(APP)
        with tree_for("head", None, Path(app_dir)) as tree:
            print(f"{tree.label}; {args.rounds} rounds, concurrency {CONCURRENCY}", flush=True)
            for backend in args.backends.split(","):
                for kind, jobs in (("burn", args.burn_jobs), ("noop", args.noop_jobs)):
                    figures: dict[int, list[float]] = {1: [], 2: []}
                    ratios = []
                    for r in range(args.rounds):
                        order = (1, 2) if r % 2 == 0 else (2, 1)
                        got = {p: burn_down(tree, backend, kind, jobs, p, args.spin) for p in order}
                        for p, value in got.items():
                            figures[p].append(value)
                        ratios.append(got[2] / got[1])
                    one, two, ratio = spread(figures[1]), spread(figures[2]), spread(ratios)
                    print(
                        f"{backend:8} {kind:4} {jobs:>6} jobs: "
                        f"1 process {one['median']:8.0f} jobs/s ({one['min']:.0f}-{one['max']:.0f})"
                        f"  2 processes {two['median']:8.0f} ({two['min']:.0f}-{two['max']:.0f})"
                        f"  ratio {ratio['median']:.2f}x ({ratio['min']:.2f}-{ratio['max']:.2f})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()

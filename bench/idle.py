"""What an idle worker costs, and how fast it still picks up a job: two source trees side by
side (bench/compare.py's trees, app and worker), base and head alternating within each round.

    .venv/bin/python bench/idle.py --base main                  # head: this working tree
    .venv/bin/python bench/idle.py --base main --head-env CHOKAQ_SQLITE_WATCH=poll
    .venv/bin/python bench/idle.py --base main --backends sqlite,postgres --rounds 5

Per round and side, on a fresh SQLite file (or PostgreSQL schema): the real CLI worker
(``python -m chokaq worker --app chokaq_compare_app:app --concurrency 10``, as users start it)
runs one warm-up job, is left alone for ``--settle`` seconds, and then its CPU time (utime +
stime of ``/proc/<pid>/stat``, every thread of it) is read over ``--seconds`` of wall time: idle
CPU as a percentage of one core. The same worker then gets ``--pickups`` single jobs from
another process, one every ``--interval`` seconds (10 a second by default: each lands on an idle
worker); the handler records ``time.time() - sent`` (``sent`` taken just before the enqueue
call); p50 and p99. The head/base ratio is taken within each round; medians (min-max) over the
rounds are printed, and the figures written as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.compare import (
    APP_MODULE,
    PRODUCER,
    Tree,
    _env_pairs,
    _seed,
    _worker,
    _worker_log,
    check_tree,
    fresh_store,
    tree_for,
)
from bench.measure import machine_notes, percentile, run_script, spread
from bench.peers import _attempt, _stop
from bench.report import cell

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "compare" / "idle.json"
TICKS = os.sysconf("SC_CLK_TCK")

# (figure, label, whether higher is better)
FIGURES = (
    ("idle_cpu_pct", "idle CPU % of a core", False),
    ("p50_ms", "pickup p50 ms", False),
    ("p99_ms", "pickup p99 ms", False),
)

WARM_UP = r"""
import asyncio, os, time
from pathlib import Path
import chokaq
from chokaq_compare_app import app, noop

async def main():
    lat = Path(os.environ["LAT_FILE"])
    await app.open()
    try:
        await noop.enqueue(sent=time.time())
        deadline = time.monotonic() + 60
        while not lat.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if not lat.exists():
            raise SystemExit("the worker ran no warm-up job within 60 s")
        lat.unlink()
    finally:
        await app.close()
    print(chokaq.__file__)

asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, all its threads, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: fields 14, 15


def idle_round(tree: Tree, backend: str, args: argparse.Namespace) -> dict[str, float]:
    with fresh_store(backend) as (url, schema, tmp):
        _seed(tree, url, schema, 0)  # migrations only: the worker does not apply them
        proc = _worker(tree, url, schema, tmp, burst=False)
        try:
            env = tree.env(url, schema, LAT_FILE=str(tmp / "lat.txt"))
            [chokaq_file] = run_script(WARM_UP, 120, **env)
            tree.check_import(chokaq_file)
            time.sleep(args.settle)  # let start-up work (first beats, leadership) pass
            if proc.poll() is not None:
                raise RuntimeError(f"the worker exited with {proc.returncode}\n{_worker_log(tmp)}")
            cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(args.seconds)
            cpu1, wall1 = cpu_seconds(proc.pid), time.monotonic()
            idle_pct = 100 * (cpu1 - cpu0) / (wall1 - wall0)
            env["PICKUPS"] = str(args.pickups)
            [chokaq_file] = run_script(PRODUCER, 300, INTERVAL=str(args.interval), **env)
            tree.check_import(chokaq_file)
        finally:
            _stop(proc)
        lat = tmp / "lat.txt"
        ms = [float(x) * 1000 for x in lat.read_text().split()] if lat.exists() else []
        if len(ms) < args.pickups:
            raise RuntimeError(f"only {len(ms)} of {args.pickups} pickups\n{_worker_log(tmp)}")
    return {
        "idle_cpu_pct": idle_pct,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
    }


Raw = dict[str, dict[str, list[dict[str, float]]]]  # backend, side


def run_rounds(trees: dict[str, Tree], args: argparse.Namespace) -> Raw:
    raw: Raw = {b: {"base": [], "head": []} for b in args.backends}
    for round_no in range(1, args.rounds + 1):
        order = ("base", "head") if round_no % 2 else ("head", "base")
        for backend in args.backends:
            for side in order:
                got = _attempt(f"{side} {backend} idle", idle_round, trees[side], backend, args)
                if got is None:
                    continue
                raw[backend][side].append({"round": round_no, **got})
                shown = ", ".join(f"{k} {v:,.3f}" for k, v in got.items())
                print(f"  round {round_no} {backend} {side}: {shown}", flush=True)
    return raw


def summarize(raw: Raw) -> list[dict[str, Any]]:
    rows = []
    for backend, sides in raw.items():
        for figure, label, higher in FIGURES:
            by_round = {s: {r["round"]: r[figure] for r in sides[s]} for s in ("base", "head")}
            both = sorted(set(by_round["base"]) & set(by_round["head"]))
            ratios = [
                by_round["head"][n] / by_round["base"][n] for n in both if by_round["base"][n]
            ]
            row: dict[str, Any] = {"backend": backend, "figure": label, "higher_is_better": higher}
            for side in ("base", "head"):
                values = list(by_round[side].values())
                row[side] = spread(values) if values else None
            row["ratio"] = spread(ratios) if ratios else None
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = ("backend", "figure", "base", "head", "head/base")
    lines = [header]
    for row in rows:
        lines.append(
            (
                row["backend"],
                row["figure"],
                *(cell(row[k]) if row[k] else "n/a" for k in ("base", "head", "ratio")),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="git revision of the base tree")
    p.add_argument("--head", help="git revision or a directory (default: this working tree)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    p.add_argument("--backends", default="sqlite", help="comma-separated (default sqlite)")
    p.add_argument("--seconds", type=float, default=20.0, help="idle CPU window (default 20 s)")
    p.add_argument("--settle", type=float, default=3.0, help="idle before the window (3 s)")
    p.add_argument("--pickups", type=int, default=100, help="single jobs per round (100)")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between them (0.1)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the JSON goes")
    for side in ("base", "head"):
        p.add_argument(
            f"--{side}-env",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"an environment variable for every process of the {side} side (repeatable)",
        )
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    started = time.perf_counter()
    notes = machine_notes()
    with contextlib.ExitStack() as stack:
        app_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chokaq-app-")))
        (app_dir / "chokaq_compare_app.py").write_text(APP_MODULE)
        trees = {
            side: stack.enter_context(
                tree_for(side, spec, app_dir, _env_pairs(getattr(args, f"{side}_env")))
            )
            for side, spec in (("base", args.base), ("head", args.head))
        }
        imported = {side: check_tree(tree) for side, tree in trees.items()}
        for side, tree in trees.items():
            print(f"{side}: {tree.label}; imports {imported[side]}", flush=True)
        print(
            f"{args.rounds} round(s), idle window {args.seconds:g} s after {args.settle:g} s, "
            f"{args.pickups} pickups every {args.interval:g} s, backends "
            f"{','.join(args.backends)}",
            flush=True,
        )
        raw = run_rounds(trees, args)
    rows = summarize(raw)
    record = {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "config": {
            k: getattr(args, k)
            for k in ("rounds", "backends", "seconds", "settle", "pickups", "interval")
        },
        "trees": {s: {"label": t.label, "chokaq": imported[s]} for s, t in trees.items()},
        "machine": notes,
        "loadavg_at_end": list(os.getloadavg()),
        "raw": raw,
        "summary": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    print()
    print(f"base: {trees['base'].label}\nhead: {trees['head'].label}")
    print(table(rows))
    print(f"wall time {record['wall_seconds']:.0f} s; JSON: {args.out}")
    return record


if __name__ == "__main__":
    main()

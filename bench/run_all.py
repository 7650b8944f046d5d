"""The whole benchmark suite in one command: runs each part, keeps its raw figures as JSON under
``<out>/results/``, then writes ``<out>/RESULTS.md`` and the PNG charts from every JSON present.

    .venv/bin/python bench/run_all.py                       # the full form (about an hour)
    .venv/bin/python bench/run_all.py --parts peers         # one part; the report keeps the rest
    .venv/bin/python bench/run_all.py --quick --out /tmp/b  # the short form the tests run

Parts: pillars (Three Pillars vs a single table), peers (chokaq vs PgQueuer, procrastinate,
Celery and RQ), sqlite (the embedded backend), scale (1/2/4 worker processes on PostgreSQL and a
sizing estimate). ``--report-only`` rewrites the report from the stored JSON.

The peers part compares every configuration that can run here (its packages installed, its
broker answering; the others are named and left out), each with a no-op handler and one doing a
Redis INCR; ``--systems celery,rq`` and ``--works incr`` narrow it:

    .venv/bin/python bench/run_all.py --parts peers --systems chokaq,celery-redis --works incr

Budget for it: RQ's forking Worker runs about 55 jobs/s here, so at 20,000 jobs its two
burn-downs take some 12 minutes a round.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import machine_notes

PARTS = ("pillars", "peers", "sqlite", "scale")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts to run")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    p.add_argument("--runs", type=int, default=3, help="runs per figure (median, min-max)")
    p.add_argument("--jobs", type=int, default=20_000, help="burn-down jobs")
    p.add_argument("--history", default="0,100000,1000000", help="pillars: history sizes")
    p.add_argument("--peer-history", type=int, default=500_000, help="peers: finished jobs")
    p.add_argument("--pickups", type=int, default=200)
    p.add_argument("--steady-rate", type=float, default=200.0, help="steady load, jobs/s")
    p.add_argument("--steady-seconds", type=float, default=300.0, help="steady load duration")
    p.add_argument("--steady-runs", type=int, default=1, help="steady loads per system")
    p.add_argument(
        "--peer-steady-seconds",
        type=float,
        help="the peers' steady load duration (default: --steady-seconds; chokaq's worker "
        "memory is watched over all of its own)",
    )
    p.add_argument(
        "--sections",
        help="peers: rerun only these of burn_down,history,pickup,steady,ceiling (the rest is kept "
        "from the stored results, and the report says so)",
    )
    p.add_argument("--no-peers", action="store_true", help="chokaq (and the baseline) only")
    p.add_argument(
        "--systems",
        help="peers: comma-separated families (chokaq, pgqueuer, procrastinate, celery, rq) or "
        "configurations (such as celery-redis-prefork); default every one that can run here",
    )
    p.add_argument(
        "--works",
        default="noop,incr",
        help="peers: the handler work, noop and/or incr (one Redis INCR per job)",
    )
    p.add_argument("--quick", action="store_true", help="the short form: tiny N, one run")
    p.add_argument("--report-only", action="store_true")
    return p


def _quick(args: argparse.Namespace) -> None:
    args.runs = 1
    args.jobs = 200
    args.history = "0,2000"
    args.peer_history = 2000
    args.pickups = 20
    args.steady_rate = 50.0
    args.steady_seconds = 2.0


def _sections(args: argparse.Namespace) -> dict[str, Any]:
    """For --sections: which peers sections to rerun, and the stored record keeping the rest."""
    if not args.sections:
        return {}
    stored = args.out / "results" / "peers.json"
    if not stored.exists():
        raise SystemExit("--sections keeps the other sections from results/peers.json: none yet")
    return {
        "sections": [s for s in args.sections.split(",") if s],
        "earlier": json.loads(stored.read_text()),
    }


def _lineup(args: argparse.Namespace) -> list[Any] | None:
    """The peers part's configurations; None (chokaq alone, no-op) for --no-peers."""
    if args.no_peers and not args.systems:
        return None
    from bench import lineup

    names = [n for n in args.systems.split(",") if n] if args.systems else None
    return lineup.select(names, [w for w in args.works.split(",") if w])


def run_part(part: str, args: argparse.Namespace, checkpoint: Any = None) -> dict[str, object]:
    if part == "pillars":
        from bench import pillars

        history = [int(h) for h in args.history.split(",")]
        return pillars.run(history, args.jobs, args.runs)
    if part == "peers":
        from bench import peers

        return peers.run(
            jobs=args.jobs,
            pickups=args.pickups,
            history=args.peer_history,
            rate=args.steady_rate,
            seconds=args.steady_seconds,
            runs=args.runs,
            steady_runs=args.steady_runs,
            peer_seconds=args.peer_steady_seconds,
            include_peers=not args.no_peers,
            checkpoint=checkpoint,
            systems=_lineup(args),
            **_sections(args),
        )
    if part == "sqlite":
        from bench import embedded

        return embedded.run(jobs=args.jobs, pickups=args.pickups, runs=args.runs)
    if part == "scale":
        from bench import scale

        return scale.run(jobs=args.jobs, runs=args.runs)
    raise SystemExit(f"unknown part {part!r}; choose from {', '.join(PARTS)}")


def main(argv: list[str] | None = None) -> Path:
    args = _parser().parse_args(argv)
    if args.quick:
        _quick(args)
    results = args.out / "results"
    results.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    if not args.report_only:
        for part in [p for p in args.parts.split(",") if p]:
            print(f"== {part}", flush=True)
            started = time.perf_counter()
            notes = machine_notes()

            def save(
                data: object, part: str = part, notes: object = notes, started: float = started
            ) -> None:
                record = {
                    "part": part,
                    "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "wall_seconds": time.perf_counter() - started,
                    "quick": args.quick,
                    "machine": notes,
                    "loadavg_at_end": list(os.getloadavg()),
                    "data": data,
                }
                (results / f"{part}.json").write_text(json.dumps(record, indent=1))

            try:
                data = run_part(part, args, checkpoint=save)
            except Exception as exc:
                # One broken part (say, the engine mid-edit) must not throw away the others:
                # report it, keep the part's previous JSON, go on; --parts reruns it alone.
                print(f"!! part {part} failed: {exc!r}", file=sys.stderr, flush=True)
                failed.append(part)
                continue
            save(data)
    from bench import report

    path = report.write(args.out)
    print(f"wrote {path}")
    if failed:
        raise SystemExit(f"parts failed: {', '.join(failed)} (rerun them with --parts)")
    return path


if __name__ == "__main__":
    main()

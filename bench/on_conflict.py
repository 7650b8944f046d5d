"""What a debounced enqueue costs next to a plain one (issue 36: "a debounced enqueue, key hit,
costs no more than a plain enqueue: ratio >= 0.9").

    .venv/bin/python bench/on_conflict.py                         # PostgreSQL, then SQLite
    .venv/bin/python bench/on_conflict.py --backends postgres --rounds 7 --jobs 2000

Per backend, one App (one process, one connection pool, as a producer runs) on a fresh
database is filled with ``--fill`` finished-looking Pending rows of another queue and analyzed
(as autovacuum would), then each round times, side by side and alternating which goes first,
``--jobs`` sequential single enqueues of each kind through the public API, in alternating
blocks of ``--block`` calls (a busy machine's slow spells fall on both kinds alike):

- plain: ``handle.enqueue(n=i)``, no idempotency key (the hot path; its statement unchanged);
- debounced: ``handle.options(idempotency_key="k", on_conflict="replace",
  delay_seconds=60).enqueue(n=i)``: every one but the round's first hits the key and replaces
  the pending job's payload and due time in place.

The figure is enqueues per second of each kind and their ratio (debounced / plain) within the
round; medians (min-max) over the rounds are printed and written as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import PG_URL, analyze, fresh_database, machine_notes, spread
from bench.report import cell
from chokaq import App

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "on_conflict.json"


async def _side_by_side(
    jobs: int,
    block: int,
    first: Callable[[int], Awaitable[Any]],
    second: Callable[[int], Awaitable[Any]],
) -> tuple[float, float]:
    """Enqueues per second of each kind over ``jobs`` sequential calls of each, taken in
    alternating blocks of ``block`` calls: a busy machine's slow spells fall on both alike."""
    spent = [0.0, 0.0]
    for start in range(0, jobs, block):
        for side, enqueue in enumerate((first, second)):
            began = time.perf_counter()
            for i in range(start, min(start + block, jobs)):
                await enqueue(i)
            spent[side] += time.perf_counter() - began
    return jobs / spent[0], jobs / spent[1]


def _calls(handle: Any) -> Callable[[int], Awaitable[Any]]:
    """One enqueue through ``handle`` (a handle or its options) per call."""

    async def one(i: int) -> Any:
        return await handle.enqueue(n=i)

    return one


async def measure(url: str, *, rounds: int, jobs: int, fill: int, block: int) -> dict[str, Any]:
    """The rounds' figures on the store at ``url``."""
    app = App(url, auto_migrate=True)

    @app.job()
    async def reindex(n: int) -> None: ...

    await app.open()
    try:
        filler = reindex.options(queue="history")
        for start in range(0, fill, 1000):
            await app.enqueue_many([filler.prepare(n=i) for i in range(start, start + 1000)])
        analyze(url)
        plain: list[float] = []
        debounced: list[float] = []
        ratios: list[float] = []
        for r in range(rounds):
            key = f"doc-{uuid.uuid4().hex}"  # a fresh key per round: one pending job each
            keyed = reindex.options(idempotency_key=key, on_conflict="replace", delay_seconds=60)
            await keyed.enqueue(n=-1)  # the key is held: every timed call is a hit

            one_plain = _calls(reindex)
            one_debounced = _calls(keyed)

            if r % 2 == 0:
                p, d = await _side_by_side(jobs, block, one_plain, one_debounced)
            else:
                d, p = await _side_by_side(jobs, block, one_debounced, one_plain)
            plain.append(p)
            debounced.append(d)
            ratios.append(d / p)
            print(f"  round {r + 1}: plain {p:,.0f}/s  debounced {d:,.0f}/s  ratio {d / p:.2f}")
        return {
            "plain_per_s": spread(plain),
            "debounced_per_s": spread(debounced),
            "ratio": spread(ratios),
        }
    finally:
        await app.close()


async def run(backends: list[str], rounds: int, jobs: int, fill: int, block: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for backend in backends:
        print(f"{backend}: {rounds} rounds of {jobs} enqueues of each kind, {fill} rows filled")
        if backend == "postgres":
            with fresh_database("on_conflict") as url:
                figures[backend] = await measure(
                    url, rounds=rounds, jobs=jobs, fill=fill, block=block
                )
        else:
            with tempfile.TemporaryDirectory() as folder:
                url = f"sqlite:///{Path(folder) / 'jobs.db'}"
                figures[backend] = await measure(
                    url, rounds=rounds, jobs=jobs, fill=fill, block=block
                )
        f = figures[backend]
        print(
            f"{backend}: plain {cell(f['plain_per_s'])}/s, debounced "
            f"{cell(f['debounced_per_s'])}/s, ratio {cell(f['ratio'])}"
        )
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1000, help="enqueues per kind and round")
    parser.add_argument("--block", type=int, default=50, help="calls per alternating block")
    parser.add_argument("--fill", type=int, default=20_000, help="rows stored before timing")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    figures = asyncio.run(run(backends, args.rounds, args.jobs, args.fill, args.block))
    record = {
        "config": {
            "rounds": args.rounds,
            "jobs": args.jobs,
            "block": args.block,
            "fill": args.fill,
            "pg": PG_URL,
        },
        "machine": machine_notes(),
        "data": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2, default=str))
    return record


if __name__ == "__main__":
    main()

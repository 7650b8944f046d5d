"""Workflows (``after=``) end to end on SQLite and PostgreSQL: how fast a chain runs, how soon a
fan-in's callback starts once its last child succeeded, whether waiting jobs cost the fetch, and
how soon ``app.result`` returns once a job has finished.

    .venv/bin/python bench/workflows.py                       # 5 rounds, both backends
    .venv/bin/python bench/workflows.py --quick --backends sqlite   # a check only, seconds

Every measurement gets a fresh store: a new SQLite file in a temporary folder, or a new
PostgreSQL schema (dropped afterwards). Every process that runs chokaq (seeding, the worker, the
fetch loop) is a fresh interpreter with ``PYTHONPATH=<this tree>/src``, and each checks that the
``chokaq`` it imported lies in this tree; this process only reads the figures from the store
afterwards (and runs ANALYZE, below). Jobs run in the real CLI worker, ``python -m chokaq worker
--app chokaq_workflows_app:app --database <url> --concurrency 10 --burst``, started as a
subprocess after the seed and timed from just before its start. In each round the backends run
one after the other, and in each backend the three measurements; figures are the median
(min-max) over the rounds. Times come from the archive (``started_at``, ``finished_at``: the
worker's claim and the finalize statement, one clock on one machine), so they do not include the
worker's exit.

* chain: ``--chain`` jobs (default 1,000), each prepared ``after=[previous]``, enqueued in one
  ``app.enqueue_many``; the handler returns its index (kept as the result). jobs/s is reported
  twice: from just before the worker's start to the last job's ``finished_at`` (interpreter
  start and imports included, as a user pays them) and from the first job's ``started_at`` to
  the last one's ``finished_at`` (the chain alone). Hand-off = each job's ``started_at`` minus
  its parent's ``finished_at`` (the release in the parent's archive move, the wake-up, the
  claim), p50 and p99 over the chain; step = ``finished_at - started_at`` (reading the parent's
  result, the handler, the finalize), p50. Worker peak RSS from VmHWM at its exit (getrusage
  would report this process's RSS at fork when that is larger).
* fan-in: ``--children`` independent jobs (default 10,000) and one callback ``after=`` all of
  them, in one ``enqueue_many`` of children + 1 jobs (its time is reported, measured around that
  call alone in the seeding process). Release = the callback's ``started_at`` minus the largest
  ``finished_at`` of the children (the last child's archive move releases it in the same
  statement); entry = the time the callback's handler began (``time.time()``, written to a file)
  minus that same ``finished_at``, so it also holds the read of every parent's result for
  ``ctx.parent_results`` (the handler checks it holds one value per child).
* wake: an idle CLI worker (no ``--burst``) and another process that enqueues ``--waits`` single
  jobs (default 200), one at a time about 50/s, and waits on each with ``app.result``; wake =
  the time that wait returned (``time.time()``) minus the job's ``finished_at`` (the clock the
  archive move read when it began: its commit, which sends the notification, comes after), p50
  and p99.
* fetch: the claim statement through the storage seam, ``backend.jobs_fetch(worker_id=...,
  limit=10, queues=["default"], start=True)`` (what the CLI worker sends for the queues its
  handlers declare) and a ``jobs_finalize`` of what it claimed, until ``--pending`` jobs
  (default 20,000) are drained; p50 and p99 of every fetch. Measured on a store holding
  ``--waiting`` extra jobs (default 100,000) in status WAITING in the same queue, and on one
  without, one right after the other (which goes first alternates between rounds); the ratio is
  taken within each round, where the drift of a shared machine cancels out. The waiting jobs are
  seeded in ``enqueue_many`` calls of 10,000 children, each call with its own parent prepared in
  the same batch and left Pending in queue ``parked``, which the fetch does not serve, so that
  no child is ever released (the store is checked afterwards: every one still waits). The
  pending jobs are enqueued
  after the waiting ones (they sit last in the heap either way). On PostgreSQL both stores are
  ANALYZEd after seeding: the benchmark server runs with autovacuum off, and a server with it
  on would have analyzed a table that just took 100,000 rows; SQLite gets no ANALYZE (chokaq
  never runs one, so users have none).

It prints a table and writes the figures as JSON (``--out``); it is not one of run_all's parts,
so its JSON lives in a folder of its own, out of the report's way.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import (
    PG_URL,
    REPO,
    child_env,
    machine_notes,
    percentile,
    run_script,
    save,
    select,
    spread,
)
from bench.peers import _attempt, _stop
from bench.report import cell
from bench.worker_throughput import drop_schema

BACKENDS = ("sqlite", "postgres")
MEASUREMENTS = ("chain", "fan_in", "fetch", "wake")
CONCURRENCY = 10
FETCH_LIMIT = 10
SEED_CHUNK = 10_000
WORKER_TIMEOUT_SECONDS = 900
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "workflows" / "workflows.json"
APP_NAME = "chokaq_workflows_app"
MAX_PARENTS = 10_000  # chokaq.storage.graph.MAX_PARENTS: the callback's after= holds every child

# The app every process imports (from a temporary folder on PYTHONPATH).
APP_MODULE = '''"""The app of bench/workflows.py (written there; edits here are lost)."""
import atexit, os, time
import chokaq
from chokaq import App, JobContext

app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ["CHOKAQ_SCHEMA"],
          auto_migrate=False)
EXIT = os.environ.get("EXIT_FILE")
MARK = os.environ.get("MARK_FILE")
handled = 0

@app.job(name="step")
async def step(i: int = 0) -> int:
    global handled
    handled += 1
    return i

@app.job(name="callback")
async def callback(ctx: JobContext) -> int:
    global handled
    entered = time.time()
    handled += 1
    if MARK:
        with open(MARK, "w") as f:
            f.write(f"{entered} {len(ctx.parent_results)}\\n")
    return len(ctx.parent_results)

def _at_exit() -> None:
    # VmHWM is this process's own peak RSS (ru_maxrss survives exec: it would report the
    # parent's RSS at fork time when that is larger).
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(EXIT, "w") as f:
        f.write(f"{rss} {handled} {chokaq.__file__}\\n")

if EXIT:
    atexit.register(_at_exit)
'''

# Seeds a store (the migrations first) and prints one JSON line: the seconds each enqueue took.
SEED = r"""
import asyncio, json, os, time
import chokaq
from chokaq_workflows_app import app, step, callback

async def main():
    kind, size, chunk = os.environ["KIND"], int(os.environ["SIZE"]), int(os.environ["CHUNK"])
    app.auto_migrate = True
    await app.open()
    out = {"chokaq": chokaq.__file__}
    if kind == "chain":
        jobs = [step.prepare(i=0)]
        for i in range(1, size):
            jobs.append(step.prepare(i=i, after=[jobs[-1]]))
        started = time.perf_counter()
        await app.enqueue_many(jobs)
        out["enqueue_seconds"] = time.perf_counter() - started
    elif kind == "fan_in":
        jobs = [step.prepare(i=i) for i in range(size)]
        jobs.append(callback.prepare(after=jobs))
        started = time.perf_counter()
        await app.enqueue_many(jobs)
        out["enqueue_seconds"] = time.perf_counter() - started
    elif kind == "waiting":
        started = time.perf_counter()
        for first in range(0, size, chunk):
            parent = step.prepare(i=-1, queue="parked")
            count = min(chunk, size - first)
            await app.enqueue_many(
                [parent] + [step.prepare(i=first + k, after=[parent]) for k in range(count)]
            )
        out["enqueue_seconds"] = time.perf_counter() - started
    elif kind == "pending":
        started = time.perf_counter()
        for first in range(0, size, chunk):
            count = min(chunk, size - first)
            await app.enqueue_many([step.prepare(i=first + k) for k in range(count)])
        out["enqueue_seconds"] = time.perf_counter() - started
    else:
        raise SystemExit(f"unknown seed {kind}")
    await app.close()
    print(json.dumps(out, separators=(",", ":")))

asyncio.run(main())
"""

# Drains the pending jobs with fetch + finalize through the storage seam, timing each fetch.
DRAIN = r"""
import asyncio, json, os, time
import chokaq
from chokaq.models import SucceedMove
from chokaq_workflows_app import app

async def main():
    limit = int(os.environ["FETCH_LIMIT"])
    await app.open()
    backend = app.backend
    fetch_ms, drained = [], 0
    started = time.perf_counter()
    while True:
        sent = time.perf_counter()
        claimed = await backend.jobs_fetch(
            worker_id="bench-fetch", limit=limit, queues=["default"], start=True
        )
        fetch_ms.append((time.perf_counter() - sent) * 1000)
        if not claimed:
            break
        moves = [SucceedMove(lease=c.lease, duration_seconds=0.0) for c in claimed]
        drained += sum(await backend.jobs_finalize(moves=moves))
    seconds = time.perf_counter() - started
    await app.close()
    out = {"chokaq": chokaq.__file__, "fetch_ms": fetch_ms, "drained": drained,
           "seconds": seconds}
    print(json.dumps(out, separators=(",", ":")))

asyncio.run(main())
"""


# Waits on single jobs one at a time (an idle worker runs them) and prints when each wait
# returned; the figures are those times against the archive's finished_at.
WAITS = r"""
import asyncio, json, os, time
import chokaq
from chokaq_workflows_app import app, step

async def main():
    count = int(os.environ["WAITS"])
    await app.open()
    returned = []
    for i in range(count):
        job = step.prepare(i=i)
        await app.enqueue_many([job])
        value = await app.result(job.id, timeout=60)
        returned.append([job.id, time.time()])
        assert value == i, (value, i)
        await asyncio.sleep(0.02)  # single jobs, about 50/s: the worker idles between them
    await app.close()
    print(json.dumps({"chokaq": chokaq.__file__, "returned": returned}, separators=(",", ":")))

asyncio.run(main())
"""


# -- stores ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Store:
    """One fresh store: its backend, URL and schema, and a scratch folder for the worker."""

    backend: str
    url: str
    schema: str
    tmp: Path
    app_dir: Path

    def env(self, **extra: str) -> dict[str, str]:
        path = os.pathsep.join([str(REPO / "src"), str(self.app_dir)])
        return {
            "CHOKAQ_DATABASE_URL": self.url,
            "CHOKAQ_SCHEMA": self.schema,
            "PYTHONPATH": path,
            **extra,
        }

    def rows(self, table: str, columns: str, where: str = "") -> list[tuple[Any, ...]]:
        """Rows of one chokaq table, read straight from the store (a read for the figures,
        after the run; the bench's own SQL, never the engine's). ``columns`` and ``where`` are
        this module's constants."""
        if self.backend == "sqlite":
            path = self.url.removeprefix("sqlite:///")
            query = f"SELECT {columns} FROM {self.schema}_{table} {where}"
            with contextlib.closing(sqlite3.connect(path)) as conn:
                return conn.execute(query).fetchall()
        statement = sql.SQL("SELECT {} FROM {} {}").format(
            sql.SQL(columns),
            sql.Identifier(self.schema, table),
            sql.SQL(where),
        )
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(statement).fetchall()

    def analyze(self) -> None:
        """ANALYZE every table of the schema (PostgreSQL only: see the module docstring)."""
        if self.backend != "postgres":
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            for table in ("jobs_hot", "jobs_archive", "job_edges", "queues"):
                conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(self.schema, table)))


@contextlib.contextmanager
def fresh_store(backend: str, app_dir: Path) -> Iterator[Store]:
    with tempfile.TemporaryDirectory(prefix="chokaq-workflows-") as tmp:
        if backend == "sqlite":
            yield Store(backend, f"sqlite:///{tmp}/bench.db", "chokaq", Path(tmp), app_dir)
            return
        schema = f"workflows_{uuid.uuid4().hex[:10]}"
        try:
            yield Store(backend, PG_URL, schema, Path(tmp), app_dir)
        finally:
            drop_schema(schema)


def _check_import(chokaq_file: str) -> None:
    if not chokaq_file.startswith(str(REPO / "src")):
        raise RuntimeError(f"imported {chokaq_file}, not the chokaq of {REPO / 'src'}")


def _script(store: Store, script: str, **env: str) -> dict[str, Any]:
    line = " ".join(run_script(script, WORKER_TIMEOUT_SECONDS, **store.env(**env)))
    out: dict[str, Any] = json.loads(line)
    _check_import(out["chokaq"])
    return out


def _seed(store: Store, kind: str, size: int) -> float:
    out = _script(store, SEED, KIND=kind, SIZE=str(size), CHUNK=str(SEED_CHUNK))
    return float(out["enqueue_seconds"])


def _epoch(value: Any) -> float:
    """A stored time as Unix seconds: SQLite keeps REAL seconds, PostgreSQL timestamptz."""
    return value.timestamp() if isinstance(value, datetime) else float(value)


# -- the worker ------------------------------------------------------------------------------


def _run_worker(store: Store) -> tuple[float, float, int]:
    """Runs the burst CLI worker to its exit; (Unix time just before its start, peak RSS MiB,
    jobs it handled)."""
    argv = [sys.executable, "-m", "chokaq", "worker", "--app", f"{APP_NAME}:app"]
    argv += ["--database", store.url, "--concurrency", str(CONCURRENCY), "--burst"]
    exit_file, log = store.tmp / "exit.txt", store.tmp / "worker.log"
    env = child_env(**store.env(EXIT_FILE=str(exit_file), MARK_FILE=str(store.tmp / "mark.txt")))
    with log.open("wb") as err:
        started = time.time()
        proc = subprocess.Popen(argv, env=env, cwd=store.tmp, stdout=subprocess.DEVNULL, stderr=err)
        try:
            code = proc.wait(timeout=WORKER_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            _stop(proc)
            code = None
    shown = log.read_text(errors="replace")[-2000:]
    if code != 0 or not exit_file.exists():
        raise RuntimeError(f"the burst worker exited with {code}\n{shown}")
    rss_kb, handled, chokaq_file = exit_file.read_text().split(maxsplit=2)
    _check_import(chokaq_file.strip())
    return started, int(rss_kb) / 1024, int(handled)


# -- the measurements ------------------------------------------------------------------------


def chain(backend: str, app_dir: Path, size: int) -> dict[str, float]:
    with fresh_store(backend, app_dir) as store:
        enqueue_seconds = _seed(store, "chain", size)
        worker_start, rss_mib, handled = _run_worker(store)
        rows = store.rows("jobs_archive", "payload, started_at, finished_at", "WHERE type = 'step'")
    if handled != size or len(rows) != size:
        raise RuntimeError(f"the chain ran {handled} jobs and archived {len(rows)} of {size}")
    by_index = sorted((json.loads(p)["i"], _epoch(s), _epoch(f)) for p, s, f in rows)
    starts = [s for _, s, _ in by_index]
    ends = [f for _, _, f in by_index]
    if any(b < a for a, b in itertools.pairwise(starts)):
        raise RuntimeError("the chain's jobs did not start in order")
    handoff_ms = [(s - f) * 1000 for f, s in zip(ends[:-1], starts[1:], strict=True)]
    step_ms = [(f - s) * 1000 for s, f in zip(starts, ends, strict=True)]
    last = max(ends)
    return {
        "jobs_s_from_worker_start": size / (last - worker_start),
        "jobs_s_from_first_start": size / (last - min(starts)),
        "handoff_p50_ms": percentile(handoff_ms, 50),
        "handoff_p99_ms": percentile(handoff_ms, 99),
        "step_p50_ms": percentile(step_ms, 50),
        "enqueue_ms": enqueue_seconds * 1000,
        "peak_rss_mib": rss_mib,
    }


def fan_in(backend: str, app_dir: Path, children: int) -> dict[str, float]:
    with fresh_store(backend, app_dir) as store:
        enqueue_seconds = _seed(store, "fan_in", children)
        worker_start, rss_mib, handled = _run_worker(store)
        kids = store.rows("jobs_archive", "started_at, finished_at", "WHERE type = 'step'")
        [(cb_started, cb_result)] = store.rows(
            "jobs_archive", "started_at, result", "WHERE type = 'callback'"
        )
        entered, seen = (store.tmp / "mark.txt").read_text().split()
    if handled != children + 1 or len(kids) != children:
        raise RuntimeError(f"the fan-in ran {handled} jobs, archived {len(kids)} children")
    if int(seen) != children or json.loads(cb_result) != children:
        raise RuntimeError(f"the callback saw {seen} parents' results of {children}")
    last_child = max(_epoch(f) for _, f in kids)
    first_child = min(_epoch(s) for s, _ in kids)
    return {
        "release_ms": (_epoch(cb_started) - last_child) * 1000,
        "entry_ms": (float(entered) - last_child) * 1000,
        "enqueue_ms": enqueue_seconds * 1000,
        "enqueue_jobs_s": (children + 1) / enqueue_seconds,
        "children_jobs_s": children / (last_child - first_child),
        "jobs_s_from_worker_start": (children + 1) / (_epoch(cb_started) - worker_start),
        "peak_rss_mib": rss_mib,
    }


def fetch_arm(backend: str, app_dir: Path, pending: int, waiting: int) -> dict[str, float]:
    """One store: ``waiting`` jobs that never become eligible (0: none), ``pending`` jobs
    drained by fetch + finalize."""
    with fresh_store(backend, app_dir) as store:
        seed_waiting = _seed(store, "waiting", waiting) if waiting else 0.0
        _seed(store, "pending", pending)
        store.analyze()
        out = _script(store, DRAIN, FETCH_LIMIT=str(FETCH_LIMIT))
        still = store.rows("jobs_hot", "count(*)", "WHERE status = 3")[0][0]
    if out["drained"] != pending:
        raise RuntimeError(f"the fetch drained {out['drained']} of {pending} pending jobs")
    if still != waiting:
        raise RuntimeError(f"{still} jobs still wait after the drain, not {waiting}")
    ms = out["fetch_ms"]
    return {
        "fetch_p50_ms": percentile(ms, 50),
        "fetch_p99_ms": percentile(ms, 99),
        "fetches": float(len(ms)),
        "drain_jobs_s": pending / out["seconds"],
        "seed_waiting_s": seed_waiting,
    }


def wake(backend: str, app_dir: Path, waits: int) -> dict[str, float]:
    """An idle CLI worker; ``waits`` single jobs, each enqueued and waited on with
    ``app.result`` by another process; wake = the wait's return minus the job's
    ``finished_at`` (the archive move's commit sends the notification)."""
    with fresh_store(backend, app_dir) as store:
        _seed(store, "pending", 1)  # the schema, and a first job the worker runs at once
        argv = [sys.executable, "-m", "chokaq", "worker", "--app", f"{APP_NAME}:app"]
        argv += ["--database", store.url, "--concurrency", str(CONCURRENCY)]
        log = store.tmp / "worker.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                argv,
                env=child_env(**store.env()),
                cwd=store.tmp,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            try:
                out = _script(store, WAITS, WAITS=str(waits))
            finally:
                _stop(proc)
        rows = store.rows("jobs_archive", "id, finished_at", "WHERE type = 'step'")
    ends = {str(job_id): finished for job_id, finished in rows}
    wake_ms = [(at - _epoch(ends[job_id])) * 1000 for job_id, at in out["returned"]]
    return {"wake_p50_ms": percentile(wake_ms, 50), "wake_p99_ms": percentile(wake_ms, 99)}


# -- the run ---------------------------------------------------------------------------------

Raw = dict[str, dict[str, list[dict[str, float]]]]  # backend, measurement (or fetch arm), runs


def _record(raw: Raw, backend: str, key: str, round_no: int, got: dict[str, float] | None) -> None:
    if got is None:
        return
    raw[backend].setdefault(key, []).append({"round": round_no, **got})
    shown = ", ".join(f"{k} {v:,.2f}" for k, v in got.items())
    print(f"  round {round_no} {backend} {key}: {shown}", flush=True)


def run_rounds(args: argparse.Namespace, app_dir: Path) -> Raw:
    raw: Raw = {backend: {} for backend in args.backends}
    for round_no in range(1, args.rounds + 1):
        for backend in args.backends:
            what = f"round {round_no} {backend}"
            if "chain" in args.measurements:
                got = _attempt(f"{what} chain", chain, backend, app_dir, args.chain)
                _record(raw, backend, "chain", round_no, got)
            if "fan_in" in args.measurements:
                got = _attempt(f"{what} fan-in", fan_in, backend, app_dir, args.children)
                _record(raw, backend, "fan_in", round_no, got)
            if "fetch" in args.measurements:
                arms = (("without", 0), ("with", args.waiting))
                for arm, waiting in arms if round_no % 2 else arms[::-1]:
                    call: Callable[..., dict[str, float]] = fetch_arm
                    got = _attempt(
                        f"{what} fetch {arm}", call, backend, app_dir, args.pending, waiting
                    )
                    _record(raw, backend, f"fetch_{arm}", round_no, got)
            if "wake" in args.measurements:
                got = _attempt(f"{what} wake", wake, backend, app_dir, args.waits)
                _record(raw, backend, "wake", round_no, got)
    return raw


def summarize(raw: Raw) -> dict[str, dict[str, Any]]:
    """Per backend: each measurement's figures as median (min-max) over the rounds, and the
    with/without ratios of the fetch taken within each round (a round that lost an arm has
    none)."""
    out: dict[str, dict[str, Any]] = {}
    for backend, measured in raw.items():
        figures: dict[str, Any] = {}
        for key, runs in measured.items():
            figures[key] = {k: spread([r[k] for r in runs]) for k in runs[0] if k != "round"}
        without = {r["round"]: r for r in measured.get("fetch_without", [])}
        with_ = {r["round"]: r for r in measured.get("fetch_with", [])}
        both = sorted(without.keys() & with_.keys())
        for q in ("p50", "p99"):
            name = f"fetch_{q}_ms"
            ratios = [with_[n][name] / without[n][name] for n in both]
            if ratios:
                figures.setdefault("fetch_ratio", {})[q] = spread(ratios)
        out[backend] = figures
    return out


def _rows(summary: dict[str, dict[str, Any]], args: argparse.Namespace) -> list[tuple[str, ...]]:
    chain_n, kids, wait = f"{args.chain:,}", f"{args.children:,}", f"{args.waiting:,}"
    wanted: Sequence[tuple[str, str, str]] = (
        ("chain", "jobs_s_from_worker_start", f"chain of {chain_n}: jobs/s from worker start"),
        ("chain", "jobs_s_from_first_start", "chain: jobs/s from first start to last end"),
        ("chain", "handoff_p50_ms", "chain: hand-off p50 ms (parent end to child start)"),
        ("chain", "handoff_p99_ms", "chain: hand-off p99 ms"),
        ("chain", "step_p50_ms", "chain: step p50 ms (start to end)"),
        ("chain", "enqueue_ms", "chain: enqueue_many ms"),
        ("chain", "peak_rss_mib", "chain: worker peak RSS MiB"),
        ("fan_in", "enqueue_ms", f"fan-in {kids}+1: enqueue_many ms"),
        ("fan_in", "release_ms", "fan-in: last child end to callback start ms"),
        ("fan_in", "entry_ms", "fan-in: last child end to callback handler ms"),
        ("fan_in", "children_jobs_s", "fan-in: children jobs/s"),
        ("fan_in", "peak_rss_mib", "fan-in: worker peak RSS MiB"),
        ("fetch_without", "fetch_p50_ms", "fetch p50 ms, no waiting jobs"),
        ("fetch_with", "fetch_p50_ms", f"fetch p50 ms, {wait} waiting"),
        ("fetch_without", "fetch_p99_ms", "fetch p99 ms, no waiting jobs"),
        ("fetch_with", "fetch_p99_ms", f"fetch p99 ms, {wait} waiting"),
        ("fetch_with", "seed_waiting_s", f"seeding {wait} waiting jobs s"),
        ("wake", "wake_p50_ms", "result: archive move to the wait's return p50 ms"),
        ("wake", "wake_p99_ms", "result: archive move to the wait's return p99 ms"),
    )
    lines: list[tuple[str, ...]] = [("backend", "figure", "median (min-max)")]
    for backend, figures in summary.items():
        for key, figure, label in wanted:
            if key in figures:
                lines.append((backend, label, cell(figures[key][figure])))
        for q, ratio in figures.get("fetch_ratio", {}).items():
            lines.append((backend, f"fetch {q}: with / without (within rounds)", cell(ratio)))
    return lines


def table(summary: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    lines = _rows(summary, args)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    p.add_argument("--chain", type=int, default=1_000, help="jobs in the chain (default 1,000)")
    p.add_argument("--children", type=int, default=10_000, help="fan-in children (max 10,000)")
    p.add_argument("--pending", type=int, default=20_000, help="jobs the fetch drains")
    p.add_argument("--waiting", type=int, default=100_000, help="waiting jobs beside them")
    p.add_argument("--waits", type=int, default=200, help="single jobs waited on (wake)")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    p.add_argument("--measurements", default=",".join(MEASUREMENTS), help="comma-separated")
    p.add_argument(
        "--quick", action="store_true", help="a check: 1 round, chain 20, 200 children, small fetch"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the JSON goes")
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if args.quick:
        args.rounds, args.chain, args.children, args.pending, args.waiting = 1, 20, 200, 300, 2_000
        args.waits = 10
    select(args, BACKENDS, MEASUREMENTS)
    if args.chain < 2 or args.pending < 1 or args.waiting < 1:
        raise SystemExit("--chain must be at least 2, --pending and --waiting at least 1")
    if not 1 <= args.children <= MAX_PARENTS:
        raise SystemExit(f"--children must be 1 to {MAX_PARENTS:,} (the parents of one job)")
    started = time.perf_counter()
    notes = machine_notes()
    print(
        f"{args.rounds} round(s); chain {args.chain:,}, fan-in {args.children:,}+1, fetch "
        f"{args.pending:,} pending with/without {args.waiting:,} waiting; concurrency "
        f"{CONCURRENCY}; backends {','.join(args.backends)}; load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="chokaq-app-") as app_dir:
        (Path(app_dir) / f"{APP_NAME}.py").write_text(APP_MODULE)
        raw = run_rounds(args, Path(app_dir))
    summary = summarize(raw)
    record = {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "quick": args.quick,
        "config": {
            "rounds": args.rounds,
            "chain": args.chain,
            "children": args.children,
            "pending": args.pending,
            "waiting": args.waiting,
            "concurrency": CONCURRENCY,
            "fetch_limit": FETCH_LIMIT,
            "seed_chunk": SEED_CHUNK,
            "backends": args.backends,
            "measurements": args.measurements,
        },
        "machine": notes,
        "loadavg_at_end": list(os.getloadavg()),
        "raw": raw,
        "summary": summary,
    }
    save(args.out, record)
    print()
    print(table(summary, args))
    print(f"wall time {record['wall_seconds']:.0f} s; JSON: {args.out}")
    short = [
        f"{backend} {key}"
        for backend, measured in raw.items()
        for key in _expected_keys(args)
        if len(measured.get(key, [])) < args.rounds
    ]
    if short:
        raise SystemExit(f"measurements failed twice (see the !! lines): {', '.join(short)}")
    return record


def _expected_keys(args: argparse.Namespace) -> list[str]:
    keys = [m for m in args.measurements if m != "fetch"]
    return keys + (["fetch_without", "fetch_with"] if "fetch" in args.measurements else [])


if __name__ == "__main__":
    main()

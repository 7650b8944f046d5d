"""Two source trees of chokaq measured side by side in one run, so that a change can be shown not
to regress: burn-down, bulk enqueue and pickup, on SQLite and PostgreSQL, base and head in
alternation (which goes first alternates between rounds), and the head/base ratio taken within
each round, where the drift of a shared machine between rounds cancels out.

    .venv/bin/python bench/compare.py --base main              # head: this working tree
    .venv/bin/python bench/compare.py --base HEAD~3 --head /work/other-worktree
    .venv/bin/python bench/compare.py --quick --base HEAD      # the short form, a check only
    .venv/bin/python bench/compare.py --base HEAD --head-env CHOKAQ_BENCH_SCHEDULES=100 \
        --measurements burn_down                               # one tree, two configurations

The base (and a head given as a revision) is checked out with ``git worktree add --detach`` into
a temporary directory, removed at the end. Every process of a side runs this interpreter with
``PYTHONPATH=<tree>/src``, and every one reports the ``chokaq.__file__`` it imported, which must
lie in its tree. Each measurement gets a fresh SQLite file or a fresh PostgreSQL schema:

* bulk enqueue: ``jobs`` no-op jobs, ``app.enqueue_many`` of ``prepare``-d jobs in batches of
  10,000 (as bench/peers.py), timed in a subprocess of the tree; jobs/s.
* burn-down: the same seed, then the real CLI worker, ``python -m chokaq worker --app
  chokaq_compare_app:app --concurrency 10 --burst``, timed from its start to its exit (so the
  interpreter start and the imports count); jobs/s = jobs / that time; peak RSS of the worker
  from VmHWM at its exit (getrusage would report this process's own RSS when that is larger).
* pickup: an idle CLI worker; ``pickups`` single jobs enqueued one at a time about every 20 ms;
  the handler appends ``time.time() - sent`` where ``sent`` was taken just before the enqueue
  call; p50 and p99.

``--base-env`` / ``--head-env NAME=VALUE`` (repeatable) add environment variables to every
process of one side, to compare two configurations of one tree: ``CHOKAQ_BENCH_SCHEDULES=N``
makes the app declare N periodic schedules that never come due during a run (once a year), so
the worker declares them, re-marks them and looks for due slots every second while it runs;
``CHOKAQ_BENCH_RATE_LIMIT=100000/s``, ``CHOKAQ_BENCH_PARTITION_CONCURRENCY=N`` and
``CHOKAQ_BENCH_PARTITIONS=N`` limit the no-op type and seed its jobs over N partitions (a tree
with rate limits only); ``CHOKAQ_BENCH_HANDLER=def`` makes the handler a plain ``def``.

It writes a table to stdout and the figures as JSON (``--out``); it is not one of run_all's
parts, so its JSON lives in a folder of its own, out of the report's way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import (
    PG_URL,
    REPO,
    analyze,
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
MEASUREMENTS = ("bulk_enqueue", "burn_down", "pickup")
ENQUEUE_BATCH = 10_000
CONCURRENCY = 10
PICKUP_INTERVAL_SECONDS = 0.02
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "compare" / "compare.json"

# (measurement, figure, label, whether higher is better)
FIGURES = (
    ("bulk_enqueue", "jobs_s", "bulk enqueue jobs/s", True),
    ("burn_down", "jobs_s", "burn-down jobs/s", True),
    ("burn_down", "peak_rss_mib", "worker peak RSS MiB", False),
    ("pickup", "p50_ms", "pickup p50 ms", False),
    ("pickup", "p99_ms", "pickup p99 ms", False),
)

# The app every process of both sides imports (from a temporary folder on PYTHONPATH). It uses
# only API that both trees are expected to have: App(url, schema=..., auto_migrate=...),
# @app.job(name=...), handle.prepare / handle.enqueue, app.enqueue_many.
APP_MODULE = '''"""The no-op app of bench/compare.py (written there; edits here are lost)."""
import atexit, os, time
import chokaq
from chokaq import App

app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ["CHOKAQ_SCHEMA"],
          auto_migrate=False)
LAT = os.environ.get("LAT_FILE")
EXIT = os.environ.get("EXIT_FILE")
handled = 0

# Rate limits and partitions (head trees only): CHOKAQ_BENCH_RATE_LIMIT="100000/s" limits the
# type, CHOKAQ_BENCH_PARTITION_CONCURRENCY caps each partition, CHOKAQ_BENCH_PARTITIONS=N seeds
# the jobs over N partitions in turn.
_limits = {}
if os.environ.get("CHOKAQ_BENCH_RATE_LIMIT"):
    _limits["rate_limit"] = os.environ["CHOKAQ_BENCH_RATE_LIMIT"]
if os.environ.get("CHOKAQ_BENCH_PARTITION_CONCURRENCY"):
    _limits["partition_concurrency"] = int(os.environ["CHOKAQ_BENCH_PARTITION_CONCURRENCY"])
PARTITIONS = int(os.environ.get("CHOKAQ_BENCH_PARTITIONS", "0"))

def options(i):
    return {"partition": f"p{i % PARTITIONS}"} if PARTITIONS else {}

def _handled(sent):
    global handled
    handled += 1
    if LAT and sent:
        with open(LAT, "a") as f:
            f.write(f"{time.time() - sent}\\n")

# CHOKAQ_BENCH_HANDLER=def: a plain def handler, which the worker runs in its threads.
if os.environ.get("CHOKAQ_BENCH_HANDLER") == "def":
    @app.job(name="noop", **_limits)
    def noop(i: int = 0, sent: float = 0.0) -> None:
        _handled(sent)
else:
    @app.job(name="noop", **_limits)
    async def noop(i: int = 0, sent: float = 0.0) -> None:
        _handled(sent)

def _at_exit() -> None:
    # VmHWM is this process's own peak RSS (ru_maxrss survives exec: it would report the
    # parent's RSS at fork time when that is larger).
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(EXIT, "w") as f:
        f.write(f"{rss} {handled} {chokaq.__file__}\\n")

if EXIT:
    atexit.register(_at_exit)

for _i in range(int(os.environ.get("CHOKAQ_BENCH_SCHEDULES", "0"))):
    app.periodic(cron="0 0 1 1 *", name=f"bench-{_i}")(noop)
'''

SEED = r"""
import asyncio, os, time
import chokaq
from chokaq_compare_app import app, noop, options

async def main():
    jobs, batch = int(os.environ["JOBS"]), int(os.environ["BATCH"])
    app.auto_migrate = True
    await app.open()
    started = time.perf_counter()
    for first in range(0, jobs, batch):
        size = min(batch, jobs - first)
        await app.enqueue_many(
            [noop.prepare(i=first + k, **options(first + k)) for k in range(size)]
        )
    elapsed = time.perf_counter() - started
    await app.close()
    print(jobs / elapsed if jobs else 0.0, chokaq.__file__)

asyncio.run(main())
"""

PRODUCER = r"""
import asyncio, os, time
from pathlib import Path
import chokaq
from chokaq_compare_app import app, noop

async def main():
    count, interval = int(os.environ["PICKUPS"]), float(os.environ["INTERVAL"])
    lat = Path(os.environ["LAT_FILE"])
    await app.open()
    try:
        # Warm-up: wait until the worker has started and run one job, then let it go idle.
        await noop.enqueue(sent=time.time())
        deadline = time.monotonic() + 60
        while not lat.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if not lat.exists():
            raise SystemExit("the worker ran no warm-up job within 60 s")
        lat.unlink()
        await asyncio.sleep(1.0)
        for _ in range(count):
            await noop.enqueue(sent=time.time())
            await asyncio.sleep(interval)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if lat.exists() and len(lat.read_text().split()) >= count:
                break
            await asyncio.sleep(0.05)
    finally:
        await app.close()
    print(chokaq.__file__)

asyncio.run(main())
"""


@dataclass(frozen=True)
class Tree:
    """One side of the comparison: a source tree, and the folder holding the app module."""

    side: str  # "base" or "head"
    label: str
    path: Path
    app_dir: Path
    extra: tuple[tuple[str, str], ...] = ()  # --base-env / --head-env

    def env(self, url: str, schema: str, **extra: str) -> dict[str, str]:
        """Child environment: this tree's sources first, no current directory on the path."""
        return {
            "PYTHONPATH": f"{self.path / 'src'}{os.pathsep}{self.app_dir}",
            "PYTHONSAFEPATH": "1",
            "CHOKAQ_DATABASE_URL": url,
            "CHOKAQ_SCHEMA": schema,
            **dict(self.extra),
            **extra,
        }

    def check_import(self, chokaq_file: str) -> None:
        """Refuse a figure measured on the other tree's code (or an installed copy)."""
        if not Path(chokaq_file).resolve().is_relative_to((self.path / "src").resolve()):
            raise RuntimeError(f"{self.side} imported chokaq from {chokaq_file}, not {self.path}")


# -- source trees ----------------------------------------------------------------------------


def _git(*args: str, cwd: Path = REPO) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@contextlib.contextmanager
def checked_out(rev: str) -> Iterator[tuple[Path, str]]:
    """A detached worktree of ``rev`` in a temporary directory, removed afterwards."""
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = Path(tempfile.mkdtemp(prefix="chokaq-compare-"))
    path = folder / "tree"
    _git("worktree", "add", "--detach", str(path), commit)
    try:
        yield path, f"{rev} ({commit[:7]})"
    finally:
        with contextlib.suppress(SystemExit):
            _git("worktree", "remove", "--force", str(path))
        with contextlib.suppress(OSError):
            folder.rmdir()
        _git("worktree", "prune")


def _working_tree_label(path: Path) -> str:
    head = _git("rev-parse", "--short", "HEAD", cwd=path)
    edited = [line for line in _git("status", "--porcelain", "src", cwd=path).splitlines() if line]
    return f"{path} at {head}" + (f" + {len(edited)} uncommitted file(s) in src/" if edited else "")


@contextlib.contextmanager
def tree_for(
    side: str, spec: str | None, app_dir: Path, extra: tuple[tuple[str, str], ...] = ()
) -> Iterator[Tree]:
    """``spec`` is a revision, or an existing directory used as it is (None: this tree)."""
    shown = "".join(f" with {k}={v}" for k, v in extra)
    if spec is None or Path(spec).is_dir():
        path = Path(spec).resolve() if spec else REPO
        yield Tree(side, _working_tree_label(path) + shown, path, app_dir, extra)
        return
    with checked_out(spec) as (path, label):
        yield Tree(side, label + shown, path, app_dir, extra)


def _env_pairs(values: list[str]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise SystemExit(f"--base-env / --head-env take NAME=VALUE, not {value!r}")
        pairs.append((name, text))
    return tuple(pairs)


def check_tree(tree: Tree) -> str:
    """The chokaq this side imports, and that its CLI worker has the flags used here. Compiles
    the tree first: a fresh checkout has no bytecode, and the first worker of that side would
    otherwise pay for compiling the modules that ``--help`` does not import."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tree.path / "src")], check=True, timeout=300
    )
    env = child_env(**tree.env("", "chokaq"))
    done = subprocess.run(
        [sys.executable, "-m", "chokaq", "worker", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    missing = [flag for flag in ("--app", "--concurrency", "--burst") if flag not in done.stdout]
    if done.returncode != 0 or missing:
        raise SystemExit(
            f"{tree.side} ({tree.label}): `chokaq worker` lacks {missing}:\n{done.stderr[-2000:]}"
        )
    [chokaq_file] = run_script(
        "import chokaq; print(chokaq.__file__)", 120, **tree.env("", "chokaq")
    )
    tree.check_import(chokaq_file)
    return chokaq_file


# -- one measurement -------------------------------------------------------------------------


@contextlib.contextmanager
def fresh_store(backend: str) -> Iterator[tuple[str, str, Path]]:
    """(url, schema, scratch folder): a new SQLite file, or a new PostgreSQL schema dropped
    afterwards."""
    with tempfile.TemporaryDirectory(prefix="chokaq-compare-") as tmp:
        if backend == "sqlite":
            yield f"sqlite:///{tmp}/bench.db", "chokaq", Path(tmp)
            return
        schema = f"compare_{uuid.uuid4().hex[:10]}"
        try:
            yield PG_URL, schema, Path(tmp)
        finally:
            drop_schema(schema)


def _seed(tree: Tree, url: str, schema: str, jobs: int) -> float:
    out = run_script(SEED, 900, **tree.env(url, schema, JOBS=str(jobs), BATCH=str(ENQUEUE_BATCH)))
    tree.check_import(" ".join(out[1:]))
    return float(out[0])


def _worker(tree: Tree, url: str, schema: str, tmp: Path, burst: bool) -> subprocess.Popen[bytes]:
    """The CLI worker as a user starts it; stderr goes to a file for the error message."""
    argv = [sys.executable, "-m", "chokaq", "worker", "--app", "chokaq_compare_app:app"]
    argv += ["--database", url, "--concurrency", str(CONCURRENCY)] + (["--burst"] if burst else [])
    env = tree.env(url, schema, EXIT_FILE=str(tmp / "exit.txt"), LAT_FILE=str(tmp / "lat.txt"))
    with (tmp / "worker.log").open("wb") as err:
        return subprocess.Popen(
            argv, env=child_env(**env), cwd=tmp, stdout=subprocess.DEVNULL, stderr=err
        )


def _worker_log(tmp: Path) -> str:
    log = tmp / "worker.log"
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


def bulk_enqueue(tree: Tree, backend: str, jobs: int) -> dict[str, float]:
    with fresh_store(backend) as (url, schema, _):
        return {"jobs_s": _seed(tree, url, schema, jobs)}


def burn_down(tree: Tree, backend: str, jobs: int) -> dict[str, float]:
    with fresh_store(backend) as (url, schema, tmp):
        _seed(tree, url, schema, jobs)
        analyze(url, schema)  # as autovacuum would after the fill (PostgreSQL only)
        started = time.perf_counter()
        proc = _worker(tree, url, schema, tmp, burst=True)
        try:
            code = proc.wait(timeout=900)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise RuntimeError(f"the burst worker ran over 900 s\n{_worker_log(tmp)}") from None
        elapsed = time.perf_counter() - started
        exit_file = tmp / "exit.txt"
        if code != 0 or not exit_file.exists():
            raise RuntimeError(f"the burst worker exited with {code}\n{_worker_log(tmp)}")
        rss_kb, handled, chokaq_file = exit_file.read_text().split(maxsplit=2)
    tree.check_import(chokaq_file.strip())
    if int(handled) != jobs:
        raise RuntimeError(f"the burst worker ran {handled} of {jobs} jobs")
    return {"jobs_s": jobs / elapsed, "seconds": elapsed, "peak_rss_mib": int(rss_kb) / 1024}


def pickup(tree: Tree, backend: str, count: int) -> dict[str, float]:
    with fresh_store(backend) as (url, schema, tmp):
        _seed(tree, url, schema, 0)  # migrations only: the worker does not apply them
        proc = _worker(tree, url, schema, tmp, burst=False)
        try:
            env = tree.env(url, schema, LAT_FILE=str(tmp / "lat.txt"), PICKUPS=str(count))
            [chokaq_file] = run_script(PRODUCER, 300, INTERVAL=str(PICKUP_INTERVAL_SECONDS), **env)
        finally:
            _stop(proc)
        lat = tmp / "lat.txt"
        ms = [float(x) * 1000 for x in lat.read_text().split()] if lat.exists() else []
        if len(ms) < count:
            raise RuntimeError(f"only {len(ms)} of {count} pickups recorded\n{_worker_log(tmp)}")
        if (tmp / "exit.txt").exists():
            tree.check_import((tmp / "exit.txt").read_text().split(maxsplit=2)[2].strip())
    tree.check_import(chokaq_file)
    return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99)}


# -- the run ---------------------------------------------------------------------------------

Raw = dict[str, dict[str, dict[str, list[dict[str, float]]]]]  # backend, measurement, side


def _one(tree: Tree, backend: str, measurement: str, args: argparse.Namespace) -> Any:
    calls: dict[str, tuple[Callable[..., dict[str, float]], int]] = {
        "bulk_enqueue": (bulk_enqueue, args.jobs),
        "burn_down": (burn_down, args.jobs),
        "pickup": (pickup, args.pickups),
    }
    call, size = calls[measurement]
    started = time.perf_counter()
    got = _attempt(f"{tree.side} {backend} {measurement}", call, tree, backend, size)
    if got is not None:
        got["wall_seconds"] = time.perf_counter() - started
    return got


def run_rounds(trees: dict[str, Tree], args: argparse.Namespace) -> Raw:
    raw: Raw = {b: {m: {"base": [], "head": []} for m in MEASUREMENTS} for b in args.backends}
    for round_no in range(1, args.rounds + 1):
        order = ("base", "head") if round_no % 2 else ("head", "base")
        for backend in args.backends:
            for measurement in args.measurements:
                for side in order:
                    got = _one(trees[side], backend, measurement, args)
                    if got is None:
                        continue
                    raw[backend][measurement][side].append({"round": round_no, **got})
                    shown = ", ".join(f"{k} {v:,.2f}" for k, v in got.items())
                    print(f"  round {round_no} {backend} {measurement} {side}: {shown}", flush=True)
    return raw


def summarize(raw: Raw, threshold: float) -> list[dict[str, Any]]:
    """Per backend and figure: base and head median (min-max), and the head/base ratio taken
    within each round (a round that lost one side has no ratio)."""
    rows = []
    for backend, per_measurement in raw.items():
        for measurement, figure, label, higher in FIGURES:
            if not any(per_measurement[measurement].values()):
                continue  # not measured in this run (--measurements)
            sides = per_measurement[measurement]
            by_round = {s: {r["round"]: r[figure] for r in sides[s]} for s in ("base", "head")}
            both = sorted(set(by_round["base"]) & set(by_round["head"]))
            ratios = [by_round["head"][n] / by_round["base"][n] for n in both]
            row: dict[str, Any] = {"backend": backend, "figure": label, "higher_is_better": higher}
            for side in ("base", "head"):
                values = list(by_round[side].values())
                row[side] = spread(values) if values else None
            row["ratio"] = spread(ratios) if ratios else None
            bound = threshold if higher else 1 / threshold
            if ratios:
                med = row["ratio"]["median"]
                row["within_noise"] = med >= bound if higher else med <= bound
            else:
                row["within_noise"] = None
            row["bound"] = bound
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = ("backend", "figure", "base", "head", "head/base", "goal", "verdict")
    lines = [header]
    for row in rows:
        goal = f"{'>=' if row['higher_is_better'] else '<='} {row['bound']:.3f}"
        verdict = {True: "ok", False: "REGRESSED?", None: "n/a"}[row["within_noise"]]
        lines.append(
            (
                row["backend"],
                row["figure"],
                cell(row["base"]) if row["base"] else "n/a",
                cell(row["head"]) if row["head"] else "n/a",
                cell(row["ratio"]) if row["ratio"] else "n/a",
                goal,
                verdict,
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
    p.add_argument("--jobs", type=int, default=20_000, help="jobs per burn-down and enqueue")
    p.add_argument("--pickups", type=int, default=500, help="single jobs per pickup run")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    p.add_argument(
        "--measurements", default=",".join(MEASUREMENTS), help="comma-separated subset to run"
    )
    p.add_argument("--threshold", type=float, default=0.95, help="worst ratio within noise")
    p.add_argument("--quick", action="store_true", help="a check: 1 round, 2,000 jobs, 50 pickups")
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
    if args.quick:
        args.rounds, args.jobs, args.pickups = 1, 2_000, 50
    select(args, BACKENDS, MEASUREMENTS)
    started = time.perf_counter()
    notes = machine_notes()
    with contextlib.ExitStack() as stack:
        app_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chokaq-app-")))
        (app_dir / "chokaq_compare_app.py").write_text(APP_MODULE)
        trees = {
            "base": stack.enter_context(
                tree_for("base", args.base, app_dir, _env_pairs(args.base_env))
            ),
            "head": stack.enter_context(
                tree_for("head", args.head, app_dir, _env_pairs(args.head_env))
            ),
        }
        imported = {side: check_tree(tree) for side, tree in trees.items()}
        for side, tree in trees.items():
            print(f"{side}: {tree.label}; imports {imported[side]}", flush=True)
        print(
            f"{args.rounds} round(s), {args.jobs:,} jobs, {args.pickups} pickups, "
            f"concurrency {CONCURRENCY}, backends {','.join(args.backends)}",
            flush=True,
        )
        raw = run_rounds(trees, args)
    rows = summarize(raw, args.threshold)
    record = {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "quick": args.quick,
        "config": {
            "rounds": args.rounds,
            "jobs": args.jobs,
            "pickups": args.pickups,
            "pickup_interval_seconds": PICKUP_INTERVAL_SECONDS,
            "concurrency": CONCURRENCY,
            "enqueue_batch": ENQUEUE_BATCH,
            "backends": args.backends,
            "threshold": args.threshold,
        },
        "trees": {s: {"label": t.label, "chokaq": imported[s]} for s, t in trees.items()},
        "machine": notes,
        "loadavg_at_end": list(os.getloadavg()),
        "raw": raw,
        "summary": rows,
    }
    save(args.out, record)
    print()
    print(f"base: {trees['base'].label}\nhead: {trees['head'].label}")
    print(table(rows))
    print(f"wall time {record['wall_seconds']:.0f} s; JSON: {args.out}")
    short = [
        f"{backend} {measurement} {side}"
        for backend, per_measurement in raw.items()
        for measurement, sides in per_measurement.items()
        if measurement in args.measurements
        for side, runs in sides.items()
        if len(runs) < args.rounds
    ]
    if short:
        raise SystemExit(f"measurements failed twice (see the !! lines): {', '.join(short)}")
    return record


if __name__ == "__main__":
    main()

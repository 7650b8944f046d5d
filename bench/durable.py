"""Durable jobs (issue 34): chokaq against DBOS Transact on the same PostgreSQL in the same run,
crash-to-resume, what a durable job without steps costs, steps/s and the pickup after a wake.

    .venv/bin/python bench/durable.py --sweep            # find each side's best configuration
    .venv/bin/python bench/durable.py --rounds 3         # the figures, with the configurations
    .venv/bin/python bench/durable.py --quick --backends sqlite   # a check only (no DBOS)

Every measurement gets a fresh store (a SQLite file, a PostgreSQL schema for chokaq, a
PostgreSQL database for DBOS, whose tables live in its own ``dbos`` schema). Every process is a
fresh interpreter running what a user runs: chokaq's CLI worker (``python -m chokaq worker
--app chokaq_durable_app:app ... --burst``), DBOS's own process (``DBOS.launch()``, its queue
declared, served until SIGTERM; several processes each with their own executor id,
``DBOS__VMID``). PostgreSQL stores are ANALYZEd after the fill, as autovacuum would. Workers
are timed from outside (bench/outside.py): from their start (imports included) until all jobs
are done, by chokaq's burst exit or, for DBOS (no burst mode), by its ``workflow_status`` rows
all reading SUCCESS (polled every 0.1 s); peak RSS of the worker's process tree from /proc.

* three steps: ``--jobs`` jobs (default 20,000) of three no-op steps; jobs/s and RSS. chokaq
  seeds with ``enqueue_many`` (batches of 10,000), DBOS with ``Queue.enqueue`` from 32 threads
  (it has no bulk enqueue). The store is checked afterwards: every job done, 3 steps each.
  Ratio = chokaq / DBOS within each round (which goes first alternates).
* crash: a three-step job whose worker is SIGKILLed inside step 2 (the harness sees step 2's
  mark, then kills). chokaq: a survivor worker (started first, so it holds leadership; one slot,
  held by a blocker job until the kill) and the victim; time = the survivor's start of step 2
  minus the kill. The app sets ``--zombie`` and ``--rescue`` seconds (heartbeat 1-2 s); the goal
  is under their sum. DBOS: the victim executor and another executor (another id) that runs
  through the kill; after ``2 x (zombie + rescue)`` s the harness records whether the other one
  resumed the job (DBOS recovers only on the restart of the same executor id), then restarts
  the victim's executor id; time = its start of step 2 minus its restart (so kill-to-resume is
  that plus however long the restart takes to happen).
* no-step cost: ``durable=True`` jobs without steps against plain jobs, the same burn-down,
  both backends; ratio within each round.
* steps/s: ``--step-jobs`` jobs (default 200) of ``--steps`` no-op steps (default 50), both
  backends: steps / (the first step's start to the last step's end, from ``job_steps``).
* wake: an idle worker (concurrency 10); ``--wakes`` jobs (default 50) of each kind, and the
  time from what wakes a job to its handler running on after the call that suspended it:
  sleep (from its recorded end, ``wake_at``), event (from just before ``app.send_event``, one
  every 20 ms from another process) and gather (from the one spawned child's ``finished_at``).

It prints a table and writes JSON (``--out``); not one of run_all's parts.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import durable_apps as apps
from bench.measure import (
    _version,
    analyze,
    fresh_database,
    machine_notes,
    percentile,
    run_script,
    save,
    select,
    spread,
)
from bench.outside import measure
from bench.peers import _attempt, _stop
from bench.report import cell
from bench.workflows import Store, _epoch, fresh_store

BACKENDS = ("sqlite", "postgres")
MEASUREMENTS = ("three", "crash", "no_step", "steps", "wake")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "durable" / "durable.json"
DONE_POLL_SECONDS = 0.1
DEADLINE_SECONDS = 300.0


@dataclass(frozen=True)
class Config:
    """A worker configuration: chokaq's (concurrency, processes) or DBOS's (queue worker
    concurrency, None: uncapped; polling interval; processes; executor threads, None: its
    default, unbounded)."""

    concurrency: int | None
    processes: int = 1
    poll: float = 0.05
    threads: int | None = None

    def label(self, system: str) -> str:
        procs = f", {self.processes} processes" if self.processes > 1 else ""
        if system == "chokaq":
            return f"concurrency {self.concurrency}{procs}"
        cap = "uncapped" if self.concurrency is None else str(self.concurrency)
        threads = f", {self.threads} threads" if self.threads else ""
        return f"worker_concurrency {cap}, poll {self.poll:g} s{procs}{threads}"


CHOKAQ_SWEEP = (Config(10), Config(50), Config(100), Config(50, 2), Config(100, 2))
DBOS_SWEEP = (
    Config(100, poll=0.05),
    Config(50, poll=0.05),
    Config(200, poll=0.05),
    Config(100, poll=0.01),
    Config(100, processes=2, poll=0.05),
    Config(50, processes=2, poll=0.05),
)
CHOKAQ_BEST = Config(100)
DBOS_BEST = Config(100, poll=0.05)


def _wait(what: str, check: Callable[[], bool], seconds: float = DEADLINE_SECONDS) -> None:
    """Poll ``check`` every 20 ms until it holds; RuntimeError naming ``what`` at the deadline."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {seconds:.0f} s")
        time.sleep(0.02)


def _marks(path: Path) -> list[tuple[str, str, float, int]]:
    """The app's mark lines: (what, job id, unix time, pid)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        what, job_id, at, pid = line.split()
        out.append((what, job_id, float(at), int(pid)))
    return out


# -- chokaq ----------------------------------------------------------------------------------


def _env(store: Store, **extra: str) -> dict[str, str]:
    return {**os.environ, **store.env(**extra)}


def _seed(store: Store, kind: str, size: int, **extra: str) -> float:
    out = run_script(apps.CHOKAQ_SEED, 900, **store.env(KIND=kind, SIZE=str(size), **extra))
    return float(out[0])


def _worker_argv(store: Store, config: Config, burst: bool) -> list[str]:
    argv = [sys.executable, "-m", "chokaq", "worker", "--app", f"{apps.CHOKAQ_APP_NAME}:app"]
    argv += ["--database", store.url, "--concurrency", str(config.concurrency)]
    argv += ["--processes", str(config.processes)] if config.processes > 1 else []
    return argv + (["--burst"] if burst else [])


def _count(store: Store, table: str, where: str = "") -> int:
    return int(store.rows(table, "count(*)", where)[0][0])


def chokaq_burn(
    backend: str, app_dir: Path, kind: str, jobs: int, config: Config, steps: int = 0
) -> dict[str, float]:
    """Seed ``jobs`` of ``kind``, analyze, and time the burst CLI worker from outside."""
    with fresh_store(backend, app_dir) as store:
        enqueue = _seed(store, kind, jobs, STEPS=str(steps))
        analyze(store.url, store.schema if backend == "postgres" else None)
        env = _env(store, STEPS=str(steps))
        cpu = _children_cpu()
        seen = measure(_worker_argv(store, config, True), env, store.tmp / "worker.log")
        cpu = _children_cpu() - cpu
        done = _count(store, "jobs_archive", f"WHERE type = '{kind}'")
        left = _count(store, "jobs_hot")
        recorded = _count(store, "job_steps")
        span = store.rows("job_steps", "min(started_at), max(finished_at)")[0]
    expected = jobs * {"three": 3, "many": steps}.get(kind, 0)
    if done != jobs or left or recorded != expected:
        raise RuntimeError(f"{kind}: {done} archived, {left} left, {recorded} steps of {expected}")
    figures = {
        "jobs_s": jobs / seen.elapsed_s,
        "peak_rss_mib": seen.peak_rss_kb / 1024,
        "enqueue_jobs_s": enqueue,
        "cpu_ms_per_job": cpu * 1000 / jobs,
    }
    if kind == "many":
        figures["steps_s"] = expected / (_epoch(span[1]) - _epoch(span[0]))
        figures["steps_s_from_worker_start"] = expected / seen.elapsed_s
    return figures


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's children reaped so far: around one
    worker's run, the worker's own (its children's too), which a busy machine's other work
    does not add to as it adds to the wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def _serving(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A worker that serves until stopped (its own session, stopped with its children)."""
    with log.open("ab") as err:
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    try:
        yield proc
    finally:
        _stop(proc)


def chokaq_crash(backend: str, app_dir: Path, zombie: float, rescue: float) -> dict[str, float]:
    """SIGKILL the worker inside step 2; seconds until the survivor starts step 2 again."""
    with fresh_store(backend, app_dir) as store:
        _seed(store, "plain", 0)  # the migrations
        marks, release = store.tmp / "marks.txt", store.tmp / "release"
        extra = {
            "MARK_FILE": str(marks),
            "RELEASE_FILE": str(release),
            "ZOMBIE_SECONDS": str(zombie),
            "RESCUE_SECONDS": str(rescue),
        }
        one = _worker_argv(store, Config(1), burst=False)
        log = store.tmp / "worker.log"
        with _serving(one, _env(store, **extra), log) as survivor:
            _wait("the survivor's leadership", lambda: _count(store, "leadership") > 0)
            _seed(store, "blocker", 1, **extra)
            _wait("the blocker", lambda: any(m[0] == "blocker" for m in _marks(marks)))
            with _serving(one, _env(store, VICTIM="1", **extra), log) as victim:
                _seed(store, "crashy", 1, **extra)
                _wait("step 2 in the victim", lambda: _step_two(marks, victim.pid) is not None)
                killed = time.time()
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait()
            release.touch()
            bound = zombie + rescue + 60
            _wait("the resume", lambda: _step_two(marks, survivor.pid) is not None, bound)
            _wait(
                "the job's end", lambda: _count(store, "jobs_archive", "WHERE type = 'crashy'") > 0
            )
        resumed = _step_two(marks, survivor.pid)
        ran = [m[0] for m in _marks(marks) if m[0].startswith("step-")]
    assert resumed is not None
    if ran.count("step-one") != 1 or ran.count("step-two") != 2 or ran.count("step-three") != 1:
        raise RuntimeError(f"the crash job ran its steps {ran}")
    return {"kill_to_resume_s": resumed - killed, "bound_s": zombie + rescue}


def _step_two(marks: Path, pid: int) -> float | None:
    return next((m[2] for m in _marks(marks) if m[0] == "step-two" and m[3] == pid), None)


def chokaq_wakes(backend: str, app_dir: Path, count: int) -> dict[str, list[float]]:
    """An idle worker; ``count`` sleepers, then waiters woken by events, then gatherers: the
    milliseconds from each wake-up's cause to the handler running on."""
    with fresh_store(backend, app_dir) as store:
        _seed(store, "plain", 0)
        marks = store.tmp / "marks.txt"
        env = _env(store, MARK_FILE=str(marks))
        woke: dict[str, float] = {}

        def woken(target: int) -> Callable[[], bool]:
            def check() -> bool:
                woke.update({m[1]: m[2] for m in _marks(marks) if m[0] == "woke"})
                return len(woke) >= target

            return check

        suspended = lambda: _count(store, "jobs_hot", "WHERE status = 4") == count  # noqa: E731
        with _serving(_worker_argv(store, Config(10), False), env, store.tmp / "worker.log"):
            _seed(store, "sleeper", count)
            _wait("the sleepers", woken(count))
            _seed(store, "waiter", count)
            _wait("the waiters' suspension", suspended)
            run_script(apps.CHOKAQ_SEND, 300, **store.env(MARK_FILE=str(marks), COUNT=str(count)))
            _wait("the waiters", woken(2 * count))
            _seed(store, "gatherer", count)
            _wait("the gatherers", woken(3 * count))
        sleeps = store.rows("job_steps", "job_id, wake_at", "WHERE name = 'sleep#1'")
        spawns = store.rows("job_steps", "job_id, value", "WHERE name = 'spawn#1'")
        ended = dict(store.rows("jobs_archive", "id, finished_at", "WHERE type = 'child'"))
        sent = {m[1]: m[2] for m in _marks(marks) if m[0] == "sent"}
    waits = [woke[job] - at for job, at in sent.items()]
    slept = [woke[str(job)] - _epoch(at) for job, at in sleeps]
    children = {str(job): json.loads(value)[0] for job, value in spawns}
    gathered = [woke[job] - _epoch(ended[_child_key(ended, kid)]) for job, kid in children.items()]
    return {
        "sleep_ms": [s * 1000 for s in slept],
        "event_ms": [s * 1000 for s in waits],
        "gather_ms": [s * 1000 for s in gathered],
    }


def _child_key(ended: dict[Any, Any], kid: str) -> Any:
    """The archive's id column is a uuid on PostgreSQL and text on SQLite."""
    return next(key for key in ended if str(key) == kid)


def _resumed(marks: Path, dead: int, since: float) -> float | None:
    """When step 2 started again after ``since`` in a process other than ``dead``."""
    again = [m[2] for m in _marks(marks) if m[0] == "step-two" and m[3] != dead and m[2] > since]
    return min(again, default=None)


# -- DBOS ------------------------------------------------------------------------------------


def _dbos_env(app_dir: Path, url: str, config: Config, **extra: str) -> dict[str, str]:
    return {
        "PYTHONPATH": str(app_dir),
        "DBOS_URL": url,
        "DBOS_WORKER_CONCURRENCY": "" if config.concurrency is None else str(config.concurrency),
        "DBOS_POLL": str(config.poll),
        "DBOS_THREADS": "" if config.threads is None else str(config.threads),
        **extra,
    }


def _dbos_argv(config: Config, env: dict[str, str]) -> list[str]:
    worker = [sys.executable, "-c", apps.DBOS_WORKER]
    if config.processes == 1:
        return worker
    env.update(LAUNCH_ARGV=json.dumps(worker), PROCESSES=str(config.processes))
    return [sys.executable, "-c", apps.LAUNCHER]


def _dbos_count(url: str, status: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE status = %s", (status,)
        ).fetchone()
    return int(row[0]) if row else 0


def _every(seconds: float, check: Callable[[], bool]) -> Callable[[], bool]:
    """``check`` at most once per ``seconds`` (the harness asks every 5 ms)."""
    last = [0.0]

    def throttled() -> bool:
        now = time.perf_counter()
        if now - last[0] < seconds:
            return False
        last[0] = now
        return check()

    return throttled


def dbos_burn(app_dir: Path, jobs: int, config: Config) -> dict[str, float]:
    with fresh_database("dbos") as url, tempfile.TemporaryDirectory() as tmp:
        env = _dbos_env(app_dir, url, config)
        enqueue = float(run_script(apps.DBOS_SEED, 900, KIND="three", SIZE=str(jobs), **env)[0])
        analyze(url)
        argv = _dbos_argv(config, env)
        done = _every(DONE_POLL_SECONDS, lambda: _dbos_count(url, "SUCCESS") >= jobs)
        seen = measure(argv, {**os.environ, **env}, Path(tmp) / "dbos.log", done=done)
        succeeded = _dbos_count(url, "SUCCESS")
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM dbos.operation_outputs").fetchone()
        steps = int(row[0]) if row else 0
    if succeeded != jobs or steps != 3 * jobs:
        raise RuntimeError(f"DBOS: {succeeded} of {jobs} succeeded, {steps} steps recorded")
    return {
        "jobs_s": jobs / seen.elapsed_s,
        "peak_rss_mib": seen.peak_rss_kb / 1024,
        "enqueue_jobs_s": enqueue,
    }


def dbos_crash(app_dir: Path, observe: float) -> dict[str, float]:
    """SIGKILL the victim executor inside step 2; whether another executor resumes it within
    ``observe`` s; then the victim's executor id restarted, and seconds to its step 2."""
    with fresh_database("dbos") as url, tempfile.TemporaryDirectory() as tmp:
        marks, log = Path(tmp) / "marks.txt", Path(tmp) / "dbos.log"
        env = {**os.environ, **_dbos_env(app_dir, url, Config(None), MARK_FILE=str(marks))}
        run_script(apps.DBOS_SEED, 300, KIND="crashy", SIZE="0", **env)  # its migrations
        argv = [sys.executable, "-c", apps.DBOS_WORKER]
        with _serving(argv, {**env, "DBOS__VMID": "victim", "VICTIM": "1"}, log) as victim:
            run_script(apps.DBOS_SEED, 300, KIND="crashy", SIZE="1", **env)
            _wait("step 2 in the victim", lambda: _step_two(marks, victim.pid) is not None)
            with _serving(argv, {**env, "DBOS__VMID": "other"}, log) as other:
                killed = time.time()
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait()
                with contextlib.suppress(RuntimeError):
                    _wait(
                        "a resume elsewhere",
                        lambda: _step_two(marks, other.pid) is not None,
                        observe,
                    )
                elsewhere = _step_two(marks, other.pid)
                restarted = time.time()
                with _serving(argv, {**env, "DBOS__VMID": "victim"}, log):
                    # Its launch re-enqueues the workflow; any executor may then run it.
                    _wait(
                        "the restart's resume",
                        lambda: _resumed(marks, victim.pid, restarted) is not None,
                    )
                    _wait("the workflow's end", lambda: _dbos_count(url, "SUCCESS") == 1)
                    resumed = _resumed(marks, victim.pid, restarted)
    assert resumed is not None
    return {
        "restart_to_resume_s": resumed - restarted,
        "resumed_elsewhere": 0.0 if elsewhere is None else 1.0,
        "observed_s": restarted - killed,
    }


# -- the run ---------------------------------------------------------------------------------

Raw = dict[str, list[dict[str, Any]]]  # measurement key, runs


def _record(raw: Raw, key: str, round_no: int, got: dict[str, Any] | None) -> None:
    if got is None:
        return
    raw.setdefault(key, []).append({"round": round_no, **got})
    shown = ", ".join(f"{k} {v:,.2f}" for k, v in got.items() if isinstance(v, float | int))
    print(f"  round {round_no} {key}: {shown}", flush=True)


Call = Callable[[], dict[str, Any] | None]


def _one(what: str, fn: Callable[..., dict[str, Any]], *args: Any) -> Call:
    """One measurement, to run later through ``_attempt`` (retried once, then left out)."""
    return functools.partial(_attempt, what, fn, *args)


def _pair(raw: Raw, round_no: int, key: str, arms: dict[str, Call]) -> None:
    """Both arms of a comparison, which goes first alternating between rounds."""
    names = list(arms) if round_no % 2 else list(arms)[::-1]
    for name in names:
        _record(raw, f"{key}/{name}", round_no, arms[name]())


def _backend_round(
    raw: Raw, round_no: int, backend: str, args: argparse.Namespace, app_dir: Path
) -> None:
    """chokaq alone on one backend: the no-step cost, steps/s, the wakes, the crash."""
    what, wanted = f"round {round_no} {backend}", args.measurements
    if "no_step" in wanted:
        arms = {
            kind: _one(f"{what} {kind}", chokaq_burn, backend, app_dir, kind, args.jobs, Config(10))
            for kind in ("plain", "plain_ctx", "bare")
        }
        _pair(raw, round_no, f"{backend}/no_step", arms)
    alone = {
        "steps": _one(
            f"{what} steps",
            chokaq_burn,
            backend,
            app_dir,
            "many",
            args.step_jobs,
            Config(10),
            args.steps,
        ),
        "wake": _one(f"{what} wake", chokaq_wakes, backend, app_dir, args.wakes),
        "crash": _one(f"{what} crash", chokaq_crash, backend, app_dir, args.zombie, args.rescue),
    }
    for key, call in alone.items():
        if key in wanted:
            _record(raw, f"{backend}/{key}", round_no, call())


def run_round(raw: Raw, round_no: int, args: argparse.Namespace, app_dir: Path) -> None:
    """Each backend's chokaq measurements, then (PostgreSQL) the side by side with DBOS."""
    for backend in args.backends:
        _backend_round(raw, round_no, backend, args, app_dir)
    if "postgres" not in args.backends:
        return
    what = f"round {round_no}"
    if "three" in args.measurements:
        arms = {
            "chokaq": _one(
                f"{what} chokaq three",
                chokaq_burn,
                "postgres",
                app_dir,
                "three",
                args.jobs,
                args.chokaq,
            ),
            "dbos": _one(f"{what} dbos three", dbos_burn, app_dir, args.jobs, args.dbos),
        }
        _pair(raw, round_no, "postgres/three", arms)
    if "crash" in args.measurements:
        observe = 2 * (args.zombie + args.rescue)
        crash = _one(f"{what} dbos crash", dbos_crash, app_dir, observe)
        _record(raw, "postgres/dbos_crash", round_no, crash())


def sweep(args: argparse.Namespace, app_dir: Path) -> dict[str, Any]:
    """Every candidate configuration once on ``--sweep-jobs`` jobs of three steps; the best
    of each side by jobs/s."""
    found: dict[str, Any] = {}
    for system, configs, call in (
        ("dbos", DBOS_SWEEP, lambda c: dbos_burn(app_dir, args.sweep_jobs, c)),
        (
            "chokaq",
            CHOKAQ_SWEEP,
            lambda c: chokaq_burn("postgres", app_dir, "three", args.sweep_jobs, c),
        ),
    ):
        tried = []
        for config in configs:
            got = _attempt(f"sweep {system} {config.label(system)}", call, config)
            if got is not None:
                print(f"  sweep {system} {config.label(system)}: {got}", flush=True)
                tried.append((config, got))
        best = max(tried, key=lambda pair: pair[1]["jobs_s"])[0]
        found[system] = {
            "best": best,
            "tried": [{"config": c.label(system), **got} for c, got in tried],
        }
    return found


def _ratios(raw: Raw, key: str, top: str, bottom: str, figure: str) -> list[float]:
    ups = {r["round"]: r[figure] for r in raw.get(f"{key}/{top}", [])}
    downs = {r["round"]: r[figure] for r in raw.get(f"{key}/{bottom}", [])}
    return [ups[n] / downs[n] for n in sorted(ups.keys() & downs.keys())]


def summarize(raw: Raw) -> dict[str, Any]:
    """Each figure's median (min-max) over rounds; latencies pooled over rounds (p50, p99);
    the ratios within rounds."""
    out: dict[str, Any] = {}
    for key, runs in raw.items():
        if key.endswith("/wake"):
            out[key] = {
                name: {"p50": percentile(pool, 50), "p99": percentile(pool, 99), "n": len(pool)}
                for name in ("sleep_ms", "event_ms", "gather_ms")
                if (pool := [x for r in runs for x in r[name]])
            }
            continue
        out[key] = {k: spread([r[k] for r in runs]) for k in runs[0] if k != "round"}
    for backend in BACKENDS:
        if ratios := _ratios(raw, f"{backend}/no_step", "bare", "plain", "jobs_s"):
            out[f"{backend}/no_step_ratio"] = spread(ratios)
        if ratios := _ratios(raw, f"{backend}/no_step", "bare", "plain_ctx", "jobs_s"):
            out[f"{backend}/no_step_ctx_ratio"] = spread(ratios)
        # Worker CPU per job, plain over durable: the same direction as jobs/s (>= 0.97 good).
        if ratios := _ratios(raw, f"{backend}/no_step", "plain", "bare", "cpu_ms_per_job"):
            out[f"{backend}/no_step_cpu_ratio"] = spread(ratios)
    if ratios := _ratios(raw, "postgres/three", "chokaq", "dbos", "jobs_s"):
        out["postgres/three_ratio"] = spread(ratios)
    return out


LABELS = (
    ("postgres/three/chokaq", "jobs_s", "three steps: chokaq jobs/s"),
    ("postgres/three/chokaq", "peak_rss_mib", "three steps: chokaq worker peak RSS MiB"),
    ("postgres/three/dbos", "jobs_s", "three steps: DBOS jobs/s"),
    ("postgres/three/dbos", "peak_rss_mib", "three steps: DBOS peak RSS MiB"),
    ("postgres/three/dbos", "enqueue_jobs_s", "three steps: DBOS enqueue jobs/s (32 threads)"),
    ("postgres/three_ratio", None, "three steps: chokaq / DBOS (within rounds; goal >= 5)"),
    ("{b}/crash", "kill_to_resume_s", "{b} crash: kill to step 2 resumed elsewhere, s"),
    ("{b}/crash", "bound_s", "{b} crash: goal, under zombie timeout + rescue interval, s"),
    (
        "postgres/dbos_crash",
        "restart_to_resume_s",
        "DBOS crash: same executor restart to resume, s",
    ),
    (
        "postgres/dbos_crash",
        "resumed_elsewhere",
        "DBOS crash: resumed by the other executor (1 yes)",
    ),
    ("postgres/dbos_crash", "observed_s", "DBOS crash: kill to restart (watched that long), s"),
    ("{b}/no_step/plain", "jobs_s", "{b}: plain jobs/s"),
    ("{b}/no_step/bare", "jobs_s", "{b}: durable no-step jobs/s"),
    ("{b}/no_step/plain_ctx", "jobs_s", "{b}: plain jobs taking ctx, jobs/s"),
    ("{b}/no_step_ratio", None, "{b}: durable no-step / plain (within rounds; goal >= 0.97)"),
    ("{b}/no_step_ctx_ratio", None, "{b}: durable no-step / plain taking ctx (within rounds)"),
    ("{b}/no_step/plain", "cpu_ms_per_job", "{b}: plain, worker CPU ms per job"),
    ("{b}/no_step/bare", "cpu_ms_per_job", "{b}: durable no-step, worker CPU ms per job"),
    ("{b}/no_step_cpu_ratio", None, "{b}: CPU per job, plain / durable no-step (within rounds)"),
    ("{b}/steps", "steps_s", "{b}: steps/s (first step start to last step end)"),
    ("{b}/steps", "steps_s_from_worker_start", "{b}: steps/s from the worker's start"),
    ("{b}/steps", "peak_rss_mib", "{b}: steps run, worker peak RSS MiB"),
)


def table(summary: dict[str, Any]) -> str:
    lines: list[tuple[str, str]] = [("figure", "median (min-max)")]
    for key, figure, label in LABELS:
        for backend in BACKENDS if "{b}" in key else ("",):
            at = summary.get(key.format(b=backend))
            if at is not None:
                lines.append((label.format(b=backend), cell(at[figure] if figure else at)))
    for backend in BACKENDS:
        for name, got in summary.get(f"{backend}/wake", {}).items():
            kind = name.removesuffix("_ms")
            shown = f"p50 {got['p50']:.1f}, p99 {got['p99']:.1f} (n {got['n']})"
            lines.append((f"{backend}: pickup after a wake by {kind}, ms", shown))
    width = max(len(a) for a, _ in lines)
    return "\n".join(f"{a.ljust(width)}  {b}" for a, b in lines)


def _config(text: str) -> Config:
    """``concurrency[,processes[,poll[,threads]]]``; concurrency 0: uncapped (DBOS)."""
    parts = text.split(",")
    try:
        concurrency = int(parts[0]) or None
        processes = int(parts[1]) if len(parts) > 1 else 1
        poll = float(parts[2]) if len(parts) > 2 else 0.05
        threads = int(parts[3]) if len(parts) > 3 and parts[3] else None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not concurrency[,processes[,poll[,threads]]]: {text}"
        ) from None
    return Config(concurrency, processes, poll, threads)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--jobs", type=int, default=20_000, help="jobs per burn-down (default 20,000)")
    p.add_argument("--step-jobs", type=int, default=200, help="jobs of --steps steps")
    p.add_argument("--steps", type=int, default=50, help="steps per job for steps/s")
    p.add_argument("--wakes", type=int, default=50, help="jobs per wake kind (default 50)")
    p.add_argument("--zombie", type=float, default=10.0, help="zombie timeout s (crash)")
    p.add_argument("--rescue", type=float, default=2.0, help="rescue interval s (crash)")
    p.add_argument("--chokaq", type=_config, default=CHOKAQ_BEST, help="concurrency[,processes]")
    p.add_argument(
        "--dbos",
        type=_config,
        default=DBOS_BEST,
        help="worker_concurrency (0 uncapped)[,processes[,poll[,threads]]]",
    )
    p.add_argument("--sweep", action="store_true", help="find each side's best first")
    p.add_argument("--sweep-jobs", type=int, default=2_000, help="jobs per sweep run")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    p.add_argument("--measurements", default=",".join(MEASUREMENTS), help="comma-separated")
    p.add_argument("--quick", action="store_true", help="a check: 1 round, small sizes")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the JSON goes")
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if args.quick:
        args.rounds, args.jobs, args.step_jobs, args.steps, args.wakes = 1, 300, 20, 5, 5
        args.zombie, args.rescue, args.sweep_jobs = 6.0, 1.0, 100
    select(args, BACKENDS, MEASUREMENTS)
    started = time.perf_counter()
    notes = machine_notes()
    notes["versions"] = {**notes["versions"], "dbos": _version("dbos")}  # type: ignore[dict-item]
    print(f"{args.rounds} round(s), {args.jobs:,} jobs; load {os.getloadavg()[0]:.2f}", flush=True)
    raw: Raw = {}
    swept: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="chokaq-durable-") as folder:
        app_dir = Path(folder)
        (app_dir / f"{apps.CHOKAQ_APP_NAME}.py").write_text(apps.CHOKAQ_APP)
        (app_dir / f"{apps.DBOS_APP_NAME}.py").write_text(apps.DBOS_APP)
        if args.sweep and "postgres" in args.backends:
            swept = sweep(args, app_dir)
            args.chokaq, args.dbos = swept["chokaq"]["best"], swept["dbos"]["best"]
        print(f"chokaq: {args.chokaq.label('chokaq')}; DBOS: {args.dbos.label('dbos')}", flush=True)
        for round_no in range(1, args.rounds + 1):
            run_round(raw, round_no, args, app_dir)
    summary = summarize(raw)
    record = {
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": time.perf_counter() - started,
        "quick": args.quick,
        "config": {
            "rounds": args.rounds,
            "jobs": args.jobs,
            "step_jobs": args.step_jobs,
            "steps": args.steps,
            "wakes": args.wakes,
            "zombie_seconds": args.zombie,
            "rescue_seconds": args.rescue,
            "backends": args.backends,
            "measurements": args.measurements,
            "sweep_jobs": args.sweep_jobs,
            "chokaq": args.chokaq.label("chokaq"),
            "dbos": args.dbos.label("dbos"),
        },
        "sweep": {
            system: {"best": got["best"].label(system), "tried": got["tried"]}
            for system, got in swept.items()
        },
        "machine": notes,
        "loadavg_at_end": list(os.getloadavg()),
        "raw": raw,
        "summary": summary,
    }
    save(args.out, record)
    print()
    print(f"chokaq: {args.chokaq.label('chokaq')}; DBOS: {args.dbos.label('dbos')}")
    print(table(summary))
    print(f"wall time {record['wall_seconds']:.0f} s; JSON: {args.out}")
    return record


if __name__ == "__main__":
    main()


# -- the report's section --------------------------------------------------------------------


# What a profile found, dated and kept with the commit it was taken at: a finding, not a figure
# this report computes (so a later run cannot leave it stale without the date saying so).
NOTES = [
    "",
    "### Where the time goes (profiled 2026-12-08, engine at 384789f)",
    "",
    "Counted on a database of its own (so the server's commit counter is the worker's alone), "
    "2,000 jobs at concurrency 10: a plain job and a durable job without steps each cost 0.20 "
    "transactions (claims and finalizes are batched); a three-step job costs **4.82**: the read "
    "of its recorded steps on its first durable call (1), one statement per step (3), and "
    "smaller claim and finalize batches (its slots free one at a time). Each is a round trip "
    "and a commit; the server's part is small (a commit with its fsync takes 4.5 ms here, and "
    "`synchronous_commit=off` only took that burn-down from 154 to 205 jobs/s), so the cost is "
    "the round trips on a loaded two-core machine. DBOS, counted the same way, runs 14.8 "
    "transactions per workflow (its 0.01 s queue polls included). What would reach 5x: record "
    "the steps of concurrent jobs in one statement (one `steps_record_many` per tick, each "
    "caller awaiting its own row, as the finalizer batches its moves), and skip the steps read "
    "for a run that cannot have any (a flag the first record sets on the job row, returned by "
    "the claim).",
    "",
    "No-step cost (2026-12-08): the wall-time ratio of the same two burn-downs ranged from "
    "0.76 to 2.44 between rounds on this machine (load average 7 to 22 on 2 cores while it "
    "ran), far beyond the 3 % the goal allows, so no verdict on it holds either way. What the "
    "load does not inflate agrees: the worker's CPU per job is 1.03x (SQLite) and 1.01x "
    "(PostgreSQL) a plain job's, and a durable job without steps runs the same 0.20 "
    "transactions per job: no extra cost was found.",
]


def _goal(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _targets(
    summary: dict[str, Any], config: dict[str, Any], alone: dict[str, Any] | None = None
) -> list[str]:
    """The issue's goals, each with its verdict computed from the figures (``alone``: a run of
    some measurements on their own, labelled with its rounds and time)."""
    rows = []
    said = f" ({config['rounds']} rounds alone, {alone['finished_at'][:16]})" if alone else ""
    if ratio := summary.get("postgres/three_ratio"):
        rows.append(
            (f"three-step jobs/s, chokaq / DBOS{said}", cell(ratio), ">= 5x", ratio["median"] >= 5)
        )
    for backend in BACKENDS:
        if crash := summary.get(f"{backend}/crash"):
            took, bound = (
                crash["kill_to_resume_s"],
                config["zombie_seconds"] + config["rescue_seconds"],
            )
            rows.append(
                (
                    f"{backend}: kill to resume, s",
                    cell(took),
                    f"< {bound:g} (zombie + rescue)",
                    took["max"] < bound,
                )
            )
        for key, against in (
            ("no_step_ratio", "plain, jobs/s"),
            ("no_step_ctx_ratio", "plain taking ctx, jobs/s"),
            ("no_step_cpu_ratio", "plain, worker CPU per job (plain's / durable's)"),
        ):
            if ratio := summary.get(f"{backend}/{key}"):
                rows.append(
                    (
                        f"{backend}: durable no-step / {against}{said}",
                        cell(ratio),
                        ">= 0.97",
                        ratio["median"] >= 0.97,
                    )
                )
    return [f"| {a} | {b} | {c} | {_goal(d)} |" for a, b, c, d in rows]


def markdown(record: dict[str, Any], more: list[dict[str, Any]] | None = None) -> list[str]:
    """The Durable section of bench/RESULTS.md, from this script's JSON; ``more`` are further
    runs of some of its measurements alone (more rounds where the machine's noise needs them),
    whose figures are shown beside the main run's, never merged into them."""
    cfg, summary = record["config"], record["summary"]
    load = f"{record['machine']['loadavg_at_start'][0]:.1f} / {record['loadavg_at_end'][0]:.1f}"
    lines = [
        "## 5. Durable jobs against DBOS Transact (PostgreSQL and SQLite)",
        "",
        f"`bench/durable.py --sweep --rounds {cfg['rounds']}` (finished {record['finished_at']}, "
        f"chokaq at {record['machine']['git']}, DBOS Transact "
        f"{record['machine']['versions'].get('dbos', '?')}); method in its docstring. Every "
        "process is a fresh interpreter running what a user runs (chokaq's CLI worker; DBOS's "
        "own process, `DBOS.launch()` and its queue), timed from outside from its start until "
        "the store says every job is done (chokaq's burst exit; DBOS's `workflow_status` rows, "
        "polled every 0.1 s), peak RSS of its process tree from /proc; every store is analyzed "
        "after its fill. Ratios are taken within each round (which side goes first "
        f"alternates), then their median (min-max). Load average at the start / end: {load} "
        "on 2 cores (other work shared the machine).",
        "",
        "| Goal (issue 34) | Measured | Goal | |",
        "|---|---|---|---|",
        *_targets(summary, cfg),
        *(
            row
            for extra in more or []
            for row in _targets(extra["summary"], extra["config"], extra)
        ),
        "",
        f"### {cfg['jobs']:,} jobs of three no-op steps, burn-down (PostgreSQL)",
        "",
        f"Configurations: chokaq {cfg['chokaq']}; DBOS {cfg['dbos']}, each the best of its "
        "sweep below. DBOS's queue is seeded with `Queue.enqueue` from 32 threads (it has no "
        "bulk enqueue; one thread managed 152/s here), chokaq's with `enqueue_many`.",
        "",
        "| System | jobs/s | peak RSS MiB | enqueue jobs/s |",
        "|---|---|---|---|",
    ]
    lines += _three_rows(summary, cfg)
    for extra in more or []:
        if rows := _three_rows(extra["summary"], extra["config"]):
            lines += [
                "",
                f"The same burn-down run alone, {extra['config']['rounds']} rounds (finished "
                f"{extra['finished_at']}, chokaq at {extra['machine']['git']}):",
                "",
                "| System | jobs/s | peak RSS MiB | enqueue jobs/s |",
                "|---|---|---|---|",
                *rows,
            ]
    lines += _sweep_lines(record)
    lines += _crash_lines(summary, cfg)
    lines += _alone_lines(summary, cfg)
    return [*lines, *NOTES, ""]


def _three_rows(summary: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    """The three-step burn-down table's rows, one per system measured."""
    return [
        f"| {name} ({cfg[system]}) | {cell(got['jobs_s'])} | "
        f"{cell(got['peak_rss_mib'])} | {cell(got['enqueue_jobs_s'])} |"
        for system, name in (("chokaq", "chokaq"), ("dbos", "DBOS Transact"))
        if (got := summary.get(f"postgres/three/{system}"))
    ]


def _sweep_lines(record: dict[str, Any]) -> list[str]:
    swept = record.get("sweep") or {}
    if not swept:
        return []
    lines = [
        "",
        f"The sweep (one run each, {record['config'].get('sweep_jobs', 2000):,} jobs, same "
        "PostgreSQL, before the rounds):",
        "",
        "| System | configuration | jobs/s | peak RSS MiB |",
        "|---|---|---|---|",
    ]
    for system, got in swept.items():
        for tried in got["tried"]:
            lines.append(
                f"| {system} | {tried['config']} | {tried['jobs_s']:,.0f} | "
                f"{tried['peak_rss_mib']:.1f} |"
            )
    return lines


def _crash_lines(summary: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    zombie, rescue = cfg["zombie_seconds"], cfg["rescue_seconds"]
    lines = [
        "",
        "### Crash to resume",
        "",
        f"A three-step job's worker is SIGKILLed inside step 2. chokaq: zombie timeout {zombie:g} "
        f"s, rescue interval {rescue:g} s, heartbeat every 1-2 s; the survivor (the elected "
        "worker) starts step 2 again; time from the kill. DBOS: after the kill another executor "
        f"(another `DBOS__VMID`) runs for {2 * (zombie + rescue):g} s, then the dead executor's "
        "id is restarted; its launch re-enqueues the workflow, and any executor may run it.",
        "",
        "| | median (min-max) |",
        "|---|---|",
    ]
    for backend in BACKENDS:
        if got := summary.get(f"{backend}/crash"):
            took = cell(got["kill_to_resume_s"])
            lines.append(f"| chokaq, {backend}: kill to step 2 resumed, s | {took} |")
    if got := summary.get("postgres/dbos_crash"):
        lines += [
            f"| DBOS: resumed by the other executor within {got['observed_s']['median']:.0f} s "
            f"(1 yes, 0 no) | {cell(got['resumed_elsewhere'])} |",
            f"| DBOS: restart of the same executor id to step 2 resumed, s | "
            f"{cell(got['restart_to_resume_s'])} |",
        ]
    return lines


def _alone_lines(summary: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "### The cost of `durable=True`, steps/s and the pickup after a wake (chokaq)",
        "",
        f"No-step cost: {cfg['jobs']:,} jobs, CLI worker at concurrency 10, `durable=True` "
        "handlers that make no durable call (they take `ctx`, as a durable handler must) "
        "against plain ones, with and (where measured) without a `ctx` parameter. Steps/s: "
        f"{cfg['step_jobs']} "
        f"jobs of {cfg['steps']} no-op steps, steps over the first step's start to the last "
        f"one's end (from `job_steps`). Pickup: {cfg['wakes']} jobs of each kind per round on "
        "an idle worker (concurrency 10), pooled over the rounds: sleep (1-2 s, from the "
        "recorded end), event (from just before `app.send_event` in another process, one every "
        "20 ms), gather (one spawned child, from its `finished_at`).",
        "",
        "| Backend | plain jobs/s | durable no-step jobs/s | ratio | steps/s "
        "| pickup p50 / p99 ms: sleep | event | gather |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for backend in BACKENDS:
        plain, bare = (
            summary.get(f"{backend}/no_step/plain"),
            summary.get(f"{backend}/no_step/bare"),
        )
        ratio, steps = summary.get(f"{backend}/no_step_ratio"), summary.get(f"{backend}/steps")
        wake = summary.get(f"{backend}/wake", {})
        if not (plain or steps or wake):
            continue
        cells = [
            cell(plain["jobs_s"]) if plain else "n/a",
            cell(bare["jobs_s"]) if bare else "n/a",
            cell(ratio) if ratio else "n/a",
            cell(steps["steps_s"]) if steps else "n/a",
        ]
        for kind in ("sleep_ms", "event_ms", "gather_ms"):
            got = wake.get(kind)
            cells.append(f"{got['p50']:.1f} / {got['p99']:.1f}" if got else "n/a")
        lines.append(f"| {backend} | " + " | ".join(cells) + " |")
    return lines

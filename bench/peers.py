"""Part 2: chokaq against the queues a team would pick instead (PgQueuer and procrastinate on the
same PostgreSQL; Celery on RabbitMQ and Redis; RQ on Redis), end to end, in the same run.

Every measurement gets a fresh store per system (bench/lineup.py picks the systems); in each
round the systems run one after the other (side by side), and each figure is the median over
rounds with min and max. Every worker is the system's own command line, timed from outside
(bench/outside.py), with the same handler work: a no-op, or one Redis INCR ("+incr" keys).

* burn-down: bulk-enqueue ``jobs`` jobs (batches of 10,000 where the system has a bulk API;
  enqueue jobs/s), then one worker process drains them: processing jobs/s = jobs / the time from
  the worker's start until all are done (its burst exit; or, for Celery and RQ, whose exit
  cannot mark the end, the Redis counter the handlers INCR); peak RSS of the worker's process
  tree, sampled from /proc.
* pickup (no-op handlers): an idle worker; ``pickups`` single jobs enqueued one at a time at
  about 50/s; the handler records time.time() - the time the job was sent; p50/p95/p99.
* history (PostgreSQL systems, no-op): the burn-down again with ``history`` finished jobs
  already stored (each system's own place for them), run right beside an empty burn-down
  (alternating which goes first); the change is taken within each pair, and its median over
  rounds is the figure.
* steady (PostgreSQL systems, no-op): a producer inserting single jobs at ``rate``/s for
  ``seconds`` while a worker keeps up; afterwards: backlog when the producer stopped, dead
  tuples, table + index size and WAL bytes per job (cluster-wide WAL, so other activity on the
  server adds to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.measure import analyze, percentile, spread, storage_figures, wal_lsn
from bench.outside import counter, measure, stop, tree_rss_kb
from bench.systems import (
    Surface,
    System,
    data_schema,
    load_history,
    postgres_systems,
    unfinished,
    work_of,
)

SECTIONS = ("burn_down", "history", "pickup", "steady", "ceiling")
_STEADY_SETTINGS = ("steady_rate_per_s", "steady_seconds", "peer_steady_seconds", "steady_runs")


def _log(system: Surface) -> Path:
    # The worker's stderr goes to a file so that a failure can be reported with its cause.
    return Path(tempfile.gettempdir()) / f"bench_worker_{system.key}.log"


def burn_down(system: Surface, jobs: int, history: int = 0) -> dict[str, float]:
    """Bulk-enqueue ``jobs``, then time one burst worker from outside until all are done: by
    its exit when that marks the end (chokaq, PgQueuer, procrastinate), else by the Redis
    counter the handlers INCR (Celery, RQ: the harness polls it, then stops the worker). Each
    system ends the same way whatever its handler does. A run whose handlers INCR also proves
    that every job ran once: the counter must equal ``jobs`` once the worker is gone."""
    counts = work_of(system.key) == "incr" or not system.ends_by_exit
    with (
        system.store() as store,
        counter() if counts else contextlib.nullcontext() as done,
        tempfile.TemporaryDirectory() as folder,
    ):

        async def prepare() -> float:
            await system.open(store, install=True)
            try:
                if history:
                    load_history(store, system.key, history)
                return await system.enqueue_bulk(jobs)
            finally:
                await system.close()

        enqueue_rate = asyncio.run(prepare())
        analyze(store)  # as autovacuum would after the fill (a PostgreSQL store only)
        argv, env = system.launch(store, "burst", Path(folder), COUNTER=done.key if done else "")
        seen = measure(
            argv,
            env,
            _log(system),
            done=None if system.ends_by_exit else (lambda: done.value() >= jobs),
            hurry_after=system.hurry_after,
        )
        left = system.unfinished(store)
        ran = done.value() if done else jobs
    if left:
        raise RuntimeError(f"{system.label}: {left} jobs left after the burn-down")
    if ran != jobs:
        raise RuntimeError(f"{system.label}: {ran} handler runs counted for {jobs} jobs")
    figures = {
        "enqueue_jobs_s": enqueue_rate,
        "process_jobs_s": jobs / seen.elapsed_s,
        "peak_rss_mib": seen.peak_rss_kb / 1024,
        "jobs": float(jobs),
    }
    return {**figures, "handler_runs": float(ran)} if done else figures


def _start_worker(
    system: Surface, store: str, folder: Path, lat_file: str = ""
) -> subprocess.Popen[bytes]:
    argv, env = system.launch(store, "serve", folder, LAT_FILE=lat_file)
    with _log(system).open("wb") as err:
        # Its own session, so that a pool's children can be stopped with it.
        return subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )


def _worker_log(system: Surface) -> str:
    log = _log(system)
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


# compare.py, idle.py and workflows.py stop their workers this way too.
_stop = stop


def pickup(system: Surface, count: int, interval: float = 0.02) -> dict[str, float]:
    with system.store() as url, tempfile.TemporaryDirectory() as tmp:
        lat_file = str(Path(tmp) / "lat.txt")

        async def drive() -> None:
            await system.open(url, install=True)
            proc = _start_worker(system, url, Path(tmp), lat_file)
            try:
                # Warm-up job: wait until the worker has started and handled one job.
                await system.enqueue_one(time.time())
                deadline = time.monotonic() + 60
                while not Path(lat_file).exists() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                Path(lat_file).unlink(missing_ok=True)
                await asyncio.sleep(1.0)  # idle again
                for _ in range(count):
                    await system.enqueue_one(time.time())
                    await asyncio.sleep(interval)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    path = Path(lat_file)
                    if path.exists() and len(path.read_text().split()) >= count:
                        break
                    await asyncio.sleep(0.05)
            finally:
                stop(proc, system.hurry_after)
                await system.close()

        asyncio.run(drive())
        path = Path(lat_file)
        ms = [float(x) * 1000 for x in path.read_text().split()] if path.exists() else []
    if len(ms) < count:
        raise RuntimeError(
            f"{system.label}: only {len(ms)} of {count} pickups recorded\n{_worker_log(system)}"
        )
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
    }


def steady(system: System, rate: float, seconds: float) -> dict[str, float]:
    with system.store() as url, tempfile.TemporaryDirectory() as tmp:

        async def drive() -> dict[str, float]:
            await system.open(url, install=True)
            proc = _start_worker(system, url, Path(tmp))
            rss: list[tuple[float, float]] = []  # (seconds into the load, MiB of the tree)
            try:
                await asyncio.sleep(2.0)
                wal_before = wal_lsn(url)
                started = time.monotonic()
                sent = 0
                next_rss = 0.0
                while (elapsed := time.monotonic() - started) < seconds:
                    if elapsed >= next_rss:
                        rss.append((elapsed, tree_rss_kb(proc.pid) / 1024))
                        next_rss = elapsed + RSS_EVERY_SECONDS
                    due = int(elapsed * rate) + 1
                    while sent < due:
                        await system.enqueue_one(0.0)
                        sent += 1
                    await asyncio.sleep(max(0.0, (sent / rate) - (time.monotonic() - started)))
                produced_rate = sent / (time.monotonic() - started)
                backlog = unfinished(url, system.key)
                drain_started = time.monotonic()
                while unfinished(url, system.key) and time.monotonic() - drain_started < 120:
                    await asyncio.sleep(0.2)
                drain_seconds = time.monotonic() - drain_started
                wal_per_job = (wal_lsn(url) - wal_before) / sent
            finally:
                stop(proc, system.hurry_after)
                await system.close()
            sizes = storage_figures(url, [data_schema(system.key)])
            return {
                "produced_jobs_s": produced_rate,
                "backlog_at_end": float(backlog),
                "drain_seconds": drain_seconds,
                "wal_bytes_per_job": wal_per_job,
                "dead_tuples": sizes["dead_tuples"],
                "total_bytes": sizes["table_bytes"] + sizes["index_bytes"],
                "jobs": float(sent),
                "seconds": float(seconds),
                **rss_drift(rss),
            }

        return asyncio.run(drive())


RSS_EVERY_SECONDS = 5.0


def rss_drift(samples: list[tuple[float, float]]) -> dict[str, float]:
    """The worker's memory over a steady load: the median of its first and of its last minute
    of samples (the first minute after a 2 s warm-up), their difference, and the highest."""
    if not samples:
        return {}
    first = [mib for at, mib in samples if at < 60.0] or [samples[0][1]]
    last = [mib for at, mib in samples if at >= samples[-1][0] - 60.0]
    head, tail = statistics.median(first), statistics.median(last)
    return {
        "rss_first_minute_mib": head,
        "rss_last_minute_mib": tail,
        "rss_growth_mib": tail - head,
        "rss_max_mib": max(mib for _, mib in samples),
    }


def ceiling(jobs: int) -> dict[str, float]:
    """The storage loop on a fresh database (bench/worker_profile.py: fetch 100 with start, one
    finalize of successes per batch, one connection, in this process): what chokaq's own
    statements allow, for the worker's share of it."""
    from bench.worker_profile import one

    r = one("loop", jobs)
    return {"process_jobs_s": r["jobs_s"], "server_cpu_us": r["server_cpu_us"]}


def _attempt(what: str, call: Any, *args: Any) -> dict[str, float] | None:
    """One measurement, retried once: the server is shared and may restart under the suite.
    A measurement that fails twice is left out (the report shows how many runs each figure
    has) rather than throwing the others away."""
    for attempt in (1, 2):
        try:
            return call(*args)  # type: ignore[no-any-return]
        except Exception as exc:
            print(f"  !! {what} failed (attempt {attempt}): {exc!r}", flush=True)
            time.sleep(5)
    return None


def _collect(per_run: list[dict[str, float]]) -> dict[str, Any]:
    return {"runs": per_run, "figures": {k: spread([r[k] for r in per_run]) for k in per_run[0]}}


def _burn_downs(
    system: System,
    round_no: int,
    raw: dict[str, dict[str, list[dict[str, float]]]],
    sections: Sequence[str],
    jobs: int,
    history: int,
) -> None:
    """One round's burn-down of ``system`` and, with history, its history burn-down right
    beside it: the change is taken within the pair, so that the machine's drift between rounds
    (often more than the 5 % the history target allows) cancels out. The order alternates
    between rounds. When only the history section is rerun, its empty partner runs all the
    same and is kept in the history record."""
    jobs = min(jobs, system.max_jobs or jobs)
    paired = _sql_and_noop(system) and not system.burn_down_only and system.key != "pgqueuer-c10"
    if history and "history" in sections and paired:
        order = (0, history) if round_no % 2 else (history, 0)
    elif "burn_down" in sections:
        order = (0,)
    else:
        return
    got: dict[int, dict[str, float]] = {}
    for stored in order:
        what = f"{system.label} " + (f"+{stored:,} history" if stored else "burn-down")
        r = _attempt(what, burn_down, system, jobs, stored)
        if r is None:
            return  # a pair without one half says nothing about history
        got[stored] = r
        print(
            f"  round {round_no} {what}: enqueue {r['enqueue_jobs_s']:,.0f}/s, "
            f"process {r['process_jobs_s']:,.0f}/s, RSS {r['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    if "burn_down" in sections:
        raw["burn_down"][system.key].append(got[0])
    if len(got) == 2:
        full, empty = got[history]["process_jobs_s"], got[0]["process_jobs_s"]
        raw["history"][system.key].append(
            {
                "process_jobs_s": full,
                "empty_process_jobs_s": empty,
                "change_pct": (full / empty - 1) * 100,
            }
        )
        print(f"  round {round_no} {system.label} history change: {(full / empty - 1):+.1%}")


def run(
    *,
    jobs: int,
    pickups: int,
    history: int,
    rate: float,
    seconds: float,
    runs: int,
    steady_runs: int = 1,
    peer_seconds: float | None = None,
    include_peers: bool = True,
    checkpoint: Any = None,
    sections: Sequence[str] = SECTIONS,
    earlier: dict[str, Any] | None = None,
    systems: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Every section, or only ``sections``: the others keep their runs from ``earlier`` (the
    stored record of a previous run of this part), and the report says which came from when.
    ``systems``: the configurations to compare (bench/lineup.py); by default chokaq and, with
    ``include_peers``, the PostgreSQL peers installed, with the no-op handler."""
    systems = list(systems) if systems is not None else postgres_systems(include_peers)
    labels = {s.key: s.label for s in systems}
    raw: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {s.key: [] for s in systems} for name in SECTIONS
    }
    raw["ceiling"]["storage-loop"] = []
    labels["storage-loop"] = "storage loop (fetch 100 + finalize, one connection)"
    kept = [name for name in SECTIONS if name not in sections]

    def config(done: int) -> dict[str, Any]:  # the configuration block after ``done`` rounds
        block = {
            "jobs": jobs,
            "concurrency": 10,
            "enqueue_batch": 10_000,
            "pickups": pickups,
            "pickup_rate_per_s": 50,
            "history": history,
            "steady_rate_per_s": rate,
            "steady_seconds": seconds,
            "peer_steady_seconds": peer_seconds or seconds,
            "steady_runs": min(steady_runs, done),
            "runs": done,
            "systems": [s.key for s in systems],
            # Read by the report: how these figures were taken (earlier records ran the worker
            # in process and timed it from inside).
            "measured_from": "outside",
        }
        return {"config": _with_earlier(block, kept, earlier)}

    if kept:
        if earlier is None:
            raise ValueError("rerunning some sections needs the earlier run's record")
        for name in kept:
            for key, runs_of in earlier["data"]["results"].get(name, {}).items():
                raw[name][key] = list(runs_of["runs"])
    for round_no in range(1, runs + 1):
        for system in systems:
            _burn_downs(system, round_no, raw, sections, jobs, history)
        for system in systems:
            if (
                system.key == "pgqueuer-c10"
                or system.burn_down_only
                or work_of(system.key) != "noop"
                or "pickup" not in sections
            ):
                continue  # pickup: once per peer, in its best configuration, no-op handler
            r = _attempt(f"{system.label} pickup", pickup, system, pickups)
            if r is None:
                continue
            raw["pickup"][system.key].append(r)
            print(
                f"  round {round_no} {system.label} pickup: p50 {r['p50_ms']:.2f} ms, "
                f"p99 {r['p99_ms']:.2f} ms",
                flush=True,
            )
        for system in systems:
            if (
                system.key == "pgqueuer-c10"
                or system.burn_down_only
                or not _sql_and_noop(system)
                or not seconds
                or round_no > steady_runs
                or "steady" not in sections
            ):
                continue  # the long steady load runs in the first rounds only
            # chokaq's memory is watched over the whole load; the peers' loads may be shorter.
            length = seconds if system.key == "chokaq" else peer_seconds or seconds
            r = _attempt(f"{system.label} steady", steady, system, rate, length)
            if r is None:
                continue
            raw["steady"][system.key].append(r)
            print(
                f"  round {round_no} {system.label} steady {rate:.0f}/s: backlog "
                f"{r['backlog_at_end']:.0f}, dead {r['dead_tuples']:.0f}, "
                f"WAL {r['wal_bytes_per_job']:,.0f} B/job, RSS "
                f"{r.get('rss_first_minute_mib', 0):.1f} -> "
                f"{r.get('rss_last_minute_mib', 0):.1f} MiB",
                flush=True,
            )
        if "ceiling" in sections and any(s.key == "chokaq" for s in systems):
            r = _attempt("storage loop (ceiling)", ceiling, jobs)
            if r is not None:
                raw["ceiling"]["storage-loop"].append(r)
                print(
                    f"  round {round_no} storage loop ceiling: {r['process_jobs_s']:,.0f}/s",
                    flush=True,
                )
        if checkpoint is not None:
            checkpoint(_result(raw, labels, config(round_no)))
    return _result(raw, labels, config(runs))


def _sql_and_noop(system: Surface) -> bool:
    """History and the steady load read the database's own tables: PostgreSQL systems only,
    with the no-op handler."""
    return bool(system.database) and work_of(system.key) == "noop"


def _with_earlier(
    config: dict[str, Any], kept: list[str], earlier: dict[str, Any] | None
) -> dict[str, Any]:
    """The configuration, plus where the sections that were not rerun come from (their own
    settings, such as the steady load's, are the earlier run's)."""
    if not kept or earlier is None:
        return config
    before = earlier["data"]["config"]
    merged = dict(config)
    own = {"pickup": ("pickups", "pickup_rate_per_s"), "steady": _STEADY_SETTINGS}
    for name in kept:
        for setting in own.get(name, ()):
            if setting in before:
                merged[setting] = before[setting]
    merged["earlier_run"] = {
        "sections": kept,
        "finished_at": earlier.get("finished_at"),
        "git": earlier.get("machine", {}).get("git"),
    }
    return merged


def _result(raw: dict[str, Any], labels: dict[str, str], config: dict[str, Any]) -> dict[str, Any]:
    return {
        **config,
        "labels": labels,
        "results": {
            name: {key: _collect(v) for key, v in per_system.items() if v}
            for name, per_system in raw.items()
        },
    }

"""Turns the stored JSON of each part (``<out>/results/*.json``) into ``<out>/RESULTS.md`` and the
PNG charts beside it. It measures nothing; every verdict in the report is computed from the
figures here, so that a re-run can never leave a stale claim behind.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from bench import promises

COMMAND = ".venv/bin/python bench/run_all.py"


# Figures this report once gave that were wrong, and why: kept in every report, so that a
# correction is read where the wrong figure was, never replaced without a word.
CORRECTIONS = [
    "## Corrections",
    "",
    "- **2026-12-07, issue 32: the PostgreSQL burn-downs of 2026-12-06 (chokaq af772d3) were "
    "taken on tables PostgreSQL had never analyzed.** The benchmark server runs with autovacuum "
    "off and nothing analyzed a table after its fill, which no production database does. On "
    "analyzed tables that commit's claim read and sorted every pending row and its finalize "
    "walked the index of running jobs: it drained at 1,400-1,500 jobs/s, **0.24-0.28x PgQueuer's "
    "best, not the 1.42x reported** (2.39x at concurrency 100 was wrong the same way). Both plans "
    "are fixed, every part now analyzes after its fill, and the figures below are taken that "
    "way. Side by side in one run (`bench/compare.py`, 5 alternating rounds, 20,000 jobs, "
    "analyzed): the fixed worker (560893d) drains 2.83x (2.62-3.23) the jobs/s of the engine "
    "reported here before (41f3ee7) and 1.41x (1.25-1.48) those of the commit before generic "
    "plans (869be31); on SQLite, which has no plan cache, 1.06x (0.80-1.12).",
    "",
]


def _num(x: float) -> str:
    if x != x:  # NaN
        return "n/a"
    a = abs(x)
    if x == int(x) and a < 1e15:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


# Runs each figure should have; a figure with fewer (a measurement failed twice) says so.
_expected_runs = {"n": 1}


def cell(f: dict[str, float], scale: float = 1.0) -> str:
    """median (min-max), and [k of n runs] when some runs are missing."""
    med, lo, hi = f["median"] * scale, f["min"] * scale, f["max"] * scale
    n = int(f.get("n", 1))
    short = f" [{n} of {_expected_runs['n']} runs]" if 0 < n < _expected_runs["n"] else ""
    if n <= 1 or lo == hi:
        return _num(med) + short
    return f"{_num(med)} ({_num(lo)}-{_num(hi)}){short}"


def _mib(f: dict[str, float]) -> dict[str, float]:
    return {k: (v / 2**20 if k != "n" else v) for k, v in f.items()}


def _load(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted((out / "results").glob("*.json")):
        record = json.loads(path.read_text())
        if "part" in record:  # other tools keep their figures here too (soak.json)
            found[record["part"]] = record
    return found


# -- machine ----------------------------------------------------------------------------------


def _machine(records: dict[str, dict[str, Any]]) -> list[str]:
    any_record = next(iter(records.values()))
    m = any_record["machine"]
    pg = m.get("postgres", {})
    v = m.get("versions", {})
    lines = [
        "## Machine and versions",
        "",
        f"- Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gib']} GiB RAM, {m['platform']}. "
        "The machine is **shared with other work** (the engine's own development and test runs), "
        "so figures are noisy; each is the median of the runs with (min-max).",
        f"- Python {m['python']}; PostgreSQL {pg.get('server_version', '?')} on the same machine "
        f"(shared_buffers {pg.get('shared_buffers')}, synchronous_commit "
        f"{pg.get('synchronous_commit')}, fsync {pg.get('fsync')}, max_wal_size "
        f"{pg.get('max_wal_size')}, **autovacuum {pg.get('autovacuum')}**: dead tuples are "
        "what the workload leaves behind, nothing reclaims them during a run). Every database "
        "is **ANALYZEd after it is filled and before it is measured**, as autovacuum would have "
        "done within a minute of the fill, so that each plan is the one production gets.",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        *_calibration(records),
        "- chokaq measured at: "
        + "; ".join(f"{p} {r['machine'].get('git', '?')}" for p, r in records.items())
        + " (the engine was being tuned while the suite ran).",
        "- Load average when each part started / ended: "
        + "; ".join(
            f"{part} {_num(r['machine']['loadavg_at_start'][0])} / "
            f"{_num(r.get('loadavg_at_end', [float('nan')])[0])}"
            for part, r in records.items()
        )
        + ".",
        "- Parts finished at: "
        + "; ".join(
            f"{p} {r['finished_at']} ({r['wall_seconds'] / 60:.1f} min)" for p, r in records.items()
        )
        + ".",
        "",
    ]
    if any(r.get("quick") for r in records.values()):
        lines.insert(2, "> **Short form** (`--quick`): tiny N, one run. Not a result.\n")
    return lines


def _calibration(records: dict[str, dict[str, Any]]) -> list[str]:
    """The machine's own costs, measured as each part started (median over the parts)."""
    found = [r["machine"]["calibration"] for r in records.values() if "calibration" in r["machine"]]
    if not found:
        return []

    def median(key: str) -> str:
        values = [c[key] for c in found if key in c]
        return _num(statistics.median(values)) if values else "?"

    return [
        f"- Machine calibration (so that other machines can be compared): a pure-Python loop "
        f"(the sum of a million squares) takes {median('python_loop_ms')} ms; a PostgreSQL "
        f"round trip (SELECT 1) takes {median('pg_round_trip_ms')} ms back to back but "
        f"{median('pg_round_trip_after_idle_ms')} ms after 20 ms of idleness. The second is "
        "what every hop of a pickup pays (producer to server, server to the listening worker, "
        "worker to server and back), since an idle process, and here an idle virtual CPU, "
        "has to be woken up."
    ]


# -- part 1 -----------------------------------------------------------------------------------


# Sizes and dead tuples accumulate over the runs on one store, so the report shows the state
# after the last run rather than a median of three different states.
_CUMULATIVE = ("table_bytes", "index_bytes", "dead_tuples", "live_tuples")


def _pillar_rows(data: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    rows = {}
    for r in data["rows"]:
        figures = dict(r["figures"])
        last = r["runs"][-1]
        for key in _CUMULATIVE:
            if key in last:
                figures[key] = {"median": last[key], "min": last[key], "max": last[key], "n": 1}
        rows[(r["design"], r["history"])] = figures
    return rows


def _verdict(ours: float, theirs: float, lower_is_better: bool = True, margin: float = 0.1) -> str:
    if ours != ours or theirs != theirs:
        return "not comparable"
    if theirs == 0:
        if ours == 0:
            return "**no measurable difference** (both 0)"
        better = (ours < 0) if lower_is_better else (ours > 0)
        return f"**{'held' if better else 'did not hold'}** (chokaq {_num(ours)}, baseline 0)"
    ratio = ours / theirs
    better = ratio < 1 - margin if lower_is_better else ratio > 1 + margin
    worse = ratio > 1 + margin if lower_is_better else ratio < 1 - margin
    if better:
        return f"**held** (chokaq {ratio:.2f}x the baseline)"
    if worse:
        return f"**did not hold** (chokaq {ratio:.2f}x the baseline)"
    return f"**no measurable difference** (chokaq {ratio:.2f}x the baseline, within ±10 %)"


def _pillars(rec: dict[str, Any], charts: list[str]) -> list[str]:
    data = rec["data"]
    cfg = data["config"]
    rows = _pillar_rows(data)
    sizes = cfg["history_sizes"]
    big, small = max(sizes), min(sizes)
    C, B = "chokaq (Three Pillars)", "single table"

    def f(design: str, h: int, key: str) -> dict[str, float]:
        return rows[(design, h)][key]

    def med(design: str, h: int, key: str) -> float:
        return f(design, h, key)["median"]

    fetch_growth_c = med(C, big, "fetch_p50_ms") / med(C, small, "fetch_p50_ms")
    fetch_growth_b = med(B, big, "fetch_p50_ms") / med(B, small, "fetch_p50_ms")
    storage_c = med(C, big, "table_bytes") + med(C, big, "index_bytes")
    storage_b = med(B, big, "table_bytes") + med(B, big, "index_bytes")
    if fetch_growth_b <= 1.25:
        fetch_note = (
            "the single table's partial fetch index keeps its fetch off history too (its p50 "
            f"changed {fetch_growth_b:.2f}x from {small:,} to {big:,} history rows)"
        )
    else:
        fetch_note = (
            f"the single table's fetch p50 grew {fetch_growth_b:.2f}x with history, chokaq's "
            f"{fetch_growth_c:.2f}x"
        )
    lines = [
        "## 1. The Three Pillars against a single table (PostgreSQL, storage level)",
        "",
        f"Workload per run: enqueue {cfg['jobs_per_run']:,} jobs in batches of "
        f"{cfg['enqueue_batch']:,}, drain them with fetch(limit {cfg['fetch_limit']}, straight "
        f"into processing) + finalize (succeed), then {cfg['summary_reads_per_run']} dashboard "
        f"summary reads and {cfg['archive_reads_per_run']} archive pages ({cfg['archive_filter']})."
        f" History (90 % succeeded, 10 % failed, 30 days) loaded with INSERT ... SELECT "
        f"generate_series before the runs; {cfg['runs']} run(s) per cell, each design in its own "
        "fresh database, chokaq and the baseline alternating. chokaq goes through its Backend "
        "API; the baseline is `bench/single_table.py` (one `jobs` table, partial fetch index on "
        "pending rows in claim order, partial index on fetched/processing rows, (status, "
        "finished_at) index, UUIDv7 ids, fillfactor 80). Sizes and dead tuples are read after "
        "the last run (so after "
        f"{cfg['runs'] * cfg['jobs_per_run']:,} jobs went through the store; autovacuum is off); "
        "WAL bytes per job are over enqueue + drain.",
        "",
        f"### The design's Performance Impact table, measured (history {big:,} jobs)",
        "",
        "| Metric | Claim: single table | Claim: Three Pillars | Measured: single table | "
        "Measured: chokaq | Claim |",
        "|---|---|---|---|---|---|",
        f"| Fetch query scan | All rows (millions) | Only Pending rows | fetch p50 "
        f"{cell(f(B, big, 'fetch_p50_ms'))} ms, p99 {cell(f(B, big, 'fetch_p99_ms'))} ms; "
        f"{fetch_growth_b:.2f}x its p50 at {small:,} history | fetch p50 "
        f"{cell(f(C, big, 'fetch_p50_ms'))} ms, p99 {cell(f(C, big, 'fetch_p99_ms'))} ms; "
        f"{fetch_growth_c:.2f}x its p50 at {small:,} history | "
        f"{_verdict(med(C, big, 'fetch_p50_ms'), med(B, big, 'fetch_p50_ms'))}; {fetch_note} |",
        f"| Index fragmentation | High (mixed INSERT/DELETE) | Low (append-mostly per table) | "
        f"index {cell(_mib(f(B, big, 'index_bytes')))} MiB, dead tuples "
        f"{cell(f(B, big, 'dead_tuples'))} | index {cell(_mib(f(C, big, 'index_bytes')))} MiB, "
        f"dead tuples {cell(f(C, big, 'dead_tuples'))} | dead tuples: "
        f"{_verdict(med(C, big, 'dead_tuples'), med(B, big, 'dead_tuples'))}; index size: "
        f"{_verdict(med(C, big, 'index_bytes'), med(B, big, 'index_bytes'))} (chokaq indexes "
        "three tables and the DLQ four ways) |",
        f"| Archive query speed | Competes with active queries | Dedicated index, PAGE "
        f"compressed | p50 {cell(f(B, big, 'archive_p50_ms'))} ms, p99 "
        f"{cell(f(B, big, 'archive_p99_ms'))} ms | p50 {cell(f(C, big, 'archive_p50_ms'))} ms, "
        f"p99 {cell(f(C, big, 'archive_p99_ms'))} ms | "
        f"{_verdict(med(C, big, 'archive_p50_ms'), med(B, big, 'archive_p50_ms'))} |",
        f"| Dashboard stats | `COUNT(*)` full scan | O(1) read from StatsSummary | p50 "
        f"{cell(f(B, big, 'summary_p50_ms'))} ms, p99 {cell(f(B, big, 'summary_p99_ms'))} ms | "
        f"p50 {cell(f(C, big, 'summary_p50_ms'))} ms, p99 {cell(f(C, big, 'summary_p99_ms'))} ms"
        f" | {_verdict(med(C, big, 'summary_p50_ms'), med(B, big, 'summary_p50_ms'))} |",
        f"| Storage efficiency | One storage policy | PAGE compression on cold data | "
        f"{storage_b / 2**20:,.1f} MiB (heap {cell(_mib(f(B, big, 'table_bytes')))} + index) | "
        f"{storage_c / 2**20:,.1f} MiB (heap {cell(_mib(f(C, big, 'table_bytes')))} + index) | "
        f"{_verdict(storage_c, storage_b)}; PostgreSQL has no PAGE compression, only TOAST "
        "(lz4) for large values, which these small payloads never reach |",
        "",
        "Throughput of the storage loop (fetch + finalize, one connection, no worker) at "
        f"{big:,} history: single table {cell(f(B, big, 'fetch_finalize_jobs_s'))} jobs/s, "
        f"chokaq {cell(f(C, big, 'fetch_finalize_jobs_s'))} jobs/s "
        f"({med(C, big, 'fetch_finalize_jobs_s') / med(B, big, 'fetch_finalize_jobs_s'):.2f}x). "
        f"WAL per job: single table {cell(f(B, big, 'wal_bytes_per_job'))} B, chokaq "
        f"{cell(f(C, big, 'wal_bytes_per_job'))} B (a succeeded chokaq job is written twice: "
        "inserted into hot, then moved to the archive, plus its counter and bucket rows).",
        "",
        "### Every history size",
        "",
        "| History | Design | fetch p50 / p99 ms | fetch+finalize jobs/s | enqueue jobs/s | "
        "summary p50 / p99 ms | archive p50 / p99 ms | heap MiB | index MiB | dead tuples | "
        "WAL B/job |",
        "|---:|---|---|---|---|---|---|---|---|---|---|",
    ]
    for h in sizes:
        for d in (C, B):
            r = rows[(d, h)]
            lines.append(
                f"| {h:,} | {d} | {cell(r['fetch_p50_ms'])} / {cell(r['fetch_p99_ms'])} | "
                f"{cell(r['fetch_finalize_jobs_s'])} | {cell(r['enqueue_jobs_s'])} | "
                f"{cell(r['summary_p50_ms'])} / {cell(r['summary_p99_ms'])} | "
                f"{cell(r['archive_p50_ms'])} / {cell(r['archive_p99_ms'])} | "
                f"{cell(_mib(r['table_bytes']))} | {cell(_mib(r['index_bytes']))} | "
                f"{cell(r['dead_tuples'])} | {cell(r['wal_bytes_per_job'])} |"
            )
    lines += ["", *charts, ""]
    return lines


# -- part 2 -----------------------------------------------------------------------------------


def _peers(rec: dict[str, Any], charts: list[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    data = rec["data"]
    _expected_runs["n"] = int(data["config"]["runs"])
    cfg, labels, res = data["config"], data["labels"], data["results"]
    burn, hist, pick, steady = (
        res.get("burn_down", {}),
        res.get("history", {}),
        res.get("pickup", {}),
        res.get("steady", {}),
    )
    lines = [
        "## 2. chokaq against PgQueuer and procrastinate (PostgreSQL), Celery and RQ (end to end)",
        "",
        *(_outside_method(cfg) if cfg.get("measured_from") == "outside" else _in_process(cfg)),
        "",
        *promises.LINES,
        "",
        "### Burn-down",
        "",
        "| System | enqueue jobs/s | processing jobs/s | chokaq processing is | "
        "worker peak RSS MiB |",
        "|---|---|---|---|---|",
    ]
    for key, r in burn.items():
        f = r["figures"]
        # Against chokaq's async handler with the same work (no-op, or the Redis INCR).
        base = burn.get("chokaq" + key.partition("+")[1] + key.partition("+")[2])
        ratio = (
            f"{base['figures']['process_jobs_s']['median'] / f['process_jobs_s']['median']:.2f}x"
            if base
            else "-"
        )
        capped = f.get("jobs", {}).get("median", cfg["jobs"])
        label = labels[key] + (f" ({capped:,.0f} jobs a run)" if capped < cfg["jobs"] else "")
        lines.append(
            f"| {label} | {cell(f['enqueue_jobs_s'])} | {cell(f['process_jobs_s'])} | "
            f"{ratio} | {cell(f['peak_rss_mib'])} |"
        )
    ceiling = res.get("ceiling", {}).get("storage-loop")
    if ceiling:
        lines += [
            "",
            "The storage statements' own ceiling, measured in every round beside the workers "
            "(`bench/worker_profile.py`'s loop: a fresh database, the same jobs, `jobs_fetch` of "
            "100 with start then one `jobs_finalize` of successes per batch, one connection, no "
            f"worker): {cell(ceiling['figures']['process_jobs_s'])} jobs/s; chokaq's CLI worker "
            f"reaches {_ceiling_share(burn, ceiling)} of it (within rounds). Where the rest goes: "
            "`bench/worker_profile.py` (client and server CPU and transactions per job).",
        ]
    lines += _peers_rest(rec, cfg, labels, burn, hist, pick, steady, charts)
    if "chokaq" not in burn:
        return lines, []
    return lines, _peers_targets(cfg, labels, burn, hist, pick, steady, ceiling)


def _ratios(top: dict[str, Any], bottom: dict[str, Any], figure: str) -> list[float]:
    """``top``'s figure over ``bottom``'s, round by round (as many rounds as both have)."""
    return [
        a[figure] / b[figure]
        for a, b in zip(top["runs"], bottom["runs"], strict=False)
        if b[figure]
    ]


def _ceiling_share(burn: dict[str, Any], ceiling: dict[str, Any]) -> str:
    shares = _ratios(burn["chokaq"], ceiling, "process_jobs_s") if "chokaq" in burn else []
    if not shares:
        return "-"
    return f"{statistics.median(shares):.2f}x ({min(shares):.2f}-{max(shares):.2f})"


def _outside_method(cfg: dict[str, Any]) -> list[str]:
    return [
        f"Same machine, same run; a fresh store for every measurement (a PostgreSQL database; a "
        "RabbitMQ queue; a Redis database number of the system's own, flushed); in each of "
        f"{cfg['runs']} round(s) the systems run one after the other. Burn-down: bulk-enqueue "
        f"{cfg['jobs']:,} jobs (batches of {cfg['enqueue_batch']:,} through each system's bulk "
        "API: chokaq `enqueue_many`, PgQueuer `Queries.enqueue` with lists, procrastinate "
        "`batch_defer_async`, RQ `enqueue_many`; Celery has none: one `send_task` per job over "
        "one kept producer), then one worker process, started by its own command line as users "
        "start it (`chokaq worker --app ... --burst --concurrency 10`, `celery worker`, `rq "
        "worker --burst`), drains them. Everything is measured from outside: processing jobs/s "
        "= jobs / the time from the worker's start (its imports included) until all jobs are "
        "done, which the harness sees by the worker's burst exit (chokaq, PgQueuer, "
        "procrastinate; so their figures include their shutdown) or by a Redis counter every "
        "handler INCRs (Celery, which has no burst mode, and RQ, whose burst exit lags its "
        "last job by up to a minute; their no-op rows do that one INCR), whatever the "
        "handler does. With the INCR handler the counter also checks that every job ran "
        "exactly once. Peak RSS: the worker's whole process tree (a prefork pool, RQ's forked "
        "job processes), sampled from /proc every 50 ms (pages a forked child shares with its "
        "parent count in each). The handler work is the same everywhere: a no-op, or one "
        "Redis INCR (a round trip; rows marked so). PgQueuer runs on asyncpg in two "
        "configurations: batch 5 capped at 10 concurrent jobs and its best (batch 10, "
        "uncapped); procrastinate with concurrency 10; Celery with threads x10 in one process "
        "and the default prefork pool x2, `acks_late`, no result backend, mingle, gossip and "
        "event heartbeats off; RQ's SimpleWorker and its forking Worker (defaults).",
    ]


def _in_process(cfg: dict[str, Any]) -> list[str]:
    """The method of the records made before the workers were measured from outside."""
    return [
        f"Same machine, same PostgreSQL, same run; a fresh database for every measurement; in each"
        f" of {cfg['runs']} round(s) the systems run one after the other. Burn-down: bulk-enqueue "
        f"{cfg['jobs']:,} no-op jobs (batches of {cfg['enqueue_batch']:,}, each system's bulk "
        "API: chokaq `enqueue_many`, PgQueuer `Queries.enqueue` with lists, procrastinate "
        "`batch_defer_async`), then one worker process drains them; processing jobs/s = jobs / "
        "the worker's own run time (imports excluded); peak RSS of the worker process from "
        "VmHWM (/proc/self/status; getrusage would report the parent's RSS at fork). "
        "PgQueuer runs on asyncpg (its fastest driver per its own benchmarks) in two "
        "configurations: batch 5 capped at 10 concurrent jobs (the closest to concurrency 10; "
        "it requires cap >= 2x batch), and its best (batch 10, uncapped, as its own benchmark "
        "runs). procrastinate runs with its defaults and concurrency 10 (async no-op task).",
    ]


def _peers_rest(
    rec: dict[str, Any],
    cfg: dict[str, Any],
    labels: dict[str, str],
    burn: dict[str, Any],
    hist: dict[str, Any],
    pick: dict[str, Any],
    steady: dict[str, Any],
    charts: list[str],
) -> list[str]:
    """The peers part's sections after the burn-down table."""
    lines: list[str] = []
    if hist:
        lines += [
            "",
            f"### History sensitivity: the burn-down with {cfg['history']:,} finished jobs stored",
            "",
            "History lives where each system keeps it: chokaq's archive (and lifetime counter), "
            "PgQueuer's `pgqueuer_log` (one aggregated 'successful' row per job; done jobs leave "
            "its queue table), procrastinate's `procrastinate_jobs` (succeeded rows stay). "
            "After the load each database is vacuumed (ANALYZE) and checkpointed, the same for "
            "every system, so the burn-down does not pay for the bulk load's aftermath. "
            "chokaq's history ids are UUIDv7 of their creation time, as its own ids are.",
            "",
            "Each history burn-down runs right beside an empty one (which goes first alternates "
            "between rounds), and the change is taken within each pair: on a shared machine the "
            "throughput drifts between rounds by more than the 5 % the target allows, and a "
            "pair cancels what the two runs share.",
            "",
            "| System | processing jobs/s, empty | with history | change within pairs, "
            "median (min to max) |",
            "|---|---|---|---|",
        ]
        for key, r in hist.items():
            if key not in burn and "empty_process_jobs_s" not in r["figures"]:
                continue  # an unpaired record whose burn-down this run did not measure
            empty = (
                r["figures"].get("empty_process_jobs_s") or burn[key]["figures"]["process_jobs_s"]
            )
            _, shown = _history_change(r, burn.get(key, {"figures": {"process_jobs_s": empty}}))
            lines.append(
                f"| {labels[key]} | {cell(empty)} | {cell(r['figures']['process_jobs_s'])} | "
                f"{shown} |"
            )
    if pick:
        lines += [
            "",
            f"### Pickup latency: an idle worker, {cfg['pickups']} single jobs at about "
            f"{cfg['pickup_rate_per_s']}/s",
            "",
            "Latency = the handler's `time.time()` minus the producer's just before its enqueue "
            "call (so it includes the enqueue round trip). Peers use their NOTIFY paths.",
            "",
            "| System | p50 ms | p95 ms | p99 ms |",
            "|---|---|---|---|",
        ]
        for key, r in pick.items():
            f = r["figures"]
            lines.append(
                f"| {labels[key]} | {cell(f['p50_ms'])} | {cell(f['p95_ms'])} | "
                f"{cell(f['p99_ms'])} |"
            )
    if steady:
        lines += [
            "",
            f"### Steady load: single inserts at {cfg['steady_rate_per_s']:.0f}/s for "
            f"{cfg['steady_seconds']:.0f} s (chokaq; peers: the seconds column) while one worker "
            "keeps up "
            f"({cfg.get('steady_runs', cfg['runs'])} run(s) per system)",
            "",
            (
                "Shorter than the full form's default (`--steady-seconds 300`). "
                if cfg["steady_seconds"] != 300
                else ""
            )
            + "The rate is one every system sustains (procrastinate's burn-down is the ceiling). "
            "Backlog = unfinished jobs when the producer stopped. Dead tuples and sizes cover "
            "every table of the system after the run (autovacuum is off on this server); WAL is "
            "cluster-wide over the run plus the drain, per job produced. Worker RSS: its process "
            "tree's resident memory every 5 s from /proc, the median of the first and of the "
            "last minute of the load.",
            "",
            "| System | seconds | achieved jobs/s | backlog at end | dead tuples | "
            "tables + indexes MiB | WAL B/job | worker RSS MiB, first minute -> last (max) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        _expected_runs["n"] = int(cfg.get("steady_runs", cfg["runs"]))
        for key, r in steady.items():
            f = r["figures"]
            seconds = f.get("seconds", {}).get("median", cfg["steady_seconds"])
            rss = (
                f"{cell(f['rss_first_minute_mib'])} -> {cell(f['rss_last_minute_mib'])} "
                f"({cell(f['rss_max_mib'])})"
                if "rss_first_minute_mib" in f
                else "-"
            )
            lines.append(
                f"| {labels[key]} | {seconds:.0f} | {cell(f['produced_jobs_s'])} | "
                f"{cell(f['backlog_at_end'])} | {cell(f['dead_tuples'])} | "
                f"{cell(_mib(f['total_bytes']))} | {cell(f['wal_bytes_per_job'])} | {rss} |"
            )
    _expected_runs["n"] = int(cfg["runs"])
    earlier = cfg.get("earlier_run")
    if earlier:
        names = {"burn_down": "burn-down", "history": "history", "pickup": "pickup"}
        names["steady"] = "steady load"
        names["ceiling"] = "storage ceiling"
        lines += [
            "",
            f"Sections kept from an earlier run of this part (finished {earlier['finished_at']}, "
            f"chokaq at {earlier['git']}): "
            + ", ".join(names.get(n, n) for n in earlier["sections"])
            + f". The rest was rerun at {rec['finished_at']} (chokaq at "
            f"{rec['machine'].get('git', '?')}).",
        ]
    return [*lines, "", *charts, ""]


def _peers_targets(
    cfg: dict[str, Any],
    labels: dict[str, str],
    burn: dict[str, Any],
    hist: dict[str, Any],
    pick: dict[str, Any],
    steady: dict[str, Any],
    ceiling: dict[str, Any] | None,
) -> list[tuple[str, ...]]:
    """The performance round's goals (issue 20), each a ratio within this run."""
    base = burn["chokaq"]["figures"]
    targets: list[tuple[str, ...]] = []

    def target(
        name: str,
        value: float,
        goal: float,
        unit: str,
        higher: bool = True,
        *,
        beside: str = "",
        goal_note: str = "",
    ) -> None:
        met = value >= goal if higher else value <= goal
        op = ">=" if higher else "<="
        targets.append(
            (
                name,
                f"{_num(value)}{unit}" + (f" ({beside})" if beside else ""),
                f"{op} {_num(goal)}{unit}" + (f" {goal_note}" if goal_note else ""),
                "met" if met else "**missed**",
            )
        )

    def median(key: str, figure: str, of: dict[str, Any] = burn) -> float:
        return float(of[key]["figures"][figure]["median"])

    cp = base["process_jobs_s"]["median"]
    if "pgqueuer-best" in burn:
        target(
            "processing vs PgQueuer best (concurrency 10)",
            cp / median("pgqueuer-best", "process_jobs_s"),
            2.0,
            "x",
        )
        if "chokaq-c100" in burn:
            target(
                "processing vs PgQueuer best, chokaq at concurrency 100 (PgQueuer's is uncapped)",
                median("chokaq-c100", "process_jobs_s") / median("pgqueuer-best", "process_jobs_s"),
                2.0,
                "x",
            )
        target(
            "bulk enqueue vs PgQueuer",
            base["enqueue_jobs_s"]["median"] / median("pgqueuer-best", "enqueue_jobs_s"),
            2.0,
            "x",
        )
    for work in ("", "+incr"):
        others = [k for k in burn if k.startswith(("celery", "rq")) and k.endswith(work or "")]
        others = [k for k in others if ("+" in k) == bool(work)]
        mine = "chokaq" + work
        if others and mine in burn:
            best = max(others, key=lambda k: median(k, "process_jobs_s"))
            target(
                f"processing vs the fastest Celery / RQ ({'one Redis INCR' if work else 'no-op'})",
                median(mine, "process_jobs_s") / median(best, "process_jobs_s"),
                1.0,
                "x",
                beside=labels[best],
            )
    if ceiling:
        shares = _ratios(burn["chokaq"], ceiling, "process_jobs_s")
        if shares:
            target("share of the storage loop's ceiling", statistics.median(shares), 0.6, "x")
    if "chokaq" in pick:
        for figure in ("p50_ms", "p99_ms"):
            rivals = [k for k in pick if k.startswith(("pgqueuer", "celery"))]
            if not rivals:
                continue
            best = min(rivals, key=lambda k: median(k, figure, pick))
            target(
                f"pickup {figure[:3]} vs the quickest of PgQueuer and Celery",
                median("chokaq", figure, pick),
                median(best, figure, pick),
                " ms",
                False,
                beside=f"that one: {labels[best]}",
            )
    for work in ("", "+incr"):
        if "chokaq-def" + work in burn and "chokaq" + work in burn:
            target(
                f"plain def handler vs async ({'one Redis INCR' if work else 'no-op'})",
                median("chokaq-def" + work, "process_jobs_s")
                / median("chokaq" + work, "process_jobs_s"),
                0.8,
                "x",
            )
    if "chokaq" in hist:
        change, _ = _history_change(hist["chokaq"], burn["chokaq"])
        paired = hist["chokaq"]["figures"].get("change_pct")
        pairs = f" (median of {int(paired['n'])} pairs)" if paired is not None else ""
        targets.append(
            (
                f"history ({cfg['history']:,}) vs empty",
                f"{change * 100:+.1f} %{pairs}",
                "within 5 %",
                "met" if abs(change) <= 0.05 or change > 0 else "**missed**",
            )
        )
    if "chokaq" in steady and "rss_growth_mib" in steady["chokaq"]["figures"]:
        f = steady["chokaq"]["figures"]
        head = f["rss_first_minute_mib"]["median"]
        growth = f["rss_growth_mib"]["median"]
        seconds = f.get("seconds", {}).get("median", cfg["steady_seconds"])
        target(
            f"worker RSS growth over a {seconds / 60:.0f}-minute steady load",
            growth / head * 100,
            5.0,
            " %",
            False,
            beside=f"{_num(head)} -> {_num(f['rss_last_minute_mib']['median'])} MiB",
        )
    return targets


def _history_change(hist: dict[str, Any], burn: dict[str, Any]) -> tuple[float, str]:
    """The change (a fraction) a history made to one system's processing, and its text: the
    median within pairs with their range; a record from before pairing has only the ratio of
    its medians to the burn-down's."""
    paired = hist["figures"].get("change_pct")
    if paired is None:
        full = hist["figures"]["process_jobs_s"]["median"]
        change = full / burn["figures"]["process_jobs_s"]["median"] - 1
        return change, f"{change * 100:+.1f} % (ratio of the medians: unpaired runs)"
    change = paired["median"] / 100
    if int(paired.get("n", 1)) <= 1:
        return change, f"{paired['median']:+.1f} %"
    return change, f"{paired['median']:+.1f} % ({paired['min']:+.1f} to {paired['max']:+.1f})"


# -- parts 3 and 4 ----------------------------------------------------------------------------


def _sqlite(rec: dict[str, Any], charts: list[str]) -> list[str]:
    d = rec["data"]
    procs = d["processes"]
    one = procs["1"]["median"]
    best_n = 1
    for n in sorted(procs, key=int):
        if procs[n]["median"] > procs[str(best_n)]["median"] * 1.10:
            best_n = int(n)
    lines = [
        "## 3. SQLite (the embedded backend)",
        "",
        f"{d['config']['jobs']:,} jobs, concurrency 10, a fresh database file per run, "
        f"{d['config']['runs']} run(s).",
        "",
        "| Burn-down enqueue jobs/s | processing jobs/s | worker peak RSS MiB | pickup p50 / p95 / "
        "p99 ms |",
        "|---|---|---|---|",
        f"| {cell(d['burn_down']['enqueue_jobs_s'])} | {cell(d['burn_down']['process_jobs_s'])} "
        f"| {cell(d['burn_down']['peak_rss_mib'])} | {cell(d['pickup']['p50_ms'])} / "
        f"{cell(d['pickup']['p95_ms'])} / {cell(d['pickup']['p99_ms'])} |",
        "",
        "Worker processes sharing one SQLite file (jobs / first start to last end):",
        "",
        "| processes | jobs/s | vs 1 process |",
        "|---:|---|---|",
    ]
    for n, f in sorted(procs.items(), key=lambda kv: int(kv[0])):
        lines.append(f"| {n} | {cell(f)} | {f['median'] / one:.2f}x |")
    lines += [
        "",
        "Largest process count that still gained throughput (more than 10 %, beyond this "
        "machine's run-to-run noise, over every smaller "
        f"count): **{best_n}**. SQLite has one writer at a time, so extra processes can only "
        "overlap handler work, and they add lock waits.",
        "",
        *charts,
        "",
    ]
    return lines


def _scale(rec: dict[str, Any], charts: list[str]) -> list[str]:
    d = rec["data"]
    fig = d["figures"]
    lines = [
        "## 4. Scaling out on PostgreSQL",
        "",
        f"{d['config']['jobs']:,} jobs drained by 1, 2 and 4 chokaq worker processes "
        f"(concurrency {d['config']['concurrency_per_process']} each) in a fresh database, "
        f"{d['config']['runs']} run(s). **On this 2-core machine the workers and PostgreSQL share "
        "the same two cores, so this shows contention, not scale.** PostgreSQL CPU = utime + "
        "stime of every postgres process (plus the exited backends the postmaster reaped), "
        "before/after the drain; includes the workers' connection set-up and any other "
        "database activity on the machine.",
        "",
        "| processes | jobs/s | PostgreSQL CPU ms/job | WAL B/job |",
        "|---:|---|---|---|",
    ]
    for n, f in fig.items():
        lines.append(
            f"| {n} | {cell(f['process_jobs_s'])} | {cell(f['pg_cpu_ms_per_job'])} | "
            f"{cell(f['wal_bytes_per_job'])} |"
        )
    cpu = fig["1"]["pg_cpu_ms_per_job"]["median"]
    lines += [
        "",
        f"**Paper estimate.** At {_num(cpu)} ms of PostgreSQL CPU per job (the 1-process median), "
        f"a dedicated server that gives {d['config']['usable_cpu_fraction']:.0%} of its vCPUs to "
        "the job workload sustains about vCPUs x "
        f"{d['config']['usable_cpu_fraction']} / CPU-per-job, and writes WAL at that rate x "
        f"{_num(fig['1']['wal_bytes_per_job']['median'])} B. This assumes the per-job cost stays "
        "flat with more workers (no lock, WAL-flush or connection bottleneck), with workers on "
        "other machines; treat it as an upper bound.",
        "",
        "| server vCPUs | jobs/s (estimate) | WAL MiB/s |",
        "|---:|---:|---:|",
    ]
    for e in d["estimate"]:
        lines.append(f"| {e['vcpus']} | {_num(e['jobs_s'])} | {_num(e['wal_mib_s'])} |")
    lines += ["", *charts, ""]
    return lines


# -- charts -----------------------------------------------------------------------------------


def _bar(path: Path, title: str, ylabel: str, bars: list[tuple[str, dict[str, float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, _ in bars]
    meds = [f["median"] for _, f in bars]
    err = [[f["median"] - f["min"] for _, f in bars], [f["max"] - f["median"] for _, f in bars]]
    if len(bars) > 5:  # long labels (the peers part's many configurations) read better across
        _barh(path, title, ylabel, names, meds, err)
        return
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(names, meds, yerr=err, capsize=4, color="#4C72B0")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", labelsize=8)
    for i, v in enumerate(meds):
        ax.annotate(_num(v), (i, v), ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _barh(
    path: Path,
    title: str,
    unit: str,
    names: list[str],
    meds: list[float],
    err: list[list[float]],
) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * len(names)))
    ax.barh(names, meds, xerr=err, capsize=3, color="#4C72B0")
    ax.invert_yaxis()  # the first configuration on top, as in the table
    ax.set_title(title)
    ax.set_xlabel(unit)
    ax.tick_params(axis="y", labelsize=8)
    for i, v in enumerate(meds):
        ax.annotate(f" {_num(v)}", (v, i), ha="left", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _lines(
    path: Path, title: str, ylabel: str, xs: list[int], series: dict[str, list[float]]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("history rows")
    if max(xs) > 0:
        ax.set_xscale("symlog", linthresh=max(1, min(x for x in xs if x > 0) if any(xs) else 1))
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _charts(out: Path, records: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return {
            p: ["(charts skipped: matplotlib is not installed; `pip install -e .[bench]`)"]
            for p in records
        }
    made: dict[str, list[str]] = {p: [] for p in records}
    if "peers" in records:
        d = records["peers"]["data"]
        labels, res = d["labels"], d["results"]
        _bar(
            out / "peers_processing.png",
            "Burn-down processing (jobs/s, median, min-max)",
            "jobs/s",
            [(labels[k], v["figures"]["process_jobs_s"]) for k, v in res["burn_down"].items()],
        )
        made["peers"].append("![Burn-down processing](peers_processing.png)")
        if res.get("pickup"):
            _bar(
                out / "peers_pickup.png",
                "Pickup latency p50 (ms, median, min-max)",
                "ms",
                [(labels[k], v["figures"]["p50_ms"]) for k, v in res["pickup"].items()],
            )
            made["peers"].append("![Pickup latency](peers_pickup.png)")
    if "pillars" in records:
        rows = _pillar_rows(records["pillars"]["data"])
        sizes = records["pillars"]["data"]["config"]["history_sizes"]
        designs = sorted({d for d, _ in rows})
        for key, name, title in (
            ("fetch_p50_ms", "pillars_fetch.png", "Fetch p50 (ms) vs history"),
            ("summary_p50_ms", "pillars_summary.png", "Dashboard summary p50 (ms) vs history"),
        ):
            _lines(
                out / name,
                title,
                "ms",
                sizes,
                {d: [rows[(d, h)][key]["median"] for h in sizes] for d in designs},
            )
            made["pillars"].append(f"![{title}]({name})")
    if "sqlite" in records:
        procs = records["sqlite"]["data"]["processes"]
        _bar(
            out / "sqlite_processes.png",
            "SQLite: worker processes on one file (jobs/s)",
            "jobs/s",
            [(f"{n} proc", f) for n, f in sorted(procs.items(), key=lambda kv: int(kv[0]))],
        )
        made["sqlite"].append("![SQLite processes](sqlite_processes.png)")
    if "scale" in records:
        fig = records["scale"]["data"]["figures"]
        _bar(
            out / "scale_processes.png",
            "PostgreSQL: worker processes (jobs/s, 2 cores)",
            "jobs/s",
            [(f"{n} proc", f["process_jobs_s"]) for n, f in fig.items()],
        )
        made["scale"].append("![PostgreSQL processes](scale_processes.png)")
    return made


def _durable(out: Path) -> list[str]:
    """bench/durable.py's section, from its JSON (a run of its own, not one of the parts),
    with any further run of some of its measurements beside it (``--out`` another name in the
    same folder); a --quick check is never reported."""
    folder = out / "results" / "durable"
    records = {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    records = {name: r for name, r in records.items() if not r.get("quick")}
    if "durable.json" not in records:
        return []
    from bench import durable  # here: it imports modules that import this one

    main = records.pop("durable.json")
    return durable.markdown(main, list(records.values()))


def write(out: Path) -> Path:
    records = _load(out)
    path = out / "RESULTS.md"
    if not records:
        path.write_text("# chokaq benchmark results\n\nNo results yet: run " + COMMAND + "\n")
        return path
    charts = _charts(out, records)
    body: list[str] = []
    targets: list[tuple[str, ...]] = []
    if "pillars" in records:
        body += _pillars(records["pillars"], charts["pillars"])
    if "peers" in records:
        peer_lines, targets = _peers(records["peers"], charts["peers"])
        body += peer_lines
    _expected_runs["n"] = 1
    if "sqlite" in records:
        body += _sqlite(records["sqlite"], charts["sqlite"])
    if "scale" in records:
        body += _scale(records["scale"], charts["scale"])
    body += _durable(out)
    head = [
        "# chokaq benchmark results",
        "",
        f"Generated by `{COMMAND}` (this file and the PNG charts beside it; raw figures in "
        "`bench/results/*.json`). Every figure is the median of the runs with (min-max) when "
        "there was more than one run.",
        "",
        *_machine(records),
    ]
    head += CORRECTIONS
    if targets:
        head += [
            "## Targets (PostgreSQL, 2 cores)",
            "",
            "| Target | Measured | Goal | |",
            "|---|---|---|---|",
            *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in targets),
            "",
        ]
    text = "\n".join(head + body).rstrip() + "\n"
    path.write_text(text)
    return path

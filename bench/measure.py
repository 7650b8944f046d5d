"""What every part of the benchmark suite shares: the PostgreSQL URL, fresh throw-away databases,
the figures read from the server (WAL position, relation sizes, dead tuples, CPU time of the
postgres processes), the machine notes, and the summary statistics (median with min and max).
It runs no workload itself and draws no conclusions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("CHOKAQ_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


# -- statistics ------------------------------------------------------------------------------


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min and max of a list of per-run figures."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by the nearest-rank method on sorted data."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


# -- command lines and records ---------------------------------------------------------------


def select(args: argparse.Namespace, backends: Sequence[str], measurements: Sequence[str]) -> None:
    """Turn ``args.backends`` and ``args.measurements`` (comma-separated) into lists, in place;
    SystemExit naming any that is not one of the script's."""
    args.backends = [b for b in args.backends.split(",") if b]
    args.measurements = [m for m in args.measurements.split(",") if m]
    if unknown := set(args.measurements) - set(measurements):
        raise SystemExit(f"unknown measurement(s) {sorted(unknown)}; choose from {measurements}")
    if unknown := set(args.backends) - set(backends):
        raise SystemExit(f"unknown backend(s) {sorted(unknown)}; choose from {backends}")


def save(path: Path, record: dict[str, Any]) -> None:
    """Write a script's record as JSON (its folder made first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))


# -- databases ---------------------------------------------------------------------------------


def url_for_database(name: str, base: str = PG_URL) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextlib.contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """A new, empty database for one run; dropped (with its connections) afterwards."""
    name = f"bench_{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url_for_database(name)
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def analyze(url: str, schema: str | None = None) -> None:
    """Bring the planner's statistics up to date after a fill, as production would have them.

    The benchmark server runs with autovacuum off, so nothing analyzes a table a benchmark just
    filled, and a plan that is fast only without statistics looked fast here: the claim's
    generic plan read and sorted every pending row once its table had statistics (4x slower)
    while every figure was taken on a never-analyzed table. Autovacuum would analyze a table
    that took 20,000 rows within a minute, so every part calls this between its fill and what it
    measures. Any other store is left alone: SQLite has no automatic ANALYZE (and chokaq runs
    none), so a never-analyzed file is how production has it; brokers have no planner.
    ``schema`` limits it to that schema's tables (a shared database holds other runs' too).
    """
    if not url.startswith(("postgresql:", "postgres:")):
        return
    with psycopg.connect(url, autocommit=True) as conn:
        if schema is None:
            conn.execute("ANALYZE")
            return
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(schema, table)))


def wal_lsn(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
    assert row is not None
    return int(row[0])


def storage_figures(url: str, schemas: Sequence[str]) -> dict[str, float]:
    """Heap, index and total bytes and dead tuples of every table in ``schemas``.

    Statistics are flushed by each backend at most once a second, so this waits that long first.
    """
    time.sleep(1.2)
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            """
            SELECT coalesce(sum(pg_table_size(c.oid)), 0),
                   coalesce(sum(pg_indexes_size(c.oid)), 0),
                   coalesce(sum(s.n_dead_tup), 0),
                   coalesce(sum(s.n_live_tup), 0)
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
            WHERE c.relkind = 'r' AND n.nspname = ANY(%s)
            """,
            (list(schemas),),
        ).fetchone()
    assert row is not None
    return {
        "table_bytes": float(row[0]),
        "index_bytes": float(row[1]),
        "dead_tuples": float(row[2]),
        "live_tuples": float(row[3]),
    }


def postgres_cpu_seconds() -> float:
    """CPU seconds used by the local PostgreSQL server so far: utime + stime of every postgres
    process visible in /proc, plus cutime + cstime (the postmaster collects the time of the
    backends that already exited, such as a finished worker's connections)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if comm != "postgres":
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # Fields 14-17 of /proc/PID/stat (utime, stime, cutime, cstime), counted after comm.
        total += sum(int(x) for x in fields[11:15])
    return total / ticks


# -- processes ---------------------------------------------------------------------------------


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), **extra}


def run_script(script: str, timeout: float = 900, **env: str) -> list[str]:
    """Run a Python snippet in a fresh interpreter; return its last stdout line, split."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return lines[-1].split()


# -- machine notes -----------------------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git_state() -> str:
    """The commit measured and whether the engine's sources had uncommitted edits (read-only)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "src"], cwd=REPO, capture_output=True, text=True
        ).stdout.split("\n")
    except OSError:
        return "unknown"
    edited = [line for line in dirty if line.strip()]
    return f"{head}" + (f" + {len(edited)} uncommitted file(s) in src/" if edited else "")


def calibration() -> dict[str, float]:
    """What the machine itself costs, to compare runs across machines: a pure-Python loop, and
    a PostgreSQL round trip (SELECT 1) back to back and after 20 ms of idleness. The second is
    what each hop of a pickup pays: a sleeping process (and a virtual CPU) must wake up."""
    figures: dict[str, float] = {}
    loops = []
    for _ in range(5):
        started = time.perf_counter()
        sum(i * i for i in range(1_000_000))
        loops.append((time.perf_counter() - started) * 1000)
    figures["python_loop_ms"] = statistics.median(loops)
    with contextlib.suppress(psycopg.Error), psycopg.connect(PG_URL, autocommit=True) as conn:
        busy, idle = [], []
        for _ in range(300):
            started = time.perf_counter()
            conn.execute("SELECT 1")
            busy.append((time.perf_counter() - started) * 1000)
        for _ in range(60):
            time.sleep(0.02)
            started = time.perf_counter()
            conn.execute("SELECT 1")
            idle.append((time.perf_counter() - started) * 1000)
        figures["pg_round_trip_ms"] = statistics.median(busy[50:])
        figures["pg_round_trip_after_idle_ms"] = statistics.median(idle)
    return figures


def machine_notes() -> dict[str, object]:
    mem_kb = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    settings: dict[str, str] = {}
    with contextlib.suppress(psycopg.Error), psycopg.connect(PG_URL, autocommit=True) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        settings["server_version"] = str(row[0]) if row else "?"
        for name in (
            "shared_buffers",
            "synchronous_commit",
            "fsync",
            "autovacuum",
            "max_wal_size",
        ):
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
            settings[name] = str(row[0]) if row else "?"
    return {
        "git": _git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "postgres": settings,
        "versions": {
            name: _version(name)
            for name in ("chokaq", "pgqueuer", "procrastinate", "psycopg", "asyncpg", "matplotlib")
        },
        "loadavg_at_start": os.getloadavg(),
        "calibration": calibration(),
    }

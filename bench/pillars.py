"""Part 1: the Three Pillars against a single table, storage-level, on PostgreSQL.

For each history size (finished jobs already stored, 90 % succeeded and 10 % failed, loaded with
INSERT ... SELECT generate_series straight into each schema) and for each design (chokaq through
its Backend API; the single-table baseline of ``single_table.py``), each run: enqueue ``jobs``
jobs in batches of 1,000, drain them with fetch(limit=10, start) + finalize, timing every fetch;
then time the dashboard summary (chokaq ``stats_summary`` vs COUNT(*) GROUP BY status) and an
archive page with a filter (type and the last 24 hours, 50 rows plus the total). WAL bytes are
the pg_current_wal_lsn() difference over enqueue + drain divided by jobs; sizes and dead tuples
are read after the run. Both designs live in one fresh database, in their own schemas.

Run alone: python bench/pillars.py --history 0,100000 --jobs 5000 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from bench.measure import analyze, fresh_database, percentile, spread, storage_figures, wal_lsn
from bench.single_table import SingleTable
from chokaq.models import JobFilter, NewJob, Pillar, SucceedMove
from chokaq.storage import create_backend

CHOKAQ_SCHEMA = "pillars"
BASELINE_SCHEMA = "single"
FETCH_LIMIT = 10
ENQUEUE_BATCH = 1_000
SUMMARY_READS = 200
ARCHIVE_READS = 30

CHOKAQ_HISTORY = """
INSERT INTO {schema}.jobs_archive (id, queue, type, payload, priority, attempt_count, worker_id,
                                   created_at, started_at, finished_at, duration_seconds)
SELECT gen_random_uuid(), 'default', 'bench.t' || (g %% 10), '{{"i": ' || g || '}}', 10, 1,
       'bench', f - interval '1 second', f - interval '1 millisecond', f, 0.001
FROM (SELECT g, now() - (g %% 2592000) * interval '1 second' AS f
      FROM generate_series(1, %(rows)s) AS g) AS s
WHERE g %% 10 <> 0;
INSERT INTO {schema}.jobs_dlq (id, queue, type, payload, priority, failure_reason, error,
                               attempt_count, worker_id, created_at, started_at, failed_at,
                               duration_seconds)
SELECT gen_random_uuid(), 'default', 'bench.t' || (g %% 10), '{{"i": ' || g || '}}', 10, 6,
       'RuntimeError: boom ' || (g %% 7), 1, 'bench', f - interval '1 second',
       f - interval '1 millisecond', f, 0.001
FROM (SELECT g, now() - (g %% 2592000) * interval '1 second' AS f
      FROM generate_series(1, %(rows)s) AS g) AS s
WHERE g %% 10 = 0;
UPDATE {schema}.stats_summary
SET succeeded_total = succeeded_total + %(rows)s - %(rows)s / 10,
    failed_total = failed_total + %(rows)s / 10, last_activity_at = now()
WHERE queue = 'default';
"""


class ChokaqStore:
    """chokaq's side of the workload, through the Backend API only (history load aside)."""

    name = "chokaq (Three Pillars)"

    def __init__(self, url: str) -> None:
        self.url = url
        self.backend = create_backend(url, schema=CHOKAQ_SCHEMA)

    async def open(self, history: int) -> None:
        await self.backend.open()
        await self.backend.migrate()
        with psycopg.connect(self.url, autocommit=True) as conn:
            if history:
                for statement in CHOKAQ_HISTORY.split(";"):
                    if statement.strip():
                        conn.execute(
                            sql.SQL(statement).format(schema=sql.Identifier(CHOKAQ_SCHEMA)),  # type: ignore[arg-type]
                            {"rows": history},
                        )
            for table in ("jobs_hot", "jobs_archive", "jobs_dlq", "stats_summary"):
                conn.execute(
                    sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(CHOKAQ_SCHEMA, table))
                )

    async def close(self) -> None:
        await self.backend.close()

    async def enqueue(self, count: int) -> None:
        await self.backend.jobs_enqueue(
            [NewJob(type="bench.noop", payload='{"n": 1}') for _ in range(count)]
        )

    async def fetch_finalize(self, fetch_ms: list[float]) -> int:
        started = time.perf_counter()
        claimed = await self.backend.jobs_fetch(worker_id="bench", limit=FETCH_LIMIT, start=True)
        fetch_ms.append((time.perf_counter() - started) * 1000)
        if not claimed:
            return 0
        moves = [SucceedMove(lease=c.lease, duration_seconds=0.0) for c in claimed]
        return sum(await self.backend.jobs_finalize(moves=moves))

    async def summary(self) -> None:
        await self.backend.stats_summary()

    async def archive_page(self, since: datetime) -> None:
        await self.backend.jobs_page(
            pillar=Pillar.ARCHIVE, filter=JobFilter(type="bench.t3", since=since), page_size=50
        )


class BaselineStore:
    name = "single table"

    def __init__(self, url: str) -> None:
        self.table = SingleTable(url, BASELINE_SCHEMA)

    async def open(self, history: int) -> None:
        await self.table.open()
        await self.table.install()
        await self.table.load_history(history)

    async def close(self) -> None:
        await self.table.close()

    async def enqueue(self, count: int) -> None:
        await self.table.enqueue(count)

    async def fetch_finalize(self, fetch_ms: list[float]) -> int:
        started = time.perf_counter()
        claimed = await self.table.fetch("bench", FETCH_LIMIT)
        fetch_ms.append((time.perf_counter() - started) * 1000)
        if not claimed:
            return 0
        return await self.table.finalize(claimed)

    async def summary(self) -> None:
        await self.table.summary()

    async def archive_page(self, since: datetime) -> None:
        await self.table.archive_page("bench.t3", since)


async def _timed(call: Any, times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        await call()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def _one_run(store: Any, url: str, schema: str, jobs: int) -> dict[str, float]:
    wal_before = wal_lsn(url)
    started = time.perf_counter()
    for first in range(0, jobs, ENQUEUE_BATCH):
        await store.enqueue(min(ENQUEUE_BATCH, jobs - first))
    enqueue_rate = jobs / (time.perf_counter() - started)
    # As autovacuum would after the fill; its own WAL is left out of the per-job figure.
    wal_before -= wal_lsn(url)
    analyze(url)
    wal_before += wal_lsn(url)
    fetch_ms: list[float] = []
    done = 0
    started = time.perf_counter()
    while True:
        applied = await store.fetch_finalize(fetch_ms)
        if applied == 0:
            break
        done += applied
    loop_rate = done / (time.perf_counter() - started)
    wal_per_job = (wal_lsn(url) - wal_before) / jobs
    if done != jobs:
        raise RuntimeError(f"{store.name}: drained {done} of {jobs}")
    summary_ms = await _timed(store.summary, SUMMARY_READS)
    since = datetime.now(UTC) - timedelta(days=1)
    archive_ms = await _timed(lambda: store.archive_page(since), ARCHIVE_READS)
    sizes = storage_figures(url, [schema])
    return {
        "enqueue_jobs_s": enqueue_rate,
        "fetch_finalize_jobs_s": loop_rate,
        "fetch_p50_ms": percentile(fetch_ms, 50),
        "fetch_p99_ms": percentile(fetch_ms, 99),
        "summary_p50_ms": percentile(summary_ms, 50),
        "summary_p99_ms": percentile(summary_ms, 99),
        "archive_p50_ms": percentile(archive_ms, 50),
        "archive_p99_ms": percentile(archive_ms, 99),
        "wal_bytes_per_job": wal_per_job,
        **sizes,
    }


async def _measure(kind: str, url: str, history: int, jobs: int, runs: int) -> dict[str, Any]:
    store: Any = ChokaqStore(url) if kind == "chokaq" else BaselineStore(url)
    schema = CHOKAQ_SCHEMA if kind == "chokaq" else BASELINE_SCHEMA
    started = time.perf_counter()
    await store.open(history)
    load_seconds = time.perf_counter() - started
    per_run = []
    try:
        for _ in range(runs):
            per_run.append(await _one_run(store, url, schema, jobs))
    finally:
        await store.close()
    keys = per_run[0].keys()
    return {
        "design": store.name,
        "history": history,
        "load_seconds": load_seconds,
        "runs": per_run,
        "figures": {k: spread([r[k] for r in per_run]) for k in keys},
    }


def run(history_sizes: list[int], jobs: int, runs: int) -> dict[str, Any]:
    """Both designs at every history size; chokaq and the baseline alternate, side by side."""
    rows = []
    for history in history_sizes:
        for kind in ("chokaq", "baseline"):
            with fresh_database(f"pillars_{kind}") as url:
                result = asyncio.run(_measure(kind, url, history, jobs, runs))
            rows.append(result)
            f = result["figures"]
            print(
                f"  pillars {result['design']:<24} history {history:>9,}: fetch p50 "
                f"{f['fetch_p50_ms']['median']:.2f} ms, loop "
                f"{f['fetch_finalize_jobs_s']['median']:,.0f}/s, summary p50 "
                f"{f['summary_p50_ms']['median']:.2f} ms, archive p50 "
                f"{f['archive_p50_ms']['median']:.2f} ms",
                flush=True,
            )
    return {
        "config": {
            "history_sizes": history_sizes,
            "jobs_per_run": jobs,
            "runs": runs,
            "fetch_limit": FETCH_LIMIT,
            "enqueue_batch": ENQUEUE_BATCH,
            "summary_reads_per_run": SUMMARY_READS,
            "archive_reads_per_run": ARCHIVE_READS,
            "archive_filter": "type = 'bench.t3' and finished in the last 24 h, page of 50 + total",
        },
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", default="0,100000,1000000")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = run([int(h) for h in args.history.split(",")], args.jobs, args.runs)
    print(json.dumps(result["config"]))


if __name__ == "__main__":
    main()

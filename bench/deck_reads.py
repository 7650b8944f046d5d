"""How fast The Deck's reads are on a big PostgreSQL store.

Loads 1,000,000 archived and 100,000 DLQ rows (plus 10,000 pending jobs and two weeks of metric
buckets) into a fresh schema with ``INSERT ... SELECT generate_series`` in SQL, then times, as
the median of 5 runs: the overview calls (stats_summary + stats_queues + stats_throughput +
stats_series), the 2-week chart, the Deck's whole live snapshot, and a filtered DLQ page
(jobs_page with reason + search + date range). The schema is dropped afterwards.

    python bench/deck_reads.py [--url postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from starlette.requests import Request

from chokaq.app import App
from chokaq.deck import series
from chokaq.deck.api import snapshot
from chokaq.deck.app import DeckState
from chokaq.deck.auth import Principal, Role, SessionSigner
from chokaq.models import FailureReason, JobFilter, Pillar

ARCHIVE_ROWS = 1_000_000
DLQ_ROWS = 100_000
HOT_ROWS = 10_000
QUEUES = 8
RUNS = 5

# Bench code may hold SQL (the library may not): it fabricates a store faster than workers could.
LOAD = [
    """INSERT INTO {s}.queues (name, updated_at)
       SELECT 'q' || g, now() FROM generate_series(1, %(queues)s - 1) g
       ON CONFLICT DO NOTHING""",
    """INSERT INTO {s}.jobs_archive (id, queue, type, payload, tags, priority, attempt_count,
           worker_id, created_at, started_at, finished_at, duration_seconds)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50), '{{"order":' || g || ',"note":"bench row"}}',
              'tag' || (g %% 20), 10, 1, 'bench-worker',
              now() - make_interval(secs => g * 1.2) - interval '2 seconds',
              now() - make_interval(secs => g * 1.2) - interval '1 second',
              now() - make_interval(secs => g * 1.2), 0.5 + (g %% 7) / 10.0
       FROM generate_series(1, %(archive)s) g""",
    """INSERT INTO {s}.jobs_dlq (id, queue, type, payload, tags, priority, failure_reason,
           error, attempt_count, worker_id, created_at, started_at, failed_at, duration_seconds)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50), '{{"order":' || g || '}}', 'tag' || (g %% 20), 10,
              (ARRAY[0, 1, 2, 4, 5, 6, 7, 8])[1 + g %% 8],
              'Traceback (most recent call last):' || chr(10) || '  File "jobs.py", line '
                  || (g %% 300) || ', in handler' || chr(10) || 'ValueError: card '
                  || (g %% 100) || ' declined by bank ' || (g %% 7),
              3, 'bench-worker',
              now() - make_interval(secs => g * 12) - interval '2 seconds',
              now() - make_interval(secs => g * 12) - interval '1 second',
              now() - make_interval(secs => g * 12), 0.25
       FROM generate_series(1, %(dlq)s) g""",
    """INSERT INTO {s}.jobs_hot (id, queue, type, payload, priority, status, created_at,
           updated_at, scheduled_at)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50), '{{}}', 10, 0, now() - make_interval(secs => g %% 30),
              now(), CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour' END
       FROM generate_series(1, %(hot)s) g""",
    # Two weeks of 60-second buckets and the last hour of 1-second buckets, per queue.
    """INSERT INTO {s}.metric_buckets (width_seconds, bucket_start, queue, outcome,
           failure_reason, completed_count, duration_count, total_duration_seconds,
           max_duration_seconds, updated_at)
       SELECT 60, date_trunc('minute', now()) - make_interval(mins => m),
              CASE WHEN q = 0 THEN 'default' ELSE 'q' || q END, o,
              CASE WHEN o = 0 THEN -1 ELSE 8 END, 30 + (m %% 17), 30, 15.0, 1.2, now()
       FROM generate_series(61, 14 * 24 * 60) m, generate_series(0, %(queues)s - 1) q,
            generate_series(0, 1) o""",
    """INSERT INTO {s}.metric_buckets (width_seconds, bucket_start, queue, outcome,
           failure_reason, completed_count, duration_count, total_duration_seconds,
           max_duration_seconds, updated_at)
       SELECT 1, date_trunc('second', now()) - make_interval(secs => t),
              CASE WHEN q = 0 THEN 'default' ELSE 'q' || q END, o,
              CASE WHEN o = 0 THEN -1 ELSE 8 END, 1 + (t %% 3), 1, 0.4, 0.6, now()
       FROM generate_series(0, 3599) t, generate_series(0, %(queues)s - 1) q,
            generate_series(0, 1) o""",
    """INSERT INTO {s}.stats_summary (queue, succeeded_total, failed_total, last_activity_at)
       SELECT name, %(archive)s / %(queues)s, %(dlq)s / %(queues)s, now() FROM {s}.queues
       ON CONFLICT (queue) DO UPDATE SET succeeded_total = excluded.succeeded_total,
           failed_total = excluded.failed_total, last_activity_at = excluded.last_activity_at""",
]


def load(url: str, schema: str) -> float:
    started = time.perf_counter()
    params = {"queues": QUEUES, "archive": ARCHIVE_ROWS, "dlq": DLQ_ROWS, "hot": HOT_ROWS}
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in LOAD:
            conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)), params)
        for table in ("jobs_archive", "jobs_dlq", "jobs_hot", "metric_buckets"):
            conn.execute(
                sql.SQL("VACUUM ANALYZE {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
            )
    return time.perf_counter() - started


async def median_ms(fn: Callable[[], Awaitable[Any]]) -> float:
    await fn()  # warm caches and the connection pool once
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def bench(url: str, schema: str) -> None:
    app = App(url, schema=schema, auto_migrate=True)
    await app.open()
    try:
        print(f"loading {ARCHIVE_ROWS:,} archive, {DLQ_ROWS:,} DLQ, {HOT_ROWS:,} hot rows ...")
        print(f"  loaded in {load(url, schema):.1f} s")
        b = app.backend
        now = datetime.now(UTC)

        async def overview() -> None:
            await b.stats_summary()
            await b.stats_queues()
            await b.stats_throughput()
            await b.stats_series(since=datetime.now(UTC) - timedelta(hours=1), width_seconds=1)

        dlq_filter = JobFilter(
            failure_reason=FailureReason.TRANSIENT,
            search="declined by bank 3",
            since=now - timedelta(days=7),
            until=now,
        )
        state = DeckState(app, None, SessionSigner(), None, 0.5, "bench")
        cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("stats_summary", b.stats_summary),
            ("stats_queues", b.stats_queues),
            ("stats_throughput", b.stats_throughput),
            (
                "stats_series, last hour at 1 s",
                lambda: b.stats_series(since=datetime.now(UTC) - timedelta(hours=1)),
            ),
            ("overview total (the four above)", overview),
            (
                "stats_series, two weeks at 60 s",
                lambda: b.stats_series(
                    since=datetime.now(UTC) - timedelta(days=14), width_seconds=60
                ),
            ),
            ("dlq_top_errors (scan 5000)", b.dlq_top_errors),
            ("Deck live snapshot (SSE payload)", lambda: snapshot(state)),
            (
                "DLQ page: reason + search + 7-day range",
                lambda: b.jobs_page(pillar=Pillar.DLQ, filter=dlq_filter, page_size=50),
            ),
            ("archive page 1, no filter", lambda: b.jobs_page(pillar=Pillar.ARCHIVE, page_size=50)),
        ]
        print(f"median of {RUNS} runs:")
        for name, fn in cases:
            print(f"  {name:<42} {await median_ms(fn):9.1f} ms")
        await bench_series(state)
    finally:
        await app.close()


async def bench_series(state: DeckState) -> None:
    """The chart's reads as The Deck serves them (``GET /api/series``, 1,000 points), per
    window and for one queue: the first read (nothing kept), then the median (min-max) of the
    next ones (the Deck keeps whole bars and reads only the newest again), and the JSON size."""
    print(f"GET /api/series, points=1000: first read; median (min-max) of {RUNS} more; size")
    who = Principal("bench", Role.ADMIN)
    for query in ("window=5m", "window=hour", "window=24h", "window=2w", "window=2w&queue=q3"):
        request = Request({"type": "http", "query_string": f"{query}&points=1000".encode()})
        times = []
        for _ in range(RUNS + 1):
            started = time.perf_counter()
            body = await series.get_series(request, state, who)
            times.append((time.perf_counter() - started) * 1000)
        first, rest = times[0], times[1:]
        size = len(json.dumps(body, separators=(",", ":")))
        print(
            f"  {query:<20} {first:7.1f} ms; {statistics.median(rest):6.1f} ms"
            f" ({min(rest):.1f}-{max(rest):.1f})  {size / 1000:5.1f} kB"
            f"  {len(body['points']['t'])} bars of {body['width_seconds']} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    schema = f"bench_deck_{uuid.uuid4().hex[:8]}"
    try:
        asyncio.run(bench(args.url, schema))
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        print(f"dropped schema {schema}")


if __name__ == "__main__":
    main()

"""How much "Why the wait" costs on PostgreSQL with 100,000 pending jobs.

Loads 100,000 Pending jobs (10 queues, 20 types; a tenth delayed, a twentieth retrying later,
one in 47 partitioned) and 2,000 jobs waiting on parents into a fresh schema with
``INSERT ... SELECT generate_series``, registers two live workers serving half the queues, then
times the two storage reads behind the Deck's lag panel and banner (``jobs_lag`` and
``queues_unserved``) through the backend (median, min and max of 21 runs after one warm-up),
and prints each statement's ``EXPLAIN (ANALYZE, BUFFERS)`` plan and execution time. The schema
is dropped afterwards.

    python bench/lag_reads.py [--url postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from chokaq.models import WorkerInfo
from chokaq.storage import Backend, create_backend

PENDING_ROWS = 100_000
WAITING_ROWS = 2_000
QUEUES = 10
TYPES = 20
RUNS = 21

# Bench code may hold SQL (the library may not): it fabricates a store faster than workers could.
LOAD = [
    """INSERT INTO {s}.queues (name, updated_at)
       SELECT 'q' || g, now() FROM generate_series(0, %(queues)s - 1) g
       ON CONFLICT DO NOTHING""",
    """INSERT INTO {s}.jobs_hot (id, queue, type, payload, priority, status, attempt_count,
           last_error, partition_key, created_at, updated_at, scheduled_at)
       SELECT gen_random_uuid(), 'q' || (g %% %(queues)s), 'type_' || (g %% %(types)s), '{{}}',
              10, 0, CASE WHEN g %% 20 = 1 THEN 1 ELSE 0 END,
              CASE WHEN g %% 20 = 1 THEN 'ValueError: boom' END,
              CASE WHEN g %% 47 = 3 THEN 'tenant-' || (g %% 7) END,
              now() - make_interval(secs => g %% 900), now(),
              CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour'
                   WHEN g %% 20 = 1 THEN now() + interval '5 minutes'
                   ELSE now() - make_interval(secs => g %% 900) END
       FROM generate_series(1, %(pending)s) g""",
    """INSERT INTO {s}.jobs_hot (id, queue, type, payload, priority, status, parents_left,
           created_at, updated_at, scheduled_at)
       SELECT gen_random_uuid(), 'q' || (g %% %(queues)s), 'type_' || (g %% %(types)s), '{{}}',
              10, 3, 1, now(), now(), now()
       FROM generate_series(1, %(waiting)s) g""",
]


def load(url: str, schema: str) -> float:
    started = time.perf_counter()
    params = {"queues": QUEUES, "types": TYPES, "pending": PENDING_ROWS, "waiting": WAITING_ROWS}
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in LOAD:
            conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)), params)
        conn.execute(sql.SQL("VACUUM ANALYZE {}.jobs_hot").format(sql.Identifier(schema)))
    return time.perf_counter() - started


def worker(n: int, queues: tuple[str, ...]) -> WorkerInfo:
    now = datetime.now(UTC)
    return WorkerInfo(f"bench-{n}", "bench", n, queues, 8, None, 0, "running", now, now)


async def timed(fn: Callable[[], Awaitable[Any]]) -> str:
    await fn()  # warm caches and the connection pool once
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - started) * 1000)
    return f"median {statistics.median(times):.1f} ms (min {min(times):.1f}, max {max(times):.1f})"


def explain(url: str, backend: Backend, name: str, params: dict[str, Any]) -> None:
    text = backend.driver._q[name]  # type: ignore[attr-defined]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + sql.SQL(text), params)
        lines = [row[0] for row in rows]
    print(f"EXPLAIN ANALYZE {name}:")
    for line in lines:
        print("   ", line)


async def bench(url: str, schema: str) -> None:
    backend = create_backend(url, schema=schema)
    await backend.open()
    try:
        await backend.migrate()
        print(f"loading {PENDING_ROWS:,} pending and {WAITING_ROWS:,} waiting rows ...")
        print(f"  loaded in {load(url, schema):.1f} s")
        served = tuple(f"q{i}" for i in range(QUEUES // 2))
        await backend.worker_beat(worker(1, served[:3]))
        await backend.worker_beat(worker(2, served[2:]))
        groups = await backend.jobs_lag()
        unserved = await backend.queues_unserved()
        print(f"jobs_lag: {len(groups)} groups, {sum(g.due for g in groups):,} due")
        print(f"queues_unserved: {[(u.queue, u.due, u.more) for u in unserved]}")
        print("jobs_lag        ", await timed(backend.jobs_lag))
        print("queues_unserved ", await timed(backend.queues_unserved))
        explain(url, backend, "jobs_lag", {"now": None, "limit": 200})
        explain(url, backend, "queues_unserved", {"now": None, "within": 60.0, "cap": 1001})
    finally:
        await backend.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    asyncio.run(bench(args.url, f"bench_lag_{uuid.uuid4().hex[:8]}"))


if __name__ == "__main__":
    main()

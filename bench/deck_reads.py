"""How fast The Deck's reads are on a big PostgreSQL store, through the Deck's own API.

Loads 1,000,000 archived, 100,000 DLQ (the newest 50 with 1 MB payloads and 20 kB errors) and
100,000 pending rows plus two weeks of metric buckets into a schema with ``INSERT ... SELECT
generate_series``, then times every list, filter, sort, search and deep-page request the Deck
makes (``GET /api/jobs`` through an httpx ASGI client on ``create_deck``), the series, the live
snapshot, and the response sizes, as the median, p95 and max of ``--runs`` runs after one warm-up.
It also times the archive's bulk preview (``POST /api/archive/preview``) for broad and narrow
filters, pages by key deep in every sort (``DEEP``: the token of the row before them, read with
SQL), and, in Chromium, the page's own time from opening a link of the Deck to the first row of
its jobs table (navigation start to the row in the DOM; the outer wall time beside it).
Every table is analyzed after the load (and after the migrations a tree applies to it).
Then it serves the Deck with uvicorn, opens it in Chromium (Playwright) and leaves a tab idle
on Active and on DLQ for ``--idle-seconds``: the storage time the server spent (every storage
call, from the Backend's observer: pg_stat_statements is not preloaded here) and the bytes it
sent, per minute.

``--compare TREE`` measures the same data twice: first with the chokaq of ``TREE/src`` (the
schema migrated by that tree), then with this one (which migrates it on, timed), so the before
and after figures come from one load. Each half runs in its own process.

    python bench/deck_reads.py [--url ...] [--compare /tmp/base] [--runs 5] [--idle-seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

from chokaq.app import App
from chokaq.deck import Role, create_deck
from chokaq.deck.state import DeckState, snapshot

ARCHIVE_ROWS = 1_000_000
DLQ_ROWS = 100_000
HOT_ROWS = 100_000
BIG_DLQ_ROWS = 50  # the newest DLQ rows carry a 1 MB payload and a 20 kB traceback
QUEUES = 8
PAGE = 50

# Bench code may hold SQL (the library may not): it fabricates a store faster than workers could.
LOAD = [
    """INSERT INTO {s}.queues (name, updated_at)
       SELECT 'q' || g, now() FROM generate_series(1, %(queues)s - 1) g
       ON CONFLICT DO NOTHING""",
    # Every tenth row is tenant acme's (a broad search: 100,000 matches), every other row has
    # one of 100 partitions (5,000 rows each), one row in 50 has no duration (it sorts last).
    """INSERT INTO {s}.jobs_archive (id, queue, type, payload, tags, priority, attempt_count,
           worker_id, created_at, started_at, finished_at, duration_seconds, partition_key)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50), '{{"order":' || g || ',"note":"bench row"}}',
              'tag' || (g %% 20) || CASE WHEN g %% 10 = 3 THEN ' tenant:acme' ELSE '' END,
              10 + g %% 3, 1 + g %% 3, 'bench-worker',
              now() - make_interval(secs => g * 1.2) - interval '2 seconds',
              now() - make_interval(secs => g * 1.2) - interval '1 second',
              now() - make_interval(secs => g * 1.2),
              CASE WHEN g %% 50 = 1 THEN NULL ELSE 0.5 + (g %% 997) / 100.0 END,
              CASE WHEN g %% 2 = 0 THEN 'p' || (g / 2 %% 100) END
       FROM generate_series(1, %(archive)s) g""",
    """INSERT INTO {s}.jobs_dlq (id, queue, type, payload, tags, priority, failure_reason,
           error, attempt_count, worker_id, created_at, started_at, failed_at, duration_seconds,
           partition_key)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50),
              CASE WHEN g <= %(big)s
                   THEN '{{"blob":"' || repeat(md5(g::text), 31250) || '"}}'
                   ELSE '{{"order":' || g || '}}' END,
              'tag' || (g %% 20), 10,
              (ARRAY[0, 1, 2, 4, 5, 6, 7, 8])[1 + g %% 8],
              'Traceback (most recent call last):' || chr(10) || '  File "jobs.py", line '
                  || (g %% 300) || ', in handler' || chr(10)
                  || CASE WHEN g <= %(big)s THEN repeat('  frame' || chr(10), 2500) ELSE '' END
                  || 'ValueError: card ' || (g %% 100) || ' declined by bank ' || (g %% 7),
              3, 'bench-worker',
              now() - make_interval(secs => g * 12) - interval '2 seconds',
              now() - make_interval(secs => g * 12) - interval '1 second',
              now() - make_interval(secs => g * 12), 0.25,
              CASE WHEN g %% 2 = 0 THEN 'p' || (g / 2 %% 100) END
       FROM generate_series(1, %(dlq)s) g""",
    # Pending jobs: 10 % delayed by an hour, the others due over the last 30 seconds.
    """INSERT INTO {s}.jobs_hot (id, queue, type, payload, priority, status, created_at,
           updated_at, scheduled_at)
       SELECT gen_random_uuid(),
              CASE WHEN g %% %(queues)s = 0 THEN 'default' ELSE 'q' || (g %% %(queues)s) END,
              'type_' || (g %% 50), '{{}}', 10, 0, now() - make_interval(secs => g %% 30),
              now(),
              CASE WHEN g %% 10 = 0 THEN now() + interval '1 hour'
                   ELSE now() - make_interval(secs => g %% 30) END
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
TABLES = ("jobs_archive", "jobs_dlq", "jobs_hot", "metric_buckets")

# (name, query string of GET /api/jobs). A deep page is asked for by number on a tree without
# keyset paging and by key (the Deck's `after` token of the row before it) on one with it.
LISTS: list[tuple[str, str]] = [
    ("active, page 1", "source=active"),
    ("archive, page 1", "source=archive"),
    ("dlq, page 1 (50 rows of 1 MB payload)", "source=dlq"),
    ("active, status=pending", "source=active&status=pending"),
    ("active, queue=q3", "source=active&queue=q3"),
    ("archive, type=type_7", "source=archive&type=type_7"),
    ("archive, queue=q3", "source=archive&queue=q3"),
    ("archive, last 24 h", "source=archive&since={day_ago}"),
    ("dlq, reason=transient", "source=dlq&reason=transient"),
    ("active, sort type", "source=active&sort=type"),
    ("active, sort priority asc", "source=active&sort=priority&order=asc"),
    ("archive, sort type", "source=archive&sort=type"),
    ("archive, sort queue asc", "source=archive&sort=queue&order=asc"),
    ("archive, sort priority", "source=archive&sort=priority"),
    ("archive, sort attempts", "source=archive&sort=attempts"),
    ("archive, sort duration", "source=archive&sort=duration"),
    ("archive, sort date asc", "source=archive&order=asc"),
    ("dlq, sort type", "source=dlq&sort=type"),
    ("dlq, sort duration", "source=dlq&sort=duration"),
    ("archive, search no match", "source=archive&search=zq-nomatch"),
    ("archive, search a tag (tag7)", "source=archive&search=tag7"),
    ("archive, search an id's tail", "source=archive&search={archive_tail}"),
    ("dlq, search error text", "source=dlq&search=declined+by+bank+3"),
    ("dlq, search no match", "source=dlq&search=zq-nomatch"),
    ("active, search no match", "source=active&search=zq-nomatch"),
    ("archive, type + search + 7 days", "source=archive&type=type_7&search=tag7&since={week_ago}"),
    ("archive, partition=p7", "source=archive&partition=p7"),
    ("archive, partition + queue", "source=archive&partition=p7&queue=q6"),
    ("dlq, partition=p7", "source=dlq&partition=p7"),
    ("archive, search tenant:acme (100k)", "source=archive&search=tenant:acme"),
    ("archive, search tag1 (55 %)", "source=archive&search=tag1"),
    (
        "archive, queue+type+search+7 days",
        "source=archive&queue=q7&type=type_7&search=tag7&since={week_ago}",
    ),
    (
        "archive, type + search, sort attempts",
        "source=archive&type=type_3&search=acme&sort=attempts",
    ),
    ("  that at 500 a page", "source=archive&type=type_3&search=acme&sort=attempts&page_size=500"),
    ("archive, sort duration asc", "source=archive&sort=duration&order=asc"),
    ("dlq, sort duration asc", "source=dlq&sort=duration&order=asc"),
]
# (name, sort, order, column, rows before the page): a page by key deep in the archive.
DEEP: list[tuple[str, str, bool, str, int]] = [
    ("archive, by duration, 100,000 deep", "duration", True, "duration_seconds", 100_000),
    ("archive, by duration, 500,000 deep", "duration", True, "duration_seconds", 500_000),
    ("archive, by duration asc, 500,000 deep", "duration", False, "duration_seconds", 500_000),
    ("archive, by duration, 990,000 deep", "duration", True, "duration_seconds", 990_000),
    ("archive, by type, 500,000 deep", "type", True, "type", 500_000),
    ("archive, by queue asc, 500,000 deep", "queue", False, "queue", 500_000),
    ("archive, by priority, 500,000 deep", "priority", True, "priority", 500_000),
    ("archive, by attempts, 500,000 deep", "attempts", True, "attempt_count", 500_000),
    ("archive, by date asc, 500,000 deep", "date", False, "finished_at", 500_000),
]
PREVIEWS: list[tuple[str, dict[str, Any]]] = [
    ("archive preview, broad search", {"search": "tag1"}),
    ("archive preview, tenant:acme", {"search": "tenant:acme"}),
    ("archive preview, queue", {"queue": "q3"}),
]


def load(url: str, schema: str) -> float:
    started = time.perf_counter()
    params = {
        "queues": QUEUES,
        "archive": ARCHIVE_ROWS,
        "dlq": DLQ_ROWS,
        "hot": HOT_ROWS,
        "big": BIG_DLQ_ROWS,
    }
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in LOAD:
            conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)), params)
        analyze(conn, schema)
    return time.perf_counter() - started


def analyze(conn: psycopg.Connection[Any], schema: str) -> None:
    for table in TABLES:
        conn.execute(
            sql.SQL("VACUUM ANALYZE {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
        )


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def fmt(times: list[float]) -> str:
    return f"{statistics.median(times):7.1f} p95 {p95(times):7.1f} (max {max(times):.1f})"


async def timed(fn: Callable[[], Awaitable[Any]], runs: int) -> tuple[list[float], Any]:
    result = await fn()  # warm caches and the connection pool once
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await fn()
        times.append((time.perf_counter() - started) * 1000)
    return times, result


def deep_query(url: str, schema: str) -> str:
    """Page 20,000 of the archive by date: by number without keyset paging, else by key (the
    token of the row just before it, read here with SQL, as the Deck's next link would be)."""
    try:
        from chokaq.deck.paging import encode_cursor  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "source=archive&page=20000"
    with psycopg.connect(url) as conn:
        row = conn.execute(
            sql.SQL(
                "SELECT finished_at, id::text FROM {}.jobs_archive"
                " ORDER BY finished_at DESC, id DESC OFFSET %s LIMIT 1"
            ).format(sql.Identifier(schema)),
            (19_999 * PAGE - 1,),
        ).fetchone()
    assert row is not None
    token = encode_cursor("date", True, row[0], row[1])
    return f"source=archive&after={token}"


def deep_by(url: str, schema: str, sort: str, desc: bool, column: str, rows: int) -> str:
    """The query of the archive page after ``rows`` rows in a sort, by the token of the row
    before it (NULLs last in either direction, as the Deck sorts)."""
    from chokaq.deck.paging import encode_cursor  # type: ignore[import-not-found,unused-ignore]

    way = "DESC" if desc else "ASC"
    with psycopg.connect(url) as conn:
        row = conn.execute(
            sql.SQL(
                "SELECT {c}, id::text FROM {t}.jobs_archive"
                " ORDER BY {c} " + way + " NULLS LAST, id " + way + " OFFSET %s LIMIT 1"
            ).format(c=sql.Identifier(column), t=sql.Identifier(schema)),
            (rows - 1,),
        ).fetchone()
    assert row is not None
    value = float(row[0]) if column == "duration_seconds" and row[0] is not None else row[0]
    token = encode_cursor(sort, desc, value, row[1])
    return f"source=archive&sort={sort}&order={'desc' if desc else 'asc'}&after={token}"


def last_query(keyset: bool) -> str:
    return "source=archive&last=true" if keyset else f"source=archive&page={ARCHIVE_ROWS // PAGE}"


async def requests(app: App, url: str, schema: str, runs: int) -> dict[str, Any]:
    deck = create_deck(app, authorizer=lambda request: Role.ADMIN, allowed_hosts=["deck.test"])
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=deck), base_url="http://deck.test", timeout=120
    ) as client:
        now = datetime.now(UTC)
        with psycopg.connect(url) as conn:
            tail = conn.execute(
                sql.SQL("SELECT right(id::text, 12) FROM {}.jobs_archive LIMIT 1").format(
                    sql.Identifier(schema)
                )
            ).fetchone()
        fills = {
            "day_ago": (now - timedelta(days=1)).isoformat().replace("+00:00", "Z"),
            "week_ago": (now - timedelta(days=7)).isoformat().replace("+00:00", "Z"),
            "archive_tail": tail[0] if tail else "0",
        }
        deep = deep_query(url, schema)
        keyset = "after=" in deep
        cases = [(n, q.format(**fills)) for n, q in LISTS]
        cases += [("archive, page 20,000 (deep)", deep), ("archive, last page", last_query(keyset))]
        if keyset:
            cases += [(n, deep_by(url, schema, *shape)) for n, *shape in DEEP]
        cases += [
            ("series, hour", "@/api/series?window=hour"),
            ("series, 2 weeks", "@/api/series?window=2w"),
        ]
        for name, query in cases:
            path = query[1:] if query.startswith("@") else f"/api/jobs?page_size={PAGE}&{query}"

            async def get(path: str = path) -> httpx.Response:
                response = await client.get(path)
                response.raise_for_status()
                return response

            times, response = await timed(get, runs)
            body = response.json()
            total = body.get("total")
            label = "about " if body.get("total_estimated") else ""
            out[name] = {
                "ms": times,
                "bytes": len(response.content),
                "total": None if total is None else f"{label}{total:,}",
            }
            size = len(response.content)
            shown = out[name]["total"] or ""
            print(f"  {name:<40} {fmt(times)} ms  {size:>11,} B  {shown}", flush=True)
        for name, job_filter in PREVIEWS:

            async def post(job_filter: dict[str, Any] = job_filter) -> httpx.Response:
                response = await client.post(
                    "/api/archive/preview", json={"filter": job_filter, "cap": 1000}
                )
                response.raise_for_status()
                return response

            times, response = await timed(post, runs)
            body = response.json()
            label = "about " if body.get("matched_estimated") else ""
            out[name] = {"ms": times, "matched": f"{label}{body['matched']:,}"}
            print(f"  {name:<40} {fmt(times)} ms  matched {out[name]['matched']}", flush=True)
    return out


async def snapshot_cost(app: App, runs: int) -> dict[str, Any]:
    state = DeckState(app, None, _signer(), None, 0.5, "bench")
    times, snap = await timed(lambda: snapshot(state), runs)
    size = len(json.dumps(snap, default=str))
    print(f"  {'live snapshot (uncached)':<40} {fmt(times)} ms  {size:>11,} B", flush=True)
    return {"ms": times, "bytes": size}


def _signer() -> Any:
    from chokaq.deck.auth import SessionSigner

    return SessionSigner()


class ByteCounter:
    """ASGI wrapper that adds up the body bytes the Deck sends, per path."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bytes: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")

        async def counting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                self.bytes[path] += len(message.get("body", b""))
            elif message["type"] == "http.response.start":
                self.requests[path] += 1
            await send(message)

        await self.app(scope, receive, counting)


@contextlib.asynccontextmanager
async def served(asgi: Any) -> AsyncIterator[int]:
    """``asgi`` served by uvicorn on a free local port (yielded) until the block ends."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        await serving


async def idle_tabs(app: App, seconds: float) -> dict[str, Any]:
    """A real Chromium tab left idle on Active, then on DLQ: storage seconds and bytes/min."""
    from playwright.async_api import async_playwright

    spent: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    def observe(operation: str, secs: float, error: BaseException | None) -> None:
        spent[operation] += secs
        calls[operation] += 1

    app.backend.add_observer(observe)
    counter = ByteCounter(create_deck(app, authorizer=lambda request: Role.ADMIN))
    out: dict[str, Any] = {}
    async with served(counter) as port, async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium")
        for tab in ("active", "dlq"):
            page = await browser.new_page()
            await page.goto(f"http://127.0.0.1:{port}/#tab={tab}")
            await page.wait_for_selector("#job-rows tr", timeout=60_000)
            await asyncio.sleep(3)  # let the first loads settle
            spent.clear(), calls.clear(), counter.bytes.clear(), counter.requests.clear()
            started = time.perf_counter()
            await asyncio.sleep(seconds)  # the measurement window: the tab sits idle
            window = time.perf_counter() - started
            await page.close()
            per_min = 60.0 / window
            out[tab] = {
                "storage_seconds_per_min": sum(spent.values()) * per_min,
                "storage_calls_per_min": sum(calls.values()) * per_min,
                "by_operation_seconds_per_min": {k: v * per_min for k, v in spent.most_common()},
                "bytes_per_min": sum(counter.bytes.values()) * per_min,
                "requests_per_min": {k: v * per_min for k, v in counter.requests.items()},
            }
            top = ", ".join(f"{k} {v * per_min:.2f}" for k, v in spent.most_common(4))
            print(
                f"  idle {tab:<6} tab: storage {out[tab]['storage_seconds_per_min']:.2f} s/min"
                f" in {out[tab]['storage_calls_per_min']:.0f} calls/min ({top}),"
                f" {out[tab]['bytes_per_min'] / 1e6:.2f} MB/min sent",
                flush=True,
            )
        await browser.close()
    return out


# (name, the Deck's link): the time from opening the link in Chromium to the jobs table's rows.
BROWSER: list[tuple[str, str]] = [
    ("archive, page 1", "#tab=archive"),
    ("archive, search tenant:acme (100k)", "#tab=archive&search=tenant%3Aacme"),
    ("archive, search tag1 (55 %)", "#tab=archive&search=tag1"),
    ("archive, sort duration asc", "#tab=archive&sort=duration&order=asc"),
    ("archive, partition=p7", "#tab=archive&partition=p7"),
]


# Marks, in the page's own clock (milliseconds from the start of navigation), the moment the
# jobs table first holds a row: what the operator waits for, without the cost of opening a tab
# and of the automation's round trips, which a wall clock around goto would add.
ROWS_SHOWN = """
window.__rowsShownAt = null;
const rowsSeen = new MutationObserver(function () {
  if (document.querySelector("#job-rows tr td")) {
    window.__rowsShownAt = performance.now();
    rowsSeen.disconnect();
  }
});
rowsSeen.observe(document, { childList: true, subtree: true });
"""


async def browser_rows(app: App, runs: int) -> dict[str, Any]:
    """Chromium (Playwright) against the Deck served by uvicorn: per link, a fresh tab, and the
    page's own time from navigation to the first row of the jobs table (``ms``); ``wall_ms``
    is the outer time from ``goto`` to Playwright seeing that row. One warm-up per link."""
    from playwright.async_api import async_playwright

    deck = create_deck(app, authorizer=lambda request: Role.ADMIN)
    out: dict[str, Any] = {}
    async with served(deck) as port, async_playwright() as p:
        browser = await p.chromium.launch(executable_path="/usr/bin/chromium")
        for name, link in BROWSER:
            shown_at: list[float] = []

            async def shown(link: str = link, shown_at: list[float] = shown_at) -> None:
                page = await browser.new_page()
                await page.add_init_script(ROWS_SHOWN)
                await page.goto(f"http://127.0.0.1:{port}/{link}")
                await page.wait_for_selector("#job-rows tr td", timeout=60_000)
                shown_at.append(float(await page.evaluate("window.__rowsShownAt")))
                await page.close()

            walls, _ = await timed(shown, runs)
            times = shown_at[1:]  # the first was the warm-up
            out[name] = {"ms": times, "wall_ms": walls}
            print(f"  browser: {name:<31} {fmt(times)} ms to rows (wall {fmt(walls)})", flush=True)
        await browser.close()
    return out


async def measure(url: str, schema: str, runs: int, idle_seconds: float) -> dict[str, Any]:
    app = App(url, schema=schema, auto_migrate=False)
    await app.open()
    try:
        started = time.perf_counter()
        applied = await app.backend.migrate()
        migrated = time.perf_counter() - started
        if applied:
            print(f"  migrations {applied} applied in {migrated:.1f} s", flush=True)
            with psycopg.connect(url, autocommit=True) as conn:
                analyze(conn, schema)
        result: dict[str, Any] = {"migrated": applied, "migrate_seconds": migrated}
        print(f"  median, p95 and max of {runs} runs, ms; response bytes; total", flush=True)
        result["requests"] = await requests(app, url, schema, runs)
        result["snapshot"] = await snapshot_cost(app, runs)
        result["browser"] = await browser_rows(app, min(runs, 10))
        if idle_seconds > 0:
            result["idle"] = await idle_tabs(app, idle_seconds)
        return result
    finally:
        await app.close()


def run_half(tree: Path | None, args: argparse.Namespace, schema: str, out: Path) -> None:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "src")
    cmd = [
        sys.executable,
        __file__,
        "--url",
        args.url,
        "--schema",
        schema,
        "--runs",
        str(args.runs),
    ]
    cmd += ["--idle-seconds", str(args.idle_seconds), "--json", str(out), "--no-drop"]
    subprocess.run(cmd, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--compare", type=Path, help="a source tree to measure first (before)")
    parser.add_argument("--schema", help="measure this already loaded schema (no load)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--no-drop", action="store_true")
    args = parser.parse_args()
    if args.schema and not args.compare:
        result = asyncio.run(measure(args.url, args.schema, args.runs, args.idle_seconds))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1, default=str))
        return
    schema = f"bench_deck_{uuid.uuid4().hex[:8]}"
    try:
        first = args.compare
        env = dict(os.environ)
        if first is not None:
            env["PYTHONPATH"] = str(first / "src")
        # The schema is created and migrated by the tree measured first, then loaded.
        subprocess.run([sys.executable, "-c", _MIGRATE, args.url, schema], env=env, check=True)
        print(f"loading {ARCHIVE_ROWS:,} archive, {DLQ_ROWS:,} DLQ, {HOT_ROWS:,} hot rows ...")
        print(f"  loaded in {load(args.url, schema):.1f} s", flush=True)
        results: dict[str, Any] = {"at": datetime.now(UTC).isoformat()}
        halves = [("before", first), ("after", None)] if first is not None else [("this", None)]
        for name, tree in halves:
            print(
                f"{name}: chokaq from {(tree or Path(__file__).parent.parent) / 'src'}", flush=True
            )
            out = Path(f"/tmp/deck_reads_{schema}_{name}.json")
            run_half(tree, args, schema, out)
            results[name] = json.loads(out.read_text())
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))
    finally:
        if not args.no_drop:
            with psycopg.connect(args.url, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )
            print(f"dropped schema {schema}")


_MIGRATE = """
import asyncio, sys
from chokaq.app import App
async def go():
    app = App(sys.argv[1], schema=sys.argv[2], auto_migrate=True)
    await app.open()
    await app.backend.migrate()
    await app.close()
asyncio.run(go())
"""


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()

"""Retention deletes exactly what is old enough, in every pillar it owns, and never touches the
lifetime counters (both backends)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from chokaq.models import JobFilter, Pillar
from chokaq.runtime.maintenance import run_retention

from .conftest import seed
from .ops_app import build


async def ids(app: Any, pillar: Pillar) -> set[str]:
    page = await app.backend.jobs_page(pillar=pillar, filter=JobFilter(), page_size=1000)
    return {v.id for v in page.items}


async def test_retention_deletes_exactly_the_old_rows_and_keeps_counters(store: Any) -> None:
    await seed(store, ok=4, poison=2, flaky=1)  # generation A
    app = build(store.url, store.schema)
    await app.open()
    try:
        old_archive, old_dlq = await ids(app, Pillar.ARCHIVE), await ids(app, Pillar.DLQ)
        boundary = datetime.now(UTC)
        await seed(store, ok=3, poison=1, flaky=0)  # generation B, finished after the boundary
        new_archive = await ids(app, Pillar.ARCHIVE) - old_archive
        new_dlq = await ids(app, Pillar.DLQ) - old_dlq
        assert (len(old_archive), len(old_dlq), len(new_archive), len(new_dlq)) == (4, 3, 3, 1)
        counters = await app.backend.stats_summary()
        seconds_before = await app.backend.stats_series(since=boundary - timedelta(hours=1))
        assert sum(p.succeeded + p.failed for p in seconds_before) == 11
        settings = app.worker_settings  # defaults: archive 7 days, DLQ 30 days

        # A week after the boundary: generation A's archive rows are due, nothing else is.
        done = await run_retention(app.backend, settings, now=boundary + timedelta(days=7))
        assert done["archive"] == 4 and done["dlq"] == 0
        assert await ids(app, Pillar.ARCHIVE) == new_archive
        assert await ids(app, Pillar.DLQ) == old_dlq | new_dlq
        # Second buckets older than an hour are folded into minute buckets, counts intact: the
        # series (which reads both widths) still holds them, now on minute starts.
        assert done["rolled_up"] >= 1 and done["minute_buckets"] == 0
        folded = await app.backend.stats_series(since=boundary - timedelta(hours=1))
        assert folded and all(p.bucket_start.second == 0 for p in folded)
        assert sum(p.succeeded + p.failed for p in folded) == 11

        # Thirty days after: generation A's DLQ rows and all archive rows; B's DLQ row stays.
        done = await run_retention(app.backend, settings, now=boundary + timedelta(days=30))
        assert done["archive"] == 3 and done["dlq"] == 3
        assert await ids(app, Pillar.ARCHIVE) == set()
        assert await ids(app, Pillar.DLQ) == new_dlq
        assert done["minute_buckets"] >= 1  # older than 14 days by then
        assert (
            await app.backend.stats_series(since=boundary - timedelta(hours=1), width_seconds=60)
            == []
        )

        after = await app.backend.stats_summary()
        lifetime = ("succeeded_total", "failed_total", "retried_total")
        assert [getattr(after, f) for f in lifetime] == [getattr(counters, f) for f in lifetime]
        assert (after.succeeded_total, after.failed_total, after.retried_total) == (7, 4, 1)
        # The hot pillar is never retention's business.
        assert after.pending == counters.pending == 0
    finally:
        await app.close()


async def test_retention_is_a_no_op_when_nothing_is_old(store: Any) -> None:
    await seed(store, ok=2, poison=1, flaky=0)
    app = build(store.url, store.schema)
    await app.open()
    try:
        done = await run_retention(app.backend, app.worker_settings)
        assert done == {
            "archive": 0,
            "dlq": 0,
            "rolled_up": 0,
            "minute_buckets": 0,
            "limit_keys": 0,
            "unique_keys": 0,
            "supersessions": 0,
            "batches": 0,
        }
        assert len(await ids(app, Pillar.ARCHIVE)) == 2 and len(await ids(app, Pillar.DLQ)) == 1
    finally:
        await app.close()

"""A worker beside undecodable rows: the healthy jobs of the batch run, the poison ones are
dead-lettered as REJECTED.

Two kinds of poison are planted with raw SQL (the API refuses both): a row whose due time the
database holds but Python cannot represent (before year 1 on PostgreSQL, year 0 on SQLite),
which the claim itself cannot decode, and a row whose payload is not JSON, which the claim
hands out and the executor rejects. Nine healthy jobs claimed in the same batch all run.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from chokaq.ids import new_job_ids
from chokaq.models import FailureReason, JobFilter, Pillar

from .conftest import running, until

YEAR_0 = -62_167_219_200.0 - 86_400


def _plant(store: Any, job_type: str) -> tuple[str, str]:
    """The undecodable row and the bad-JSON row, both due, ahead of every healthy job."""
    undecodable, bad_json = new_job_ids(2)
    columns = "id, queue, type, payload, priority, status, scheduled_at, created_at, updated_at"
    if store.dialect == "sqlite":
        conn = sqlite3.connect(store.url.removeprefix("sqlite:///"), isolation_level=None)
        table = f"{store.schema}_jobs_hot"
        sql = f"INSERT INTO {table} ({columns}) VALUES (?, 'default', ?, ?, 100, 0, ?, ?, ?)"
        with conn:
            conn.execute(sql, (undecodable, job_type, "{}", YEAR_0, 1e9, 1e9))
            conn.execute(sql, (bad_json, job_type, "{not json", 1e9, 1e9, 1e9))
        conn.close()
    else:
        sql = (
            f'INSERT INTO "{store.schema}".jobs_hot ({columns}) VALUES '
            "(%s, 'default', %s, %s, 100, 0, %s::timestamptz, now(), now())"
        )
        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute(sql, (undecodable, job_type, "{}", "0001-01-01 00:00+00 BC"))
            conn.execute(sql, (bad_json, job_type, "{not json", "2001-01-01 00:00+00"))
    return undecodable, bad_json


async def test_a_worker_runs_the_healthy_jobs_of_a_batch_holding_poison_rows(
    make_app: Any, store: Any
) -> None:
    app = make_app()
    ran: list[int] = []

    @app.job()
    async def work(n: int) -> None:
        ran.append(n)

    await app.open()
    await work.enqueue_many([{"n": n} for n in range(9)])
    undecodable, bad_json = _plant(store, work.name)
    async with running(app, concurrency=20):

        async def settled() -> bool:
            summary = await app.backend.stats_summary()
            return summary.succeeded_total == 9 and summary.failed_total == 2

        await until(settled)
    assert sorted(ran) == list(range(9))
    for job_id, detail in ((undecodable, "scheduled_at"), (bad_json, "payload does not fit")):
        view = await app.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.DLQ, view
        assert view.failure_reason is FailureReason.REJECTED
        assert view.error is not None and detail in view.error, view.error
    page = await app.backend.jobs_page(
        pillar=Pillar.DLQ, filter=JobFilter(failure_reason=FailureReason.REJECTED)
    )
    assert page.total == 2
    summary = await app.backend.stats_summary()
    assert (summary.pending, summary.fetched, summary.processing) == (0, 0, 0)

"""Reads on SQLite: the overview, per-queue stats, throughput, chart series, top DLQ errors,
paged listings and single-job lookups.

Each function runs on the connection's thread inside one read transaction (one snapshot). The
overview and throughput never touch the archive or the DLQ. Owns turning a checked filter into
parameters and a whitelisted sort column into an ORDER BY; it writes and checks nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TypeVar

from ...models import (
    ErrorGroup,
    FailureReason,
    JobAttempt,
    JobFilter,
    JobView,
    Page,
    PendingGroup,
    Pillar,
    QueueStats,
    SeriesPoint,
    Summary,
    Throughput,
)
from ..checks import NULLABLE_SORTS
from .connection import Database, quote_identifier
from .rows import from_ts, job_view, queue_info

__all__ = [
    "filter_params",
    "job_attempts",
    "job_get",
    "jobs_page",
    "jobs_pending_groups",
    "order_by",
    "stats_queues",
    "stats_series",
    "stats_summary",
    "stats_throughput",
    "top_errors",
]

_DIRECTION = {True: "DESC", False: "ASC"}


def order_by(column: str, descending: bool) -> str:
    """The ORDER BY list of a whitelisted column (NULLs last in either direction, as on
    PostgreSQL), then id in the same direction as the tie-breaker."""
    direction = _DIRECTION[descending]
    nulls = " NULLS LAST" if column in NULLABLE_SORTS else ""
    return f"{quote_identifier(column)} {direction}{nulls}, {quote_identifier('id')} {direction}"


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filter_params(filter: JobFilter) -> dict[str, object]:
    """The named parameters every filtered statement takes (None switches a filter off)."""
    search = filter.search
    return {
        "queue": filter.queue,
        "type": filter.type,
        "status": None if filter.status is None else int(filter.status),
        "reason": None if filter.failure_reason is None else int(filter.failure_reason),
        "since": None if filter.since is None else filter.since.timestamp(),
        "until": None if filter.until is None else filter.until.timestamp(),
        "ids": None if filter.ids is None else json.dumps(list(filter.ids)),
        "search": _like(search) if search else None,
        "blocked": None if filter.blocked is None else int(filter.blocked),
        "partition": filter.partition,
        "family": filter.error_family,
    }


def stats_summary(db: Database) -> Summary:
    def run() -> Summary:
        pending, fetched, processing, waiting = db.conn.execute(db.q["stats_summary"]).fetchone()
        succeeded, failed, retried, last = db.conn.execute(db.q["stats_summary_totals"]).fetchone()
        return Summary(
            pending=pending,
            fetched=fetched,
            processing=processing,
            succeeded_total=succeeded,
            failed_total=failed,
            retried_total=retried,
            last_activity_at=from_ts(last),
            waiting=waiting,
        )

    return db.read(run)


def jobs_pending_groups(
    db: Database, queues: list[str] | None, marker: str, now: float
) -> list[PendingGroup]:
    params = {
        "queues": None if queues is None else json.dumps(queues),
        "marker": marker,
        "now": now,
    }
    return [
        PendingGroup(r[0], r[1], r[2], r[3], r[4], from_ts(r[5]), r[6])
        for r in db.conn.execute(db.q["jobs_pending_groups"], params).fetchall()
    ]


def stats_queues(db: Database, now: float) -> list[QueueStats]:
    def run() -> list[QueueStats]:
        out = []
        for row in db.conn.execute(db.q["stats_queues"], {"now": now}).fetchall():
            values = tuple(row)
            out.append(
                QueueStats(
                    queue=queue_info((*values[:7], values[19])),
                    pending=values[7],
                    fetched=values[8],
                    processing=values[9],
                    succeeded_total=values[10],
                    failed_total=values[11],
                    retried_total=values[12],
                    last_activity_at=from_ts(values[13]),
                    lag_count=values[14],
                    lag_avg_seconds=float(values[15]),
                    lag_max_seconds=float(values[16]),
                    waiting=values[17],
                    blocked=values[18],
                )
            )
        return out

    return db.read(run)


def stats_throughput(db: Database, now: float) -> Throughput:
    row = db.conn.execute(
        db.q["stats_throughput"], {"since_1m": now - 60.0, "since_5m": now - 300.0}
    ).fetchone()
    return Throughput(processed_1m=row[0], failed_1m=row[1], processed_5m=row[2], failed_5m=row[3])


def stats_series(
    db: Database, since: float, until: float | None, width: int, queue: str | None
) -> list[SeriesPoint]:
    rows = db.conn.execute(
        db.q["stats_series"], {"since": since, "until": until, "width": width, "queue": queue}
    ).fetchall()
    return [
        SeriesPoint(
            bucket_start=from_ts(row[0]),  # type: ignore[arg-type]
            succeeded=row[1],
            failed=row[2],
            total_duration_seconds=float(row[3]),
            max_duration_seconds=row[4],
        )
        for row in rows
    ]


def top_errors(db: Database, limit: int, scan: int) -> list[ErrorGroup]:
    rows = db.conn.execute(db.q["dlq_top_errors"], {"scan": scan, "limit": limit}).fetchall()
    return [
        ErrorGroup(
            failure_reason=FailureReason(reason),
            family=family,
            count=int(count),
            latest_at=from_ts(latest),  # type: ignore[arg-type]
        )
        for reason, family, count, latest in rows
    ]


def job_attempts(db: Database, job_id: str, limit: int) -> list[JobAttempt]:
    rows = db.conn.execute(db.q["attempts_list"], {"id": job_id, "limit": limit}).fetchall()
    return [
        JobAttempt(
            seq=row[0],
            attempt=row[1],
            failed_at=from_ts(row[2]),  # type: ignore[arg-type]
            started_at=from_ts(row[3]),
            worker_id=row[4],
            duration_seconds=row[5],
            failure_reason=None if row[6] is None else FailureReason(row[6]),
            error=row[7],
        )
        for row in rows
    ]


_PAGE = {Pillar.HOT: "hot", Pillar.ARCHIVE: "archive", Pillar.DLQ: "dlq"}


def jobs_page(
    db: Database,
    pillar: Pillar,
    filter: JobFilter,
    column: str,
    descending: bool,
    page: int,
    page_size: int,
) -> Page[JobView]:
    params = filter_params(filter)
    order = order_by(column, descending)
    name = _PAGE[pillar]

    def run() -> Page[JobView]:
        total = db.conn.execute(db.q[f"{name}_count"], params).fetchone()[0]
        sql = db.q[f"{name}_page"].replace("{order}", order)
        rows = db.conn.execute(
            sql, {**params, "limit": page_size, "offset": (page - 1) * page_size}
        ).fetchall()
        items = tuple(job_view(pillar, row) for row in rows)
        return Page(items=items, total=total, page=page, page_size=page_size)

    return db.read(lambda: _displayable(db, run))


def job_get(db: Database, id: str) -> JobView | None:
    def run() -> JobView | None:
        for pillar, query in (
            (Pillar.HOT, "hot_get"),
            (Pillar.ARCHIVE, "archive_get"),
            (Pillar.DLQ, "dlq_get"),
        ):
            row = db.conn.execute(db.q[query], {"id": id}).fetchone()
            if row is not None:
                return job_view(pillar, row)
        return None

    return db.read(lambda: _displayable(db, run))


T = TypeVar("T")


def _displayable(db: Database, run: Callable[[], T]) -> T:
    """``run()``; if a row holds text that is not UTF-8 (written outside chokaq), ``run()``
    again with such bytes shown as U+FFFD, so the listing or detail still answers."""
    try:
        return run()
    except sqlite3.OperationalError as exc:
        if "decode" not in str(exc):
            raise
    db.conn.text_factory = _replaced
    try:
        return run()
    finally:
        db.conn.text_factory = str


def _replaced(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")

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
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from ...models import (
    ErrorGroup,
    FailureReason,
    JobAttempt,
    JobFilter,
    JobView,
    LagGroup,
    PageKey,
    PendingGroup,
    Pillar,
    QueueStats,
    SeriesPoint,
    Summary,
    Supersession,
    Throughput,
    UnservedQueue,
)
from ..checks import NULLABLE_SORTS
from ..paging import TIME_SORTS
from .connection import Database, SQLiteCore, quote_identifier
from .rows import from_ts, job_view, queue_info, ts_now

__all__ = [
    "SQLiteReads",
    "filter_params",
    "job_attempts",
    "job_get",
    "job_supersession",
    "jobs_count",
    "jobs_lag",
    "jobs_list",
    "jobs_pending_groups",
    "order_by",
    "queues_unserved",
    "stats_queues",
    "stats_series",
    "stats_summary",
    "stats_throughput",
    "top_errors",
    "traversal",
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
        # An id matches by its end: a whole id, or the tail The Deck shows (as on PostgreSQL).
        "search_id": _like(search)[:-1] if search else None,
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


def jobs_lag(db: Database, limit: int, now: float) -> list[LagGroup]:
    rows = db.conn.execute(db.q["jobs_lag"], {"limit": limit, "now": now}).fetchall()
    return [
        LagGroup(r[0], r[1], r[2], r[3], r[4], r[5], from_ts(r[6]), from_ts(r[7])) for r in rows
    ]


def queues_unserved(db: Database, since: float, cap: int, now: float) -> list[UnservedQueue]:
    params = {"since": since, "cap": cap + 1, "now": now}
    rows = db.conn.execute(db.q["queues_unserved"], params).fetchall()
    return [UnservedQueue(name, min(n, cap), n > cap) for name, n in rows]


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
                    replaced_total=values[20],
                    superseded_total=values[21],
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
            duration_count=row[5],
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


def job_supersession(db: Database, job_id: str) -> Supersession:
    row = db.conn.execute(db.q["job_supersession"], {"id": job_id}).fetchone()
    return Supersession(row[0], from_ts(row[1]), bool(row[2]), row[3])


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
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# The sort columns whose NULLs are compared as an infinity (see PostgreSQL's reads).
_SENTINEL_SORTS = frozenset({"duration_seconds"})


def traversal(
    column: str, descending: bool, key: PageKey | None, backward: bool, *, exact: bool = True
) -> tuple[str, str]:
    """The ORDER BY and keyset condition of a listing, as on PostgreSQL (``reads.traversal``
    there): a row-value comparison on (column, id) that the (column, id) index serves.
    ``exact`` false: the key's time is not the stored float of a row (see ``jobs_list``)."""
    desc = descending != backward
    nulls_last = not backward
    nullable = column in NULLABLE_SORTS
    direction = _DIRECTION[desc]
    if column in _SENTINEL_SORTS:
        # As on PostgreSQL, a job without a duration is compared as the infinity it sorts
        # as (migration 11 indexes the expression). SQLite does not turn a row comparison on
        # an expression into an index range, so the key's value bounds it first.
        infinity = "-1e999" if descending else "1e999"
        expr = f"coalesce({quote_identifier(column)}, {infinity})"
        order = f"{expr} {direction}, id {direction}"
        if key is None:
            return order, "1"
        cmp = "<" if desc else ">"
        at = f"coalesce(:key_value, {infinity})"
        return order, f"({expr} {cmp}= {at} AND ({expr}, id) {cmp} ({at}, :key_id))"
    nulls = (" NULLS LAST" if nulls_last else " NULLS FIRST") if nullable else ""
    col = quote_identifier(column)
    order = f"{col} {direction}{nulls}, id {direction}"
    if key is None:
        return order, "1"
    cmp = "<" if desc else ">"
    if column == "id":
        return order, f"id {cmp} :key_id"
    if column in TIME_SORTS and not exact:
        # The key's row is gone: its time stands for the floats in [key_lo, key_hi) that
        # round to its microsecond (rows tied within it are told apart by id only).
        if desc:
            return order, f"({col} < :key_hi AND ({col} < :key_lo OR id < :key_id))"
        return order, f"({col} >= :key_lo AND ({col} >= :key_hi OR id > :key_id))"
    row = f"({col}, id) {cmp} (:key_value, :key_id)"
    if not nullable:
        return order, row
    if key.value is not None:
        return order, f"({row} OR {col} IS NULL)" if nulls_last else row
    among_nulls = f"({col} IS NULL AND id {cmp} :key_id)"
    return order, among_nulls if nulls_last else f"({among_nulls} OR {col} IS NOT NULL)"


def jobs_list(
    db: Database,
    pillar: Pillar,
    filter: JobFilter,
    column: str,
    descending: bool,
    offset: int,
    limit: int,
    key: PageKey | None,
    backward: bool,
) -> list[JobView]:
    value = None if key is None else key.value
    params: dict[str, object] = {
        **filter_params(filter),
        "limit": limit,
        "offset": 0 if key is not None else offset,
        "key_value": value,
        "key_id": None if key is None else key.id,
    }
    name = _PAGE[pillar]
    by_time = key is not None and isinstance(value, datetime) and column in TIME_SORTS

    def run() -> list[JobView]:
        exact = True
        if by_time:
            # A stored time is the float time.time() gave, finer than the key's microseconds:
            # compare with the key row's own float, so that the key orders as the rows do.
            lookup = db.q[f"{name}_key_time"].replace("{column}", quote_identifier(column))
            found = db.conn.execute(lookup, {"key_id": params["key_id"]}).fetchone()
            exact = found is not None and from_ts(found[0]) == value
            if exact:
                params["key_value"] = found[0]
            else:
                micros = (value - _EPOCH) // timedelta(microseconds=1)  # type: ignore[operator]
                params["key_lo"] = (micros - 0.5) / 1e6
                params["key_hi"] = (micros + 0.5) / 1e6
        order, keyset = traversal(column, descending, key, backward, exact=exact)
        sql = db.q[f"{name}_list"].replace("{order}", order).replace("{keyset}", keyset)
        return [job_view(pillar, row) for row in db.conn.execute(sql, params).fetchall()]

    return db.read(lambda: _displayable(db, run))


def jobs_count(
    db: Database, pillar: Pillar, filter: JobFilter, exact_up_to: int
) -> tuple[int, bool]:
    """Always exact: SQLite keeps no row estimate worth the name, and one host's file counts
    in milliseconds what PostgreSQL would estimate."""
    params = filter_params(filter)
    row = db.read(lambda: db.conn.execute(db.q[f"{_PAGE[pillar]}_count"], params).fetchone())
    return int(row[0]), False


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


class SQLiteReads(SQLiteCore):
    """What the faces list, count and chart."""

    async def stats_summary(self) -> Summary:
        return await self._db.call(stats_summary)

    async def jobs_pending_groups(
        self, queues: list[str] | None, marker: str, now: datetime | None
    ) -> list[PendingGroup]:
        return await self._db.call(jobs_pending_groups, queues, marker, ts_now(now))

    async def jobs_lag(self, limit: int, now: datetime | None) -> list[LagGroup]:
        return await self._db.call(jobs_lag, limit, ts_now(now))

    async def queues_unserved(
        self, alive_within_seconds: float, cap: int, now: datetime | None
    ) -> list[UnservedQueue]:
        at = ts_now(now)
        return await self._db.call(queues_unserved, at - alive_within_seconds, cap, at)

    async def stats_queues(self, now: datetime | None) -> list[QueueStats]:
        return await self._db.call(stats_queues, ts_now(now))

    async def stats_throughput(self, now: datetime | None) -> Throughput:
        return await self._db.call(stats_throughput, ts_now(now))

    async def stats_series(
        self, since: datetime, until: datetime | None, width_seconds: int, queue: str | None
    ) -> list[SeriesPoint]:
        end = None if until is None else until.timestamp()
        return await self._db.call(stats_series, since.timestamp(), end, width_seconds, queue)

    async def dlq_top_errors(self, limit: int, scan: int) -> list[ErrorGroup]:
        return await self._db.call(top_errors, limit, scan)

    async def jobs_list(
        self,
        pillar: Pillar,
        filter: JobFilter,
        column: str,
        descending: bool,
        offset: int,
        limit: int,
        key: PageKey | None,
        backward: bool,
    ) -> list[JobView]:
        return await self._db.call(
            jobs_list, pillar, filter, column, descending, offset, limit, key, backward
        )

    async def jobs_count(
        self, pillar: Pillar, filter: JobFilter, exact_up_to: int
    ) -> tuple[int, bool]:
        return await self._db.call(jobs_count, pillar, filter, exact_up_to)

    async def job_get(self, id: str) -> JobView | None:
        return await self._db.call(job_get, id)

    async def job_attempts(self, id: str, limit: int) -> list[JobAttempt]:
        return await self._db.call(job_attempts, id, limit)

    async def job_supersession(self, id: str) -> Supersession:
        return await self._db.call(job_supersession, id)

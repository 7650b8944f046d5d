"""Reads on PostgreSQL: summaries, per-queue stats, throughput, chart series, DLQ error
families, paged listings and single-job lookups.

Owns turning a checked listing filter into parameters and a whitelisted sort column into an
ORDER BY. It must not write anything, check arguments or hold SQL text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, LiteralString

from psycopg import AsyncConnection, sql

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
from ..paging import LIST_TEXT_CHARS
from .connection import PostgresCore
from .rows import job_view, lenient_rows, queue_info

__all__ = ["PostgresReads", "count_matches", "filter_params", "traversal"]


def _escaped(text: str) -> str:
    """``text`` with LIKE's wildcards (and its escape character) taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like_pattern(search: str) -> str:
    """A case-insensitive substring pattern with LIKE's wildcards taken literally."""
    return f"%{_escaped(search)}%"


def search_params(search: str | None) -> dict[str, str | None]:
    """The patterns of a search: a substring of type, tags or error (ILIKE), and the end of an
    id (ids are lowercase text), also reversed for the archive's b-tree on the reversed id."""
    if not search:
        return {"search": None, "search_id": None, "search_id_reversed": None}
    lowered = search.lower()
    return {
        "search": _like_pattern(search),
        "search_id": f"%{_escaped(lowered)}",
        "search_id_reversed": f"{_escaped(lowered[::-1])}%",
    }


# Only the sort columns that may hold NULL get NULLS LAST: with it, ORDER BY finished_at DESC
# would no longer match the index on finished_at DESC (NULLS FIRST by default), and a page would
# sort every row the filter matches instead of reading its own rows off the index (11 ms against
# 0.1 ms for 50 of a day's rows in a 900,000-row archive).
#
# The duration sort goes further: its NULLs (jobs without a duration) become the infinity on the
# side they sort to, coalesce(duration_seconds, -inf) descending and +inf ascending, so that the
# keyset is one row comparison with no "OR duration_seconds IS NULL" beside it. With that OR the
# index on the duration could order the rows but not start at the key, and a page 500,000 rows
# deep read and discarded every row before it (1.5 s); now it is a range of the index on
# (coalesce(...), id) (migration 11), as deep as the first page. No duration is infinite.
_SENTINEL_SORTS = frozenset({"duration_seconds"})


def _sentinel(column: str, descending: bool) -> sql.Composable:
    """The sort expression of a sort column whose NULLs stand in as an infinity."""
    infinity = sql.Literal("-Infinity" if descending else "Infinity")
    return sql.SQL("coalesce({}, {}::float8)").format(sql.Identifier(column), infinity)


def traversal(
    column: str, descending: bool, key: PageKey | None, backward: bool
) -> tuple[sql.Composable, sql.Composable]:
    """The ORDER BY and the keyset condition (``TRUE`` without a key) of a listing.

    Walking backward reverses the order (NULLs then come first). The condition is a row
    comparison, ``(column, id) < (value, id)``, which a b-tree index on (column, id) turns
    into a range, so a page deep in a million rows costs what the first does; a sort column
    that may hold NULL adds the NULL rows on their side of the key, except the duration, whose
    NULLs are compared as the infinity they sort as (``_sentinel``)."""
    desc = descending != backward
    nulls_last = not backward
    direction = sql.SQL("DESC" if desc else "ASC")
    cmp = sql.SQL("<" if desc else ">")
    if column in _SENTINEL_SORTS:
        expr = _sentinel(column, descending)
        infinity = sql.Literal("-Infinity" if descending else "Infinity")
        order = sql.SQL("{} {}, id {}").format(expr, direction, direction)
        if key is None:
            return order, sql.SQL("TRUE")
        at = sql.SQL("(coalesce(%(key_value)s::float8, {}::float8), %(key_id)s::uuid)")
        return order, sql.SQL("({}, id) {} {}").format(expr, cmp, at.format(infinity))
    nulls = sql.SQL("")
    if column in NULLABLE_SORTS:
        nulls = sql.SQL(" NULLS LAST" if nulls_last else " NULLS FIRST")
    col = sql.Identifier(column)
    order = sql.SQL("{} {}{}, id {}").format(col, direction, nulls, direction)
    if key is None:
        return order, sql.SQL("TRUE")
    if column == "id":
        return order, sql.SQL("id {} %(key_id)s::uuid").format(cmp)
    row = sql.SQL("({}, id) {} (%(key_value)s, %(key_id)s::uuid)").format(col, cmp)
    if column not in NULLABLE_SORTS:
        return order, row
    if key.value is not None:
        tail = sql.SQL(" OR {} IS NULL").format(col) if nulls_last else sql.SQL("")
        return order, sql.SQL("({}{})").format(row, tail)
    among_nulls = sql.SQL("({} IS NULL AND id {} %(key_id)s::uuid)").format(col, cmp)
    if nulls_last:
        return order, among_nulls
    return order, sql.SQL("({} OR {} IS NOT NULL)").format(among_nulls, col)


def _plan_rows(explained: Any) -> int:
    """The top node's row estimate of an ``EXPLAIN (FORMAT JSON)`` answer (0 if absent)."""
    try:
        return int(explained[0]["Plan"]["Plan Rows"])
    except (LookupError, TypeError, ValueError):
        return 0


async def count_matches(
    conn: AsyncConnection[Any],
    queries: Mapping[str, LiteralString],
    pillar: Pillar,
    params: Mapping[str, Any],
    exact_up_to: int,
) -> tuple[int, bool]:
    """The matches of a filter and whether the number is an estimate (``jobs_count``).

    The planner's estimate comes first (from the table's statistics: no row is read). A count
    that stops at the bound still reads every match a search's trigram index gives (the
    bitmap is built before the first row is counted): 150 ms of a 157 ms page for 100,000
    matches. Where the planner expects more matches than the bound, its estimate is the
    answer and nothing is counted; otherwise the count, exact up to the bound."""
    bounded = {**params, "bound": exact_up_to + 1}
    cur = await conn.execute(queries[f"{pillar.value}_estimate"], bounded)
    explained = await cur.fetchone()
    estimate = _plan_rows(explained[0] if explained is not None else None)
    if estimate > exact_up_to:
        return estimate, True
    cur = await conn.execute(queries[f"{pillar.value}_count_upto"], bounded)
    counted = await cur.fetchone()
    total = int(counted[0]) if counted is not None else 0
    if total <= exact_up_to:
        return total, False
    # The planner expected fewer: past the bound, its estimate never below what was counted.
    return max(total, estimate), True


def filter_params(filter: JobFilter) -> dict[str, Any]:
    """The parameters shared by every filtered statement (``None`` means "any")."""
    search = filter.search
    return {
        "queue": filter.queue,
        "type": filter.type,
        "status": int(filter.status) if filter.status is not None else None,
        "reason": int(filter.failure_reason) if filter.failure_reason is not None else None,
        "since": filter.since,
        "until": filter.until,
        "ids": None if filter.ids is None else list(filter.ids),
        **search_params(search),
        "blocked": filter.blocked,
        "partition": filter.partition,
        "family": filter.error_family,
    }


class PostgresReads(PostgresCore):
    """Reads; none of them touches archive or DLQ unless that pillar is asked for."""

    async def stats_summary(self) -> Summary:
        row = await self._one("stats_summary")
        assert row is not None
        return Summary(
            pending=row[0],
            fetched=row[1],
            processing=row[2],
            succeeded_total=row[3],
            failed_total=row[4],
            retried_total=row[5],
            last_activity_at=row[6],
            waiting=row[7],
        )

    async def jobs_pending_groups(
        self, queues: list[str] | None, marker: str, now: datetime | None
    ) -> list[PendingGroup]:
        rows = await self._rows(
            "jobs_pending_groups", {"queues": queues, "marker": marker, "now": now}
        )
        return [PendingGroup(*row) for row in rows]

    async def jobs_lag(self, limit: int, now: datetime | None) -> list[LagGroup]:
        rows = await self._rows("jobs_lag", {"limit": limit, "now": now})
        return [LagGroup(*row) for row in rows]

    async def queues_unserved(
        self, alive_within_seconds: float, cap: int, now: datetime | None
    ) -> list[UnservedQueue]:
        # Each part of the count stops at cap + 1: past cap is "more".
        params = {"within": alive_within_seconds, "cap": cap + 1, "now": now}
        rows = await self._rows("queues_unserved", params)
        return [UnservedQueue(name, min(n, cap), n > cap) for name, n in rows]

    async def stats_queues(self, now: datetime | None) -> list[QueueStats]:
        rows = await self._rows("stats_queues", {"now": now})
        return [
            QueueStats(
                queue=queue_info((*row[:7], row[19])),
                pending=row[7],
                fetched=row[8],
                processing=row[9],
                succeeded_total=row[10],
                failed_total=row[11],
                retried_total=row[12],
                last_activity_at=row[13],
                lag_count=row[14],
                lag_avg_seconds=float(row[15]),
                lag_max_seconds=float(row[16]),
                waiting=row[17],
                blocked=row[18],
                replaced_total=row[20],
                superseded_total=row[21],
            )
            for row in rows
        ]

    async def stats_throughput(self, now: datetime | None) -> Throughput:
        row = await self._one("stats_throughput", {"now": now})
        assert row is not None
        return Throughput(
            processed_1m=row[0], failed_1m=row[1], processed_5m=row[2], failed_5m=row[3]
        )

    async def stats_series(
        self, since: datetime, until: datetime | None, width_seconds: int, queue: str | None
    ) -> list[SeriesPoint]:
        rows = await self._rows(
            "stats_series",
            {"since": since, "until": until, "width": width_seconds, "queue": queue},
        )
        return [
            SeriesPoint(
                bucket_start=row[0],
                succeeded=row[1],
                failed=row[2],
                total_duration_seconds=float(row[3]),
                max_duration_seconds=row[4],
                duration_count=row[5],
            )
            for row in rows
        ]

    async def dlq_top_errors(self, limit: int, scan: int) -> list[ErrorGroup]:
        rows = await self._rows("dlq_top_errors", {"limit": limit, "scan": scan})
        return [
            ErrorGroup(
                failure_reason=FailureReason(row[0]), family=row[1], count=row[2], latest_at=row[3]
            )
            for row in rows
        ]

    async def job_supersession(self, id: str) -> Supersession:
        row = await self._one("job_supersession", {"id": id})
        assert row is not None
        return Supersession(row[0], row[1], bool(row[2]), row[3])

    async def job_attempts(self, id: str, limit: int) -> list[JobAttempt]:
        rows = await self._rows("attempts_list", {"id": id, "limit": limit})
        return [
            JobAttempt(
                seq=row[0],
                attempt=row[1],
                failed_at=row[2],
                started_at=row[3],
                worker_id=row[4],
                duration_seconds=row[5],
                failure_reason=None if row[6] is None else FailureReason(row[6]),
                error=row[7],
            )
            for row in rows
        ]

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
        order, keyset = traversal(column, descending, key, backward)
        listing = sql.SQL(self._q[f"{pillar.value}_list"]).format(order=order, keyset=keyset)
        params = {
            **filter_params(filter),
            "limit": limit,
            "offset": 0 if key is not None else offset,
            "key_value": None if key is None else key.value,
            "key_id": None if key is None else key.id,
            "cut": LIST_TEXT_CHARS + 1,
        }
        async with self.pool.connection() as conn:
            cur = await conn.execute(listing, params)
            rows = await lenient_rows(cur)
        return [job_view(pillar, row) for row in rows]

    async def jobs_count(
        self, pillar: Pillar, filter: JobFilter, exact_up_to: int
    ) -> tuple[int, bool]:
        async with self.pool.connection() as conn:
            return await count_matches(conn, self._q, pillar, filter_params(filter), exact_up_to)

    async def job_get(self, id: str) -> JobView | None:
        async with self.pool.connection() as conn:
            for pillar in (Pillar.HOT, Pillar.ARCHIVE, Pillar.DLQ):
                cur = await conn.execute(self._q[f"{pillar.value}_get"], {"id": id})
                found = await lenient_rows(cur, one=True)
                if found:
                    return job_view(pillar, found[0])
        return None

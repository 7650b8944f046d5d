"""The storage seam's reads area, checked once and observed once: counters, per-queue figures,
throughput and series, the DLQ's top errors, pages of a pillar and one job wherever it lives.

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). Reads change nothing. This module must not import a database
driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..errors import ValidationError
from ..limits import check_job_id, check_name, check_time
from ..models import (
    NO_HANDLER_ERROR,
    ErrorGroup,
    JobAttempt,
    JobFilter,
    JobView,
    LagGroup,
    Page,
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
from . import checks, paging
from .group import OperationGroup
from .observed import operation

__all__ = ["ReadOperations"]

_NO_FILTER = JobFilter()


class ReadOperations(OperationGroup):
    """The storage seam's reads."""

    # -- reads ------------------------------------------------------------------------------

    @operation
    async def stats_summary(self) -> Summary:
        """Live hot counts plus lifetime counters. Never reads archive or DLQ."""
        return await self.driver.stats_summary()

    @operation
    async def jobs_pending_groups(
        self, *, queues: Sequence[str] | None = None, now: datetime | None = None
    ) -> list[PendingGroup]:
        """The Pending jobs of each (queue, type) in ``queues`` (None: every queue), by queue
        then type: due now, waiting to run again, delayed by design, the next due time, and
        how many were released for want of a handler (``PendingGroup``). Queue pause states
        are not applied; a burst worker and The Deck's notices read this."""
        names = checks.names("queues", queues)
        return await self.driver.jobs_pending_groups(names, NO_HANDLER_ERROR + "%", checks.now(now))

    @operation
    async def jobs_lag(self, *, limit: int = 200, now: datetime | None = None) -> list[LagGroup]:
        """Why jobs wait, by (queue, type) (``LagGroup``): Pending jobs due now, retrying
        later and delayed by design, jobs waiting on parents, the oldest due time (the lag) and
        the next. The ``limit`` (1..1000) groups with the most due jobs come first (then the
        oldest due). It reads every Pending and Waiting row: callers that poll read it at a
        slower cadence (The Deck: every few seconds)."""
        most = checks.positive_int("limit", limit, checks.MAX_LAG_GROUPS)
        return await self.driver.jobs_lag(most, checks.now(now))

    @operation
    async def queues_unserved(
        self,
        *,
        alive_within_seconds: float = 60.0,
        cap: int = 1000,
        now: datetime | None = None,
    ) -> list[UnservedQueue]:
        """Active, unpaused queues with due Pending jobs that no worker serves whose heartbeat
        is within ``alive_within_seconds`` (0 < t <= 366 days; as ``workers_list``), by name.
        A worker started without a queue list serves every queue. Due jobs are counted up to
        ``cap`` (1..1,000,000) per queue (``more`` past it), so the read stays cheap however
        many wait."""
        window = checks.alive_within(alive_within_seconds)
        most = checks.positive_int("cap", cap, checks.MAX_UNSERVED_CAP)
        return await self.driver.queues_unserved(window, most, checks.now(now))

    @operation
    async def stats_queues(self, *, now: datetime | None = None) -> list[QueueStats]:
        """Per queue (every row of ``queues``): control plane, hot counts, lifetime counters and
        eligible-pending lag (count, average and max seconds since due)."""
        return await self.driver.stats_queues(checks.now(now))

    @operation
    async def stats_throughput(self, *, now: datetime | None = None) -> Throughput:
        """Processed and failed over the last 60 and 300 seconds, from ``metric_buckets`` only."""
        return await self.driver.stats_throughput(checks.now(now))

    @operation
    async def stats_series(
        self,
        *,
        since: datetime,
        until: datetime | None = None,
        width_seconds: int = 1,
        queue: str | None = None,
    ) -> list[SeriesPoint]:
        """Chart points from ``metric_buckets`` summed into buckets of ``width_seconds``
        (1..86,400 s) aligned to the Unix epoch, oldest first; empty buckets are absent.

        Every stored width is read (live 1-second buckets and the 60-second roll-ups), so a
        window reaches ``until`` (None: no end) whatever maintenance has rolled up; a stored bucket
        counts whole in the chart bucket that holds its start (a minute roll-up read at a width
        under 60 s lands in one chart bucket). ``since`` and ``until`` bound the stored
        buckets' starts, both inclusive; ``queue`` keeps one queue's outcomes."""
        start = check_time("since", since)
        end = None if until is None else check_time("until", until)
        width = checks.positive_int("width_seconds", width_seconds, checks.MAX_WIDTH_SECONDS)
        if queue is not None:
            check_name("queue", queue)
        return await self.driver.stats_series(start, end, width, queue)

    @operation
    async def dlq_top_errors(self, *, limit: int = 5, scan: int = 5000) -> list[ErrorGroup]:
        """The ``limit`` (1..1000) most frequent error families among the newest ``scan``
        (1..1,000,000) DLQ rows, most frequent first (the newest first on a tie): grouped by
        reason and family, the error's first line with numbers, ids and quoted values folded
        (``chokaq.storage.families``; stored with each DLQ row, so grouping reads a column)."""
        most = checks.positive_int("limit", limit, checks.MAX_TOP_ERRORS)
        rows = checks.positive_int("scan", scan, checks.MAX_TOP_ERRORS_SCAN)
        return await self.driver.dlq_top_errors(most, rows)

    @operation
    async def jobs_page(
        self,
        *,
        pillar: Pillar,
        filter: JobFilter = _NO_FILTER,
        sort: str = "date",
        descending: bool = True,
        page: int = 1,
        page_size: int = 100,
        after: PageKey | None = None,
        before: PageKey | None = None,
        last: bool = False,
    ) -> Page[JobView]:
        """One page of one pillar with the number of matching rows. ``sort`` is whitelisted
        per pillar (``checks.SORT_COLUMNS``; others raise ``ValidationError``), ``id`` (same
        direction) breaks ties, and rows with no value in the sort column (a worker, a
        duration) come last in either direction; ``page_size`` is 1..1000.

        Shallow pages may be numbered (``page``, 1..10,000,000, read with an OFFSET); deep
        pages are read by key: ``after`` (the rows that follow a row's ``PageKey``, e.g. the
        ``next`` of the page before), ``before`` (those that precede it) or ``last`` (the last
        page), each at the cost of the first page. ``page`` must be 1 with any of them, and
        the answer's ``page`` is 0 (its number is not known) except for ``last``.

        ``total`` is exact up to ``paging.COUNT_EXACT_UP_TO`` matches; past that, or where the
        planner expects more, PostgreSQL answers the planner's estimate with
        ``total_estimated`` set (SQLite always counts).
        Rows carry at most ``paging.LIST_TEXT_CHARS`` characters of payload, error and result
        (the cut fields are named in ``truncated``; ``job_get`` has the full text), and no
        payload for the hot pillar."""
        which = checks.pillar(pillar)
        column = checks.sort_column(which, sort)
        number = checks.page(page)
        size = checks.page_size(page_size)
        checked = checks.job_filter(filter)
        given = [name for name, v in (("after", after), ("before", before)) if v is not None]
        if last:
            given.append("last")
        if len(given) > 1:
            raise ValidationError(given[1], f"cannot be combined with {given[0]}")
        if given and number != 1:
            raise ValidationError("page", f"must be 1 with {given[0]}")
        edge = after if after is not None else before
        key = None if edge is None else paging.page_key(given[0], column, edge)
        backward = before is not None or bool(last)
        rows = await self.driver.jobs_list(
            which, checked, column, bool(descending), (number - 1) * size, size + 1, key, backward
        )
        more = len(rows) > size
        if key is None and number == 1 and not more:
            # A first page that holds every match has counted them already (a search that
            # matches nothing would otherwise scan the table twice).
            total, estimated = len(rows), False
        else:
            limit = paging.COUNT_EXACT_UP_TO
            total, estimated = await self.driver.jobs_count(which, checked, limit)
        items = [paging.listed(job) for job in rows[:size]]
        if backward:
            items.reverse()
        first = paging.key_of(column, items[0]) if items else None
        final = paging.key_of(column, items[-1]) if items else None
        behind = more if backward else (key is not None or number > 1)
        ahead = (key is not None) if backward else more
        result: Page[JobView] = Page(
            items=tuple(items),
            total=max(total, len(items)),
            page=number if not given else 0,
            page_size=size,
            total_estimated=estimated,
            previous=first if behind else None,
            next=final if ahead else None,
        )
        return replace(result, page=result.pages) if last else result

    @operation
    async def job_get(self, id: str) -> JobView | None:
        """One job looked up in hot, then archive, then DLQ, with every field and its payload."""
        return await self.driver.job_get(check_job_id("id", id))

    @operation
    async def job_supersession(self, *, id: str) -> Supersession:
        """Which job superseded job ``id`` (an enqueue with ``on_conflict`` took its key while
        it was past Pending), and which job it superseded; empty when neither happened."""
        return await self.driver.job_supersession(check_job_id("id", id))

    @operation
    async def job_attempts(self, *, id: str, limit: int = checks.ATTEMPTS_KEPT) -> list[JobAttempt]:
        """Job ``id``'s failed attempts (retries and the final failure), newest first, at most
        ``limit`` (1..20: a job keeps its newest 20); empty for a job that never failed or is
        gone."""
        check_job_id("id", id)
        most = checks.bounded_int("limit", limit, 1, checks.ATTEMPTS_KEPT)
        return await self.driver.job_attempts(id, most)

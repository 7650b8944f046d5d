"""The storage seam's reads, checked once and observed once: counters, per-queue figures,
throughput and series, the DLQ's top errors, pages of a pillar and one job wherever it lives.

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). Reads change nothing. This module must not import a database
driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..limits import check_job_id, check_name, check_time
from ..models import (
    NO_HANDLER_ERROR,
    ErrorGroup,
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
from . import checks
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
        """Chart points from ``metric_buckets`` of one width (1..86,400 s), oldest first (empty
        buckets are absent)."""
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
    ) -> Page[JobView]:
        """One page of one pillar with the total count. ``sort`` is whitelisted per pillar
        (``checks.SORT_COLUMNS``; others raise ``ValidationError``); rows with no value in the
        sort column (a worker, a duration) come last in either direction; ``page`` is
        1..10,000,000 and ``page_size`` 1..1000. Listings carry no payload for the hot pillar
        (payloads are read by ``job_get``)."""
        which = checks.pillar(pillar)
        column = checks.sort_column(which, sort)
        number = checks.page(page)
        size = checks.page_size(page_size)
        checked = checks.job_filter(filter)
        return await self.driver.jobs_page(which, checked, column, bool(descending), number, size)

    @operation
    async def job_get(self, id: str) -> JobView | None:
        """One job looked up in hot, then archive, then DLQ, with every field and its payload."""
        return await self.driver.job_get(check_job_id("id", id))

    @operation
    async def job_attempts(self, *, id: str, limit: int = checks.ATTEMPTS_KEPT) -> list[JobAttempt]:
        """Job ``id``'s failed attempts (retries and the final failure), newest first, at most
        ``limit`` (1..20: a job keeps its newest 20); empty for a job that never failed or is
        gone."""
        check_job_id("id", id)
        most = checks.bounded_int("limit", limit, 1, checks.ATTEMPTS_KEPT)
        return await self.driver.job_attempts(id, most)

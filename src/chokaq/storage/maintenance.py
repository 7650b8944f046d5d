"""The storage seam's maintenance area, checked once and observed once: rescue of abandoned and
zombie jobs, the hot table's tidy, retention of archive and DLQ rows, the roll-up and pruning
of metric buckets and the tidying of limit and uniqueness rows (the elected worker runs them;
the leases that elect it are the ``leadership`` area, and the releases a finalize left, which
its rescue pass also finishes, the ``claims`` area).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows); a write given ``fence=`` applies only under that leadership
term. This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from ..limits import check_time
from ..models import (
    LeaderTerm,
    RescueResult,
)
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["MaintenanceOperations"]


class MaintenanceOperations(OperationGroup):
    """The storage seam's maintenance operations."""

    @operation
    async def jobs_rescue(
        self,
        *,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None = None,
        reachable_since: datetime | None = None,
        fence: LeaderTerm | None = None,
    ) -> RescueResult:
        """Fetched rows not touched for ``fetched_timeout_seconds`` go back to Pending; Processing
        rows whose heartbeat is older than the queue's ``zombie_timeout_seconds`` (or
        ``processing_timeout_seconds``) move to the DLQ as ZOMBIE with counters and buckets.
        Each timeout is 0 < t <= 366 days. Pending jobs that never started and are past
        their expiry (``expires_after_seconds`` / ``expires_at``) move to the DLQ as EXPIRED,
        at most 1,000 a pass (a claim that takes one buries it too).

        ``reachable_since`` (an aware time; None: no limit) is when the caller last regained
        storage after an interruption. A heartbeat cannot be written while storage is out of
        reach, so a Processing row's heartbeat counts as written no earlier than this: a row
        is judged a zombie only once its timeout has passed both since its heartbeat and since
        then. The worker's rescue passes it (``Maintenance``), so that an outage longer than
        a zombie timeout does not dead-letter jobs whose workers lived through it.

        ``fence`` (here and on every maintenance write below) is the leadership term the
        caller writes under: the write applies only while that term is current on the
        database's clock, checked in the write's own transaction; otherwise it raises
        ``LeadershipLostError`` and writes nothing. None writes unfenced (an operator's call)."""
        fetched, processing = checks.rescue_timeouts(
            fetched_timeout_seconds, processing_timeout_seconds
        )
        clock = checks.now(now)
        since = checks.now(reachable_since, "reachable_since")
        rescued = await self.driver.jobs_rescue(fetched, processing, clock, since, fence_of(fence))
        if rescued.requeued or rescued.zombies:
            # A freed partition slot or a requeued job: a worker held by a partition cap has
            # no time to wait for, only its poll.
            await self.driver.jobs_wake(None)
        return rescued

    @operation
    async def jobs_hot_tidy(self, *, fence: LeaderTerm | None = None) -> bool:
        """Reclaim the hot table's dead row versions when they pile up; returns whether it did.

        Every claim, heartbeat and move leaves a dead version behind in ``jobs_hot`` where the
        database keeps row versions (``capabilities.row_versions``); its own vacuum normally
        reclaims them, but where it is off or lagging the fetch path slows down as they
        accumulate. The elected worker calls this each maintenance pass; elsewhere it is False.
        """
        checked = fence_of(fence)
        if not self.capabilities.row_versions:
            return False
        return await self.driver.jobs_hot_tidy(checked)

    @operation
    async def archive_purge(
        self,
        *,
        older_than: datetime,
        batch_size: int | None = None,
        limit: int | None = None,
        fence: LeaderTerm | None = None,
    ) -> int:
        """Delete archive rows finished before ``older_than`` in batches of ``batch_size``
        (1..1,000,000; default the cleanup batch size), each its own short transaction, oldest
        first, at most ``limit`` (0..10**9; None: no limit) in all; lifetime counters
        untouched. Returns the number deleted."""
        return await self._purge(self.driver.archive_purge, older_than, batch_size, limit, fence)

    @operation
    async def dlq_purge_older(
        self,
        *,
        older_than: datetime,
        batch_size: int | None = None,
        limit: int | None = None,
        fence: LeaderTerm | None = None,
    ) -> int:
        """Delete DLQ rows failed before ``older_than``, like ``archive_purge``."""
        return await self._purge(self.driver.dlq_purge_older, older_than, batch_size, limit, fence)

    async def _purge(
        self,
        purge: Callable[[datetime, int, int | None, LeaderTerm | None], Awaitable[int]],
        older_than: datetime,
        batch_size: int | None,
        limit: int | None,
        fence: LeaderTerm | None,
    ) -> int:
        """The arguments of a purge checked (the batch size defaulting to the cleanup batch
        size), then the driver's ``purge``, unless the limit is 0."""
        cutoff = check_time("older_than", older_than)
        batch = self.settings.cleanup_batch_size if batch_size is None else batch_size
        size, most = checks.purge_limit(batch, limit)
        checked = fence_of(fence)
        if most == 0:
            return 0
        return await purge(cutoff, size, most, checked)

    @operation
    async def metrics_prune(
        self, *, older_than: datetime, width_seconds: int = 1, fence: LeaderTerm | None = None
    ) -> int:
        """Delete metric buckets of the given width (1..86,400 s) that started before
        ``older_than``."""
        cutoff = check_time("older_than", older_than)
        width = checks.positive_int("width_seconds", width_seconds, checks.MAX_WIDTH_SECONDS)
        return await self.driver.metrics_prune(cutoff, width, fence_of(fence))

    @operation
    async def limits_tidy(self, *, older_than: datetime, fence: LeaderTerm | None = None) -> int:
        """Forget the rate state of limited keys idle since ``older_than`` (a key whose next
        start is past has its whole burst, the same as a key never used), so that a
        partition seen once does not keep a row for ever. Returns how many were dropped."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.limits_tidy(cutoff, fence_of(fence))

    @operation
    async def unique_keys_tidy(
        self, *, older_than: datetime, fence: LeaderTerm | None = None
    ) -> int:
        """Forget the uniqueness windows (``unique_for_seconds``) that ended by ``older_than``:
        an ended window is taken over by the next enqueue of its key anyway, so its row says
        nothing. Returns how many were dropped."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.unique_keys_tidy(cutoff, fence_of(fence))

    @operation
    async def supersessions_tidy(
        self, *, older_than: datetime, fence: LeaderTerm | None = None
    ) -> int:
        """Forget which job superseded which (``on_conflict``) for supersessions recorded
        before ``older_than`` (the retention pass gives the older of its archive and DLQ
        cut-offs: by then both jobs are gone). Returns how many were dropped."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.supersessions_tidy(cutoff, fence_of(fence))

    @operation
    async def metrics_rollup(self, *, older_than: datetime, fence: LeaderTerm | None = None) -> int:
        """Fold 1-second buckets older than ``older_than`` into 60-second buckets (summing counts
        and durations, keeping the max) and delete them, in one transaction. Returns the number
        of 1-second buckets folded."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.metrics_rollup(cutoff, fence_of(fence))


def fence_of(fence: object) -> LeaderTerm | None:
    return None if fence is None else checks.term("fence", fence)

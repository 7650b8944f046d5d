"""The storage seam's dead-letter queue area, checked once and observed once: the DLQ's edit,
resurrection (by id or by filter, with a preview) and purge (retention's purge by age is the
``maintenance`` area).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). Every action names its actor. This module must not import a
database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..limits import check_job_id
from ..models import (
    JobFilter,
    Preview,
)
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["DlqOperations"]


class DlqOperations(OperationGroup):
    """The storage seam's dead-letter queue: edit, resurrect, purge."""

    @operation
    async def dlq_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
    ) -> bool:
        """Edit a DLQ row in place (``None`` leaves a field alone). False when not in the DLQ."""
        check_job_id("id", id)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        return await self.driver.dlq_edit(id, who, repairs)

    @operation
    async def dlq_resurrect(
        self,
        *,
        ids: Sequence[str],
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> list[str]:
        """DLQ -> hot Pending (attempts 0, idempotency key cleared, due now, created_at and
        created_by kept, last_error = the DLQ row's error, last_modified_by = actor), optionally
        with a repaired payload, tags or priority (applied to every id), in one transaction.
        Lifetime counters and buckets are untouched. Returns the ids moved, in input order (an
        id not in the DLQ is skipped)."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        clock = checks.now(now)
        if not unique:
            return []
        return await self.driver.dlq_resurrect(unique, who, repairs, clock)

    def _cap(self, cap: object) -> int:
        return checks.positive_int("cap", cap, self._max_batch)

    @operation
    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        """What a bulk-by-filter action over the DLQ would touch (newest failure first): how
        many rows match, how many a ``cap`` (1..max batch) would affect, and the ids of the
        first ``sample`` (0..1000) of them."""
        checked = checks.job_filter(filter)
        most = self._cap(cap)
        size = checks.bounded_int("sample", sample, 0, checks.MAX_SAMPLE)
        return await self.driver.dlq_preview(checked, most, size)

    @operation
    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        """Resurrect at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        who = checks.actor(actor)
        most = self._cap(cap)
        return await self.driver.dlq_resurrect_by_filter(checked, who, most, checks.now(now))

    @operation
    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        """Delete DLQ rows by id; returns the ids deleted, in input order. Counters untouched."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        checks.actor(actor)
        if not unique:
            return []
        return await self.driver.dlq_purge(unique)

    @operation
    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        """Delete at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        checks.actor(actor)
        return await self.driver.dlq_purge_by_filter(checked, self._cap(cap))

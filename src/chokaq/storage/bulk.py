"""The storage seam's bulk operator actions beyond the DLQ's: the preview of an action by filter
over any pillar, cancel of hot jobs by filter, "requeue as new" and delete of archived jobs by
filter, and run-now of delayed jobs, each checked once and observed once.

An action by filter acts on at most ``cap`` rows (1..``limits.MAX_BULK_CAP``), newest first by
the pillar's date column (hot: created_at, archive: finished_at, DLQ: failed_at), the order its
preview sampled; a caller that pins ``filter.until`` at preview time keeps rows that arrived
afterwards out of the action. Lifetime counters and metric buckets are never decremented here.
``Backend`` is assembled from this group and the others (``chokaq.storage.backend`` states the
rules every operation follows). This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..errors import ValidationError
from ..limits import MAX_BULK_CAP
from ..models import CancelResult, JobFilter, Pillar, Preview, RequeuedJob
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["BulkOperations"]

# The filter fields that mean something for one pillar only: a filter naming one for another
# pillar is refused rather than quietly widened to every row.
_ONLY = {"status": Pillar.HOT, "blocked": Pillar.HOT, "failure_reason": Pillar.DLQ}


class BulkOperations(OperationGroup):
    """Bulk actions by filter over hot and archive, and run-now."""

    def _bulk_cap(self, cap: object) -> int:
        return checks.positive_int("cap", cap, min(MAX_BULK_CAP, self._max_batch))

    @operation
    async def jobs_preview(
        self, *, pillar: Pillar, filter: JobFilter, cap: int, sample: int = 10
    ) -> Preview:
        """What an action by filter over ``pillar`` would touch: how many rows match, how many
        a ``cap`` (1..MAX_BULK_CAP) would act on, and the ids of the first ``sample`` (0..1000)
        of them, newest first. A filter field of another pillar (``status`` and ``blocked``
        are hot's, ``failure_reason`` the DLQ's) raises ``ValidationError`` naming it."""
        which = checks.pillar(pillar)
        checked = _filter_for(which, filter)
        most = self._bulk_cap(cap)
        size = checks.bounded_int("sample", sample, 0, checks.MAX_SAMPLE)
        if which is Pillar.DLQ:
            return await self.driver.dlq_preview(checked, most, size)
        return await self.driver.jobs_preview(which, checked, most, size)

    @operation
    async def jobs_cancel_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> CancelResult:
        """Cancel at most ``cap`` hot jobs matching ``filter`` (newest created first), exactly
        as ``jobs_cancel`` cancels them by id: Pending, Fetched or Waiting -> DLQ CANCELLED at
        once; Processing -> the durable cancel request its owning worker hears. A job that
        left hot between the match and the cancel is in ``not_found``."""
        checked = _filter_for(Pillar.HOT, filter)
        who = checks.actor(actor)
        most = self._bulk_cap(cap)
        return await self.driver.jobs_cancel_by_filter(checked, who, most, checks.now(now))

    @operation
    async def archive_requeue_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[RequeuedJob]:
        """Make a new Pending hot job from each of at most ``cap`` archived jobs matching
        ``filter`` (newest finished first), in one transaction: a new id, the same type, queue,
        payload, tags, priority, max attempts, timeout and partition; attempts 0, due now, no
        idempotency key, no parents, ``created_by`` = ``"requeue:<archived id>"`` (the link),
        ``last_modified_by`` = actor. The archived rows stay (the archive is write-once
        history); counters and buckets are untouched. Returns (archived id, new id) pairs."""
        checked = _filter_for(Pillar.ARCHIVE, filter)
        who = checks.actor(actor)
        most = self._bulk_cap(cap)
        return await self.driver.archive_requeue_by_filter(checked, who, most, checks.now(now))

    @operation
    async def archive_delete_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int
    ) -> list[str]:
        """Delete at most ``cap`` archived jobs matching ``filter`` (newest finished first), in
        one statement. As retention does, an archived parent that a job still in hot depends on
        is kept (its children read its result). Lifetime counters and metric buckets are never
        decremented. Returns the ids deleted, newest first."""
        checked = _filter_for(Pillar.ARCHIVE, filter)
        checks.actor(actor)
        return await self.driver.archive_delete_by_filter(checked, self._bulk_cap(cap))

    @operation
    async def jobs_run_now(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> list[str]:
        """Make delayed jobs (Pending, due after ``now``) due at ``now``, with
        ``last_modified_by`` = actor, and wake the workers of their queues. Returns the ids
        moved, in input order; any other id (already due, running, waiting on parents,
        finished, unknown) is left alone and missing from the answer."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        clock = checks.now(now)
        if not unique:
            return []
        return await self.driver.jobs_run_now(unique, who, clock)


def _filter_for(pillar: Pillar, filter: object) -> JobFilter:
    checked = checks.job_filter(filter)
    for name, owner in _ONLY.items():
        if owner is not pillar and getattr(checked, name) is not None:
            where = "hot (active)" if owner is Pillar.HOT else "DLQ"
            raise ValidationError(f"filter.{name}", f"applies to {where} jobs only")
    return checked

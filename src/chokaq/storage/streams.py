"""The storage seam's stream operations, checked once and observed once: the items a job emits
(``ctx.emit``), written under its lease in order (0, 1, 2, ... with no gap), read by anyone,
and removed once their job is in no pillar.

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). What a stream promises, and how a durable job's replay keeps
its items from repeating, is in docs/durable.md ("Streams"). This module must not import a
database driver or hold SQL.
"""

from __future__ import annotations

from datetime import datetime

from ..limits import MAX_STREAM_ITEMS, check_count, check_job_id, check_stream_item
from ..models import Lease, StreamItem
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["MAX_READ", "StreamOperations"]

# Items one read returns at most (a reader pages through a longer stream).
MAX_READ = 1000
# Jobs whose items one tidy pass removes at most.
MAX_TIDY = 10_000


class StreamOperations(OperationGroup):
    """The storage seam's stream operations."""

    @operation
    async def streams_emit(
        self, *, lease: Lease, index: int, item: str, now: datetime | None = None
    ) -> bool:
        """Append ``item`` (JSON text, at most 64 KiB) to the stream of the leased Processing
        job as its item ``index`` (0 to 99,999), in one statement under the lease. Written only
        when ``index`` is the stream's end (so items stay 0, 1, 2, ... with no gap and a
        second writer of one index writes nothing). Whoever reads the stream is told. True
        when written; False when the lease is stale or ``index`` is not the stream's end
        (nothing is written)."""
        [checked] = checks.leases("lease", [lease], 1)
        place = check_count("index", index, minimum=0, maximum=MAX_STREAM_ITEMS - 1)
        assert place is not None
        text = check_stream_item("item", item)
        return await self.driver.streams_emit(checked, place, text, checks.now(now))

    @operation
    async def streams_read(
        self, *, job_id: str, from_index: int = 0, limit: int = 100
    ) -> list[StreamItem]:
        """The items of job ``job_id``'s stream from ``from_index`` (0 or more) on, in order,
        at most ``limit`` (1..1000); empty when there are none (yet, or any more)."""
        job = check_job_id("job_id", job_id)
        start = check_count("from_index", from_index, minimum=0)
        count = check_count("limit", limit, maximum=MAX_READ)
        assert start is not None and count is not None
        return await self.driver.streams_read(job, start, count)

    @operation
    async def streams_length(self, *, job_id: str) -> int:
        """How many items job ``job_id``'s stream holds (the index the next one gets)."""
        return await self.driver.streams_length(check_job_id("job_id", job_id))

    @operation
    async def streams_tidy(self, *, limit: int = 1000) -> int:
        """Remove the items of up to ``limit`` (1..10,000) jobs that are in no pillar any more
        (purged, deleted by retention); how many items went."""
        count = check_count("limit", limit, maximum=MAX_TIDY)
        assert count is not None
        return await self.driver.streams_tidy(count)

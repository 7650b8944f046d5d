"""The stream side of one run of a job: what ``ctx.emit`` does, on the storage seam, under the
run's lease.

Every item is encoded once (the serializer) and checked against the item limit before anything
is written, then written at its index in one lease-fenced statement. Which index: a durable
job's run is replayed from the top, so its items are keyed by their order in the run (the
n-th emit is item n-1) and an emit whose index an earlier run already wrote returns at once,
writing nothing (the stream's length is read once, on the run's first emit); any other job's
run appends after what earlier attempts wrote. Emits of one run are written one at a time, in
the order they were called. Owns no SQL and never reaches the worker.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..context import JobSuspended
from ..errors import ValidationError
from ..limits import MAX_STREAM_ITEMS, check_stream_item
from ..models import Lease
from ..serializer import Unserializable, encode
from ..storage import Backend

__all__ = ["StreamWriter"]


def encoded_item(item: Any) -> str:
    """``item`` as the JSON text a stream keeps; ``ValidationError`` naming ``item`` when JSON
    cannot hold it or it is over ``MAX_STREAM_ITEM_BYTES``."""
    try:
        text = encode(item, "item")
    except (Unserializable, RecursionError) as exc:
        raise ValidationError("item", f"must be JSON-serializable: {exc}") from None
    return check_stream_item("item", text)


class StreamWriter:
    """The stream of one run of a job (``JobContext._stream``), under ``lease``; ``replayed``
    for a durable job, whose run replays the items an earlier run wrote."""

    def __init__(self, backend: Backend, lease: Lease, replayed: bool) -> None:
        self.backend = backend
        self.lease = lease
        self.replayed = replayed
        self._next: int | None = None  # the index of this run's next item (None: not read)
        self._written = 0  # the stream's length when this run first emitted
        self._lock = asyncio.Lock()

    async def emit(self, item: Any) -> None:
        text = encoded_item(item)  # before the lock and any write: a bad item writes nothing
        async with self._lock:
            if self._next is None:
                self._written = await self.backend.streams_length(job_id=self.lease.job_id)
                self._next = 0 if self.replayed else self._written
            index = self._next
            if index < self._written:  # a replay: an earlier run of this job wrote it
                self._next = index + 1
                return
            if index >= MAX_STREAM_ITEMS:
                raise ValidationError(
                    "item",
                    f"the job's stream holds its maximum of {MAX_STREAM_ITEMS} items",
                )
            if not await self.backend.streams_emit(lease=self.lease, index=index, item=text):
                raise JobSuspended("stream item not written: the job is no longer ours", lost=True)
            self._next = index + 1

"""Reading a job's stream from a producer: what ``App.stream`` runs.

A reader marks the job as waited on (``Backend.job_outcome(watch=True)``), so each item the job
writes, and its move out of the hot table, notify the job's watchers in their own transaction
(LISTEN/NOTIFY on PostgreSQL, the signal file and in-process broadcast on SQLite); it watches
through the App's ``ResultWaiter`` (one notifier for every wait and every reader) and reads the
new items when told, with the waiter's poll as the fallback for a lost notification (never a
busy loop). The stream ends once the job has left the hot table and every item is read: a job
writes no item after its move (an emit is fenced by the lease the move ends). It must not hold
SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from .errors import NotFoundError
from .limits import check_count, check_job_id
from .models import Pillar
from .results import ResultWaiter
from .storage import Backend
from .storage.streams import MAX_READ

__all__ = ["check_from_index", "read_stream"]


def check_from_index(value: object) -> int:
    """A stream position: a whole number, 0 or more (``ValidationError`` naming
    ``from_index``)."""
    index = check_count("from_index", value, minimum=0)
    assert index is not None
    return index


async def read_stream(
    backend: Backend, waiter: ResultWaiter, job_id: str, from_index: int
) -> AsyncIterator[Any]:
    """The items of job ``job_id``'s stream from ``from_index`` on, decoded, in order, as they
    are written, until the job has left the hot table; ``NotFoundError`` when no pillar holds
    the job."""
    check_job_id("job_id", job_id)
    index = check_from_index(from_index)
    async with waiter.watching(job_id) as told:
        watch = True  # the mark stays on the row: later reads need not write it again
        while True:
            told.clear()
            # The pillar first, then the items: an item is committed before the move out of
            # hot that the pillar shows, so the reads after an ended pillar see every item.
            where = await backend.job_outcome(id=job_id, watch=watch)
            watch = False
            if where is None:
                raise NotFoundError(f"job {job_id} is not stored (never enqueued, or purged)")
            while True:
                items = await backend.streams_read(job_id=job_id, from_index=index, limit=MAX_READ)
                for item in items:
                    index = item.index + 1
                    yield json.loads(item.item)
                if len(items) < MAX_READ:
                    break
            if where.pillar is not Pillar.HOT:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(told.wait(), waiter.poll_seconds())

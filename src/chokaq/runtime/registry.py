"""The worker's registry row and what operators ask of it.

Every few seconds the worker refreshes its row in the workers table (queues, concurrency,
running jobs, circuit snapshot), applies what operators asked (a new concurrency, circuits to
force-close), refreshes its view of the queues' settings, and releases prefetched jobs of queues
that were paused or deactivated. Owns that loop only.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections import deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..errors import StorageError
from ..models import ClaimedJob, WorkerInfo

if TYPE_CHECKING:
    from .worker import Worker

__all__ = ["Registry"]


class Registry:
    """The registry side task of one worker."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def info(self) -> WorkerInfo:
        worker = self.worker
        return WorkerInfo(
            id=worker.id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=tuple(worker.settings.queues or ()),
            concurrency=worker.concurrency,
            desired_concurrency=None,
            running=len(worker.running),
            state=worker.state,
            started_at=worker.started_at,
            heartbeat_at=datetime.now(UTC),
            circuits=json.dumps([c.as_json() for c in worker.circuits.snapshot()]),
        )

    async def run(self) -> None:
        worker = self.worker
        backend = worker.app.backend
        while True:
            try:
                control = await backend.worker_beat(self.info())
                if (
                    control.desired_concurrency
                    and control.desired_concurrency != worker.concurrency
                ):
                    worker.set_concurrency(control.desired_concurrency)
                for key in control.close_circuits:
                    worker.circuits.force_close(key)
                queues = {q.name: q for q in await backend.queue_list()}
                worker.queues = queues
                if worker.buffer:
                    await self._release_paused()
                # This loop reports storage trouble too, so it must also report the recovery:
                # else a worker whose fetch loop never failed stays "storage unavailable" (in
                # its health check, and silent about the next outage) for ever.
                worker._storage_recovered()
            except StorageError as exc:
                worker._storage_trouble(exc)
            await asyncio.sleep(worker.settings.worker_beat_interval_seconds)

    async def _release_paused(self) -> None:
        worker = self.worker
        keep: deque[ClaimedJob] = deque()
        release = []
        for job in worker.buffer:
            queue = worker.queues.get(job.queue)
            if queue is not None and (queue.paused or not queue.active):
                release.append(job)
            else:
                keep.append(job)
        if release:
            worker.buffer = keep
            await worker._release(release)

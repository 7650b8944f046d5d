"""Streams across real worker processes (both backends): a reader opened in this process before
the job ran gets a durable job's items from worker processes through the notifier, and when
the first worker is SIGKILLed mid-run and another resumes the job, the replay writes none of
the items the dead run wrote: the stream reads each item once, in order, and ends with the
job."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.runtime.conftest import until

from chokaq import App
from chokaq.models import NewJob

from .conftest import Proc

DURABLE_APP = "tests.apps.durable:app"


async def test_a_durable_jobs_stream_survives_a_crash_without_repeating_an_item(
    client: App, spawn: Callable[..., Proc], tmp_path: Path
) -> None:
    [job_id] = await client.enqueue_many([NewJob(type="narrated", payload='{"tag": "told"}')])
    got: list[Any] = []

    async def read() -> None:
        async for item in client.stream(job_id):
            got.append(item)

    reader = asyncio.create_task(read())
    workers = [spawn(app=DURABLE_APP), spawn(app=DURABLE_APP)]
    marker = tmp_path / "told-step2"

    async def in_step_two() -> bool:
        return marker.exists() and len(marker.read_text().split()) == 1

    await until(in_step_two, timeout=60)
    await until(lambda: _has(got, 1), timeout=30)  # the first run's item reached the reader
    victim_pid = int(marker.read_text().split()[0])
    [victim] = [proc for proc in workers if proc.pid == victim_pid]
    os.kill(victim.pid, signal.SIGKILL)
    victim.popen.wait(timeout=10)
    await asyncio.wait_for(reader, 120)  # ends once the resumed job has left hot
    [survivor] = [proc for proc in workers if proc is not victim]
    assert got == [{"stage": "start"}, {"stage": "end", "pid": survivor.pid}]
    assert await client.result(job_id, timeout_seconds=5) == 2
    assert [item async for item in client.stream(job_id, from_index=1)] == got[1:]


async def _has(items: list[Any], count: int) -> bool:
    return len(items) >= count

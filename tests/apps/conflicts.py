"""Handlers and a racing producer for the enqueue-conflict tests (tests/reliability/
test_on_conflict.py), on the sample app's store and settings.

Handlers record each run as a JSON line in ``CHOKAQ_TEST_DIR/runs.jsonl`` (an append of one
short line is atomic), so that the test counts executions and reads the payload each ran with.
``python -m tests.apps.conflicts race N`` is one of the racing producers: it waits for the
``go`` file, enqueues ``N`` jobs of one key with ``on_conflict="replace"``, and prints their ids
and outcomes as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from .sample import MARKERS, app, mark

KEY = "doc-1"


def record(**fields: object) -> None:
    with open(MARKERS / "runs.jsonl", "a", encoding="utf-8") as runs:
        runs.write(json.dumps({**fields, "at": time.time(), "pid": os.getpid()}) + "\n")


@app.job()
async def reindex(doc: str, version: int) -> None:
    """A debounced or throttled job: records the version it ran with."""
    record(type="reindex", doc=doc, version=version)


@app.job()
async def publish(doc: str, version: int) -> None:
    """Latest wins: version 1 runs until cancelled; a later one finishes at once."""
    mark(f"started-{version}")
    if version == 1:
        await asyncio.sleep(3600)
    record(type="publish", doc=doc, version=version)


async def race(count: int, name: str) -> list[list[str]]:
    """Enqueue ``count`` versions of one key once the ``go`` file exists; their outcomes."""
    await app.open()
    go = MARKERS / "go"
    while not go.exists():  # the test starts every producer, then lets them go at once
        await asyncio.sleep(0.005)
    done = []
    try:
        handle = reindex.options(idempotency_key=KEY, on_conflict="replace", delay_seconds=3600)
        for i in range(count):
            job_id = await handle.enqueue(doc=name, version=i)
            done.append([str(job_id), job_id.outcome])
    finally:
        await app.close()
    return done


if __name__ == "__main__":
    if sys.argv[1:2] == ["race"]:
        print(json.dumps(asyncio.run(race(int(sys.argv[2]), sys.argv[3]))))

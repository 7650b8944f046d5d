"""Durable jobs for worker subprocess tests, on the sample app's store and timings.

Each step appends this process's pid to a marker file in ``CHOKAQ_TEST_DIR`` named after the
job's tag and the step, so the test counts how often each step ran and where; step 2 of a
``three_steps`` job blocks on its first run (the test SIGKILLs the worker there).
"""

from __future__ import annotations

import asyncio
import os
import time

from tests.apps.sample import MARKERS, app

from chokaq import JobContext

__all__ = ["app"]


def _ran(tag: str, step: str) -> int:
    """Record one run of ``step`` here; how many runs there were before this one."""
    path = MARKERS / f"{tag}-{step}"
    before = len(path.read_text().split()) if path.exists() else 0
    with open(path, "a") as marker:
        marker.write(f"{os.getpid()}\n")
    return before


def step_one(tag: str) -> int:
    _ran(tag, "step1")
    return 1


def step_two(tag: str, previous: int) -> int:
    if _ran(tag, "step2") == 0:
        time.sleep(3600)  # the first run never ends: its worker is killed here
    return previous + 2


async def step_three(tag: str, previous: int) -> int:
    _ran(tag, "step3")
    return previous + 3


@app.job(durable=True, max_attempts=5)
async def three_steps(ctx: JobContext, tag: str) -> dict[str, int]:
    one = await ctx.step("one", step_one, tag)
    two = await ctx.step("two", step_two, tag, one)
    three = await ctx.step("three", step_three, tag, two)
    return {"total": three, "pid": os.getpid()}


@app.job(durable=True)
async def nap(ctx: JobContext, seconds: float) -> None:
    await ctx.sleep(seconds)


@app.job(durable=True)
async def await_event(ctx: JobContext, key: str) -> object:
    return await ctx.wait_for_event(key, timeout_seconds=600)


@app.job(durable=True, max_attempts=5)
async def child(ctx: JobContext, tag: str, n: int) -> int:
    """Children from ``hold`` on wait for the test's ``{tag}-go`` marker (so that a worker can
    be killed while running some); each completion is recorded."""
    _ran(tag, f"started-{n}")
    while n >= HOLD and not (MARKERS / f"{tag}-go").exists():
        await asyncio.sleep(0.05)
    _ran(tag, f"child-{n}")
    return n


HOLD = 50


@app.job(durable=True, max_attempts=5)
async def parent(ctx: JobContext, tag: str, count: int) -> int:
    ids = await ctx.spawn([child.prepare(tag=tag, n=n) for n in range(count)])
    return sum(await ctx.gather(ids))


@app.job(durable=True, max_attempts=5)
async def narrated(ctx: JobContext, tag: str) -> int:
    """Emits before and after a step whose first run blocks (its worker is killed there): the
    replay on another worker must not write the first item again."""
    await ctx.emit({"stage": "start"})
    two = await ctx.step("two", step_two, tag, 0)
    await ctx.emit({"stage": "end", "pid": os.getpid()})
    return int(two)

"""A workflow app for worker subprocess tests: the diamond fetch -> (parse, index) -> report.

Each execution appends its process id to ``runs-<job id>`` in ``CHOKAQ_TEST_DIR`` (so a test
counts executions), and a ``hold`` job waits for a ``release-<tag>`` marker file before it
returns (so a test can kill the process running it).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.apps.sample import app as sample

from chokaq import App, FatalError, JobContext

MARKERS = Path(os.environ.get("CHOKAQ_TEST_DIR", "/tmp"))

app = App(
    os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///workflows.db"),
    schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
    auto_migrate=True,
    worker=sample.worker_settings,
)


def ran(ctx: JobContext) -> None:
    with open(MARKERS / f"runs-{ctx.job_id}", "a") as runs:
        runs.write(f"{os.getpid()}\n")


@app.job()
async def fetch(url: str, ctx: JobContext) -> dict[str, object]:
    ran(ctx)
    return {"url": url, "size": len(url)}


@app.job()
async def parse(part: str, ctx: JobContext, fail: bool = False) -> dict[str, object]:
    ran(ctx)
    if fail:
        raise FatalError(f"cannot parse {part}")
    [fetched] = ctx.parent_results.values()
    return {"part": part, "size": fetched["size"]}


@app.job()
async def report(ctx: JobContext) -> dict[str, object]:
    ran(ctx)
    values = ctx.parent_results.values()
    parts = sorted(value["part"] if isinstance(value, dict) else value for value in values)
    return {"parts": parts, "parents": sorted(ctx.parent_results)}


@app.job()
async def hold(tag: str, ctx: JobContext) -> str:
    ran(ctx)
    (MARKERS / f"started-{tag}").write_text(str(os.getpid()))
    while not (MARKERS / f"release-{tag}").exists():
        await asyncio.sleep(0.02)
    return tag

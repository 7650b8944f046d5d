"""A workflow app for worker subprocess tests: the diamond fetch -> (parse, index) -> report,
a chord of ``member`` jobs whose callback ``summary`` runs on any outcome, and the chain
``scan -> store -> notify`` whose jobs get their parent's result as first argument.

Each execution appends its process id to ``runs-<job id>`` in ``CHOKAQ_TEST_DIR`` (so a test
counts executions), and a ``hold`` job waits for a ``release-<tag>`` marker file before it
returns (so a test can kill the process running it).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.apps.sample import app as sample

from chokaq import App, FatalError, JobContext, Retry

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


@app.job()
async def member(n: int, ctx: JobContext, fail: bool = False) -> int:
    """One job of a chord: returns ``n``, or fails for good."""
    ran(ctx)
    if fail:
        raise FatalError(f"member {n} failed")
    return n


@app.job()
async def summary(ctx: JobContext) -> dict[str, object]:
    """A chord's callback on any outcome: how each parent ended, by id."""
    ran(ctx)
    return {
        parent: {
            "pillar": str(outcome.pillar),
            "result": outcome.result,
            "reason": None if outcome.failure_reason is None else outcome.failure_reason.name,
            "error": outcome.error,
        }
        for parent, outcome in ctx.parent_outcomes.items()
    }


@app.job()
def scan(url: str) -> dict[str, object]:
    """The head of a chain: what the next job gets as its first argument."""
    return {"url": url, "status": 200}


@app.job()
async def store(found: dict[str, object], endpoint: str, ctx: JobContext) -> str | Retry:
    """Gets its parent's result first (pass_results); its first attempt asks for a retry, so
    the second shows a retried job gets the same arguments."""
    ran(ctx)
    if ctx.attempt == 1:
        return Retry(after_seconds=0.0, reason="once more")
    return f"{endpoint}:{found['url']}:{found['status']}"


@app.job()
def notify(stored: str, channel: str) -> list[str]:
    return [channel, stored]

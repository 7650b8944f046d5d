"""A FastAPI app that relays a job's stream to the browser as server-sent events.

    CHOKAQ_DATABASE_URL=sqlite:///jobs.db uvicorn examples.fastapi_stream:api
    CHOKAQ_DATABASE_URL=sqlite:///jobs.db chokaq worker --app examples.fastapi_stream:app

``POST /reports?words=alpha&words=beta`` enqueues ``report``, which emits one item per word as
it goes (``ctx.emit``). ``GET /reports/{job_id}/events`` answers ``text/event-stream``: one
``item`` event per item (its ``id:`` is the item's index), as the job writes them, then one
``end`` event with the job's outcome once the job has left the hot table. A browser's
``EventSource`` that reconnects sends ``Last-Event-ID``, and the relay resumes after that item
(``app.stream(job_id, from_index=...)``), so no item is shown twice or lost. The relay holds no
connection of its own while it waits: the App's notifier wakes it (LISTEN/NOTIFY on
PostgreSQL, the signal file on SQLite).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Query
from fastapi.responses import StreamingResponse

from chokaq import App, JobContext
from chokaq.contrib.fastapi import lifespan
from chokaq.errors import ChokaqError, ValidationError

app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"))
api = FastAPI(lifespan=lifespan(app))  # the App is open while the app serves


@app.job(queue="reports")
async def report(ctx: JobContext, words: list[str], pause_seconds: float = 0.0) -> int:
    for n, word in enumerate(words):
        await asyncio.sleep(pause_seconds)  # a real job does its work here
        await ctx.emit({"n": n, "word": word, "length": len(word)})
    return sum(len(word) for word in words)


@api.post("/reports")
async def start_report(
    words: Annotated[list[str], Query()], pause_seconds: float = 0.0
) -> dict[str, str]:
    return {"job_id": await report.enqueue(words=words, pause_seconds=pause_seconds)}


def _event(kind: str, data: Any, event_id: int | None = None) -> str:
    """One server-sent event; JSON has no raw newline, so ``data`` fits one line."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: {json.dumps(data)}\n\n"


async def _relay(job_id: str, items: AsyncIterator[Any], start: int) -> AsyncIterator[str]:
    index = start
    async for item in items:
        yield _event("item", item, index)
        index += 1
    outcome = await app.wait(job_id)  # the stream ended: the job has left the hot table
    try:
        yield _event("end", {"pillar": outcome.pillar.value, "result": await app.result(job_id)})
    except ChokaqError as exc:  # dead-lettered, or its result was not kept
        yield _event("end", {"pillar": outcome.pillar.value, "error": str(exc)})


@api.get("/reports/{job_id}/events")
async def report_events(
    job_id: str, last_event_id: Annotated[int | None, Header()] = None
) -> StreamingResponse:
    start = 0 if last_event_id is None else last_event_id + 1
    try:
        items = app.stream(job_id, from_index=start)  # checks the id and the index at once
        found = await app.get_job(job_id)
    except ValidationError as exc:
        raise HTTPException(422, str(exc)) from None
    if found is None:
        raise HTTPException(404, f"no job {job_id}")
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return StreamingResponse(
        _relay(job_id, items, start), media_type="text/event-stream", headers=headers
    )

"""examples/fastapi_stream.py end to end (both backends): the example app under a real uvicorn
process, its job run by a real worker process, and a client reading the job's stream as
server-sent events, opened before the job ran: every item arrives, in order, then the job's
outcome, and the connection ends; a reconnect with ``Last-Event-ID`` resumes after that item."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import PG_URL, drop_schema, require_postgres

from .test_fastapi import ROOT, _free_port, _until

DEADLINE = 90.0  # seconds for the whole relay: two Python processes start on a busy machine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def environment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The example's environment on a private store, migrated."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    if request.param == "postgres":
        require_postgres()
        url = PG_URL
    else:
        url = f"sqlite:///{tmp_path / 'jobs.db'}"
    env = {
        **os.environ,
        "CHOKAQ_DATABASE_URL": url,
        "CHOKAQ_SCHEMA": schema,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
    }
    migrate = [sys.executable, "-m", "chokaq", "migrate", "--database", url, "--schema", schema]
    subprocess.run(migrate, env=env, check=True, capture_output=True, timeout=120)
    try:
        yield env
    finally:
        if request.param == "postgres":
            drop_schema(schema)


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen[bytes], log: Path) -> str:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return log.read_text(errors="replace")


async def _events(client: httpx.AsyncClient, path: str, **headers: str) -> list[dict[str, Any]]:
    """Every event of one server-sent-events answer, until the server ends it."""
    found = []
    async with client.stream("GET", path, headers=headers) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for block in _blocks(answer.aiter_text()):
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            found.append({**fields, "data": json.loads(fields["data"])})
    return found


async def _blocks(chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    pending = ""
    async for chunk in chunks:
        pending += chunk
        while "\n\n" in pending:
            block, pending = pending.split("\n\n", 1)
            yield block


async def test_a_jobs_stream_is_relayed_as_server_sent_events(
    environment: dict[str, str], tmp_path: Path
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server_log, worker_log = tmp_path / "uvicorn.log", tmp_path / "worker.log"
    server = _start(
        [sys.executable, "-m", "uvicorn", "examples.fastapi_stream:api", "--port", str(port)],
        environment,
        server_log,
    )
    worker = None
    try:
        _until(lambda: httpx.get(f"{url}/openapi.json").status_code == 200, "uvicorn to serve")
        async with httpx.AsyncClient(base_url=url, timeout=DEADLINE) as client:
            words = ["alpha", "be", "gamma<script>"]
            started = await client.post("/reports", params={"words": words, "pause_seconds": 0.05})
            job_id = started.json()["job_id"]
            # The client listens before any worker runs: every item comes as it is written.
            listening = asyncio.create_task(_events(client, f"/reports/{job_id}/events"))
            worker = _start(
                [sys.executable, "-m", "chokaq", "worker", "--app", "examples.fastapi_stream:app"],
                environment,
                worker_log,
            )
            events = await asyncio.wait_for(listening, DEADLINE)
            assert [(e["event"], e.get("id"), e["data"]) for e in events] == [
                ("item", "0", {"n": 0, "word": "alpha", "length": 5}),
                ("item", "1", {"n": 1, "word": "be", "length": 2}),
                ("item", "2", {"n": 2, "word": "gamma<script>", "length": 13}),
                ("end", None, {"pillar": "archive", "result": 20}),
            ]
            # A reconnect resumes after the last item it had.
            resumed = await _events(client, f"/reports/{job_id}/events", **{"last-event-id": "1"})
            assert [e.get("id") for e in resumed] == ["2", None]
            unknown = await client.get(f"/reports/{uuid.uuid4()}/events")
            assert unknown.status_code == 404
            bad = await client.get("/reports/nope/events")
            assert bad.status_code == 422 and "job_id" in bad.text
    finally:
        if worker is not None:
            worker_output = _stop(worker, worker_log)
            assert "Traceback" not in worker_output, worker_output
        server_output = _stop(server, server_log)
    assert "Traceback" not in server_output, server_output

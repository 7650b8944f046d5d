"""``chokaq job stream`` as an operator runs it: the real CLI in a subprocess against both
backends. It prints what a job emitted and ends with the job; while the job runs it follows the
stream like ``tail -f`` (items written through the seam by this process reach it through the
notifier); ``--from`` skips the first items; ``--json`` prints JSON lines; bad input is refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.conftest import Store

from chokaq.models import ClaimedJob, NewJob, SucceedMove
from chokaq.storage import Backend

from .test_cli_jobs import REPO, UNKNOWN, argv, chokaq, environment

# How long the follower may take to print a line or end (a busy machine starts Python slowly).
DEADLINE = 60.0


async def _running(store: Store) -> tuple[Backend, ClaimedJob]:
    backend = store.backend()
    await backend.open()
    await backend.migrate()
    await backend.jobs_enqueue([NewJob(type="report")])
    [claimed] = await backend.jobs_fetch(worker_id="w1", limit=1, start=True)
    return backend, claimed


async def _emit(backend: Backend, claimed: ClaimedJob, *items: object) -> None:
    start = await backend.streams_length(job_id=claimed.id)
    for offset, item in enumerate(items):
        text = json.dumps(item)
        assert await backend.streams_emit(lease=claimed.lease, index=start + offset, item=text)


async def test_an_ended_jobs_stream_is_printed_and_the_command_ends(store: Store) -> None:
    backend, claimed = await _running(store)
    try:
        await _emit(backend, claimed, {"stage": "fetch"}, {"stage": "parse", "ok": "ünï"}, 3)
        assert await backend.jobs_finalize(moves=[SucceedMove(claimed.lease, 1.0)]) == [True]
    finally:
        await backend.close()
    lines = chokaq(store, "job", "stream", claimed.id, "--json").stdout.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"index": 0, "item": {"stage": "fetch"}},
        {"index": 1, "item": {"stage": "parse", "ok": "ünï"}},
        {"index": 2, "item": 3},
    ]
    plain = chokaq(store, "job", "stream", claimed.id, "--from", "2").stdout
    assert plain.splitlines() == ["[2] 3"]


async def _line(follower: asyncio.subprocess.Process) -> Any:
    assert follower.stdout is not None
    return json.loads(await asyncio.wait_for(follower.stdout.readline(), DEADLINE))


async def test_a_running_jobs_stream_is_followed_until_the_job_ends(store: Store) -> None:
    backend, claimed = await _running(store)
    follower = await asyncio.create_subprocess_exec(
        *argv("job", "stream", claimed.id, "--json"),
        cwd=REPO,
        env=environment(store),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        # The follower prints an item written before or after it started reading, and keeps
        # running while the job is in hot.
        await _emit(backend, claimed, "first")
        assert await _line(follower) == {"index": 0, "item": "first"}
        assert follower.returncode is None
        await _emit(backend, claimed, "second", "third")
        assert (await _line(follower))["item"] == "second"
        assert (await _line(follower))["item"] == "third"
        assert follower.returncode is None
        assert await backend.jobs_finalize(moves=[SucceedMove(claimed.lease, 1.0)]) == [True]
        rest, errors = await asyncio.wait_for(follower.communicate(), DEADLINE)
        assert follower.returncode == 0, errors
        assert rest == b""
    finally:
        if follower.returncode is None:
            follower.kill()
            await follower.wait()
        await backend.close()


async def test_bad_input_is_refused(store: Store) -> None:
    backend, claimed = await _running(store)
    await backend.close()
    negative = chokaq(store, "job", "stream", claimed.id, "--from", "-1", expect=None)
    assert negative.returncode != 0 and "from_index" in negative.stderr
    assert chokaq(store, "job", "stream", UNKNOWN, expect=None).returncode == 1
    assert chokaq(store, "job", "stream", "nope", expect=None).returncode == 2

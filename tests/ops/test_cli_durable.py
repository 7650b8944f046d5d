"""``chokaq job steps`` and ``chokaq event send`` as an operator runs them: the real CLI in a
subprocess against both backends, on steps and a suspended wait recorded through the seam."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Store

from chokaq.models import JobStatus, NewJob

from .test_cli_jobs import UNKNOWN, chokaq


async def _suspended_job(store: Store) -> str:
    backend = store.backend()
    await backend.open()
    await backend.migrate()
    try:
        [enqueued] = await backend.jobs_enqueue([NewJob(type="flow")])
        [claimed] = await backend.jobs_fetch(worker_id="w1", limit=1, start=True)
        lease = claimed.lease
        await backend.steps_record(lease=lease, name="charge", value='{"id": 7}')
        await backend.steps_record(lease=lease, name="mail", error="SMTPError: 421\n trace")
        outcome = await backend.durable_wait(lease=lease, name="wait#1", key="approve-7")
        assert outcome.suspended
        return enqueued.id
    finally:
        await backend.close()


async def _status(store: Store, job_id: str) -> Any:
    backend = store.backend()
    await backend.open()
    try:
        view = await backend.job_get(job_id)
        return view.status, [s.value for s in await backend.steps_list(job_id=job_id)]
    finally:
        await backend.close()


async def test_job_steps_and_event_send(store: Store) -> None:
    job_id = await _suspended_job(store)
    shown = json.loads(chokaq(store, "job", "steps", job_id, "--json").stdout)
    assert [(s["name"], s["kind"], s["state"]) for s in shown] == [
        ("charge", "step", "done"),
        ("mail", "step", "failed"),
        ("wait#1", "wait", "pending"),
    ]
    assert shown[0]["value_bytes"] == len('{"id": 7}') and shown[2]["event_key"] == "approve-7"
    table = chokaq(store, "job", "steps", job_id).stdout
    assert "charge" in table and "SMTPError: 421" in table and "approve-7" in table

    sent = chokaq(store, "event", "send", "approve-7", "--data", '{"by": "alice"}').stdout
    assert sent.strip() == f"delivered to job {job_id}"
    status, values = await _status(store, job_id)
    assert status is JobStatus.PENDING and json.loads(values[2]) == {"by": "alice"}
    kept = chokaq(store, "event", "send", "approve-7").stdout
    assert kept.startswith("kept for the first job")


async def test_bad_input_is_refused(store: Store) -> None:
    await _suspended_job(store)
    bad = chokaq(store, "event", "send", "k", "--data", "{nope", expect=None)
    assert bad.returncode != 0 and "data" in bad.stderr
    long_key = chokaq(store, "event", "send", "k" * 201, expect=None)
    assert long_key.returncode != 0 and "key" in long_key.stderr
    missing = chokaq(store, "job", "steps", UNKNOWN, expect=None)
    assert missing.returncode == 1
    assert chokaq(store, "job", "steps", "nope", expect=None).returncode == 2

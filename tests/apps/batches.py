"""A batch handler app for worker subprocess tests (tests/reliability/test_batches.py).

``embed`` takes up to 100 jobs a call, one tenant a batch; each call appends a line to
``CHOKAQ_TEST_DIR/embed-calls`` (the worker's pid, the batch's job ids and tenants), so that the
test sees every call the worker made. An item whose text is "poison" fails alone (an exception
in its place); a batch holding an item whose text is "hang" marks ``hang-started`` with its
job ids and runs until its worker dies.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chokaq import App, Batched, RetryPolicy, WorkerSettings

MARKERS = Path(os.environ.get("CHOKAQ_TEST_DIR", "/tmp"))

app = App(
    os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///batches.db"),
    schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
    auto_migrate=True,
    worker=WorkerSettings(
        concurrency=4,
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.3,
        zombie_timeout_seconds=float(os.environ.get("CHOKAQ_ZOMBIE_TIMEOUT", "2")),
        rescue_interval_seconds=0.3,
        leadership_lease_seconds=float(os.environ.get("CHOKAQ_LEASE", "2")),
        leadership_renew_seconds=float(os.environ.get("CHOKAQ_LEASE_RENEW", "0.5")),
        poll_interval_seconds=0.05,
        worker_beat_interval_seconds=0.3,
        retry=RetryPolicy(max_attempts=3, base_delay_seconds=0.1, jitter_seconds=0),
    ),
)


@dataclass
class EmbedArgs:
    tenant: str
    text: str


def _record(name: str, line: dict[str, Any]) -> None:
    with open(MARKERS / name, "a") as out:
        out.write(json.dumps(line) + "\n")


@app.job(batch_size=100, batch_wait_seconds=0.5, batch_key="tenant")
async def embed(batch: list[Batched[EmbedArgs]]) -> list[Any]:
    ids = [item.id for item in batch]
    tenants = sorted({item.args.tenant for item in batch})
    _record("embed-calls", {"pid": os.getpid(), "ids": ids, "tenants": tenants})
    if any(item.args.text == "hang" for item in batch):
        (MARKERS / "hang-started").write_text(json.dumps(ids))
        await asyncio.sleep(3600)
    return [
        ValueError(f"poisoned item {item.id}")
        if item.args.text == "poison"
        else {"tenant": item.args.tenant, "length": len(item.args.text)}
        for item in batch
    ]

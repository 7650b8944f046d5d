"""``chokaq demo`` end to end: it starts a worker and The Deck, fills every pillar within a
minute (archive, a DLQ with several distinct reasons, metric buckets), opens and recovers its
circuit, and stops cleanly on SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from chokaq.models import JobFilter, Pillar
from chokaq.storage import create_backend

from .conftest import free_port, until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path, Path]]:
    """``chokaq demo`` on a fresh SQLite file and a free port, killed if a test leaves it."""
    db = tmp_path / "demo.db"
    port = free_port()
    log_path = tmp_path / "demo.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "chokaq", "demo", "--database", str(db), "--port", str(port)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO)))},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc, port, db, log_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# The failure reasons the demo's workload produces, each by its own path.
EVERY_REASON = {"FATAL_ERROR", "TIMEOUT", "THROTTLED", "TRANSIENT"}


async def test_demo_fills_every_pillar_and_stops_on_sigint(
    demo: tuple[subprocess.Popen[bytes], int, Path, Path],
) -> None:
    proc, port, db, log_path = demo

    async def ready() -> bool:
        assert proc.poll() is None, log_path.read_text()
        return db.exists() and f"http://127.0.0.1:{port}/" in log_path.read_text()

    await until(ready, timeout=30)
    backend = create_backend(f"sqlite:///{db}")
    await backend.open()
    circuit_states: list[str] = []
    try:

        async def filled() -> bool:
            for worker in await backend.workers_list():
                for circuit in json.loads(worker.circuits):
                    if circuit["key"] == "charge_card" and (
                        not circuit_states or circuit_states[-1] != circuit["state"]
                    ):
                        circuit_states.append(circuit["state"])
            archive = await backend.jobs_page(pillar=Pillar.ARCHIVE, page_size=1)
            dlq = await backend.jobs_page(pillar=Pillar.DLQ, page_size=1000)
            reasons = {v.failure_reason.name for v in dlq.items if v.failure_reason is not None}
            series = await backend.stats_series(since=datetime.now(UTC) - timedelta(minutes=5))
            recovered = "open" in circuit_states and circuit_states[-1] == "closed"
            # Workflows: a digest ran after both its parses, and one waits on a failed parse.
            digests = await backend.jobs_page(
                pillar=Pillar.ARCHIVE, filter=JobFilter(type="publish_digest"), page_size=1
            )
            blocked = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(blocked=True))
            return (
                archive.total > 0
                and reasons >= EVERY_REASON
                and bool(series)
                and recovered
                and digests.total > 0
                and blocked.total > 0
            )

        # The demo's schedule fills everything within its first minute; the deadline leaves a
        # busy machine room (a throttled job reaches the DLQ only after several retries).
        await until(filled, timeout=120, every=0.25)
        summary = await backend.stats_summary()
        assert summary.retried_total > 0  # retries happen, and some later succeed
    finally:
        await backend.close()
    async with httpx.AsyncClient(timeout=5) as http:
        page = await http.get(f"http://127.0.0.1:{port}/")
        assert page.status_code in (200, 401, 303), page.status_code
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=40) == 0, log_path.read_text()[-3000:]
    assert "demo stopped" in log_path.read_text()


@pytest.mark.parametrize(
    "elapsed, down",
    [
        (0, False),
        (3.9, False),
        (4.1, True),
        (23.9, True),
        (24.1, False),
        (123.9, False),
        (124.1, True),
    ],
)
def test_the_gateway_outage_follows_the_demo_clock(elapsed: float, down: bool) -> None:
    from chokaq.demo import DemoClock

    clock = DemoClock()
    clock.started = time.monotonic() - elapsed
    assert clock.gateway_down() is down

"""Shared by the reliability tests: worker subprocesses on the test's store, and who leads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chokaq import App
from chokaq.logs import Event

REPO = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "chokaq", "worker", "--app"]
# The sample app's timings (tests/apps/sample.py reads them from the environment).
ZOMBIE = 2.0
LEASE = 2.0
RENEW = 0.5


class Proc:
    """One worker subprocess and its JSON log."""

    def __init__(self, popen: subprocess.Popen[bytes], log: Path) -> None:
        self.popen = popen
        self.log = log

    @property
    def pid(self) -> int:
        return self.popen.pid

    def events(self, event: Event) -> list[dict[str, Any]]:
        lines = []
        for text in self.log.read_text(errors="replace").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("event_id") == event:
                lines.append(line)
        return lines


@pytest.fixture
async def client(store: Any) -> Any:
    """An App on the test's store, migrated: the test's own view of what the workers did."""
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    yield app
    await app.close()


@pytest.fixture
def spawn(store: Any, tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    """Start ``chokaq worker --app APP --json-logs`` (``app=``: default the sample app) on this
    test's store; every process is resumed (SIGCONT) and killed at the end, whatever the test
    did to it."""
    procs: list[Proc] = []

    def start(*args: str, app: str = "tests.apps.sample:app", **env: str) -> Proc:
        environment = {
            **os.environ,
            "CHOKAQ_DATABASE_URL": store.url,
            "CHOKAQ_SCHEMA": store.schema,
            "CHOKAQ_TEST_DIR": str(tmp_path),
            "CHOKAQ_ZOMBIE_TIMEOUT": str(ZOMBIE),
            "CHOKAQ_LEASE": str(LEASE),
            "CHOKAQ_LEASE_RENEW": str(RENEW),
            # This checkout's sources first: the venv's editable install may be another's.
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
            **env,
        }
        path = tmp_path / f"worker-{len(procs)}.log"
        with open(path, "wb") as log:
            popen = subprocess.Popen(
                [*WORKER, app, "--json-logs", *args],
                cwd=REPO,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc = Proc(popen, path)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.popen.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.popen.kill()
        proc.popen.wait(timeout=10)


async def leader_pid(client: App) -> int | None:
    term = await client.backend.leadership_get(name="maintenance")
    if term is None:
        return None
    for worker in await client.backend.workers_list():
        if worker.id == term.holder:
            return worker.pid
    return None

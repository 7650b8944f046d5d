"""chokaq.contrib.fastapi: the example app under a real uvicorn process on PostgreSQL (a row and
its job commit together or not at all; the App opens and closes with the server; The Deck
answers on loopback), and the guard of an unauthenticated Deck mount."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from tests.conftest import PG_URL, drop_schema, require_postgres

from chokaq import App, ConfigurationError
from chokaq.contrib.fastapi import lifespan, mount_deck
from chokaq.deck import Credentials
from chokaq.storage import create_backend

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _until(check: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except httpx.TransportError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The example app under uvicorn on a private schema: (its URL, the schema)."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS example_users")
    port = _free_port()
    env = {
        **os.environ,
        "CHOKAQ_DATABASE_URL": PG_URL,
        "CHOKAQ_SCHEMA": schema,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
    }
    env.pop("CHOKAQ_DECK_USERS", None)
    migrate = [sys.executable, "-m", "chokaq", "migrate", "--database", PG_URL, "--schema", schema]
    subprocess.run(migrate, env=env, check=True, capture_output=True, timeout=120)
    log = (tmp_path / "uvicorn.log").open("wb")
    argv = [sys.executable, "-m", "uvicorn", "examples.fastapi_signup:api", "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: httpx.get(f"{url}/openapi.json").status_code == 200, "uvicorn to serve")
        yield url, schema
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
        log.close()
        output = (tmp_path / "uvicorn.log").read_text(errors="replace")
        drop_schema(schema)
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS example_users")
        # uvicorn re-raises the SIGTERM it handled once its shutdown is complete.
        assert code in (0, -signal.SIGTERM), output
        assert "Application shutdown complete." in output, output  # the App closed cleanly
        assert "Traceback" not in output, output


@pytest.mark.postgres
async def test_the_example_commits_a_row_and_its_job_together_or_not_at_all(
    served: tuple[str, str],
) -> None:
    url, schema = served
    async with httpx.AsyncClient(base_url=url) as client:
        ok = await client.post("/signup", params={"email": "ann@example.com"})
        assert ok.status_code == 200, ok.text
        job_id = ok.json()["job_id"]
        bad = await client.post("/signup", params={"email": "bob@invalid"})
        assert bad.status_code == 400
        # The Deck, mounted without credentials, answers this loopback client.
        deck = await client.get("/deck/api/me")
        assert deck.status_code == 200, deck.text
    backend = create_backend(PG_URL, schema=schema)
    await backend.open()
    try:
        job = await backend.job_get(job_id)
        assert job is not None and (job.type, job.queue) == ("send_welcome", "emails")
        assert (await backend.stats_summary()).pending == 1  # bob's job rolled back
    finally:
        await backend.close()
    with psycopg.connect(PG_URL) as conn:
        users = [r[0] for r in conn.execute("SELECT email FROM example_users ORDER BY 1")]
    assert users == ["ann@example.com"]


def test_an_unguarded_deck_is_refused_unless_loopback_only(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    with pytest.raises(ConfigurationError, match="loopback_only=True"):
        mount_deck(FastAPI(), app)
    mount_deck(FastAPI(), app, credentials=Credentials(admin_token="t"))  # guarded: fine


async def test_a_loopback_only_deck_refuses_requests_from_elsewhere(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    web = FastAPI(lifespan=lifespan(app))
    mount_deck(web, app, loopback_only=True)
    local = httpx.ASGITransport(app=web, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=local, base_url="http://127.0.0.1:8000") as c:
        assert (await c.get("/deck/api/me")).status_code == 200
    remote = httpx.ASGITransport(app=web, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=remote, base_url="http://192.0.2.1:8000") as c:
        refused = await c.get("/deck/api/me")
        assert refused.status_code == 403 and "loopback only" in refused.text
    await app.close()


def test_a_loopback_only_deck_refuses_a_name_rebound_to_loopback(tmp_path: Path) -> None:
    """A page of another site whose name points at 127.0.0.1 reaches a loopback server from
    loopback: only the Host names it, so the unguarded mount answers loopback names only."""
    import threading

    import uvicorn

    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")
    web = FastAPI(lifespan=lifespan(app))
    mount_deck(web, app, loopback_only=True)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(web, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _until(lambda: server.started, "uvicorn to serve")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as c:
            assert c.get("/deck/api/me").status_code == 200
            assert c.get("/deck/api/me", headers={"host": f"localhost:{port}"}).status_code == 200
            rebound = c.get("/deck/api/me", headers={"host": f"attacker.example:{port}"})
            assert rebound.status_code == 400, rebound.text
            assert "attacker.example" in rebound.json()["error"]
    finally:
        server.should_exit = True
        thread.join(timeout=30)

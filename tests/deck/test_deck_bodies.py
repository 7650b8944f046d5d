"""Request bodies over real HTTP (The Deck under uvicorn): bounded in size (413 before the rest
is read), strict JSON (NaN, Infinity, a number past a float and deep nesting are a 400 with the
reason, never a 500 or a reset connection), and lists bounded; nothing changes in the store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chokaq.app import App
from chokaq.models import FailMove, FailureReason

from .conftest import Served, basic, run


@pytest.fixture
def session(deck_server: Served) -> Iterator[httpx.Client]:
    """alice (admin) on the real server, holding the CSRF cookie and sending its header."""
    with httpx.Client(base_url=deck_server.url, headers=basic("alice"), timeout=30) as c:
        assert c.get("/").status_code == 200
        c.headers["x-csrf-token"] = str(c.cookies.get("chokaq_deck_csrf"))
        yield c


def _dead(url: str) -> str:
    async def go(app: App) -> str:
        job_id = str(await app.enqueue_raw("charge", {"amount": 5}))
        [claimed] = await app.backend.jobs_fetch(worker_id="w", limit=1, start=True)
        await app.backend.jobs_finalize(
            moves=[FailMove(lease=claimed.lease, reason=FailureReason.FATAL_ERROR, error="no")]
        )
        return job_id

    return run(go, url)


def _payload(url: str, job_id: str) -> Any:
    view = run(lambda app: app.backend.job_get(job_id), url)
    return json.loads(view.payload)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"filter": {}, "cap": Infinity}', "Infinity is not a JSON value"),
        ('{"filter": {}, "cap": -Infinity}', "-Infinity is not a JSON value"),
        ('{"filter": {}, "cap": NaN}', "NaN is not a JSON value"),
        ('{"filter": {}, "cap": 1e400}', "1e400 is beyond what a number may be"),
        ("[" * 100_000, "must not nest arrays and objects more than 104 deep"),
        ('{"a":' * 3_000 + "1" + "}" * 3_000, "must not nest arrays and objects more than 104"),
        (b"\xff\xfe", "must be UTF-8 JSON"),
    ],
)
def test_bad_bodies_are_a_400_with_the_reason(
    session: httpx.Client, body: str | bytes, words: str
) -> None:
    r = session.post("/api/dlq/preview", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]


def test_a_list_past_its_limit_is_a_422_naming_it(session: httpx.Client) -> None:
    body = {"filter": {"ids": ["x"] * 200_000}}
    r = session.post("/api/dlq/preview", json=body)
    assert r.status_code == 422 and r.json()["field"] == "ids"
    assert "at most 1000 ids (got 200000)" in r.json()["error"]


def test_a_body_past_the_limit_is_refused_before_it_is_read(session: httpx.Client) -> None:
    big = b'{"filter": {"search": "' + b"x" * 3_000_000 + b'"}}'
    declared = session.post("/api/dlq/preview", content=big)
    assert declared.status_code == 413 and "at most" in declared.json()["error"]

    def chunks() -> Iterator[bytes]:  # no content-length: the server counts as it reads
        for _ in range(40):
            yield b" " * 100_000

    streamed = session.post("/api/dlq/preview", content=chunks())
    assert streamed.status_code == 413


def test_a_payload_edit_with_nan_is_refused_and_the_payload_kept(
    session: httpx.Client, deck_server: Served
) -> None:
    job_id = _dead(deck_server.db_url)
    # NaN in the body itself (400: not JSON), and in the payload text it carries (422, named).
    for body, status in (('{"payload": {"a": NaN}}', 400), ('{"payload": "{\\"a\\": NaN}"}', 422)):
        r = session.post(
            f"/api/jobs/{job_id}/edit", content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == status, r.text
        assert "NaN" in r.json()["error"]
    assert _payload(deck_server.db_url, job_id) == {"amount": 5}

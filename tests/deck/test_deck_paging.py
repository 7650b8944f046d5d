"""The paging of ``GET /api/jobs`` through httpx against the ASGI app: cursor tokens walk a
listing both ways, numbered pages stop where an OFFSET gets dear, bad or foreign cursors are
4xx with a reason, listing rows carry cut text (the inspector the whole of it), and the live
snapshot is reused while it is costly to read."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from chokaq.app import App
from chokaq.deck import state as state_module
from chokaq.deck.auth import SessionSigner
from chokaq.deck.paging import MAX_OFFSET_ROWS, encode_cursor
from chokaq.deck.state import DeckState
from chokaq.models import FailMove, FailureReason
from chokaq.storage.paging import LIST_TEXT_CHARS

from .conftest import Client


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[App]:
    chokaq_app = App(db_url)
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def dead_letter(app: App, payloads: list[str], error: str = "boom") -> list[str]:
    """One DLQ job per payload, failed the way a worker fails them (fetch, then a fail move)."""
    ids = [str(await app.enqueue_raw("job", p)) for p in payloads]
    claimed = await app.backend.jobs_fetch(worker_id="w", limit=len(ids), start=True)
    moves = [
        FailMove(lease=c.lease, reason=FailureReason.FATAL_ERROR, error=error) for c in claimed
    ]
    await app.backend.jobs_finalize(moves=moves)
    return ids


async def _get(c: httpx.AsyncClient, query: str) -> dict[str, Any]:
    r = await c.get("/api/jobs?" + query)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_cursors_walk_the_listing_both_ways(app: App, client: Client) -> None:
    await dead_letter(app, [f'{{"n": {i}}}' for i in range(7)])
    c = await client("bob")  # reading needs no admin
    whole = [j["id"] for j in (await _get(c, "source=dlq"))["items"]]
    first = await _get(c, "source=dlq&page_size=3")
    assert (first["total"], first["total_estimated"], first["pages"]) == (7, False, 3)
    assert first["previous"] is None and first["next"]
    seen = [j["id"] for j in first["items"]]
    page = first
    while page["next"]:
        page = await _get(c, f"source=dlq&page_size=3&after={page['next']}")
        seen += [j["id"] for j in page["items"]]
    assert seen == whole
    assert page["page"] == 0 and len(page["items"]) == 1
    back = await _get(c, f"source=dlq&page_size=3&before={page['previous']}")
    assert [j["id"] for j in back["items"]] == whole[3:6]
    last = await _get(c, "source=dlq&page_size=3&last=true")
    assert [j["id"] for j in last["items"]] == whole[4:]
    assert (last["page"], last["next"]) == (3, None)


async def test_list_rows_are_cut_and_the_inspector_has_the_whole_text(
    app: App, client: Client
) -> None:
    payload = '{"blob": "' + "x" * 5000 + '"}'
    error = "Traceback (most recent call last):\n" + "  frame\n" * 2000 + "ValueError: no"
    [job_id] = await dead_letter(app, [payload], error=error)
    c = await client("alice")
    [row] = (await _get(c, "source=dlq"))["items"]
    assert (row["payload"], row["error"]) == (payload[:LIST_TEXT_CHARS], error[-LIST_TEXT_CHARS:])
    assert row["truncated"] == ["payload", "error"]
    full = (await c.get(f"/api/jobs/{job_id}")).json()
    assert (full["payload"], full["error"], full["truncated"]) == (payload, error, [])


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("source=dlq&after=not-a-cursor", "after", "not a cursor"),
        ("source=dlq&before=" + "A" * 3000, "before", "at most"),
        ("source=dlq&sort=type&after={date_token}", "after", "another sort"),
        ("source=dlq&order=asc&after={date_token}", "after", "another sort"),
        ("source=dlq&after={date_token}&last=true", "last", "cannot be combined"),
        ("source=dlq&page=2&after={date_token}", "page", "must be 1"),
        ("source=dlq&last=maybe", "last", ""),
        (f"source=archive&page_size=50&page={MAX_OFFSET_ROWS // 50 + 1}", "page", "cursors"),
    ],
)
async def test_bad_cursors_and_deep_numbered_pages_are_refused_with_a_reason(
    client: Client, query: str, field: str, words: str
) -> None:
    c = await client("bob")
    token = encode_cursor(
        "date", True, "2030-01-01T00:00:00+00:00", "0" * 8 + "-0000-0000-0000-" + "0" * 12
    )
    r = await c.get("/api/jobs?" + query.format(date_token=token))
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert words in r.json()["error"]


async def test_the_deepest_numbered_page_is_still_served(client: Client) -> None:
    c = await client("bob")
    page = MAX_OFFSET_ROWS // 50
    assert (await _get(c, f"source=archive&page_size=50&page={page}"))["items"] == []


async def test_the_live_snapshot_is_reused_while_reading_it_is_costly(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no poll interval at all, a snapshot is still reused for 1 / SNAPSHOT_DUTY times
    what it took to read (here a tiny duty, so that any read is "costly" and the reuse does
    not hang on how fast this machine is): back-to-back callers share one read."""
    monkeypatch.setattr(state_module, "SNAPSHOT_DUTY", 1e-9)
    monkeypatch.setattr(state_module, "SNAPSHOT_MAX_AGE_SECONDS", 3600.0)
    reads: Counter[str] = Counter()
    app.backend.add_observer(lambda op, seconds, error: reads.update([op]))
    state = DeckState(app, None, SessionSigner(), None, 0.0, "t")
    first = await state.live_snapshot()
    assert reads["stats_summary"] == 1
    assert state.snapshot_interval() == 3600.0
    assert await state.live_snapshot() is first
    assert reads["stats_summary"] == 1
    state.invalidate()  # a mutation forgets it at once
    await state.live_snapshot()
    assert reads["stats_summary"] == 2

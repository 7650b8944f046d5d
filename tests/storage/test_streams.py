"""Streams at the storage seam (both backends): the items a job emits, written under its lease
at the stream's end only (0, 1, 2, ... with no gap), read in order from any index, told to a
watcher of the job, kept with the job in the archive and removed once it is in no pillar."""

from __future__ import annotations

import asyncio
import json

import pytest
from conformance import at, claim, enqueue, fail, succeed

from chokaq.errors import ValidationError
from chokaq.limits import MAX_STREAM_ITEM_BYTES
from chokaq.models import FailureReason, Lease


async def _running(backend, now=0.0):
    [c] = await claim(backend, now=at(now))
    return c


async def _items(backend, job_id, **options):
    return [
        (i.index, json.loads(i.item)) for i in await backend.streams_read(job_id=job_id, **options)
    ]


async def test_items_are_written_in_order_and_read_from_any_index(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    for n in range(5):
        assert await backend.streams_emit(lease=c.lease, index=n, item=json.dumps({"n": n}))
    assert await _items(backend, jid) == [(n, {"n": n}) for n in range(5)]
    assert await _items(backend, jid, from_index=3) == [(3, {"n": 3}), (4, {"n": 4})]
    assert await _items(backend, jid, from_index=1, limit=2) == [(1, {"n": 1}), (2, {"n": 2})]
    assert await _items(backend, jid, from_index=5) == []
    assert await backend.streams_length(job_id=jid) == 5
    [first] = await backend.streams_read(job_id=jid, limit=1)
    assert first.job_id == jid and first.created_at.tzinfo is not None


async def test_only_the_streams_end_is_written(backend):
    # A replay's index (already written) and a gap both write nothing: not applied, a value.
    [jid] = await enqueue(backend)
    c = await _running(backend)
    assert await backend.streams_emit(lease=c.lease, index=0, item='"a"')
    assert not await backend.streams_emit(lease=c.lease, index=0, item='"again"')
    assert not await backend.streams_emit(lease=c.lease, index=2, item='"gap"')
    assert await _items(backend, jid) == [(0, "a")]


async def test_a_stale_lease_emits_nothing(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    stale = Lease(c.id, c.lease.worker_id, "00000000-0000-4000-8000-000000000000")
    assert not await backend.streams_emit(lease=stale, index=0, item='"x"')
    # Nor may a job that left Processing (its lease ended with the move).
    assert await succeed(backend, [c], now=at(1)) == [True]
    assert not await backend.streams_emit(lease=c.lease, index=0, item='"late"')
    assert await backend.streams_length(job_id=jid) == 0


@pytest.mark.parametrize(
    ("field", "options", "says"),
    [
        ("item", {"item": "{not json"}, "valid JSON"),
        ("item", {"item": 12}, "JSON text"),
        ("item", {"item": '"' + "x" * MAX_STREAM_ITEM_BYTES + '"'}, f"{MAX_STREAM_ITEM_BYTES}"),
        ("index", {"index": -1}, "between 0 and 99999"),
        ("index", {"index": 100_000}, "between 0 and 99999"),
        ("index", {"index": 1.0}, "integer"),
    ],
)
async def test_bad_input_names_the_field_and_writes_nothing(backend, field, options, says):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    call = {"lease": c.lease, "index": 0, "item": '"ok"', **options}
    with pytest.raises(ValidationError) as caught:
        await backend.streams_emit(**call)
    assert caught.value.field == field and says in str(caught.value)
    assert await backend.streams_length(job_id=jid) == 0


async def test_bad_reads_name_the_field(backend):
    for options, field in [
        ({"job_id": "nope"}, "job_id"),
        ({"job_id": "00000000-0000-4000-8000-000000000001", "from_index": -1}, "from_index"),
        ({"job_id": "00000000-0000-4000-8000-000000000001", "limit": 1001}, "limit"),
    ]:
        with pytest.raises(ValidationError) as caught:
            await backend.streams_read(**options)
        assert caught.value.field == field


async def test_items_stay_with_the_job_and_go_once_it_is_purged(backend):
    [kept, dead] = await enqueue(backend, 2)
    [a, b] = await claim(backend, now=at(0))
    for c in (a, b):
        assert await backend.streams_emit(lease=c.lease, index=0, item='"one"')
    assert await succeed(backend, [a if a.id == kept else b], now=at(1)) == [True]
    await fail(backend, [b if a.id == kept else a], now=at(1), reason=FailureReason.FATAL_ERROR)
    assert await backend.streams_tidy() == 0  # in the archive and the DLQ: kept
    assert await _items(backend, kept) == [(0, "one")]
    assert await backend.dlq_purge(ids=[dead], actor="ops") == [dead]
    assert await backend.streams_tidy() == 1
    assert await _items(backend, dead) == []
    assert await _items(backend, kept) == [(0, "one")]


async def test_an_item_tells_whoever_watches_the_job(backend):
    [jid, other] = await enqueue(backend, 2)
    [a, b] = await claim(backend, now=at(0))
    watched, unwatched = (a, b) if a.id == jid else (b, a)
    told: asyncio.Queue[str] = asyncio.Queue()
    notifier = backend.notifier()
    await notifier.start(lambda q: None, lambda j: None, told.put_nowait)
    try:
        assert (await backend.job_outcome(id=jid, watch=True)).pillar.name == "HOT"
        assert await backend.streams_emit(lease=unwatched.lease, index=0, item='"quiet"')
        assert await backend.streams_emit(lease=watched.lease, index=0, item='"heard"')
        heard = await asyncio.wait_for(told.get(), 10)
        assert heard in (jid, "")  # "": another process's signal, SQLite's file notifier
        assert heard != other
    finally:
        await notifier.stop()

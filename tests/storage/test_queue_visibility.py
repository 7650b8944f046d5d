"""Hiding a queue is The Deck's listing only: its jobs are still claimed and it stays in the
stats; pausing is what stops workers claiming. A queue's flags are independent of each other."""

from __future__ import annotations

import pytest
from conformance import at, claim, enqueue

from chokaq.errors import NotFoundError


async def test_a_hidden_queue_is_still_served_and_counted(backend):
    ids = await enqueue(backend, 2, queue="mail")
    info = await backend.queue_hide(name="mail", hidden=True, actor="ops")
    assert (info.hidden, info.paused, info.active) == (True, False, True)
    assert {c.id for c in await claim(backend, 1, queues=["mail"], now=at(1))} <= set(ids)
    assert [c.id for c in await claim(backend, 5, now=at(2))] != []  # every queue: mail too
    [stats] = [s for s in await backend.stats_queues(now=at(3)) if s.queue.name == "mail"]
    assert stats.queue.hidden and stats.processing == 2
    assert (await backend.queue_get("mail")).hidden
    shown = await backend.queue_hide(name="mail", hidden=False)
    assert not shown.hidden and not (await backend.queue_get("mail")).hidden


async def test_pause_stops_claims_and_hiding_does_not_change_it(backend):
    await enqueue(backend, 1, queue="mail")
    await backend.queue_pause(name="mail", paused=True)
    await backend.queue_hide(name="mail", hidden=True)
    assert await claim(backend, 5, queues=["mail"], now=at(1)) == []
    info = await backend.queue_hide(name="mail", hidden=False)
    assert info.paused and not info.hidden
    await backend.queue_pause(name="mail", paused=False)
    assert len(await claim(backend, 5, queues=["mail"], now=at(2))) == 1


async def test_hiding_an_unknown_queue_is_refused_unless_created(backend):
    with pytest.raises(NotFoundError):
        await backend.queue_hide(name="typo", hidden=True, create=False)
    assert await backend.queue_get("typo") is None
    made = await backend.queue_hide(name="typo", hidden=True, create=True)
    assert made.hidden and made.name == "typo"

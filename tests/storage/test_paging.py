"""Keyset paging, bounded counts and light listing rows (``jobs_page``), on every backend.

A walk by ``after``/``before`` keys must list every row exactly once in the numbered order,
ties included, whatever is inserted between two pages; a count is exact up to the bound and
says when it is an estimate; a listing row carries the start of its long text fields only.
"""

from __future__ import annotations

import pytest
from conformance import T0, at, claim, enqueue, fail, succeed

from chokaq.errors import ValidationError
from chokaq.models import JobFilter, NewJob, Page, PageKey, Pillar
from chokaq.storage import paging

SORTS = [
    ("date", True),
    ("date", False),
    ("priority", False),
    ("queue", True),
    ("type", False),
    ("worker", True),  # may be NULL: pending jobs have no worker
    ("worker", False),
    ("id", True),
]


async def _store_with_ties(backend) -> None:
    """17 hot jobs, all created in the same second (every date ties), three priorities, two
    queues, and 5 of them claimed by two workers (the rest have no worker)."""
    for i in range(17):
        await enqueue(backend, priority=i % 3, queue=("a", "b")[i % 2], type=f"t{i % 4}", now=T0)
    await claim(backend, 3, worker="w1", start=False)
    await claim(backend, 2, worker="w2", start=False)


async def _walk(backend, sort: str, descending: bool, size: int, *, backward: bool) -> list[str]:
    """Every id of the hot listing, page by page, by keys (from the last page when backward)."""
    ids: list[str] = []
    page: Page = await backend.jobs_page(
        pillar=Pillar.HOT, sort=sort, descending=descending, page_size=size, last=backward
    )
    for _ in range(100):  # a key that does not move on would loop forever: fail instead
        ids = [v.id for v in page.items] + ids if backward else ids + [v.id for v in page.items]
        edge = page.previous if backward else page.next
        if edge is None:
            return ids
        direction = {"before": edge} if backward else {"after": edge}
        page = await backend.jobs_page(
            pillar=Pillar.HOT, sort=sort, descending=descending, page_size=size, **direction
        )
    raise AssertionError(f"the walk did not end: {len(ids)} ids after 100 pages")


@pytest.mark.parametrize(("sort", "descending"), SORTS)
async def test_a_walk_by_keys_lists_every_row_once_in_the_numbered_order(backend, sort, descending):
    await _store_with_ties(backend)
    whole = await backend.jobs_page(pillar=Pillar.HOT, sort=sort, descending=descending)
    expected = [v.id for v in whole.items]
    assert len(expected) == len(set(expected)) == 17
    for size in (1, 4, 17):
        assert await _walk(backend, sort, descending, size, backward=False) == expected
        assert await _walk(backend, sort, descending, size, backward=True) == expected


async def test_keys_know_their_neighbours(backend):
    await _store_with_ties(backend)
    first = await backend.jobs_page(pillar=Pillar.HOT, page_size=5)
    assert (first.page, first.previous, first.total) == (1, None, 17)
    assert first.next == PageKey(first.items[-1].created_at, first.items[-1].id)
    second = await backend.jobs_page(pillar=Pillar.HOT, page_size=5, after=first.next)
    assert second.page == 0  # reached by key: its number is not known
    assert second.previous == PageKey(second.items[0].created_at, second.items[0].id)
    back = await backend.jobs_page(pillar=Pillar.HOT, page_size=5, before=second.previous)
    assert back.items == first.items
    assert back.previous is None and back.next == first.next
    # The last page is the last full page of rows (walking back from it, pages align with
    # the end); its number is the last one.
    last = await backend.jobs_page(pillar=Pillar.HOT, page_size=5, last=True)
    assert (last.page, last.pages, last.next) == (4, 4, None)
    whole = await backend.jobs_page(pillar=Pillar.HOT)
    assert last.items == whole.items[-5:]
    assert last.previous == PageKey(last.items[0].created_at, last.items[0].id)


async def test_rows_inserted_between_pages_neither_skip_nor_repeat_a_row(backend):
    original = await enqueue(backend, 12, now=at(100))
    seen: list[str] = []
    page = await backend.jobs_page(pillar=Pillar.HOT, page_size=5)
    step = 0
    while True:
        seen += [v.id for v in page.items]
        # Between pages, newer and older jobs arrive, some tied with the listed ones: a
        # numbered page would shift; a key does not.
        step += 1
        await enqueue(backend, 3, now=at(100 + step))
        await enqueue(backend, 2, now=at(100))
        await enqueue(backend, 1, now=at(step))
        if page.next is None:
            break
        page = await backend.jobs_page(pillar=Pillar.HOT, page_size=5, after=page.next)
    assert len(seen) == len(set(seen))
    assert set(original) <= set(seen)


async def test_the_count_is_exact_up_to_the_bound_then_an_estimate_where_it_is_cheaper(
    backend, monkeypatch
):
    await enqueue(backend, 6, queue="many")
    await enqueue(backend, 2, queue="few")
    small = await backend.jobs_page(pillar=Pillar.HOT)
    assert (small.total, small.total_estimated) == (8, False)
    monkeypatch.setattr(paging, "COUNT_EXACT_UP_TO", 3)
    few = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(queue="few"))
    assert (few.total, few.total_estimated) == (2, False)
    # A first page that holds every match is its own exact count, whatever the bound.
    whole = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(queue="many"))
    assert (whole.total, whole.total_estimated) == (6, False)
    many = await backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(queue="many"), page_size=2)
    if backend.capabilities.name == "postgresql":
        # The planner's estimate, never below the rows the bounded count saw.
        assert many.total_estimated and many.total >= 4
    else:
        # SQLite counts exactly whatever the bound (one host's file, no planner estimate).
        assert (many.total, many.total_estimated) == (6, False)


async def test_listing_rows_carry_the_start_of_long_text_and_the_inspector_all_of_it(backend):
    """...and of an error its end: the traceback's last line is what a listing shows."""
    payload = '{"blob": "' + "x" * 2000 + '"}'
    error = "Traceback (most recent call last):\n" + "  frame\n" * 1000 + "ValueError: no"
    await enqueue(backend, payload=payload)
    await enqueue(backend, payload='{"small": 1}')
    claimed = await claim(backend, 2)
    long_one = next(c for c in claimed if len(c.payload) > 100)
    short_one = next(c for c in claimed if c is not long_one)
    await fail(backend, [long_one], error=error)
    await succeed(backend, [short_one])
    dlq = (await backend.jobs_page(pillar=Pillar.DLQ)).items[0]
    cut = paging.LIST_TEXT_CHARS
    assert (dlq.payload, dlq.error) == (payload[:cut], error[-cut:])
    assert dlq.error.endswith("\nValueError: no")
    assert dlq.truncated == ("payload", "error")
    full = await backend.job_get(dlq.id)
    assert full is not None
    assert (full.payload, full.error, full.truncated) == (payload, error, ())
    archived = (await backend.jobs_page(pillar=Pillar.ARCHIVE)).items[0]
    assert (archived.payload, archived.truncated) == ('{"small": 1}', ())


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"after": PageKey(T0, "x")}, "after.id"),
        ({"before": PageKey("yesterday", "00000000-0000-0000-0000-000000000001")}, "before.value"),
        ({"after": PageKey(None, "00000000-0000-0000-0000-000000000001")}, "after.value"),
        ({"last": True, "page": 2}, "page"),
        ({"after": PageKey(T0, "00000000-0000-0000-0000-000000000001"), "last": True}, "last"),
    ],
)
async def test_bad_keys_are_refused_naming_the_field(backend, arguments, field):
    with pytest.raises(ValidationError) as caught:
        await backend.jobs_page(pillar=Pillar.HOT, **arguments)
    assert caught.value.field == field


async def test_a_walk_by_keys_holds_with_times_from_the_store_clock(backend):
    """Times the store stamps itself (finer than a key's microseconds on SQLite), some in one
    batch (tied), walked by date both ways with pages that split the tied batch."""
    for _ in range(4):
        await backend.jobs_enqueue([NewJob(type="t")])
    await backend.jobs_enqueue([NewJob(type="t") for _ in range(5)])
    for descending in (True, False):
        whole = await backend.jobs_page(pillar=Pillar.HOT, descending=descending)
        expected = [v.id for v in whole.items]
        assert await _walk(backend, "date", descending, 2, backward=False) == expected
        assert await _walk(backend, "date", descending, 2, backward=True) == expected


async def test_a_key_whose_row_left_still_finds_the_rows_after_it(backend):
    """The key's row is cancelled (it leaves hot) before the next page is read."""
    for _ in range(6):
        await backend.jobs_enqueue([NewJob(type="t")])
    whole = [v.id for v in (await backend.jobs_page(pillar=Pillar.HOT)).items]
    first = await backend.jobs_page(pillar=Pillar.HOT, page_size=2)
    await backend.jobs_cancel(ids=[first.items[-1].id], actor="t")
    second = await backend.jobs_page(pillar=Pillar.HOT, page_size=2, after=first.next)
    assert [v.id for v in second.items] == whole[2:4]

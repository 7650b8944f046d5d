"""Leadership leases on both backends: one holder at a time, renewal by compare-and-set on the
database's clock, expiry unless renewed, increasing epochs, and fenced maintenance writes.

A lease runs on the database's clock, which a test cannot inject; expiry is awaited by polling
the real condition (another holder's claim being granted) with a deadline, on short leases.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
from conformance import T0, at, claim, enqueue, fail, succeed

from chokaq.errors import LeadershipLostError, ValidationError
from chokaq.models import JobStatus, LeaderTerm, Pillar
from chokaq.storage import Backend

DEADLINE = 20.0
SHORT = 0.3  # seconds: a lease the test lets expire
LONG = 60.0  # seconds: a lease that cannot expire during a test


async def granted_after_expiry(
    backend: Backend, holder: str, name: str = "maintenance"
) -> LeaderTerm:
    """Claim for ``holder`` until granted (the current term expired), within the deadline."""
    give_up = time.monotonic() + DEADLINE
    while True:
        term = await backend.leadership_claim(name=name, holder=holder, lease_seconds=LONG)
        if term is not None:
            return term
        assert time.monotonic() < give_up, f"{holder} was never granted {name!r}"
        await asyncio.sleep(0.02)


async def test_first_claim_is_epoch_one_and_a_rival_is_refused(backend: Backend) -> None:
    first = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    assert first is not None and (first.name, first.holder, first.epoch) == ("maintenance", "a", 1)
    assert first.expires_at.tzinfo is not None
    assert (
        await backend.leadership_claim(name="maintenance", holder="b", lease_seconds=LONG) is None
    )
    assert await backend.leadership_get(name="maintenance") == first


async def test_renewal_keeps_the_epoch_and_extends_the_lease(backend: Backend) -> None:
    first = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    assert first is not None
    renewed = await backend.leadership_claim(
        name="maintenance", holder="a", lease_seconds=LONG, term=first
    )
    assert renewed is not None and renewed.epoch == first.epoch
    assert renewed.expires_at >= first.expires_at
    # A holder that forgot its term cannot claim over it: it waits like anyone else.
    assert (
        await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG) is None
    )


async def test_second_holder_cannot_claim_while_the_first_renews(backend: Backend) -> None:
    lease = 3.0
    term = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=lease)
    assert term is not None
    # Renewed every ~0.1 s for well over two lease lengths: the rival never gets in. (A lease
    # of seconds leaves room for a stall of the loaded test machine between renewals.)
    until = time.monotonic() + 2.3 * lease
    while time.monotonic() < until:
        rival = await backend.leadership_claim(name="maintenance", holder="b", lease_seconds=LONG)
        assert rival is None
        renewed = await backend.leadership_claim(
            name="maintenance", holder="a", lease_seconds=lease, term=term
        )
        assert renewed is not None and renewed.epoch == term.epoch
        term = renewed
        await asyncio.sleep(0.1)


async def test_after_expiry_another_holder_takes_over_with_a_higher_epoch(
    backend: Backend,
) -> None:
    first = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=SHORT)
    assert first is not None
    second = await granted_after_expiry(backend, "b")
    assert (second.holder, second.epoch) == ("b", first.epoch + 1)
    # The ex-holder's renewal is refused: its term is over.
    assert (
        await backend.leadership_claim(
            name="maintenance", holder="a", lease_seconds=LONG, term=first
        )
        is None
    )
    assert await backend.leadership_get(name="maintenance") == second


async def test_a_lapsed_term_retaken_by_its_holder_is_a_new_epoch(backend: Backend) -> None:
    first = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=SHORT)
    assert first is not None
    give_up = time.monotonic() + DEADLINE
    while await backend.leadership_get(name="maintenance") is not None:
        assert time.monotonic() < give_up
        await asyncio.sleep(0.02)
    again = await backend.leadership_claim(
        name="maintenance", holder="a", lease_seconds=LONG, term=first
    )
    assert again is not None and again.epoch == first.epoch + 1


async def test_epochs_increase_across_handovers(backend: Backend) -> None:
    epochs = []
    for holder in ("a", "b", "c", "a"):
        term = await backend.leadership_claim(name="maintenance", holder=holder, lease_seconds=LONG)
        assert term is not None
        epochs.append(term.epoch)
        assert await backend.leadership_release(term=term) is True
    assert epochs == [1, 2, 3, 4]


async def test_release_lets_a_successor_in_at_once(backend: Backend) -> None:
    first = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    assert first is not None
    assert await backend.leadership_release(term=first) is True
    assert await backend.leadership_get(name="maintenance") is None
    assert await backend.leadership_release(term=first) is False
    second = await backend.leadership_claim(name="maintenance", holder="b", lease_seconds=LONG)
    assert second is not None and second.epoch == 2
    # Releasing a term that is not current leaves the current one alone.
    assert await backend.leadership_release(term=first) is False
    assert await backend.leadership_get(name="maintenance") == second


async def test_roles_are_independent(backend: Backend) -> None:
    a = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    b = await backend.leadership_claim(name="schedules", holder="b", lease_seconds=LONG)
    assert a is not None and b is not None and a.epoch == b.epoch == 1


async def test_two_backends_racing_grant_exactly_one(
    open_backend: Callable[..., Awaitable[Backend]],
) -> None:
    backends = [await open_backend() for _ in range(4)]
    terms = await asyncio.gather(
        *(
            b.leadership_claim(name="maintenance", holder=f"w{i}", lease_seconds=LONG)
            for i, b in enumerate(backends)
        )
    )
    assert sum(term is not None for term in terms) == 1


# -- fencing ----------------------------------------------------------------------------------


async def _stale_and_current(backend: Backend) -> tuple[LeaderTerm, LeaderTerm]:
    stale = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=SHORT)
    assert stale is not None
    current = await granted_after_expiry(backend, "b")
    return stale, current


async def test_a_fenced_rescue_after_losing_does_nothing(backend: Backend) -> None:
    [job_id] = await enqueue(backend)
    await claim(backend, worker="w1", now=T0)  # Processing, heartbeat at T0: a zombie by now
    stale, current = await _stale_and_current(backend)
    with pytest.raises(LeadershipLostError) as lost:
        await backend.jobs_rescue(
            fetched_timeout_seconds=60, processing_timeout_seconds=60, fence=stale
        )
    assert lost.value.term == stale
    view = await backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.HOT and view.status is JobStatus.PROCESSING
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, fence=current
    )
    assert rescued.zombies == (job_id,)


async def test_fenced_retention_after_losing_deletes_nothing(backend: Backend) -> None:
    ids = await enqueue(backend, 2)
    claimed = await claim(backend, now=T0)
    by_id = {c.id: c for c in claimed}
    await succeed(backend, [by_id[ids[0]]], now=at(1))
    await fail(backend, [by_id[ids[1]]], now=at(1))
    stale, current = await _stale_and_current(backend)
    later = T0 + timedelta(days=1)
    writes = {
        "archive_purge": lambda fence: backend.archive_purge(older_than=later, fence=fence),
        "dlq_purge_older": lambda fence: backend.dlq_purge_older(older_than=later, fence=fence),
        "metrics_rollup": lambda fence: backend.metrics_rollup(older_than=later, fence=fence),
        "metrics_prune": lambda fence: backend.metrics_prune(older_than=later, fence=fence),
        "limits_tidy": lambda fence: backend.limits_tidy(older_than=later, fence=fence),
    }
    # (The hot tidy's fence is in test_hot_tidy.py: it writes only when dead rows pile up.)
    for write in writes.values():
        with pytest.raises(LeadershipLostError):
            await write(stale)
    assert [(await backend.job_get(i)).pillar for i in ids] == [Pillar.ARCHIVE, Pillar.DLQ]  # type: ignore[union-attr]
    assert await backend.stats_series(since=T0 - timedelta(minutes=1)) != []
    assert await backend.metrics_rollup(older_than=later, fence=current) > 0
    assert await backend.archive_purge(older_than=later, fence=current) == 1
    assert await backend.dlq_purge_older(older_than=later, fence=current) == 1


async def test_a_released_term_fences_too(backend: Backend) -> None:
    term = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    assert term is not None
    await backend.leadership_release(term=term)
    with pytest.raises(LeadershipLostError):
        await backend.jobs_rescue(
            fetched_timeout_seconds=60, processing_timeout_seconds=60, fence=term
        )


# -- the handle -------------------------------------------------------------------------------


async def test_the_handle_stops_writing_once_its_renewal_is_late(backend: Backend) -> None:
    handle = backend.leadership("maintenance", holder="a", lease_seconds=SHORT)
    term = await handle.claim()
    assert term is not None and handle.term == term and handle.leading
    # Without a renewal the handle gives up the term by its own monotonic deadline, which is
    # never later than the database's expiry.
    give_up = time.monotonic() + DEADLINE
    while handle.term is not None:
        assert time.monotonic() < give_up
        await asyncio.sleep(0.02)
    assert not handle.leading
    await handle.release()


async def test_the_handle_reads_the_database_clock_from_its_grants(backend: Backend) -> None:
    handle = backend.leadership("maintenance", holder="a", lease_seconds=LONG)
    assert handle.clock() is None  # nothing granted, nothing read
    first = await handle.claim()
    read = handle.clock()
    renewed = await handle.claim()
    assert first is not None and renewed is not None and read is not None
    # Never ahead of the database: the read lies between the two grants on its clock (a grant
    # happens at its expiry less the lease), to that clock's resolution (SQLite's 'now' counts
    # milliseconds).
    lease, tick = timedelta(seconds=LONG), timedelta(milliseconds=1)
    assert first.expires_at - lease <= read <= renewed.expires_at - lease + tick
    await handle.release()


async def test_the_handle_releases_on_close(backend: Backend) -> None:
    first = backend.leadership("maintenance", holder="a", lease_seconds=LONG)
    second = backend.leadership("maintenance", holder="b", lease_seconds=LONG)
    assert await first.claim() is not None
    assert await second.claim() is None
    await first.release()
    term = await second.claim()
    assert term is not None and term.epoch == 2


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("lease", [0, -1, math.nan, math.inf, 3600.5, "10", True])
async def test_lease_seconds_is_checked(backend: Backend, lease: object) -> None:
    with pytest.raises(ValidationError) as err:
        await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=lease)  # type: ignore[arg-type]
    assert err.value.field == "lease_seconds"
    assert await backend.leadership_get(name="maintenance") is None


async def test_a_term_of_another_holder_is_refused(backend: Backend) -> None:
    term = await backend.leadership_claim(name="maintenance", holder="a", lease_seconds=LONG)
    assert term is not None
    with pytest.raises(ValidationError) as err:
        await backend.leadership_claim(
            name="maintenance", holder="b", lease_seconds=LONG, term=term
        )
    assert err.value.field == "term"


@pytest.mark.parametrize(
    ("fence", "field"),
    [
        ("maintenance", "fence"),
        (LeaderTerm("", "a", 1, T0), "fence.name"),
        (LeaderTerm("maintenance", "a\n", 1, T0), "fence.holder"),
        (LeaderTerm("maintenance", "a", 0, T0), "fence.epoch"),
    ],
)
async def test_a_bad_fence_is_refused_before_anything_is_written(
    backend: Backend, fence: object, field: str
) -> None:
    [job_id] = await enqueue(backend)
    await claim(backend, now=T0)
    with pytest.raises(ValidationError) as err:
        await backend.jobs_rescue(
            fetched_timeout_seconds=60,
            processing_timeout_seconds=60,
            fence=fence,  # type: ignore[arg-type]
        )
    assert err.value.field == field
    view = await backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.HOT

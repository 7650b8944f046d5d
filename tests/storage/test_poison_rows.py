"""A hot row that cannot be decoded never takes its batch-mates down.

The API refuses such values now (``limits.check_time`` and friends), so each poison row is
planted with raw SQL beside nine healthy jobs, due and ahead of them in claim order, as a row
written by an older version, another client or a hand-edit would be. The claim must return
the nine healthy jobs and move the poison row to the DLQ as REJECTED, its error naming the
column and the decode error; the lifetime counters and the metric buckets count exactly that
one failure; and the reads (job detail, every pillar's listing) still answer with the row in
the DLQ (its unreadable values shown as the nearest readable ones).
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance import T0, at, claim, enqueue, succeed
from tests.ops.test_events import captured

from chokaq.ids import new_job_ids
from chokaq.logs import Event
from chokaq.models import FailureReason, JobFilter, Pillar

# (label, dialect, the column the decoder refuses, {column: raw SQL value}). Every row is due
# and has a high priority, so that it is in the batch the claim takes.
YEAR_0 = -62_167_219_200.0 - 86_400  # Unix seconds of 31 December of year 0 (1 BC)
POISON = [
    ("bc scheduled_at", "postgres", "scheduled_at", {"scheduled_at": "'0001-01-01 00:00+00 BC'"}),
    ("infinite created_at", "postgres", "created_at", {"created_at": "'infinity'"}),
    ("year 10000 created_at", "postgres", "created_at", {"created_at": "'10000-01-01 00:00+00'"}),
    ("year 0 scheduled_at", "sqlite", "scheduled_at", {"scheduled_at": repr(YEAR_0)}),
    ("text in created_at", "sqlite", "created_at", {"created_at": "'garbage'"}),
    ("text in priority", "sqlite", "priority", {"priority": "'high'"}),
    ("text in timeout_seconds", "sqlite", "timeout_seconds", {"timeout_seconds": "'soon'"}),
    ("blob payload", "sqlite", "payload", {"payload": "x'00ff'"}),
    ("blob tags", "sqlite", "tags", {"tags": "x'00ff'"}),
    ("text not utf-8", "sqlite", "payload", {"payload": "CAST(x'7bff7d' AS TEXT)"}),
    ("tags not utf-8", "sqlite", "tags", {"tags": "CAST(x'61ff' AS TEXT)"}),
]


def _plant(raw: Any, values: dict[str, str]) -> str:
    """A Pending row in queue ``default``, due at T0, with ``values`` (raw SQL) over it."""
    (job_id,) = new_job_ids(1)
    due = "'2025-01-01 11:00+00'" if raw.dialect == "postgres" else repr(at(-3600).timestamp())
    columns = {
        "id": f"'{job_id}'",
        "queue": "'default'",
        "type": "'email.send'",
        "payload": "'{{}}'",  # doubled: raw.rows formats the text
        "priority": "100",
        "status": "0",
        "attempt_count": "0",
        "scheduled_at": due,
        "created_at": due,
        "updated_at": due,
        **values,
    }
    raw.rows(
        f"INSERT INTO {{jobs_hot}} ({', '.join(columns)}) VALUES ({', '.join(columns.values())})"
    )
    return job_id


# Each poison value only on the store whose column types can hold it (``store`` is chosen
# per case, indirectly, so no case is generated for the other backend).
ON_ITS_STORE = pytest.mark.parametrize(
    ("store", "poison"),
    [
        pytest.param(
            where,
            (column, values),
            id=f"{where}-{label}",
            marks=[pytest.mark.postgres] if where == "postgres" else [],
        )
        for label, where, column, values in POISON
    ],
    indirect=["store"],
)


@pytest.mark.parametrize("bulkhead", [False, True], ids=["", "bulkhead"])
@pytest.mark.parametrize("start", [True, False], ids=["start", "fetched"])
@ON_ITS_STORE
async def test_an_undecodable_row_goes_to_the_dlq_and_its_batch_mates_are_claimed(
    backend: Any, raw: Any, poison: tuple[str, dict[str, str]], start: bool, bulkhead: bool
) -> None:
    column, values = poison
    healthy = await enqueue(backend, 9, now=at(-60))
    if bulkhead:  # the claim then runs in a transaction with the bulkhead lock (PostgreSQL)
        await backend.queue_configure(name="default", max_workers=50)
    bad = _plant(raw, values)
    # Before any claim, the reads show it in hot.
    assert bad in [item.id for item in (await backend.jobs_page(pillar=Pillar.HOT)).items]
    shown = await backend.job_get(bad)
    assert shown is not None and shown.pillar is Pillar.HOT
    got = await claim(backend, 20, start=start, now=T0)
    assert sorted(job.id for job in got) == sorted(healthy)
    # Nothing is left to claim, and the poison row is not in hot any more.
    assert await claim(backend, 20, now=at(1)) == []
    view = await backend.job_get(bad)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.REJECTED
    assert view.error is not None and view.error.startswith("Rejected: undecodable row")
    assert column in view.error
    summary = await backend.stats_summary()
    assert (summary.pending, summary.failed_total, summary.succeeded_total) == (0, 1, 0)
    assert summary.fetched + summary.processing == 9
    (queue,) = await backend.stats_queues(now=T0)
    assert queue.failed_total == 1
    through = await backend.stats_throughput(now=at(1))
    assert through.failed_5m == 1 and through.processed_5m == 1
    # The reads answer with the row in the DLQ.
    page = await backend.jobs_page(pillar=Pillar.DLQ)
    assert [item.id for item in page.items] == [bad] and page.total == 1
    found = await backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(ids=(bad,)))
    assert found.total == 1
    assert (await backend.jobs_page(pillar=Pillar.HOT)).total == 9


async def test_an_undecodable_row_in_the_archive_does_not_break_the_reads(
    backend: Any, raw: Any, store: Any
) -> None:
    # A finished row with an unreadable time (planted): the detail and the listing still answer.
    (job_id,) = await enqueue(backend, now=at(-60))
    (job,) = await claim(backend, now=T0)
    assert await succeed(backend, [job], now=at(1)) == [True]
    if store.dialect == "postgres":
        raw.rows("UPDATE {jobs_archive} SET created_at = '0001-01-01 00:00+00 BC'")
    else:
        raw.rows(
            "UPDATE {jobs_archive} SET created_at = 'garbage', priority = 'high',"
            " payload = CAST(x'7bff7d' AS TEXT)"
        )
    view = await backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.ARCHIVE
    if store.dialect == "sqlite":
        assert view.payload == "{\ufffd}"  # bytes that are not UTF-8, shown replaced
    page = await backend.jobs_page(pillar=Pillar.ARCHIVE)
    assert [item.id for item in page.items] == [job_id]


async def test_an_undecodable_row_that_cannot_be_buried_stays_claimed_and_is_logged(
    backend: Any, raw: Any, store: Any
) -> None:
    # Its id is already in the DLQ (a row in two pillars): the reject move does not apply, so
    # the row stays claimed (rescue's business), the healthy jobs are still handed out, and
    # the worker's log says so.
    healthy = await enqueue(backend, 3, now=at(-60))
    bad_time = POISON[0][3] if store.dialect == "postgres" else POISON[3][3]
    bad = _plant(raw, bad_time)
    raw.rows(
        "INSERT INTO {jobs_dlq} (id, queue, type, payload, priority, failure_reason, error,"
        " attempt_count, created_at, failed_at) SELECT id, queue, type, payload, priority, 4,"
        " 'planted', 0, updated_at, updated_at FROM {jobs_hot} WHERE id = ?",
        (bad,),
    )
    with captured() as lines:
        got = await claim(backend, 20, now=T0)
    assert sorted(job.id for job in got) == sorted(healthy)
    logged = [line for line in lines if line["event_id"] == Event.JOB_ROW_UNDECODABLE]
    assert [line.get("job_id") for line in logged] == [bad, None]
    assert logged[1]["job_ids"] == bad and "not applied" in logged[1]["error"]
    view = await backend.job_get(bad)
    assert view is not None and view.pillar is Pillar.HOT
    assert (await backend.stats_summary()).failed_total == 0

"""The partition on SQLite: stored at enqueue, returned by the claim, kept by every move out of
hot and back, shown by the views of every pillar and matched exactly by ``JobFilter.partition``;
and migration 005 upgrades a store made at version 4 that already holds jobs.

SQLite only (the PostgreSQL driver has its own tests): each test opens its own store with
``create_backend("sqlite:///...")``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from conformance import T0, at, claim, fail, succeed

from chokaq.ids import new_job_ids
from chokaq.models import (
    FailureReason,
    JobFilter,
    JobStatus,
    NewJob,
    Pillar,
    SucceedMove,
)
from chokaq.storage import Backend, create_backend
from chokaq.storage.sqlite.connection import Database

ACCOUNT = "account:42"
OTHER = "account:7"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "x.db"


@pytest.fixture
async def sqlite_backend(path: Path) -> AsyncIterator[Backend]:
    backend = create_backend(f"sqlite:///{path}")
    await backend.open()
    await backend.migrate()
    yield backend
    await backend.close()


def _sql(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.close()


async def _enqueue(backend: Backend, partition: str | None, **fields: object) -> str:
    job = NewJob(type="email.send", partition=partition, **fields)  # type: ignore[arg-type]
    (result,) = await backend.jobs_enqueue([job], now=at(-60))
    return result.id


async def _ids(backend: Backend, pillar: Pillar, partition: str | None = None) -> set[str]:
    page = await backend.jobs_page(pillar=pillar, filter=JobFilter(partition=partition))
    assert page.total == len(page.items)
    return {item.id for item in page.items}


async def _partition_of(backend: Backend, job_id: str, pillar: Pillar) -> str | None:
    view = await backend.job_get(job_id)
    assert view is not None and view.pillar is pillar
    listed = await backend.jobs_page(pillar=pillar, filter=JobFilter(ids=(job_id,)))
    (item,) = listed.items
    assert item.partition == view.partition
    return view.partition


async def test_a_partitioned_job_is_stored_and_claimed_with_its_partition(sqlite_backend, path):
    backend = sqlite_backend
    partitioned = await _enqueue(backend, ACCOUNT)
    plain = await _enqueue(backend, None)
    assert dict(_sql(path, "SELECT id, partition_key FROM chokaq_jobs_hot")) == {
        partitioned: ACCOUNT,
        plain: None,
    }
    got = {job.id: job for job in await claim(backend, 10, now=T0)}
    assert got.keys() == {partitioned, plain}
    assert got[partitioned].partition == ACCOUNT
    assert got[plain].partition is None


@pytest.mark.parametrize("start", [True, False], ids=["start", "fetched"])
async def test_the_tolerant_reread_of_a_claim_keeps_the_partition(sqlite_backend, path, start):
    # A batch-mate holding text that is not UTF-8 makes the claim read its rows again
    # (jobs_fetch_claimed); the partition comes back there too, on both rows.
    backend = sqlite_backend
    good = await _enqueue(backend, ACCOUNT)
    bad = await _enqueue(backend, OTHER, priority=100)
    _sql(path, "UPDATE chokaq_jobs_hot SET payload = CAST(x'7bff7d' AS TEXT) WHERE id = ?", (bad,))
    (job,) = await claim(backend, 10, start=start, now=T0)
    assert (job.id, job.partition) == (good, ACCOUNT)
    view = await backend.job_get(bad)
    assert view is not None and view.failure_reason is FailureReason.REJECTED
    assert view.partition == OTHER


async def test_every_pillar_shows_the_partition_and_filters_by_it(sqlite_backend):
    backend = sqlite_backend
    a = await _enqueue(backend, ACCOUNT)
    b = await _enqueue(backend, ACCOUNT)
    c = await _enqueue(backend, OTHER)
    d = await _enqueue(backend, None)
    # Hot.
    assert await _partition_of(backend, a, Pillar.HOT) == ACCOUNT
    assert await _partition_of(backend, d, Pillar.HOT) is None
    assert await _ids(backend, Pillar.HOT, ACCOUNT) == {a, b}
    assert await _ids(backend, Pillar.HOT, OTHER) == {c}
    assert await _ids(backend, Pillar.HOT, "account:nobody") == set()
    assert await _ids(backend, Pillar.HOT) == {a, b, c, d}
    # A, C and D succeed in one batch (jobs_finalize_archive_many), B fails.
    claimed = {job.id: job for job in await claim(backend, 10, now=T0)}
    assert await succeed(backend, [claimed[a], claimed[c], claimed[d]], now=at(1)) == [True] * 3
    assert await fail(backend, [claimed[b]], now=at(1), reason=FailureReason.FATAL_ERROR) == [True]
    # E succeeds alone (jobs_finalize_archive).
    e = await _enqueue(backend, ACCOUNT)
    (job_e,) = await claim(backend, 10, now=at(2))
    move = SucceedMove(lease=job_e.lease, duration_seconds=0.5)
    assert await backend.jobs_finalize(moves=[move], now=at(3)) == [True]
    # Archive.
    assert await _partition_of(backend, a, Pillar.ARCHIVE) == ACCOUNT
    assert await _partition_of(backend, c, Pillar.ARCHIVE) == OTHER
    assert await _partition_of(backend, d, Pillar.ARCHIVE) is None
    assert await _partition_of(backend, e, Pillar.ARCHIVE) == ACCOUNT
    assert await _ids(backend, Pillar.ARCHIVE, ACCOUNT) == {a, e}
    assert await _ids(backend, Pillar.ARCHIVE, OTHER) == {c}
    assert await _ids(backend, Pillar.ARCHIVE) == {a, c, d, e}
    # DLQ.
    assert await _partition_of(backend, b, Pillar.DLQ) == ACCOUNT
    assert await _ids(backend, Pillar.DLQ, ACCOUNT) == {b}
    assert await _ids(backend, Pillar.DLQ, OTHER) == set()
    assert await _ids(backend, Pillar.DLQ) == {b}
    assert await _ids(backend, Pillar.HOT) == set()


async def test_the_partition_filter_combines_with_the_others(sqlite_backend):
    backend = sqlite_backend
    a = await _enqueue(backend, ACCOUNT, queue="mail")
    await _enqueue(backend, ACCOUNT, queue="other")
    await _enqueue(backend, OTHER, queue="mail")
    page = await backend.jobs_page(
        pillar=Pillar.HOT, filter=JobFilter(queue="mail", partition=ACCOUNT, search="email")
    )
    assert [item.id for item in page.items] == [a] and page.total == 1


async def test_cancel_rescue_and_dependency_failure_keep_the_partition(sqlite_backend):
    backend = sqlite_backend
    pending = await _enqueue(backend, ACCOUNT)
    await backend.jobs_cancel(ids=[pending], actor="ops", now=T0)
    assert await _partition_of(backend, pending, Pillar.DLQ) == ACCOUNT
    # Fetched, cancelled; then Processing with an expired heartbeat: a zombie.
    fetched = await _enqueue(backend, OTHER)
    (job,) = await claim(backend, 10, start=False, now=T0)
    assert job.id == fetched
    await backend.jobs_cancel(ids=[fetched], actor="ops", now=at(1))
    assert await _partition_of(backend, fetched, Pillar.DLQ) == OTHER
    zombie = await _enqueue(backend, ACCOUNT)
    (job,) = await claim(backend, 10, now=at(2))
    assert job.id == zombie
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(3600)
    )
    assert zombie in rescued.zombies
    view = await backend.job_get(zombie)
    assert view is not None and view.failure_reason is FailureReason.ZOMBIE
    assert view.partition == ACCOUNT
    # A waiting child whose parent is purged from the DLQ fails as DEPENDENCY_FAILED.
    parent = await _enqueue(backend, None)
    child = await _enqueue(backend, OTHER, after=(parent,))
    (job,) = await claim(backend, 10, now=at(3601))
    assert job.id == parent
    assert await fail(backend, [job], now=at(3602), reason=FailureReason.FATAL_ERROR) == [True]
    assert await backend.dlq_purge(ids=[parent], actor="ops") == [parent]
    view = await backend.job_get(child)
    assert view is not None and view.failure_reason is FailureReason.DEPENDENCY_FAILED
    assert view.partition == OTHER


async def test_resurrection_brings_the_partition_back_to_hot(sqlite_backend):
    backend = sqlite_backend
    a = await _enqueue(backend, ACCOUNT)
    b = await _enqueue(backend, OTHER)
    c = await _enqueue(backend, None)
    claimed = await claim(backend, 10, now=T0)
    assert await fail(backend, claimed, now=at(1), reason=FailureReason.FATAL_ERROR) == [True] * 3
    # By filter: only the matching partition's rows come back.
    preview = await backend.dlq_preview(filter=JobFilter(partition=ACCOUNT), cap=10)
    assert preview.matched == 1
    moved = await backend.dlq_resurrect_by_filter(
        filter=JobFilter(partition=ACCOUNT), actor="ops", cap=10, now=at(2)
    )
    assert moved == [a]
    assert await _ids(backend, Pillar.DLQ) == {b, c}
    # By id.
    assert await backend.dlq_resurrect(ids=[b], actor="ops", now=at(2)) == [b]
    assert await _partition_of(backend, a, Pillar.HOT) == ACCOUNT
    assert await _partition_of(backend, b, Pillar.HOT) == OTHER
    got = {job.id: job.partition for job in await claim(backend, 10, now=at(3))}
    assert got == {a: ACCOUNT, b: OTHER}


# -- migration 005 on a store made at version 4 ------------------------------------------------


async def _store_at_version_4(path: Path) -> None:
    db = Database(path=str(path), prefix="chokaq_", busy_timeout_seconds=5.0)
    db.migrations = [m for m in db.migrations if m.version <= 4]
    await db.open()
    try:
        assert await db.call(Database.migrate, False) == [1, 2, 3, 4]
    finally:
        await db.close()


async def test_migration_005_upgrades_a_version_4_store_with_jobs(path):
    await _store_at_version_4(path)
    columns = [row[1] for row in _sql(path, "PRAGMA table_info(chokaq_jobs_hot)")]
    assert "partition_key" not in columns
    due = at(-3600).timestamp()
    p1, p2, r1, a1, d1 = new_job_ids(5)
    # Jobs written at version 4: two Pending (one delayed into the past, one due now), one
    # Processing, one archived, one in the DLQ.
    for job_id, status, priority in ((p1, 0, 10), (p2, 0, 50), (r1, 2, 10)):
        _sql(
            path,
            "INSERT INTO chokaq_jobs_hot (id, queue, type, payload, priority, status,"
            " attempt_count, scheduled_at, created_at, updated_at, worker_id, lease_token)"
            " VALUES (?, 'default', 'email.send', '{}', ?, ?, 0, ?, ?, ?, ?, ?)",
            (
                job_id,
                priority,
                status,
                due,
                due,
                due,
                "old" if status else None,
                "tok" if status else None,
            ),
        )
    _sql(
        path,
        "INSERT INTO chokaq_jobs_archive (id, queue, type, payload, priority, attempt_count,"
        " created_at, finished_at) VALUES (?, 'default', 'email.send', '{}', 10, 1, ?, ?)",
        (a1, due, due),
    )
    _sql(
        path,
        "INSERT INTO chokaq_jobs_dlq (id, queue, type, payload, priority, failure_reason,"
        " attempt_count, created_at, failed_at)"
        " VALUES (?, 'default', 'email.send', '{}', 10, 6, 1, ?, ?)",
        (d1, due, due),
    )
    backend = create_backend(f"sqlite:///{path}")
    await backend.open()
    try:
        assert await backend.schema_version() == 4
        # 5 and every migration after it.
        assert await backend.migrate() == list(range(5, backend.latest_version() + 1))
        assert await backend.schema_version() == backend.latest_version()
        assert [r[0] for r in _sql(path, "SELECT count(*) FROM chokaq_jobs_hot")] == [3]
        # The old rows have no partition, in every pillar.
        for job_id, pillar in ((p1, Pillar.HOT), (a1, Pillar.ARCHIVE), (d1, Pillar.DLQ)):
            assert await _partition_of(backend, job_id, pillar) is None
            assert await _ids(backend, pillar, ACCOUNT) == set()
        # The pending rows are still claimable, in claim order, and a new partitioned job too.
        fresh = await _enqueue(backend, ACCOUNT)
        got = await claim(backend, 10, now=T0)
        assert [job.id for job in got][:2] == [p2, p1]
        assert {job.id: job.partition for job in got} == {p1: None, p2: None, fresh: ACCOUNT}
        assert all(job.status is JobStatus.PROCESSING for job in got)
        # The one Processing before the upgrade still finishes.
        view = await backend.job_get(r1)
        assert view is not None and view.status is JobStatus.PROCESSING
        assert await succeed(backend, got, now=at(1)) == [True] * 3
        assert await _ids(backend, Pillar.ARCHIVE, ACCOUNT) == {fresh}
    finally:
        await backend.close()

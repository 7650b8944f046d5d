"""The torture run's checks are not vacuous: after a clean SQLite run passes, each kind of
damage the checks exist for is planted in the store and the same checks must name it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from scripts.torture import Config, Report, torture, verify

pytestmark = pytest.mark.slow


async def test_the_checks_catch_lost_doubled_stale_and_miscounted_jobs(tmp_path: Path) -> None:
    config = Config(
        backend="sqlite",
        seconds=5.0,
        workers=2,
        kill_every_seconds=2.0,
        term_every_seconds=100.0,
        pause_queues=False,
        # Too short for a stopped leader's jobs to be rescued (zombie timeout plus lease):
        # that scenario has its own checks in the full runs.
        stop_leader=False,
        workdir=tmp_path,
    )
    clean = await torture(config)
    assert clean.violations == []
    ctx = clean.context

    db = sqlite3.connect(tmp_path / "torture.db", isolation_level=None)
    archived = [r[0] for r in db.execute("SELECT id FROM chokaq_jobs_archive ORDER BY id LIMIT 2")]
    dead = db.execute(
        "SELECT id FROM chokaq_jobs_dlq WHERE failure_reason != 2 ORDER BY id LIMIT 1"
    ).fetchone()[0]
    # A lost job, a final row written by someone else, a job in two pillars, a counter that
    # drifted, and a claim executed twice.
    db.execute("DELETE FROM chokaq_jobs_archive WHERE id = ?", (archived[0],))
    db.execute("UPDATE chokaq_jobs_archive SET worker_id = 'stale' WHERE id = ?", (archived[1],))
    db.execute(
        "INSERT INTO chokaq_jobs_archive (id, queue, type, payload, tags, priority,"
        " attempt_count, max_attempts, timeout_seconds, worker_id, created_by, last_modified_by,"
        " created_at, started_at, finished_at, duration_seconds)"
        " SELECT id, queue, type, payload, tags, priority, attempt_count, max_attempts,"
        " timeout_seconds, worker_id, created_by, last_modified_by, created_at, started_at,"
        " failed_at, duration_seconds FROM chokaq_jobs_dlq WHERE id = ?",
        (dead,),
    )
    db.execute("UPDATE chokaq_stats_summary SET succeeded_total = succeeded_total + 1")
    db.execute(
        "INSERT INTO torture_ledger (job_id, type, attempt, worker_id, pid, lease_token, at)"
        " SELECT job_id, type, attempt, worker_id, pid, lease_token, at FROM torture_ledger"
        " ORDER BY seq LIMIT 1"
    )
    # Two executions whose row had lost its lease by the time they wrote their ledger row,
    # each on a job rescued as a zombie: one started before the rescue (a starved worker whose
    # heartbeats came too late: fine), one started after it (a handler that started without a
    # lease: a violation).
    rescued_late, started_late = (
        r[0]
        for r in db.execute(
            "SELECT d.id FROM chokaq_jobs_dlq AS d WHERE d.failure_reason IN (6, 7, 8)"
            " AND d.id != ? AND EXISTS (SELECT 1 FROM torture_ledger AS l"
            " WHERE l.job_id = d.id AND l.attempt = d.attempt_count) ORDER BY d.id LIMIT 2",
            (dead,),
        )
    )
    for job_id, offset in ((rescued_late, -0.5), (started_late, 0.5)):
        db.execute("UPDATE chokaq_jobs_dlq SET failure_reason = 2 WHERE id = ?", (job_id,))
        db.execute(
            "UPDATE torture_ledger SET lease_token = NULL,"
            " started = (SELECT failed_at FROM chokaq_jobs_dlq WHERE id = :id) + :offset"
            " WHERE job_id = :id"
            " AND attempt = (SELECT attempt_count FROM chokaq_jobs_dlq WHERE id = :id)",
            {"id": job_id, "offset": offset},
        )
    db.close()

    damaged = Report("damaged")
    verify(
        ctx["config"],
        ctx["store"],
        ctx["book"],
        ctx["workers"],
        ctx["samples"],
        ctx["restart_window"],
        damaged,
    )
    text = "\n".join(damaged.violations)
    for expected in (
        f"lost jobs: ['{archived[0]}']",
        "jobs in two places",
        "final rows not written by the last claim's owner",
        "a claim (job, attempt) executed twice",
        "a lease token executed twice",
        "succeeded_total",
        f"an execution started without a lease on its row: ['{started_late}']",
    ):
        assert expected in text, (expected, text)
    assert rescued_late not in text

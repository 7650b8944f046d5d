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
    ):
        assert expected in text, (expected, text)

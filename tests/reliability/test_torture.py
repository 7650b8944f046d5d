"""The short torture runs (``scripts/torture.py``): worker processes under SIGKILL, SIGTERM, a
PostgreSQL restart, queue pauses, poison rows and a killed LISTEN backend, then an account of
every job; a network partition that cuts one worker off mid-job; and the same workload (with
poison rows) on one shared SQLite file.

Each run returns a report whose ``violations`` list says exactly which guarantee broke; the
figures are printed so ``pytest -s`` shows them. The long form is ``python scripts/torture.py
--long``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from scripts.torture import Config, Report, torture
from scripts.torture_partition import partition, partition_available
from tests.conftest import PG_URL, require_postgres

pytestmark = pytest.mark.slow


def _show(report: Report) -> None:
    print(f"\n{report.name}:")
    for key, value in report.figures.items():
        print(f"  {key}: {value}")


def _can_restart_postgres() -> bool:
    # CHOKAQ_TORTURE_NO_RESTART=1 keeps the shared server up, for runs beside other test runs.
    if os.environ.get("CHOKAQ_TORTURE_NO_RESTART") == "1":
        return False
    return os.geteuid() == 0 and shutil.which("pg_ctlcluster") is not None


@pytest.mark.postgres
@pytest.mark.restarts_postgres
async def test_postgres_torture_loses_nothing_and_finalizes_each_job_once(tmp_path: Path) -> None:
    require_postgres()
    config = Config(
        backend="postgres",
        url=PG_URL,
        seconds=30.0,
        workers=4,
        restart_postgres=_can_restart_postgres(),
        workdir=tmp_path,
    )
    report = await torture(config)
    _show(report)
    assert report.violations == []
    figures = report.figures
    assert figures["lost"] == 0 and figures["duplicate_executions"] == 0
    assert figures["in_two_places"] == 0 and figures["finalized_by_stale_owner"] == 0
    assert figures["sigkills"] >= 3 and figures["sigterms"] >= 1
    assert figures["jobs"] > 500
    # torture_faults: the poison rows ended in the DLQ, and every LISTEN came back.
    assert figures["poison_rows"] == 2
    assert figures["poison_rejected"] + figures["poison_zombies_of_killed_workers"] == 2
    assert figures["listen_backends_killed"] >= 1
    assert figures["relisten_seconds_worst"] is not None
    if config.restart_postgres:
        assert figures["postgres_restarts"] == 1
        assert figures["log_events"]["1014"] > 0  # a finalize failed during the outage...
        assert figures["workers_across_restart"] >= 1  # ...and its worker kept going


async def test_sqlite_torture_with_worker_processes_sharing_one_file(tmp_path: Path) -> None:
    report = await torture(Config(backend="sqlite", seconds=15.0, workers=3, workdir=tmp_path))
    _show(report)
    assert report.violations == []
    assert report.figures["lost"] == 0 and report.figures["duplicate_executions"] == 0
    assert report.figures["sigkills"] >= 2 and report.figures["jobs"] > 200
    assert report.figures["poison_rows"] == 2
    assert (
        report.figures["poison_rejected"] + report.figures["poison_zombies_of_killed_workers"] == 2
    )


@pytest.mark.postgres
async def test_partitioned_worker_never_records_the_outcome_of_a_job_it_lost(
    tmp_path: Path,
) -> None:
    require_postgres()
    why = partition_available()
    if why is not None:
        pytest.skip(f"partition scenario {why}")
    report = await partition(Config(url=PG_URL, workdir=tmp_path))
    _show(report)
    assert report.violations == []
    events = report.figures["cut_off_worker_events"]
    assert events.get("2008") and events.get("2100")

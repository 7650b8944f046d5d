"""The short form of ``bench/durable.py``, run as a user runs it (the script in a subprocess), so
that it never rots: on SQLite every chokaq measurement, on PostgreSQL the side by side with DBOS
Transact and both crash stories. It asserts that every figure is produced and that the
measurements checked what they ran (the script itself refuses a run whose store disagrees:
a job not done, a step recorded twice, a crash job whose steps ran other than once, twice,
once), never how fast anything was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import PG_URL, require_postgres

from bench import durable

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *argv: str) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "durable.json"
    done = subprocess.run(
        [sys.executable, "bench/durable.py", "--quick", "--out", str(out), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "!!" not in done.stdout, done.stdout[-3000:]  # no measurement failed, even once
    record: dict[str, Any] = json.loads(out.read_text())
    assert record["quick"]
    # The report's section renders from any record (a --quick one is only never reported).
    section = "\n".join(durable.markdown(record))
    assert "## 5. Durable jobs against DBOS Transact" in section
    assert "| Goal (issue 34) | Measured | Goal | |" in section
    return done.stdout, record["summary"]


def test_durable_short_form_on_sqlite(tmp_path: Path) -> None:
    shown, summary = _run(tmp_path, "--backends", "sqlite")

    for label in (
        "sqlite: durable no-step / plain (within rounds; goal >= 0.97)",
        "sqlite: steps/s (first step start to last step end)",
        "sqlite crash: kill to step 2 resumed elsewhere, s",
        "sqlite: pickup after a wake by event, ms",
    ):
        assert label in shown
    for arm in ("plain", "plain_ctx", "bare"):
        assert summary[f"sqlite/no_step/{arm}"]["jobs_s"]["median"] > 0, arm
        # The worker's CPU is counted (its process was reaped by the harness).
        assert summary[f"sqlite/no_step/{arm}"]["cpu_ms_per_job"]["median"] > 0, arm
    for ratio in ("no_step_ratio", "no_step_ctx_ratio", "no_step_cpu_ratio"):
        assert summary[f"sqlite/{ratio}"]["median"] > 0, ratio
    assert summary["sqlite/steps"]["steps_s"]["median"] > 0
    # The resume comes after the kill, never before (the bound is the configured sum).
    crash = summary["sqlite/crash"]
    assert crash["kill_to_resume_s"]["median"] > 0
    assert crash["bound_s"]["median"] == 7.0  # --quick: zombie 6 s + rescue 1 s
    # Every waiter, sleeper and gatherer woke, and after what woke it.
    for kind in ("sleep_ms", "event_ms", "gather_ms"):
        got = summary["sqlite/wake"][kind]
        assert got["n"] == 5, kind
        assert 0 < got["p50"] <= got["p99"], kind


@pytest.mark.postgres
def test_durable_short_form_against_dbos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    pytest.importorskip("dbos", reason="DBOS Transact is in the bench extra")
    monkeypatch.setenv("CHOKAQ_BENCH_PG_URL", PG_URL)

    shown, summary = _run(tmp_path, "--backends", "postgres", "--measurements", "three,crash")

    assert "three steps: chokaq / DBOS (within rounds; goal >= 5)" in shown
    for system in ("chokaq", "dbos"):
        figures = summary[f"postgres/three/{system}"]
        assert figures["jobs_s"]["median"] > 0, system
        assert figures["peak_rss_mib"]["median"] > 0, system
    assert summary["postgres/three_ratio"]["median"] > 0
    assert summary["postgres/crash"]["kill_to_resume_s"]["median"] > 0
    dbos = summary["postgres/dbos_crash"]
    # DBOS recovers on the restart of the dead executor's id, not on another executor.
    assert dbos["resumed_elsewhere"]["median"] == 0.0
    assert dbos["restart_to_resume_s"]["median"] > 0

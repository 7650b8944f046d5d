"""The short form of ``bench/workflows.py`` on SQLite, run as a user runs it (the script in a
subprocess), so that it never rots. It asserts that every figure is produced and that the
measurements checked what they ran, never how fast anything was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_workflows_short_form_on_sqlite(tmp_path: Path) -> None:
    out = tmp_path / "workflows.json"
    argv = ["bench/workflows.py", "--quick", "--backends", "sqlite", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for label in (
        "chain: hand-off p50 ms",
        "fan-in: last child end to callback start ms",
        "fetch p50: with / without (within rounds)",
        "result: archive move to the wait's return p50 ms",
    ):
        assert label in done.stdout
    record = json.loads(out.read_text())
    assert record["quick"] and record["config"]["backends"] == ["sqlite"]
    figures = record["summary"]["sqlite"]
    assert set(figures) == {
        "chain",
        "fan_in",
        "fetch_without",
        "fetch_with",
        "fetch_ratio",
        "wake",
    }
    for key in ("jobs_s_from_worker_start", "jobs_s_from_first_start", "peak_rss_mib"):
        assert figures["chain"][key]["median"] > 0, key
    for key in ("enqueue_ms", "children_jobs_s", "peak_rss_mib"):
        assert figures["fan_in"][key]["median"] > 0, key
    # The callback starts after its last parent's archive move, never before.
    assert figures["fan_in"]["release_ms"]["median"] >= 0
    assert figures["fan_in"]["entry_ms"]["median"] >= figures["fan_in"]["release_ms"]["median"]
    for arm in ("fetch_without", "fetch_with"):
        assert figures[arm]["fetch_p50_ms"]["median"] > 0, arm
        # Every pending job was drained 10 at a time, plus the fetch that found none.
        assert figures[arm]["fetches"]["median"] == -(-record["config"]["pending"] // 10) + 1, arm
    assert figures["fetch_ratio"]["p50"]["median"] > 0
    # A wait returns after the archive move that ended its job, never before.
    assert 0 < figures["wake"]["wake_p50_ms"]["median"] <= figures["wake"]["wake_p99_ms"]["median"]

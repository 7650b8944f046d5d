"""The short form of the benchmark harness: every part with tiny N and one run, so that the
harness never rots. It asserts that the report is produced and holds numbers, never how fast
anything was (the full form, ``bench/run_all.py``, is not part of CI).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.conftest import IN_CI, PG_URL, require_postgres

# One xdist worker runs this module and its neighbour one test at a time (tests/conftest.py:
# XDIST_GROUPS): Redis databases 10-12 and the broker queues are fixed names they flush.
pytestmark = pytest.mark.postgres


def _bench_env(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    monkeypatch.setenv("CHOKAQ_BENCH_PG_URL", PG_URL)


def test_short_form_writes_a_report_with_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bench_env(monkeypatch)
    from bench import run_all

    path = run_all.main(["--quick", "--no-peers", "--out", str(tmp_path)])

    text = path.read_text()
    for heading in (
        "## 1. The Three Pillars against a single table",
        "## 2. chokaq against PgQueuer and procrastinate",
        "## 3. SQLite",
        "## 4. Scaling out on PostgreSQL",
        "## Machine and versions",
    ):
        assert heading in text
    # The seeds' table has a measured number in every row.
    table = text.split("### The design's Performance Impact table")[1].split("###")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 6  # header + five metrics
    for row in rows[1:]:
        assert re.search(r"\d+(\.\d+)? ms|\d+(\.\d+)? MiB", row), row
    for part in ("pillars", "peers", "sqlite", "scale"):
        record = json.loads((tmp_path / "results" / f"{part}.json").read_text())
        assert record["data"], part
    peers = json.loads((tmp_path / "results" / "peers.json").read_text())["data"]["results"]
    burn = peers["burn_down"]["chokaq"]["figures"]["process_jobs_s"]["median"]
    assert burn > 0
    # The history run is paired with the empty run beside it, and its change taken within.
    [pair] = peers["history"]["chokaq"]["runs"]
    [empty] = peers["burn_down"]["chokaq"]["runs"]
    assert pair["empty_process_jobs_s"] == empty["process_jobs_s"]
    assert pair["change_pct"] == pytest.approx(
        (pair["process_jobs_s"] / empty["process_jobs_s"] - 1) * 100
    )
    assert "change within pairs" in text
    # The storage loop's ceiling is measured in the same run, and the worker's share of it shown.
    [loop] = peers["ceiling"]["storage-loop"]["runs"]
    assert loop["process_jobs_s"] > 0
    assert "chokaq's CLI worker reaches" in text
    assert list(tmp_path.glob("*.png")) or "charts skipped" in text

    # --sections reruns part of the peers part and keeps the rest, and the report says so.
    rerun = ["--parts", "peers", "--sections", "burn_down"]
    run_all.main(["--quick", "--no-peers", "--out", str(tmp_path), *rerun])
    again = json.loads((tmp_path / "results" / "peers.json").read_text())["data"]
    assert again["results"]["pickup"] == peers["pickup"]
    assert again["results"]["steady"] == peers["steady"]
    assert again["results"]["burn_down"] != peers["burn_down"]
    assert again["results"]["ceiling"] == peers["ceiling"]
    kept = ["history", "pickup", "steady", "ceiling"]
    assert again["config"]["earlier_run"]["sections"] == kept
    assert "Sections kept from an earlier run" in path.read_text()


@pytest.mark.parametrize("peer", ["pgqueuer", "procrastinate"])
def test_short_form_peer_burn_down(peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _bench_env(monkeypatch)
    from bench.systems import peers_available, postgres_systems

    if not peers_available()[peer]:
        if IN_CI:
            pytest.fail(f"CI=true but {peer} is not installed (pip install -e '.[bench]')")
        pytest.skip(f"{peer} is not installed; pip install -e '.[bench]' to include it")
    from bench.peers import burn_down

    system = next(s for s in postgres_systems(True) if s.key.startswith(peer))
    figures = burn_down(system, 100)
    assert figures["process_jobs_s"] > 0 and figures["enqueue_jobs_s"] > 0


def test_compare_short_form_prints_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _bench_env(monkeypatch)
    from bench import compare

    out = tmp_path / "compare.json"
    record = compare.main(["--quick", "--base", "HEAD", "--backends", "sqlite", "--out", str(out)])

    text = capsys.readouterr().out
    assert "head/base" in text and "burn-down jobs/s" in text and "pickup p99 ms" in text
    # Each side imported its own tree: the base from its temporary worktree, the head from here.
    assert "chokaq-compare-" in record["trees"]["base"]["chokaq"]
    assert record["trees"]["head"]["chokaq"].startswith(str(compare.REPO / "src"))
    stored = json.loads(out.read_text())
    assert [row["figure"] for row in stored["summary"]][:2] == [
        "bulk enqueue jobs/s",
        "burn-down jobs/s",
    ]
    assert all(row["ratio"]["median"] > 0 for row in stored["summary"])


def test_idle_short_form_prints_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _bench_env(monkeypatch)
    from bench import idle

    out = tmp_path / "idle.json"
    argv = ["--base", "HEAD", "--rounds", "1", "--seconds", "1", "--settle", "0.2"]
    record = idle.main([*argv, "--pickups", "5", "--interval", "0.05", "--out", str(out)])

    text = capsys.readouterr().out
    assert "idle CPU % of a core" in text and "pickup p99 ms" in text
    assert "chokaq-compare-" in record["trees"]["base"]["chokaq"]
    [base], [head] = (record["raw"]["sqlite"][side] for side in ("base", "head"))
    for run in (base, head):
        assert 0 <= run["idle_cpu_pct"] < 100 and 0 < run["p50_ms"] <= run["p99_ms"]
    assert json.loads(out.read_text())["summary"][0]["figure"] == "idle CPU % of a core"

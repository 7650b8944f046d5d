"""``chokaq worker --otel``: a real worker subprocess on a SQLite file, its SDK configured from
the OTEL_* variables (the console exporter), whose output holds the job's spans; and the clear
errors when the extra or a named exporter is missing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from .ops_app import build

REPO = Path(__file__).resolve().parents[2]


def _worker(tmp_path: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``chokaq worker --app tests.ops.ops_app:app --burst *flags`` on ``tmp_path/otel.db``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CHOKAQ_OTEL"))}
    paths = [env.pop("PYTHONPATH_FIRST", ""), str(REPO / "src"), str(REPO)]
    base |= {
        "CHOKAQ_DATABASE_URL": f"sqlite:///{tmp_path / 'otel.db'}",
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
    }
    command = [sys.executable, "-m", "chokaq", "worker", "--app", "tests.ops.ops_app:app"]
    return subprocess.run(
        [*command, "--burst", *flags],
        cwd=REPO,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _spans(text: str) -> list[dict[str, Any]]:
    """The console exporter's output: JSON objects one after another, pretty-printed."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) != -1:
        span, at = decoder.raw_decode(text, start)
        spans.append(span)
    return spans


def _enqueue(tmp_path: Path, type: str, **kwargs: Any) -> str:
    async def go() -> str:
        app = build(f"sqlite:///{tmp_path / 'otel.db'}")
        try:
            return str(await app.handlers[type].enqueue(**kwargs))
        finally:
            await app.close()

    return asyncio.run(go())


def test_worker_otel_exports_the_job_span_and_the_producer_span_of_what_it_enqueues(
    tmp_path: Path,
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    job_id = _enqueue(tmp_path, "spawner", children=2)
    done = _worker(tmp_path, "--otel", OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none")
    assert done.returncode == 0, done.stderr
    spans = _spans(done.stdout)
    [parent] = [s for s in spans if s["name"] == "chokaq.job spawner"]
    assert parent["kind"] == "SpanKind.CONSUMER"
    assert parent["attributes"]["messaging.message.id"] == job_id
    assert parent["resource"]["attributes"]["service.name"] == "chokaq-worker"
    # The handler's enqueue, inside the job's span: one PRODUCER span for the batch of two.
    [publish] = [s for s in spans if s["name"] == "publish default"]
    assert publish["kind"] == "SpanKind.PRODUCER"
    assert publish["parent_id"] == parent["context"]["span_id"]
    assert publish["attributes"]["messaging.batch.message_count"] == 2
    children = [s for s in spans if s["name"] == "chokaq.job ok"]
    assert len(children) == 2
    for child in children:
        assert child["parent_id"] == publish["context"]["span_id"]
        assert child["context"]["trace_id"] == parent["context"]["trace_id"]
        assert [link["context"]["span_id"] for link in child["links"]] == [
            publish["context"]["span_id"]
        ]


def test_chokaq_otel_names_the_variable_when_its_exporter_is_not_installed(
    tmp_path: Path,
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    if "otlp" in {e.name for e in entry_points(group="opentelemetry_traces_exporter")}:
        pytest.skip("the OTLP exporter is installed here")
    _enqueue(tmp_path, "ok", n=1)
    done = _worker(tmp_path, CHOKAQ_OTEL="1")  # the default exporter, otlp
    assert done.returncode == 2
    assert "OTEL_TRACES_EXPORTER=otlp: no exporter 'otlp' is installed" in done.stderr
    assert "pip install opentelemetry-exporter-otlp" in done.stderr


def test_worker_otel_without_the_extra_names_it(tmp_path: Path) -> None:
    # A package of that name first on the path hides the installed one, as if it were absent.
    shadow = tmp_path / "shadow"
    (shadow / "opentelemetry").mkdir(parents=True)
    (shadow / "opentelemetry" / "__init__.py").write_text("")
    _enqueue(tmp_path, "ok", n=1)
    done = _worker(tmp_path, "--otel", PYTHONPATH_FIRST=str(shadow))
    assert done.returncode == 2
    assert "OpenTelemetry is not installed: pip install 'chokaq[otel]'" in done.stderr


def test_worker_help_lists_the_otel_flag_and_its_variable() -> None:
    from click.testing import CliRunner

    from chokaq.cli import main

    text = CliRunner().invoke(main, ["worker", "--help"]).output
    assert "--otel" in text and "CHOKAQ_OTEL" in text and "OTEL_TRACES_EXPORTER" in text

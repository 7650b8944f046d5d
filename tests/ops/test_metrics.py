"""Metrics in-process: the cardinality budget, private registries, enqueue counting, and
OpenTelemetry spans linked to the span that enqueued the job."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import REGISTRY

from chokaq import ConfigurationError
from chokaq.metrics import LabelBudget, MetricsSettings, WorkerMetrics

from .conftest import until
from .ops_app import build


def test_label_budget_caps_each_family_and_trims_values() -> None:
    budget = LabelBudget(MetricsSettings(max_queue_values=2, max_label_length=7))
    assert [budget("queue", v) for v in ("a", "b", "c", "a", "  ", None)] == [
        "a",
        "b",
        "other",
        "a",
        "unknown",
        "unknown",
    ]
    assert budget("type", "abcdefghij") == "abcdefg"  # cut to the max length
    assert budget("type", "abcdefgxyz") == "abcdefg"  # same value after the cut


def test_reference_budgets_are_the_defaults() -> None:
    s = MetricsSettings()
    assert (s.max_queue_values, s.max_type_values, s.max_error_values) == (100, 500, 100)
    assert (s.max_reason_values, s.max_label_length) == (50, 128)
    with pytest.raises(ConfigurationError):
        MetricsSettings(max_type_values=0)
    with pytest.raises(ConfigurationError):
        MetricsSettings(overflow_value=" ")


def test_overflowing_types_become_other_in_the_exposition() -> None:
    metrics = WorkerMetrics(MetricsSettings(max_type_values=3))
    for i in range(10):
        metrics.on_event("succeeded", {"queue": "q", "type": f"t{i}", "duration": 0.01})
    text = metrics.render().decode()
    assert 'chokaq_jobs_completed_total{queue="q",type="other"} 7.0' in text
    assert text.count("chokaq_jobs_completed_total{") == 4


def test_each_worker_metrics_has_a_private_registry() -> None:
    a, b = WorkerMetrics(), WorkerMetrics()
    a.on_event("retried", {"queue": "q", "type": "t"})
    assert b"chokaq_jobs_retried_total{" not in b.render()
    assert (
        REGISTRY.get_sample_value("chokaq_jobs_retried_total", {"queue": "q", "type": "t"}) is None
    )


def test_events_map_to_the_documented_series() -> None:
    from chokaq.models import FailureReason

    m = WorkerMetrics()
    m.on_event("started", {"queue": "q", "type": "t", "lag": 0.3})
    m.on_event(
        "failed", {"queue": "q", "type": "t", "reason": FailureReason.TIMEOUT, "duration": 2}
    )
    m.on_event("conflict", {"queue": "q", "type": "t", "transition": "succeed"})
    m.on_event("circuit", {"key": "t", "state": "open", "event": "opened"})
    m.on_event("heartbeat_failed", {"queue": "q", "type": "t"})
    m.on_event("deferred", {"queue": "q", "type": "t"})
    m.on_event("no_handler", {"queue": "q", "type": "new.kind"})
    m.on_event("zombie", {"job_id": "x"})
    m.on_event("something_new", {})  # unknown events are ignored
    text = m.render().decode()
    for line in (
        'chokaq_job_queue_lag_seconds_count{queue="q",type="t"} 1.0',
        'chokaq_jobs_dlq_total{queue="q",reason="TIMEOUT",type="t"} 1.0',
        'chokaq_state_transition_conflicts_total{queue="q",transition="succeed",type="t"} 1.0',
        'chokaq_circuit_events_total{event="opened",state="open",type="t"} 1.0',
        'chokaq_heartbeat_failures_total{queue="q",type="t"} 1.0',
        'chokaq_jobs_deferred_total{queue="q",type="t"} 1.0',
        'chokaq_jobs_no_handler_released_total{queue="q",type="new.kind"} 1.0',
        "chokaq_zombies_rescued_total 1.0",
    ):
        assert line in text, line


async def test_enqueues_are_counted_by_queue_and_type_and_duplicates_apart(store: Any) -> None:
    app = build(store.url, store.schema)
    metrics = WorkerMetrics()
    metrics.attach_app(app)
    try:
        h = app.handlers
        await app.enqueue_many([h["ok"].prepare(n=i) for i in range(3)])
        await h["flaky"].enqueue(n=1, idempotency_key="k")
        dup = await h["flaky"].enqueue(n=1, idempotency_key="k")
        assert dup.duplicate
        text = metrics.render().decode()
        assert 'chokaq_jobs_enqueued_total{queue="default",type="ok"} 3.0' in text
        assert 'chokaq_jobs_enqueued_total{queue="mail",type="flaky"} 1.0' in text
        assert 'chokaq_jobs_enqueue_duplicates_total{queue="mail",type="flaky"} 1.0' in text
        assert 'chokaq_storage_operation_seconds_count{operation="jobs_enqueue"} 3.0' in text
    finally:
        await app.close()


async def test_a_job_span_is_linked_to_the_span_that_enqueued_it(store: Any) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chokaq.otel import instrument

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    original = trace.get_tracer_provider
    trace.get_tracer_provider = lambda: provider  # type: ignore[assignment]
    try:
        app = build(store.url, store.schema)
        instrument(app)
        instrument(app)  # idempotent
        with tracer.start_as_current_span("checkout") as parent:
            job_id = await app.handlers["ok"].enqueue(n=1)
        untraced = await app.handlers["ok"].enqueue(n=2)
        stamped = await app.backend.job_get(job_id)
        assert stamped is not None and stamped.pillar.value == "hot"
        worker = app.create_worker()
        task = asyncio.create_task(worker.run())

        async def spans() -> list[Any]:
            done = [s for s in exporter.get_finished_spans() if s.name == "chokaq.job ok"]
            return done if len(done) == 2 else []

        finished = await until(spans, timeout=20)
        worker.stop()
        await asyncio.wait_for(task, timeout=20)
        await app.close()
    finally:
        trace.get_tracer_provider = original  # type: ignore[assignment]
    by_id = {s.attributes["messaging.message.id"]: s for s in finished}
    linked = by_id[str(job_id)]
    parent_ctx = parent.get_span_context()
    assert linked.context.trace_id == parent_ctx.trace_id
    assert linked.parent is not None and linked.parent.span_id == parent_ctx.span_id
    assert [link.context.span_id for link in linked.links] == [parent_ctx.span_id]
    assert linked.attributes["chokaq.job.type"] == "ok"
    assert linked.kind is trace.SpanKind.CONSUMER
    alone = by_id[str(untraced)]
    assert alone.parent is None and list(alone.links) == []

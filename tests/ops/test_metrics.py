"""Metrics in-process: the cardinality budget, private registries, enqueue counting, and
OpenTelemetry spans linked to the span that enqueued the job; schedule events and the
schedule gauges read from a real store."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.conftest import schedule_declaration

from chokaq import ConfigurationError
from chokaq.metrics import LabelBudget, MetricsSettings, StoreMetrics, WorkerMetrics
from chokaq.models import NewJob, TypeLimit

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
    m.on_event("expired_rescued", {"job_id": "y"})
    m.on_event("batch", {"queue": "q", "type": "embed", "size": 100, "batch_id": "b"})
    m.on_event("something_new", {})  # unknown events are ignored
    text = m.render().decode()
    for line in (
        'chokaq_batch_size_bucket{le="100.0",queue="q",type="embed"} 1.0',
        'chokaq_batch_size_bucket{le="50.0",queue="q",type="embed"} 0.0',
        'chokaq_batch_size_sum{queue="q",type="embed"} 100.0',
        'chokaq_job_queue_lag_seconds_count{queue="q",type="t"} 1.0',
        'chokaq_jobs_dlq_total{queue="q",reason="TIMEOUT",type="t"} 1.0',
        'chokaq_state_transition_conflicts_total{queue="q",transition="succeed",type="t"} 1.0',
        'chokaq_circuit_events_total{event="opened",state="open",type="t"} 1.0',
        'chokaq_heartbeat_failures_total{queue="q",type="t"} 1.0',
        'chokaq_jobs_deferred_total{queue="q",type="t"} 1.0',
        'chokaq_jobs_no_handler_released_total{queue="q",type="new.kind"} 1.0',
        "chokaq_zombies_rescued_total 1.0",
        "chokaq_expired_rescued_total 1.0",
    ):
        assert line in text, line


def test_schedule_events_count_runs_and_skipped_slots_by_reason() -> None:
    m = WorkerMetrics(MetricsSettings(max_type_values=2))
    m.on_event("schedule", {"schedule": "nightly", "enqueued": 1, "missed": 0, "skipped": 0})
    m.on_event("schedule", {"schedule": "nightly", "enqueued": 2, "missed": 9, "skipped": 0})
    m.on_event("schedule", {"schedule": "sync", "enqueued": 0, "missed": 0, "skipped": 1})
    m.on_event("schedule", {"schedule": "third", "enqueued": 1, "missed": 0, "skipped": 0})
    m.on_event("schedule", {"schedule": "fourth", "enqueued": 1, "missed": -3, "skipped": None})
    for i in range(2):  # schedule names have a budget of their own, apart from job types
        m.on_event("succeeded", {"queue": "q", "type": f"t{i}"})
    text = m.render().decode()
    for line in (
        'chokaq_schedule_runs_total{schedule="nightly"} 3.0',
        'chokaq_schedule_runs_total{schedule="sync"} 0.0',
        'chokaq_schedule_runs_total{schedule="other"} 2.0',  # past the budget of 2
        'chokaq_schedule_slots_skipped_total{reason="missed",schedule="nightly"} 9.0',
        'chokaq_schedule_slots_skipped_total{reason="overlap",schedule="nightly"} 0.0',
        'chokaq_schedule_slots_skipped_total{reason="overlap",schedule="sync"} 1.0',
        'chokaq_schedule_slots_skipped_total{reason="missed",schedule="other"} 0.0',
        'chokaq_jobs_completed_total{queue="q",type="t1"} 1.0',
    ):
        assert line in text, line


_declaration = partial(schedule_declaration, type="ok", priority=0)


def _sample(text: str, series: str) -> float:
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    assert match, f"{series} not in the exposition"
    return float(match.group(1))


async def test_store_metrics_show_schedule_lag_and_states(store: Any) -> None:
    app = build(store.url, store.schema)
    await app.open()
    try:
        backend = app.backend
        now = datetime.now(UTC)
        ten_ago = now - timedelta(minutes=10)
        await backend.schedules_declare(
            [_declaration("late"), _declaration("ahead"), _declaration("held")], now=ten_ago
        )
        await backend.schedules_declare([_declaration("gone")], now=now - timedelta(hours=2))
        await backend.schedules_seen(["late", "ahead", "held"])
        await backend.schedule_pause("held", actor="ops")
        ahead = await backend.schedule_get("ahead")
        assert ahead is not None and ahead.next_slot is not None
        await backend.schedule_fire(ahead, now=now)  # brings its next slot past now
        text = (await StoreMetrics(app).render()).decode()
    finally:
        await app.close()
    # "late" was declared ten minutes ago and never fired: its first slot is 9 to 10 min due.
    lag = _sample(text, 'chokaq_schedule_lag_seconds{schedule="late"}')
    assert 9 * 60 - 1 <= lag <= 10 * 60 + 30, lag
    assert _sample(text, 'chokaq_schedule_lag_seconds{schedule="ahead"}') == 0.0
    assert 'schedule="held"' not in text and 'schedule="gone"' not in text
    assert _sample(text, 'chokaq_schedules{state="active"}') == 2.0
    assert _sample(text, 'chokaq_schedules{state="paused"}') == 1.0
    assert _sample(text, 'chokaq_schedules{state="orphaned"}') == 1.0


async def test_durable_metrics_count_suspended_jobs_events_and_steps(store: Any) -> None:
    app = build(store.url, store.schema)
    metrics = WorkerMetrics()
    metrics.attach_app(app)
    await app.open()
    try:
        backend = app.backend
        await app.enqueue_raw("flow", {}, queue="d")
        await app.enqueue_raw("flow", {}, queue="d")
        one, two = await backend.jobs_fetch(worker_id="w", limit=2, start=True)
        await backend.steps_record(lease=one.lease, name="a", value="1")
        await backend.steps_record(lease=one.lease, name="b", error="boom")
        for index in range(3):
            assert await backend.streams_emit(lease=one.lease, index=index, item=str(index))
        await backend.durable_sleep(lease=one.lease, name="sleep#1", seconds=600)
        await backend.durable_wait(lease=two.lease, name="wait#1", key="k")
        await app.send_event("other", {"x": 1})
        text = (await StoreMetrics(app).render()).decode()
    finally:
        await app.close()
    assert _sample(text, 'chokaq_queue_suspended{kind="sleep",queue="d"}') == 1.0
    assert _sample(text, 'chokaq_queue_suspended{kind="event",queue="d"}') == 1.0
    assert _sample(text, "chokaq_events_waiting") == 1.0
    assert _sample(metrics.render().decode(), "chokaq_steps_recorded_total") == 2.0
    assert _sample(metrics.render().decode(), "chokaq_stream_items_total") == 3.0


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


async def test_each_enqueue_outcome_is_counted_and_the_lifetime_conflicts_exported(
    store: Any,
) -> None:
    app = build(store.url, store.schema)
    metrics = WorkerMetrics()
    metrics.attach_app(app)
    try:
        flaky = app.handlers["flaky"]
        replace = flaky.options(idempotency_key="k", on_conflict="replace")
        assert (await replace.enqueue(n=1)).outcome == "inserted"
        assert (await replace.enqueue(n=2)).outcome == "replaced"
        assert (await flaky.options(idempotency_key="k").enqueue(n=3)).outcome == "kept"
        await app.backend.jobs_fetch(worker_id="w", limit=1, queues=["mail"], start=True)
        assert (await replace.enqueue(n=4)).outcome == "superseded"
        text = metrics.render().decode()
        for outcome in ("inserted", "replaced", "kept", "superseded"):
            sample = f'chokaq_jobs_enqueue_outcomes_total{{outcome="{outcome}",queue="mail",'
            assert f'{sample}type="flaky"}} 1.0' in text, outcome
        stored = (await StoreMetrics(app).render()).decode()
        assert _sample(stored, 'chokaq_queue_replaced_total{queue="mail"}') == 1.0
        assert _sample(stored, 'chokaq_queue_superseded_total{queue="mail"}') == 1.0
    finally:
        await app.close()


@contextlib.contextmanager
def _spans() -> Iterator[tuple[Any, Any]]:
    """An SDK tracer provider with an in-memory exporter, as the global one for the block
    (``get_tracer_provider`` patched: the real global can be set only once per process)."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    original = trace.get_tracer_provider
    trace.get_tracer_provider = lambda: provider  # type: ignore[assignment]
    try:
        yield provider, exporter
    finally:
        trace.get_tracer_provider = original  # type: ignore[assignment]


async def test_a_job_span_is_a_child_of_the_producer_span_of_its_enqueue(store: Any) -> None:
    from opentelemetry import trace

    from chokaq.otel import instrument

    with _spans() as (provider, exporter):
        tracer = provider.get_tracer("test")
        app = build(store.url, store.schema)
        instrument(app)
        instrument(app)  # idempotent
        with tracer.start_as_current_span("checkout") as parent:
            job_id = await app.handlers["ok"].enqueue(n=1)
        untraced = await app.handlers["ok"].enqueue(n=2)
        bulk = await app.enqueue_many([app.handlers["ok"].prepare(n=i) for i in (3, 4, 5)])
        stamped = await app.backend.job_get(job_id)
        assert stamped is not None and stamped.pillar.value == "hot"
        worker = app.create_worker()
        task = asyncio.create_task(worker.run())

        async def spans() -> list[Any]:
            done = [s for s in exporter.get_finished_spans() if s.name == "chokaq.job ok"]
            return done if len(done) == 5 else []

        finished = await until(spans, timeout=20)
        worker.stop()
        await asyncio.wait_for(task, timeout=20)
        await app.close()
    publishes = [s for s in exporter.get_finished_spans() if s.kind is trace.SpanKind.PRODUCER]
    # One PRODUCER span per enqueue call: the two single enqueues and the bulk one.
    assert [s.name for s in publishes] == ["publish default"] * 3
    first, alone, batch = publishes
    assert first.parent is not None and first.parent.span_id == parent.get_span_context().span_id
    assert alone.parent is None  # no span around the enqueue: the publish span is a root
    assert dict(first.attributes or {}) == {
        "messaging.system": "chokaq",
        "messaging.operation": "publish",
        "messaging.destination.name": "default",
    }
    assert batch.attributes is not None and batch.attributes["messaging.batch.message_count"] == 3
    by_id = {s.attributes["messaging.message.id"]: s for s in finished}
    expected = {job_id: first, untraced: alone, **dict.fromkeys(bulk, batch)}
    for jid, publish in expected.items():
        consumer = by_id[str(jid)]
        assert consumer.kind is trace.SpanKind.CONSUMER
        assert consumer.attributes["chokaq.job.type"] == "ok"
        assert consumer.context.trace_id == publish.context.trace_id
        assert consumer.parent is not None and consumer.parent.span_id == publish.context.span_id
        assert [link.context.span_id for link in consumer.links] == [publish.context.span_id]


async def test_a_bulk_enqueue_over_several_queues_publishes_once_without_a_destination(
    store: Any,
) -> None:
    from opentelemetry import trace

    from chokaq.otel import instrument

    with _spans() as (_provider, exporter):
        app = build(store.url, store.schema)
        instrument(app)
        carried: set[str | None] = set()
        app.after_enqueue.append(lambda jobs, _: carried.update(j.trace_context for j in jobs))
        await app.enqueue_many(
            [app.handlers["ok"].prepare(n=1), app.handlers["flaky"].prepare(n=2)]
        )
        await app.close()
    [publish] = exporter.get_finished_spans()
    assert (publish.name, publish.kind) == ("publish", trace.SpanKind.PRODUCER)
    assert publish.attributes is not None
    assert "messaging.destination.name" not in publish.attributes
    assert publish.attributes["messaging.batch.message_count"] == 2
    ctx = publish.context
    assert carried == {f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}"}


async def test_without_an_sdk_an_enqueue_carries_only_the_callers_context(store: Any) -> None:
    """The API's no-op tracer: no span is made, and a job carries the caller's traceparent
    (here, a remote context a web framework would have extracted) or nothing."""
    from opentelemetry import context, propagate

    from chokaq.otel import instrument

    app = build(store.url, store.schema)
    instrument(app)
    carried: list[str | None] = []
    app.after_enqueue.append(lambda jobs, _: carried.extend(j.trace_context for j in jobs))
    incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    token = context.attach(propagate.extract({"traceparent": incoming}))
    try:
        await app.handlers["ok"].enqueue(n=1)
    finally:
        context.detach(token)
    await app.handlers["ok"].enqueue(n=2)
    await app.close()
    assert carried == [incoming, None]


async def test_store_metrics_show_each_limit_without_partition_labels(store: Any) -> None:
    app = build(store.url, store.schema)
    await app.open()
    try:
        backend = app.backend
        await backend.limits_declare(limits=[TypeLimit("sync", "1/m", 1)])
        await backend.limit_set(scope="queue", name="partner", rate_limit="100/s", actor="ops")
        jobs = [
            NewJob(queue="default", type="sync", payload="{}", partition=f"account:{i}")
            for i in range(3)
            for _ in range(3)
        ]
        await backend.jobs_enqueue(jobs)
        claimed = await backend.jobs_claim(worker_id="w1", limit=10, start=True)
        assert len(claimed.jobs) == 3  # one per partition: each is then at its cap
        text = (await StoreMetrics(app).render()).decode()
    finally:
        await app.close()
    sync = '{name="sync",scope="type"}'
    assert _sample(text, f"chokaq_limit_rate_per_second{sync}") == pytest.approx(1 / 60)
    assert _sample(text, f"chokaq_limit_partition_concurrency{sync}") == 1.0
    assert _sample(text, f"chokaq_limit_pending{sync}") == 6.0
    assert _sample(text, f"chokaq_limit_held{sync}") == 6.0
    assert _sample(text, f"chokaq_limit_running{sync}") == 3.0
    assert _sample(text, f"chokaq_limit_partitions{sync}") == 3.0
    assert _sample(text, f"chokaq_limit_started_per_second{sync}") == pytest.approx(0.3)
    partner = '{name="partner",scope="queue"}'
    assert _sample(text, f"chokaq_limit_rate_per_second{partner}") == 100.0
    assert f"chokaq_limit_partition_concurrency{partner}" not in text
    assert "account:" not in text

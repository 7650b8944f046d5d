"""OpenTelemetry traces and metrics, when the optional extra is installed (``chokaq[otel]``).

``instrument(app)`` wraps every enqueue call through ``app`` in a PRODUCER span ``publish
<queue>`` (one per call, however many jobs it writes), stamps that span's W3C ``traceparent``
on each job (in ``NewJob.trace_context``, unless already set) and wraps every execution in a
CONSUMER span ``chokaq.job <type>``, child of the enqueuing span and linked to it, recording the
outcome and any exception. ``instrument_worker(worker)`` adds OpenTelemetry counters and
histograms fed by the worker's events (the same figures as the Prometheus metrics). The SDK,
exporters and providers are the host's to configure; this module only uses the global API,
imported lazily, so chokaq has no hard dependency on it. The one exception is
``configure_from_env()``, for a process chokaq itself runs (``chokaq worker --otel``): it
installs the SDK's providers as the standard ``OTEL_*`` environment variables describe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError

if TYPE_CHECKING:
    from .app import App
    from .context import JobContext
    from .models import NewJob
    from .runtime.worker import Worker

__all__ = ["configure_from_env", "current_traceparent", "instrument", "instrument_worker"]

INSTRUMENTATION = "chokaq"


def _api() -> Any:
    try:
        from opentelemetry import propagate, trace
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ConfigurationError(
            "OpenTelemetry is not installed: pip install 'chokaq[otel]'"
        ) from None
    return trace, propagate


def current_traceparent() -> str | None:
    """The W3C traceparent of the current span, or None outside a (sampled or not) span."""
    _trace, propagate = _api()
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier.get("traceparent")


def _stamp(jobs: list[NewJob]) -> list[NewJob]:
    parent = current_traceparent()
    if parent is None:
        return jobs
    return [
        j if j.trace_context is not None else dataclasses.replace(j, trace_context=parent)
        for j in jobs
    ]


@contextlib.contextmanager
def _publish(jobs: list[NewJob]) -> Iterator[list[NewJob]]:
    """One PRODUCER span around one enqueue call; its jobs carry its context.

    One span per call, not per job (the messaging conventions allow either for a batch): a bulk
    enqueue of 20,000 jobs makes one span, not 20,000. Without an SDK the API's no-op tracer
    hands back a non-recording span holding the caller's context, so a job still carries the
    caller's traceparent when there is one, and nothing when there is none.
    """
    trace, _propagate = _api()
    tracer = trace.get_tracer(INSTRUMENTATION)
    attributes = {"messaging.system": "chokaq", "messaging.operation": "publish"}
    with tracer.start_as_current_span(
        "publish", kind=trace.SpanKind.PRODUCER, attributes=attributes
    ) as span:
        # What needs a look at every job is done only for a span that is recorded: with no
        # SDK, or sampled out, a bulk enqueue costs no pass over its jobs here. The price: a
        # sampler sees the queue only after its decision.
        if span.is_recording():
            batch = _batch_attributes(jobs)
            span.set_attributes(batch)
            queue = batch.get("messaging.destination.name")
            if queue is not None:
                span.update_name(f"publish {queue}")
        yield _stamp(jobs)


def _batch_attributes(jobs: list[NewJob]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    queues = {j.queue for j in jobs}
    if len(queues) == 1:
        [attributes["messaging.destination.name"]] = queues
    if len(jobs) == 1 and jobs[0].id is not None:
        attributes["messaging.message.id"] = jobs[0].id
    elif len(jobs) > 1:
        attributes["messaging.batch.message_count"] = len(jobs)
    return attributes


def instrument(app: App) -> None:
    """Trace every enqueue (a PRODUCER span per call) and every execution (a CONSUMER span per
    job, child of the enqueue's span and linked to it) of ``app`` (idempotent).

    Raises ``ConfigurationError`` when the ``otel`` extra is not installed."""
    if getattr(app, "_chokaq_otel", False):
        return
    _api()
    app.around_enqueue.append(_publish)
    app.middlewares.insert(0, _trace_job)
    app._chokaq_otel = True  # type: ignore[attr-defined]


async def _trace_job(ctx: JobContext, call_next: Callable[[], Awaitable[Any]]) -> Any:
    trace, propagate = _api()
    tracer = trace.get_tracer(INSTRUMENTATION)
    parent = None
    links = []
    if ctx.trace_context:
        parent = propagate.extract({"traceparent": ctx.trace_context})
        span_context = trace.get_current_span(parent).get_span_context()
        if span_context.is_valid:
            links.append(trace.Link(span_context))
    attributes = {
        "messaging.system": "chokaq",
        "messaging.destination.name": ctx.queue,
        "messaging.message.id": ctx.job_id,
        "chokaq.job.type": ctx.type,
        "chokaq.job.attempt": ctx.attempt,
        "chokaq.worker.id": ctx.worker_id,
    }
    with tracer.start_as_current_span(
        f"chokaq.job {ctx.type}",
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        links=links,
        attributes=attributes,
    ) as span:
        result = await call_next()
        outcome = type(result).__name__.lower() if result is not None else "succeeded"
        span.set_attribute("chokaq.job.outcome", outcome)
        return result


def instrument_worker(worker: Worker[App]) -> None:
    """OpenTelemetry metrics (meter ``chokaq``) from ``worker``'s events."""
    from opentelemetry import metrics

    meter = metrics.get_meter(INSTRUMENTATION)
    completed = meter.create_counter("chokaq.jobs.completed", unit="{job}")
    failed = meter.create_counter("chokaq.jobs.failed", unit="{job}")
    retried = meter.create_counter("chokaq.jobs.retried", unit="{job}")
    dlq = meter.create_counter("chokaq.jobs.dlq", unit="{job}")
    duration = meter.create_histogram("chokaq.jobs.processing_duration", unit="s")
    lag = meter.create_histogram("chokaq.jobs.queue_lag", unit="s")
    circuits = meter.create_counter("chokaq.circuits.events", unit="{event}")
    enqueued = meter.create_counter("chokaq.jobs.enqueued", unit="{job}")

    def listener(name: str, f: dict[str, Any]) -> None:
        attrs = {"queue": str(f.get("queue")), "type": str(f.get("type"))}
        if name == "started":
            lag.record(float(f.get("lag") or 0.0), attrs)
        elif name == "succeeded":
            completed.add(1, attrs)
            if f.get("duration") is not None:
                duration.record(float(f["duration"]), attrs)
        elif name == "failed":
            reason = f.get("reason")
            failed.add(1, attrs)
            dlq.add(1, {**attrs, "reason": str(getattr(reason, "name", reason))})
        elif name == "retried":
            failed.add(1, attrs)
            retried.add(1, attrs)
        elif name == "circuit":
            circuits.add(
                1, {"type": str(f["key"]), "state": str(f["state"]), "event": str(f["event"])}
            )

    def on_enqueued(jobs: Any, results: Any) -> None:
        for job, result in zip(jobs, results, strict=True):
            if not result.duplicate:
                enqueued.add(1, {"queue": job.queue, "type": job.type})

    worker.add_listener(listener)
    worker.app.after_enqueue.append(on_enqueued)


def _exporters(variable: str, group: str) -> list[Any]:
    """The exporters ``variable`` names (comma-separated, default ``otlp``, ``none`` for none),
    each found by its entry point in ``group`` (as the SDK's own auto-configuration does) and
    made with no arguments, so each reads its own variables (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
    from importlib.metadata import entry_points

    names = [n.strip() for n in os.environ.get(variable, "otlp").split(",") if n.strip()]
    if "none" in names:
        return []
    found = {e.name: e for e in entry_points(group=group)}
    missing = [n for n in names if n not in found]
    if missing:
        hint = " (pip install opentelemetry-exporter-otlp)" if "otlp" in missing else ""
        raise ConfigurationError(
            f"{variable}={','.join(names)}: no exporter {', '.join(map(repr, missing))} is "
            f"installed{hint}; installed: {', '.join(sorted(found)) or 'no exporter'}; "
            "'none' exports nothing"
        )
    return [found[n].load()() for n in names]


def configure_from_env() -> Callable[[], None]:
    """Install the OpenTelemetry SDK's tracer and meter providers as the environment says, for
    a process chokaq runs itself (``chokaq worker --otel``); returns the function that flushes
    and shuts them down (call it at exit, or the last spans are lost).

    ``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` name the exporters (default
    ``otlp``, which needs ``opentelemetry-exporter-otlp``; ``console``; ``none``); the
    exporters read their own settings (``OTEL_EXPORTER_OTLP_ENDPOINT``, ...), the batch span
    processor ``OTEL_BSP_*`` and the metric reader ``OTEL_METRIC_EXPORT_INTERVAL``. The
    resource comes from ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (service name
    ``chokaq-worker`` when neither names one). A provider the process already installed (the
    app's module configured the SDK itself) is kept. ``OTEL_LOGS_EXPORTER`` is not read.

    Raises ``ConfigurationError`` naming the ``otel`` extra when the SDK is not installed, and
    naming the variable when an exporter it names is not installed.
    """
    trace, _propagate = _api()
    try:
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ConfigurationError(
            "the OpenTelemetry SDK is not installed: pip install 'chokaq[otel]'"
        ) from None
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "chokaq-worker"}))
    shutdowns: list[Callable[[], Any]] = []
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        tracer_provider = TracerProvider(resource=resource)
        for exporter in _exporters("OTEL_TRACES_EXPORTER", "opentelemetry_traces_exporter"):
            tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(tracer_provider)
        shutdowns.append(tracer_provider.shutdown)
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        readers = [
            PeriodicExportingMetricReader(exporter)
            for exporter in _exporters("OTEL_METRICS_EXPORTER", "opentelemetry_metrics_exporter")
        ]
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        metrics.set_meter_provider(meter_provider)
        shutdowns.append(meter_provider.shutdown)

    def shutdown() -> None:
        for stop in shutdowns:
            with contextlib.suppress(Exception):  # an exporter that cannot flush must not
                stop()  # turn a clean exit into a crash

    return shutdown

"""``chokaq worker``: run a worker process until SIGTERM/SIGINT (or, with --burst, until no
eligible job is left; exit 75 when it had to stop with eligible work left)."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import click

from ..http import worker_ops
from ..logs import configure_logging
from ..runtime.burst import EXIT_WORK_LEFT, describe
from ..runtime.worker import Worker
from .options import make_app, schema_option

__all__ = ["COMMANDS", "run_worker_process"]


async def run_worker_process(app: Any, *, otel: bool = False, **overrides: Any) -> Worker[Any]:
    """Run a worker with SIGTERM/SIGINT wired to a graceful stop (a second signal hurries);
    returns it, stopped (``burst_left`` says what a burst run left). ``otel`` configures the
    OpenTelemetry SDK from the environment and instruments the app and the worker; its spans
    and metrics are flushed after the worker stops."""
    shutdown_otel = None
    if otel:
        from ..otel import configure_from_env, instrument, instrument_worker

        shutdown_otel = configure_from_env()
        instrument(app)
    worker: Worker[Any] = app.create_worker(**overrides)
    if otel:
        instrument_worker(worker)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, worker.stop)
    try:
        async with worker_ops(worker):
            await worker.run()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await app.close()
        if shutdown_otel is not None:
            shutdown_otel()
    return worker


@click.command()
@click.option("--app", "app_spec", required=True, help="The App to run, as module:attribute.")
@click.option("--database", envvar="CHOKAQ_DATABASE_URL", help="Override the App's database URL.")
@schema_option
@click.option(
    "--queues",
    help="Comma-separated queues to work; '*' for every queue. Default: the queues the app's "
    "handlers and pipes declare ('default' when a handler uses it). A job of a type with no "
    "handler here is released and retried for unknown_type_grace_seconds (default 1 h), "
    "then rejected.",
)
@click.option("--concurrency", type=click.IntRange(1, 1000), help="Jobs run at once (default 10).")
@click.option("--prefetch", type=click.IntRange(0, 1000), help="Extra jobs claimed ahead.")
@click.option(
    "--burst",
    is_flag=True,
    help="Run what is eligible, then exit: 0 once no eligible job is left; 75 (with a line "
    "naming counts and reasons) when work is still left after waiting burst_horizon_seconds "
    "(default 60) for retries, circuit re-probes and delayed jobs that fall due.",
)
@click.option("--migrate", "do_migrate", is_flag=True, help="Apply migrations before starting.")
@click.option("--json-logs", is_flag=True, help="Log JSON lines instead of plain text.")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    help="Serve /metrics, /health/live and /health/ready on this port (0: any free port).",
)
@click.option("--metrics-host", help="Address for --metrics-port (default 127.0.0.1).")
@click.option(
    "--otel",
    is_flag=True,
    envvar="CHOKAQ_OTEL",
    show_envvar=True,
    help="Trace enqueues and jobs and export worker metrics with OpenTelemetry (needs "
    "pip install 'chokaq[otel]'). The SDK is configured from the standard variables: "
    "OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER (otlp, the default, needs "
    "opentelemetry-exporter-otlp; console; none), OTEL_EXPORTER_OTLP_ENDPOINT, "
    "OTEL_SERVICE_NAME (default chokaq-worker), OTEL_RESOURCE_ATTRIBUTES.",
)
def worker(
    app_spec: str,
    database: str | None,
    schema: str | None,
    queues: str | None,
    concurrency: int | None,
    prefetch: int | None,
    burst: bool,
    do_migrate: bool,
    json_logs: bool,
    metrics_port: int | None,
    metrics_host: str | None,
    otel: bool,
) -> None:
    """Run jobs.

    \b
    Example:
      chokaq worker --app myproject.jobs:app --queues emails --concurrency 20
    """
    configure_logging(json_lines=json_logs)
    app = make_app(app_spec, database, schema)
    if do_migrate:
        app.auto_migrate = True
    overrides: dict[str, Any] = {"burst": burst}
    if queues:
        overrides["queues"] = tuple(q.strip() for q in queues.split(",") if q.strip())
    if concurrency is not None:
        overrides["concurrency"] = concurrency
    if prefetch is not None:
        overrides["prefetch"] = prefetch
    if metrics_port is not None:
        overrides["metrics_port"] = metrics_port
    if metrics_host is not None:
        overrides["metrics_host"] = metrics_host
    ran = asyncio.run(run_worker_process(app, otel=otel, **overrides))
    if ran.burst_left:
        click.echo(f"burst: work left: {describe(ran.burst_left)}", err=True)
        sys.exit(EXIT_WORK_LEFT)


COMMANDS = [worker]

"""``chokaq worker``: run a worker process until SIGTERM/SIGINT (or, with --burst, until no
eligible job is left; exit 75 when it had to stop with eligible work left); with --processes N
(or a --max-*-per-child limit) a supervisor of N such processes (``supervisor``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from functools import partial
from typing import Any

import click

from ..errors import ValidationError
from ..http import worker_ops
from ..limits import MAX_WORKER_SLOTS, check_name
from ..logs import Event, configure_logging, log_event
from ..runtime.burst import EXIT_WORK_LEFT, describe
from ..runtime.worker import Worker
from ..settings import MAX_PORT
from .options import database_option, make_app, schema_option
from .supervisor import EXIT_RECYCLED, Supervisor, child_python

__all__ = ["COMMANDS", "run_worker_process"]


async def run_worker_process(
    app: Any, *, supervised: bool = False, otel: bool = False, **overrides: Any
) -> Worker[Any]:
    """Run a worker with SIGTERM/SIGINT wired to a graceful stop (a second signal hurries);
    returns it, stopped (``burst_left`` says what a burst run left, ``recycled`` whether it
    stopped to recycle).

    ``supervised`` (a child of ``--processes``): SIGTERM only ever asks for a graceful stop,
    SIGINT hurries (what the supervisor sends on a second signal), and stdin is the
    supervisor's pipe, whose end (the supervisor is gone) stops the worker too. SIGTERM may
    come twice (systemd's default ``KillMode=control-group`` signals every process of the
    unit, and the supervisor forwards its own): that must not cut the grace period short.
    ``otel`` configures the OpenTelemetry SDK from the environment and instruments the app
    and the worker; its spans and metrics are flushed after the worker stops."""
    shutdown_otel = None
    if otel:
        from ..otel import configure_from_env, instrument, instrument_worker

        shutdown_otel = configure_from_env()
        instrument(app)
    worker: Worker[Any] = app.create_worker(**overrides)
    if otel:
        instrument_worker(worker)
    loop = asyncio.get_running_loop()
    if supervised:
        loop.add_signal_handler(signal.SIGTERM, _graceful, worker)
        loop.add_signal_handler(signal.SIGINT, partial(worker.stop, hurry=True))
    else:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
    stdin = sys.stdin.fileno() if supervised else None
    if stdin is not None:
        loop.add_reader(stdin, _on_supervisor_pipe, loop, stdin, worker)
    try:
        async with worker_ops(worker):
            await worker.run()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        if stdin is not None:
            loop.remove_reader(stdin)
        await app.close()
        if shutdown_otel is not None:
            shutdown_otel()
    return worker


def _graceful(worker: Worker[Any]) -> None:
    if not worker.stopping:
        worker.stop()


def _on_supervisor_pipe(loop: asyncio.AbstractEventLoop, fd: int, worker: Worker[Any]) -> None:
    try:
        data = os.read(fd, 4096)
    except OSError:
        data = b""
    if data:
        return  # the supervisor never writes; whatever this is, it is not the end
    loop.remove_reader(fd)
    log_event(
        Event.WORKER_SUPERVISOR_STOPPED,
        "the supervisor is gone; stopping",
        level=logging.WARNING,
        worker_id=worker.id,
    )
    worker.stop()


def _queues(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--queues``' names (None: left out, the app's own queues). Names are trimmed around
    the commas; an empty list (``--queues ""``, ``","``) or an empty item (``a,,b``) is a usage
    error, not "the app's own queues" (which ``--queues ''`` quietly meant), and so is a name
    that no enqueue would take."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if not any(names):
        raise click.BadParameter(
            f"{value!r} names no queue: give queue names separated by commas, or '*' for every "
            "queue (leave --queues out for the queues the app's handlers declare)"
        )
    for i, name in enumerate(names, 1):
        if not name:
            raise click.BadParameter(f"{value!r}: name {i} of {len(names)} is empty")
        try:
            check_name("--queues", name)
        except ValidationError as exc:
            raise click.BadParameter(f"{name!r} {exc.limit}") from None
    return tuple(dict.fromkeys(names))


# Not ``click.ParamType[int]``: click before 8.2 (we support 8.1) has no generic ParamType.
class _Processes(click.ParamType):  # type: ignore[type-arg]
    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if str(value).strip().lower() == "auto":
            return os.cpu_count() or 1
        try:
            n = int(value)
        except ValueError:
            self.fail(f"{value!r} is neither a number nor 'auto'", param, ctx)
        if not 1 <= n <= 256:
            self.fail(f"{n} is not between 1 and 256", param, ctx)
        return n


@click.command()
@click.option("--app", "app_spec", required=True, help="The App to run, as module:attribute.")
@database_option("Override the App's database URL.")
@schema_option
@click.option(
    "--queues",
    callback=_queues,
    help="Comma-separated queues to work; '*' for every queue. Default: the queues the app's "
    "handlers and pipes declare ('default' when a handler uses it). A job of a type with no "
    "handler here is released and retried for unknown_type_grace_seconds (default 1 h), "
    "then rejected.",
)
@click.option(
    "--concurrency", type=click.IntRange(1, MAX_WORKER_SLOTS), help="Jobs run at once (default 10)."
)
@click.option(
    "--prefetch", type=click.IntRange(0, MAX_WORKER_SLOTS), help="Extra jobs claimed ahead."
)
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
    type=click.IntRange(0, MAX_PORT),
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
@click.option(
    "--processes",
    type=_Processes(),
    default="1",
    show_default=True,
    help="Worker processes to run ('auto': one per CPU core). Past 1, this process "
    "supervises them: each child registers as a worker of its own; one that crashes is "
    "restarted (backoff 0.5 s doubling to 30 s); SIGTERM/SIGINT is forwarded to every child "
    "and each drains (a second signal: they skip the rest of their grace); the exit code is "
    "the worst child's. Child i serves metrics on --metrics-port + i.",
)
@click.option(
    "--max-jobs-per-child",
    type=click.IntRange(1),
    help="Recycle a worker process after this many jobs: it starts no more, lets them "
    "finish, exits and a fresh one replaces it (supervised, even with --processes 1).",
)
@click.option(
    "--max-memory-per-child",
    type=click.IntRange(1),
    metavar="MIB",
    help="Recycle a worker process the same way once its resident memory is above this "
    "many MiB (checked about once a second).",
)
@click.option("--supervised", is_flag=True, hidden=True)
def worker(
    app_spec: str,
    database: str | None,
    schema: str | None,
    queues: tuple[str, ...] | None,
    concurrency: int | None,
    prefetch: int | None,
    burst: bool,
    do_migrate: bool,
    json_logs: bool,
    metrics_port: int | None,
    metrics_host: str | None,
    otel: bool,
    processes: int,
    max_jobs_per_child: int | None,
    max_memory_per_child: int | None,
    supervised: bool,
) -> None:
    """Run jobs.

    \b
    Example:
      chokaq worker --app myproject.jobs:app --queues emails --concurrency 20
      chokaq worker --app myproject.jobs:app --processes auto --max-jobs-per-child 10000
    """
    configure_logging(json_lines=json_logs)
    if not supervised and (processes > 1 or max_jobs_per_child or max_memory_per_child):
        ctx = click.get_current_context()
        env = dict(os.environ)
        if database:  # the environment, not argv: a URL may hold a password
            env["CHOKAQ_DATABASE_URL"] = database
        argv = partial(_child_argv, ctx.params, metrics_port)
        supervisor = Supervisor(argv, processes, burst=burst, env=env)
        sys.exit(asyncio.run(supervisor.run()))
    app = make_app(app_spec, database, schema)
    if do_migrate:
        app.auto_migrate = True
    given = {
        "queues": queues,
        "concurrency": concurrency,
        "prefetch": prefetch,
        "metrics_port": metrics_port,
        "metrics_host": metrics_host,
        "max_jobs": max_jobs_per_child,
        "max_memory_mib": max_memory_per_child,
    }
    # What the command line left out keeps the App's (or the settings') own value.
    overrides: dict[str, Any] = {"burst": burst}
    overrides.update((name, value) for name, value in given.items() if value is not None)
    ran = asyncio.run(run_worker_process(app, supervised=supervised, otel=otel, **overrides))
    if ran.recycled:
        sys.exit(EXIT_RECYCLED)
    if ran.burst_left:
        click.echo(f"burst: work left: {describe(ran.burst_left)}", err=True)
        sys.exit(EXIT_WORK_LEFT)


def _child_argv(params: dict[str, Any], metrics_port: int | None, slot: int) -> list[str]:
    """The command line of child ``slot``: this one's options, as one supervised process."""
    argv = [*child_python(), "worker", "--supervised", "--app", params["app_spec"]]
    for name, flag in (
        ("schema", "--schema"),
        ("queues", "--queues"),
        ("concurrency", "--concurrency"),
        ("prefetch", "--prefetch"),
        ("metrics_host", "--metrics-host"),
        ("max_jobs_per_child", "--max-jobs-per-child"),
        ("max_memory_per_child", "--max-memory-per-child"),
    ):
        value = params[name]
        if isinstance(value, tuple):  # --queues, parsed: as the child will parse it again
            value = ",".join(value)
        if value is not None:
            argv += [flag, str(value)]
    for name, flag in (
        ("burst", "--burst"),
        ("do_migrate", "--migrate"),
        ("json_logs", "--json-logs"),
        ("otel", "--otel"),
    ):
        if params[name]:
            argv.append(flag)
    if metrics_port is not None:
        argv += ["--metrics-port", str(metrics_port + slot if metrics_port else 0)]
    return argv


COMMANDS = [worker]

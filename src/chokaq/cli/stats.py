"""``chokaq stats`` and ``chokaq queue ...``: the overview, and the queues' control plane."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError
from ..logs import log_admin
from ..models import QueueStats, Summary, Throughput
from ..storage import UNSET
from .options import (
    actor_name,
    actor_option,
    console,
    logged,
    make_app,
    run_with_app,
    store_options,
)

__all__ = ["COMMANDS", "queue_table"]

T = TypeVar("T")


def _lag(seconds: float) -> Text:
    style = "red" if seconds > 10 else "yellow" if seconds > 5 else "green"
    return Text(f"{seconds:.1f}s", style=style)


def queue_table(stats: list[QueueStats]) -> Table:
    table = Table(title="Queues", title_justify="left")
    for column in (
        "queue",
        "state",
        "pending",
        "running",
        "max lag",
        "succeeded",
        "failed",
        "retried",
        "max workers",
        "timeout",
    ):
        table.add_column(column, justify="left" if column in ("queue", "state") else "right")
    for s in stats:
        q = s.queue
        state = Text("paused", style="yellow") if q.paused else Text("running", style="green")
        if not q.active:
            state = Text("inactive", style="dim")
        table.add_row(
            q.name,
            state,
            str(s.pending),
            str(s.fetched + s.processing),
            _lag(s.lag_max_seconds),
            str(s.succeeded_total),
            str(s.failed_total),
            str(s.retried_total),
            str(q.max_workers) if q.max_workers is not None else "-",
            f"{q.execution_timeout_seconds:g}s" if q.execution_timeout_seconds else "-",
        )
    return table


def _overview(summary: Summary, throughput: Throughput, workers: int) -> Table:
    table = Table(title="Overview", title_justify="left", show_header=True)
    for column in (
        "pending",
        "fetched",
        "processing",
        "succeeded",
        "failed",
        "retried",
        "jobs/s (1m)",
        "failure % (1m)",
        "workers",
    ):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.pending),
        str(summary.fetched),
        str(summary.processing),
        str(summary.succeeded_total),
        str(summary.failed_total),
        str(summary.retried_total),
        f"{throughput.jobs_per_second_1m:.2f}",
        Text(
            f"{throughput.failure_rate_1m:.1f}",
            style="red" if throughput.failure_rate_1m > 1 else "green",
        ),
        str(workers),
    )
    return table


async def _snapshot(app: App) -> Group:
    backend = app.backend
    summary = await backend.stats_summary()
    throughput = await backend.stats_throughput()
    queues = await backend.stats_queues()
    workers = await backend.workers_list()
    return Group(_overview(summary, throughput, len(workers)), queue_table(queues))


@click.command()
@click.option("--watch", is_flag=True, help="Keep the table live until Ctrl-C.")
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.1, 3600))
@store_options
def stats(
    watch: bool, interval: float, app_spec: str | None, database: str | None, schema: str | None
) -> None:
    """Show the overview (live counts, lifetime counters, throughput) and every queue.

    \b
    Example:
      chokaq stats --database postgresql://app@db/app --watch
    """
    app = make_app(app_spec, database, schema, existing=True)
    out = console()

    async def run(app: App) -> None:
        if not watch:
            out.print(await _snapshot(app))
            return
        with (
            Live(await _snapshot(app), console=out, refresh_per_second=4) as live,
            contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt),
        ):
            while True:
                await asyncio.sleep(interval)
                live.update(await _snapshot(app))

    with contextlib.suppress(KeyboardInterrupt):
        run_with_app(app, run)


@click.group()
def queue() -> None:
    """List queues; pause, resume or limit one.

    \b
    Example:
      chokaq queue pause emails --database sqlite:///jobs.db
    """


@queue.command("list")
@store_options
def queue_list(app_spec: str | None, database: str | None, schema: str | None) -> None:
    """List every queue with its state, depth, lag and limits.

    \b
    Example:
      chokaq queue list --app myproject.jobs:app
    """
    app = make_app(app_spec, database, schema, existing=True)
    stats = run_with_app(app, lambda a: a.backend.stats_queues())
    console().print(queue_table(stats))


def create_option(fn: Any) -> Any:
    """``--create``: act on a queue that does not exist yet (else a typo is refused)."""
    return click.option(
        "--create",
        is_flag=True,
        help="Create the queue if it does not exist (without it, an unknown name is refused: "
        "a queue is known once it has a row, which its first job creates).",
    )(fn)


def on_known_queue(app: App, name: str, fn: Callable[[App], Awaitable[T]]) -> T:
    """``run_with_app``, turning the seam's unknown-queue refusal into the CLI's wording."""
    try:
        return run_with_app(app, fn)
    except NotFoundError:
        raise click.ClickException(
            f"queue {name!r} does not exist; check the name (chokaq queue list), "
            "or give --create to create it"
        ) from None


def _pause_command(paused: bool) -> Any:
    verb = "pause" if paused else "resume"

    @click.argument("name")
    @create_option
    @actor_option
    @store_options
    @logged
    def command(
        name: str,
        create: bool,
        actor: str | None,
        app_spec: str | None,
        database: str | None,
        schema: str | None,
    ) -> None:
        app = make_app(app_spec, database, schema)
        who = actor_name(actor)
        info = on_known_queue(
            app,
            name,
            lambda a: a.backend.queue_pause(name=name, paused=paused, actor=who, create=create),
        )
        log_admin("cli", f"queues.{verb}", who, name, 1)
        click.echo(f"queue {info.name} {'paused' if info.paused else 'resumed'}")

    effect = "running jobs finish; no new ones start" if paused else "its jobs start again"
    command.__doc__ = (
        f"{verb.capitalize()} queue NAME ({effect}).\n\n"
        f"\b\nExample:\n  chokaq queue {verb} emails --database sqlite:///jobs.db\n"
    )
    return queue.command(verb)(command)


_pause_command(True)
_pause_command(False)


def _optional_number(value: str | None, kind: type[float] | type[int]) -> Any:
    if value is None:
        return UNSET
    if value.lower() in ("none", "off", "clear", "-"):
        return None
    try:
        return kind(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number (or 'none' to clear)") from None


@queue.command("limit")
@click.argument("name")
@click.option("--max-workers", help="Cluster-wide cap on running jobs of this queue, or 'none'.")
@click.option(
    "--zombie-timeout",
    help="Seconds without heartbeat before a running job is a zombie, or 'none'; at least 15 "
    "(three heartbeat intervals of a default worker).",
)
@click.option("--execution-timeout", help="Default execution timeout in seconds, or 'none'.")
@create_option
@actor_option
@store_options
@logged
def queue_limit(
    name: str,
    max_workers: str | None,
    zombie_timeout: str | None,
    execution_timeout: str | None,
    create: bool,
    actor: str | None,
    app_spec: str | None,
    database: str | None,
    schema: str | None,
) -> None:
    """Set a queue's limits ('none' clears one; an option left out is unchanged).

    \b
    Example:
      chokaq queue limit partners --max-workers 2 --execution-timeout 30
    """
    changes = {
        "max_workers": _optional_number(max_workers, int),
        "zombie_timeout_seconds": _optional_number(zombie_timeout, float),
        "execution_timeout_seconds": _optional_number(execution_timeout, float),
    }
    if all(v is UNSET for v in changes.values()):
        raise click.UsageError(
            "nothing to change: give --max-workers, --zombie-timeout or --execution-timeout"
        )
    app = make_app(app_spec, database, schema)
    who = actor_name(actor)
    info = on_known_queue(
        app,
        name,
        lambda a: a.backend.queue_configure(name=name, actor=who, create=create, **changes),
    )
    given = {k: v for k, v in changes.items() if v is not UNSET}
    log_admin("cli", "queues.limits", who, name, 1, **given)
    click.echo(
        f"queue {info.name}: max_workers={info.max_workers}, "
        f"zombie_timeout={info.zombie_timeout_seconds}, "
        f"execution_timeout={info.execution_timeout_seconds}"
    )


COMMANDS = [stats, queue]

"""``chokaq stats`` and ``chokaq queue ...``: the overview, and the queues' control plane
(pause, resume, and the limits: ``max_workers`` and the timeouts through ``queue_configure``,
the rate through ``limit_set``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError
from ..logs import log_admin
from ..models import LimitInfo, QueueInfo, QueueStats, Summary, Throughput
from ..storage import UNSET
from ..waits import explain
from .options import (
    CLEAR_WORDS,
    Store,
    actor_name,
    actor_option,
    console,
    logged,
    rate_option,
    run_with_app,
    store_options,
)
from .output import echo_json, json_flag
from .waits import waits_view

__all__ = ["COMMANDS", "queue_table"]

T = TypeVar("T")


def _lag(seconds: float) -> Text:
    style = "red" if seconds > 10 else "yellow" if seconds > 5 else "green"
    return Text(f"{seconds:.1f}s", style=style)


def queue_table(stats: list[QueueStats], rates: Mapping[str, str] | None = None) -> Table:
    """The queues' table; with ``rates`` (queue name to the rate in force) a rate column too."""
    table = Table(title="Queues", title_justify="left")
    columns = [
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
    ]
    if rates is not None:
        columns.append("rate")
    for column in columns:
        table.add_column(column, justify="left" if column in ("queue", "state") else "right")
    for s in stats:
        q = s.queue
        state = Text("paused", style="yellow") if q.paused else Text("running", style="green")
        if not q.active:
            state = Text("inactive", style="dim")
        if q.hidden:  # hidden from The Deck's list only: it still runs unless paused
            state.append(" (hidden in the Deck)", style="dim")
        row: list[str | Text] = [
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
        ]
        if rates is not None:
            row.append(rates.get(q.name, "-"))
        table.add_row(*row)
    return table


def queue_rates(limits: list[LimitInfo]) -> dict[str, str]:
    """Queue name to the rate in force, for the queues that have one."""
    return {i.name: i.rate_limit for i in limits if i.scope == "queue" and i.rate_limit}


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


async def _snapshot_json(app: App) -> dict[str, Any]:
    """The overview as ``--json`` prints it: the Deck API's throughput and queue rows."""
    from ..views import dump, queue_json, throughput_json

    backend = app.backend
    summary = await backend.stats_summary()
    throughput = await backend.stats_throughput()
    queues = await backend.stats_queues()
    workers = await backend.workers_list()
    return {
        "at": dump(datetime.now(UTC)),
        "summary": dump(summary),
        "throughput": throughput_json(throughput),
        "workers": len(workers),
        "queues": [queue_json(q) for q in queues],
        # Why jobs wait (as the Deck's GET /api/lag): reasons by queue and type, and the
        # queues with due jobs no live worker serves.
        "waits": (await explain(backend)).as_json(),
    }


async def _snapshot(app: App) -> Group:
    backend = app.backend
    summary = await backend.stats_summary()
    throughput = await backend.stats_throughput()
    queues = await backend.stats_queues()
    workers = await backend.workers_list()
    waits = await explain(backend)
    return Group(
        _overview(summary, throughput, len(workers)), queue_table(queues), waits_view(waits)
    )


@click.command()
@click.option("--watch", is_flag=True, help="Keep the table live until Ctrl-C.")
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.1, 3600))
@json_flag("one JSON object (with --watch: one JSON line per refresh)")
@store_options
def stats(
    watch: bool,
    interval: float,
    as_json: bool,
    store: Store,
) -> None:
    """Show the overview (live counts, lifetime counters, throughput), every queue, and why
    jobs wait: queues with due jobs and no live worker, and pending jobs by queue and type with
    the reason their due jobs do not run (no worker, paused, circuit, limit, capacity).

    \b
    Example:
      chokaq stats --database postgresql://app@db/app --watch
      chokaq stats --json --watch --interval 10 | jq -c '.summary.pending'
    """
    app = store.app(existing=True)
    out = console()

    async def run(app: App) -> None:
        if as_json:
            # With --watch, one line per refresh (JSON lines): a stream a script reads line
            # by line, where a live table would only repaint a terminal.
            while True:
                echo_json(await _snapshot_json(app))
                if not watch:
                    return
                await asyncio.sleep(interval)
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
    """List queues; pause, resume, hide or limit one.

    Pause stops workers claiming a queue's jobs (running ones finish); hide only leaves it out
    of The Deck's queue list (its jobs still run).

    \b
    Example:
      chokaq queue pause emails --database sqlite:///jobs.db
    """


@queue.command("list")
@json_flag("a JSON array of the queues (the Deck API's fields, and rate_limit)")
@store_options
def queue_list(as_json: bool, store: Store) -> None:
    """List every queue with its state, depth, lag and limits (max workers, timeout, rate).

    \b
    Example:
      chokaq queue list --app myproject.jobs:app
      chokaq queue list --json | jq -r '.[] | select(.paused) | .name'
    """
    app = store.app(existing=True)

    async def read(app: App) -> tuple[list[QueueStats], list[LimitInfo]]:
        return await app.backend.stats_queues(), await app.backend.limits_list()

    stats, limits = run_with_app(app, read)
    if as_json:
        from ..views import queue_json

        rates = queue_rates(limits)
        echo_json([{**queue_json(s), "rate_limit": rates.get(s.queue.name)} for s in stats])
        return
    console().print(queue_table(stats, queue_rates(limits)))


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


def _queue_flag_command(
    verb: str,
    example: str,
    effect: str,
    change: Callable[[App, str, str, bool], Awaitable[QueueInfo]],
    said: Callable[[QueueInfo], str],
) -> Any:
    """``chokaq queue VERB NAME``: one flag of one queue set by ``change(app, name, actor,
    create)``, audited, and what it did said by ``said(info)``."""

    @click.argument("name")
    @create_option
    @actor_option
    @store_options
    @logged
    def command(
        name: str,
        create: bool,
        actor: str | None,
        store: Store,
    ) -> None:
        app = store.app()
        who = actor_name(actor)
        info = on_known_queue(app, name, lambda a: change(a, name, who, create))
        log_admin("cli", f"queues.{verb}", who, name, 1)
        click.echo(f"queue {info.name} {said(info)}")

    command.__doc__ = (
        f"{verb.capitalize()} queue NAME ({effect}).\n\n"
        f"\b\nExample:\n  chokaq queue {verb} {example} --database sqlite:///jobs.db\n"
    )
    return queue.command(verb)(command)


def _pausing(paused: bool) -> Callable[[App, str, str, bool], Awaitable[QueueInfo]]:
    def change(app: App, name: str, who: str, create: bool) -> Awaitable[QueueInfo]:
        return app.backend.queue_pause(name=name, paused=paused, actor=who, create=create)

    return change


def _hiding(hidden: bool) -> Callable[[App, str, str, bool], Awaitable[QueueInfo]]:
    def change(app: App, name: str, who: str, create: bool) -> Awaitable[QueueInfo]:
        return app.backend.queue_hide(name=name, hidden=hidden, actor=who, create=create)

    return change


def _listed(info: QueueInfo) -> str:
    shown = "hidden from" if info.hidden else "shown in"
    return f"{shown} the Deck's queue list (its jobs run unless paused)"


_queue_flag_command(
    "pause",
    "emails",
    "running jobs finish; no new ones start",
    _pausing(True),
    lambda info: "paused" if info.paused else "resumed",
)
_queue_flag_command(
    "resume",
    "emails",
    "its jobs start again",
    _pausing(False),
    lambda info: "paused" if info.paused else "resumed",
)
_queue_flag_command(
    "hide",
    "legacy",
    "leave it out of The Deck's queue list; its jobs still run: pause stops them",
    _hiding(True),
    _listed,
)
_queue_flag_command("unhide", "legacy", "list it in The Deck again", _hiding(False), _listed)


def _optional_number(value: str | None, kind: type[float] | type[int]) -> Any:
    if value is None:
        return UNSET
    if value.lower() in CLEAR_WORDS:
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
@rate_option(
    "Cluster-wide cap on jobs of this queue started per second, minute or hour (100/s, 5/m), "
    "or 'none'; on top of each job type's own rate."
)
@create_option
@actor_option
@store_options
@logged
def queue_limit(
    name: str,
    max_workers: str | None,
    zombie_timeout: str | None,
    execution_timeout: str | None,
    rate: Any,
    create: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Set a queue's limits ('none' clears one; an option left out is unchanged).

    \b
    Example:
      chokaq queue limit partners --max-workers 2 --execution-timeout 30
      chokaq queue limit partners --rate 100/s
    """
    changes = {
        "max_workers": _optional_number(max_workers, int),
        "zombie_timeout_seconds": _optional_number(zombie_timeout, float),
        "execution_timeout_seconds": _optional_number(execution_timeout, float),
    }
    if rate is UNSET and all(v is UNSET for v in changes.values()):
        raise click.UsageError(
            "nothing to change: give --max-workers, --zombie-timeout, --execution-timeout or --rate"
        )
    app = store.app()
    who = actor_name(actor)

    async def apply(app: App) -> tuple[QueueInfo, str | None]:
        # Every value is checked before anything is written (the rate by its option, before
        # the database is opened; the others by queue_configure before it writes), so a
        # refusal changes nothing. The two writes are not one transaction: a storage failure
        # between them leaves the first applied and the command exits non-zero with the
        # error; running it again is safe, as each write sets values.
        backend = app.backend
        if any(v is not UNSET for v in changes.values()):
            info = await backend.queue_configure(name=name, actor=who, create=create, **changes)
        else:
            info = await _known_queue(app, name, create)
        if rate is not UNSET:
            limit = await backend.limit_set(scope="queue", name=name, rate_limit=rate, actor=who)
            return info, limit.rate_limit
        return info, queue_rates(await backend.limits_list()).get(name)

    info, in_force = on_known_queue(app, name, apply)
    given = {k: v for k, v in changes.items() if v is not UNSET}
    if rate is not UNSET:
        given["rate_limit"] = rate
    log_admin("cli", "queues.limits", who, name, 1, **given)
    click.echo(
        f"queue {info.name}: max_workers={info.max_workers}, "
        f"zombie_timeout={info.zombie_timeout_seconds}, "
        f"execution_timeout={info.execution_timeout_seconds}, rate={in_force}"
    )


async def _known_queue(app: App, name: str, create: bool) -> QueueInfo:
    """The queue's row, created with ``create``; else ``NotFoundError`` when it has none."""
    if create:
        return await app.backend.queue_ensure(name)
    found = await app.backend.queue_get(name)
    if found is None:
        raise NotFoundError(f"queue {name!r} does not exist")
    return found


COMMANDS = [stats, queue]

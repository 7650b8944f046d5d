"""``chokaq limits list | set | reset``: the rate limits and partition caps in force, and
their load.

``list`` reads ``Backend.limits_list`` (every limited queue and type, and every type the code
declared, with its current rate, pending, held and running jobs and busiest partitions);
``set`` and ``reset`` are an operator's ``limit_set`` and ``limit_reset``, each with its audit
line (``ADMIN_COMPLETED``). ``--json`` prints what the seam returned instead of a table. A
queue's rate can also be set with ``chokaq queue limit NAME --rate``, beside its other limits.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError, ValidationError
from ..logs import log_admin
from ..models import LimitInfo
from ..storage import UNSET
from ..storage.ratelimits import check_concurrency
from .jobs import json_value
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

__all__ = ["COMMANDS", "limit_json"]


def limit_json(info: LimitInfo) -> dict[str, Any]:
    """Every ``LimitInfo`` field under its own name: times as ISO 8601, ``top_partitions`` as
    a list of ``{partition, waiting, running}``."""
    out = {f.name: json_value(getattr(info, f.name)) for f in fields(info)}
    out["top_partitions"] = [
        {f.name: getattr(load, f.name) for f in fields(load)} for load in info.top_partitions
    ]
    return out


def _in_force(value: object, operator_set: bool, scope: str) -> str:
    """A limit and where it comes from: ``10/s (set)`` by an operator, ``10/s (code)`` as
    declared. ``none (set)``: an operator lifted what the code declares. A queue's rate is
    only ever an operator's, so it is shown plain."""
    if scope == "queue":
        return "-" if value is None else str(value)
    if operator_set:
        return f"{'none' if value is None else value} (set)"
    return "-" if value is None else f"{value} (code)"


def _top(info: LimitInfo) -> str:
    return ", ".join(f"{p.partition} {p.waiting}/{p.running}" for p in info.top_partitions)


def _table(limits: list[LimitInfo]) -> Table:
    table = Table(title="Limits", title_justify="left")
    for column in (
        "scope",
        "name",
        "rate",
        "partition concurrency",
        "rate now",
        "pending",
        "held",
        "running",
        "partitions",
        "top partitions (waiting/running)",
    ):
        left = column in ("scope", "name") or column.startswith("top")
        table.add_column(column, justify="left" if left else "right")
    for i in limits:
        table.add_row(
            i.scope,
            i.name,
            _in_force(i.rate_limit, i.rate_set, i.scope),
            _in_force(i.partition_concurrency, i.concurrency_set, i.scope),
            f"{i.current_rate:.2f}/s",
            str(i.pending),
            Text(str(i.held), style="yellow" if i.held else ""),
            str(i.running),
            str(i.partitions),
            _top(i),
        )
    return table


def _summary(info: LimitInfo) -> str:
    """One line: the limits in force after a change, and who made the last one."""
    parts = [f"rate={_in_force(info.rate_limit, info.rate_set, info.scope)}"]
    if info.scope == "type":
        concurrency = _in_force(info.partition_concurrency, info.concurrency_set, info.scope)
        parts.append(f"partition_concurrency={concurrency}")
    return f"{info.scope} {info.name}: {', '.join(parts)}"


def _concurrency(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--partition-concurrency``: a whole number, ``None`` for a clearing word, ``UNSET``
    when left out; checked by the seam's own rule before a database is opened."""
    if value is None:
        return UNSET
    if value.strip().lower() in CLEAR_WORDS:
        return None
    try:
        return check_concurrency("--partition-concurrency", int(value))
    except ValueError as exc:
        limit = exc.limit if isinstance(exc, ValidationError) else "must be a whole number"
        raise click.BadParameter(f"{value!r}: {limit} (or 'none' to clear)") from None


scope_option = click.option(
    "--scope",
    type=click.Choice(["type", "queue"]),
    default="type",
    show_default=True,
    help="Whether NAME is a job type or a queue.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the limit as JSON.")


@click.group()
def limits() -> None:
    """List rate limits and partition caps with their load; set or reset one.

    A job type's limits come from its code (@app.job(rate_limit=, partition_concurrency=));
    what an operator sets here wins over the code until it is reset.

    \b
    Example:
      chokaq limits list --database sqlite:///jobs.db
    """


@limits.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of the limits.")
@store_options
def limits_list(as_json: bool, store: Store) -> None:
    """List the limits in force and their load.

    One row per limited queue and job type (and per type the code declares): the rate and the
    partition concurrency in force, '(set)' by an operator or '(code)' as declared; the rate
    of starts now (per second, over the last 10 s); due pending jobs, those of them the limit
    holds back now, running jobs; partitions with pending jobs and the busiest of them.

    \b
    Example:
      chokaq limits list --json | jq '.[] | select(.held > 0)'
    """
    app = store.app(existing=True)
    found = run_with_app(app, lambda a: a.backend.limits_list())
    if as_json:
        click.echo(json.dumps([limit_json(i) for i in found], ensure_ascii=False))
        return
    if not found:
        click.echo("no limits: none set by an operator, none declared by a job type's code")
        return
    console().print(_table(found))


@limits.command("set")
@click.argument("name")
@scope_option
@rate_option(
    "Cap on starts per second, minute or hour (5/m, 100/s) across the cluster, per partition "
    "for a job that has one; 'none' lifts the code's rate until reset."
)
@click.option(
    "--partition-concurrency",
    metavar="N",
    callback=_concurrency,
    help="Cap on running jobs of the type per partition, or 'none' (types only).",
)
@json_option
@actor_option
@store_options
@logged
def limits_set(
    name: str,
    scope: str,
    rate: Any,
    partition_concurrency: Any,
    as_json: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Set a job type's limits (or a queue's rate) over the code's.

    NAME is a job type, or with --scope queue a queue. An option left out is unchanged;
    'none' lifts a limit the code declares. The setting stays in force across restarts and
    deploys until chokaq limits reset.

    \b
    Example:
      chokaq limits set partner.call --rate 5/m --partition-concurrency 1
      chokaq limits set partners --scope queue --rate 100/s
    """
    if rate is UNSET and partition_concurrency is UNSET:
        raise click.UsageError("nothing to change: give --rate or --partition-concurrency")
    if scope == "queue" and partition_concurrency is not UNSET:
        raise click.UsageError(
            "--partition-concurrency applies to job types only "
            "(a queue's concurrency is its max workers: chokaq queue limit NAME --max-workers N)"
        )
    app = store.app()
    who = actor_name(actor)

    async def apply(app: App) -> LimitInfo:
        # A queue must be known, as for chokaq queue limit: a typo is refused, not stored as
        # the rate of a queue nobody uses. A type needs no row: its limit may come first.
        if scope == "queue" and await app.backend.queue_get(name) is None:
            raise NotFoundError(
                f"queue {name!r} does not exist; check the name (chokaq queue list), or "
                f"create it with: chokaq queue limit {name} --rate RATE --create"
            )
        info: LimitInfo = await app.backend.limit_set(
            scope=scope,
            name=name,
            rate_limit=rate,
            partition_concurrency=partition_concurrency,
            actor=who,
        )
        return info

    info = run_with_app(app, apply)
    given = {"rate_limit": rate, "partition_concurrency": partition_concurrency}
    extra = {k: v for k, v in given.items() if v is not UNSET}
    log_admin("cli", "limits.set", who, name, 1, scope=scope, **extra)
    _report(info, as_json)


@limits.command("reset")
@click.argument("name")
@scope_option
@json_option
@actor_option
@store_options
@logged
def limits_reset(
    name: str,
    scope: str,
    as_json: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Put a limit back to what the code declares.

    NAME is a job type (its limits become the code's again), or with --scope queue a queue
    (its rate is cleared). Exit code 1 when there is no such limit.

    \b
    Example:
      chokaq limits reset partner.call --actor alice
    """
    app = store.app(existing=True)
    who = actor_name(actor)
    try:
        info = run_with_app(app, lambda a: a.backend.limit_reset(scope=scope, name=name, actor=who))
    except NotFoundError:
        raise NotFoundError(
            f"no limit for {scope} {name!r} to reset; check the name and --scope "
            "(chokaq limits list)"
        ) from None
    log_admin("cli", "limits.reset", who, name, 1, scope=scope)
    _report(info, as_json)


def _report(info: LimitInfo, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(limit_json(info), ensure_ascii=False))
    else:
        click.echo(_summary(info))


COMMANDS = [limits]

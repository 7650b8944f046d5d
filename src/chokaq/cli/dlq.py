"""``chokaq dlq list | show | requeue | purge``: inspect and act on dead-lettered jobs.

Filters match The Deck's (queue, type, reason, since/until, search). Acting by filter shows a
preview (how many match, how many will be touched, a sample) and asks before doing anything,
unless ``--yes``. Each requeue or purge logs its audit line (``ADMIN_COMPLETED``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError
from ..logs import log_admin, log_admin_refused
from ..models import JobFilter, JobView, Pillar, Preview
from .options import (
    Matching,
    Store,
    actor_name,
    actor_option,
    cap_options,
    console,
    logged,
    matching_options,
    run_with_app,
    store_options,
)
from .output import echo_json, job_data, json_flag

__all__ = ["COMMANDS"]

filter_options = matching_options(
    click.option("--queue", help="Only this queue."),
    click.option("--type", "job_type", help="Only this job type."),
    click.option("--reason", help="Only this failure reason (e.g. timeout, fatal_error)."),
    click.option("--since", help="Failed at or after: ISO time or an age (2h: 2 hours ago)."),
    click.option("--until", help="Failed at or before: ISO time or an age (7d: 7 days ago)."),
    click.option("--search", help="Substring of id, type, tags or error text."),
)


def _when(view: JobView) -> str:
    return view.failed_at.strftime("%Y-%m-%d %H:%M:%S") if view.failed_at else "-"


def _first_line(text: str | None, width: int | None) -> str:
    """The last line of an error (the exception's type and message), cut to ``width`` on a
    terminal; whole when piped (``width`` None), for grep and scripts."""
    line = ((text or "").strip().splitlines()[-1:] or [""])[0]
    return line if width is None else line[:width]


@click.group()
def dlq() -> None:
    """Inspect, requeue and purge dead-lettered jobs.

    \b
    Example:
      chokaq dlq list --reason timeout --since 2h --database sqlite:///jobs.db
    """


@dlq.command("list")
@filter_options
@click.option("--page", default=1, show_default=True, type=click.IntRange(1))
@click.option("--page-size", default=50, show_default=True, type=click.IntRange(1, 1000))
@json_flag("the page as a JSON array of jobs (an empty array past the last page)")
@store_options
def dlq_list(
    matching: Matching,
    page: int,
    page_size: int,
    as_json: bool,
    store: Store,
) -> None:
    """List DLQ jobs, newest failure first.

    \b
    Example:
      chokaq dlq list --queue payments --reason transient --page-size 20
      chokaq dlq list --reason timeout --json | jq -r '.[].id'
    """
    flt = matching.job_filter()
    app = store.app(existing=True)
    result = run_with_app(
        app,
        lambda a: a.backend.jobs_page(
            pillar=Pillar.DLQ, filter=flt, page=page, page_size=page_size
        ),
    )
    if as_json:
        echo_json([job_data(view) for view in result.items])
        return
    table = Table(
        title=(
            f"DLQ: {'about ' if result.total_estimated else ''}{result.total} job(s),"
            f" page {result.page} of {result.pages}"
        ),
        title_justify="left",
    )
    for column in ("id", "queue", "type", "reason", "exception", "attempts", "failed at", "error"):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis")
    out = console()
    error_width = 70 if out.is_terminal else None
    for view in result.items:
        table.add_row(
            view.id,
            view.queue,
            view.type,
            view.failure_reason.name.lower() if view.failure_reason is not None else "-",
            Text(view.error_type or "-"),
            str(view.attempt_count),
            _when(view),
            _first_line(view.error, error_width),
        )
    out.print(table)


@dlq.command("show")
@click.argument("job_id")
@json_flag("one JSON object: every field of the job, and its state")
@store_options
def dlq_show(job_id: str, as_json: bool, store: Store) -> None:
    """Show one job (wherever it lives) with its payload and full error.

    \b
    Example:
      chokaq dlq show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77
      chokaq dlq show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json | jq -r .error
    """
    app = store.app(existing=True)
    view = run_with_app(app, lambda a: a.backend.job_get(job_id))
    if view is None:
        raise NotFoundError(f"no job {job_id} in hot, archive or DLQ")
    if as_json:
        echo_json(job_data(view))
        return
    out = console()
    table = Table(show_header=False, title=f"job {view.id}", title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    skip = {"payload", "error", "last_error"}
    for name in JobView.__dataclass_fields__:
        value = getattr(view, name)
        if name in skip or value is None or value == ():
            continue
        if hasattr(value, "name") and not isinstance(value, str):
            value = value.name.lower()
        table.add_row(name, str(value))
    out.print(table)
    out.print("[bold]payload[/bold]")
    out.print(view.payload or "", markup=False)
    if view.error or view.last_error:
        out.print("[bold]error[/bold]")
        out.print(view.error or view.last_error or "", markup=False)


def preview_table(verb: str, preview: Preview) -> Table:
    table = Table(title=f"{verb} preview", title_justify="left", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("matching", str(preview.matched))
    table.add_row(f"will {verb}", str(preview.will_affect))
    table.add_row("cap", str(preview.cap))
    table.add_row("first ids", "\n".join(preview.sample_ids) or "-")
    return table


# The backend operations of each bulk verb: (act on ids, act on a filter).
_OPERATIONS = {
    "requeue": ("dlq_resurrect", "dlq_resurrect_by_filter"),
    "purge": ("dlq_purge", "dlq_purge_by_filter"),
}


def _act(
    verb: str,
    ids: tuple[str, ...],
    flt: JobFilter,
    everything: bool,
    cap: int,
    yes: bool,
    app: App,
    who: str,
    summary: str,
    by_ids: Callable[[App], Any],
    by_filter: Callable[[App], Any],
) -> None:
    out = console()
    if ids:
        done = run_with_app(app, by_ids)
        log_admin("cli", f"dlq.{verb}", who, f"{len(ids)} id(s)", len(done))
        out.print(f"{verb}d {len(done)} of {len(ids)} job(s)")
        for job_id in sorted(set(ids) - set(done)):
            out.print(f"  not in the DLQ: {job_id}", style="yellow")
        return
    if flt == JobFilter() and not everything:
        log_admin_refused("cli", f"dlq.{verb}_by_filter", who, "no ids, no filter and no --all")
        raise click.UsageError(
            f"give job ids, a filter (--queue, --type, --reason, --since, --until, --search) "
            f"or --all to {verb} without one"
        )

    async def preview_then_act(app: App) -> list[str] | None:
        preview = await app.backend.dlq_preview(filter=flt, cap=cap)
        out.print(preview_table(verb, preview))
        if preview.will_affect == 0:
            return []
        if not yes and not click.confirm(
            f"{verb} {preview.will_affect} job(s)?", default=False, err=True
        ):
            return None
        result: list[str] = await by_filter(app)
        return result

    done = run_with_app(app, preview_then_act)
    if done is None:
        out.print("nothing done")
        raise SystemExit(1)
    log_admin("cli", f"dlq.{verb}_by_filter", who, summary, len(done), cap=cap)
    out.print(f"{verb}d {len(done)} job(s)")


def _bulk_command(verb: str, example: str) -> Any:
    @click.argument("ids", nargs=-1)
    @filter_options
    @cap_options("newest failure first")
    @actor_option
    @store_options
    @logged
    def command(
        ids: tuple[str, ...],
        matching: Matching,
        everything: bool,
        cap: int,
        yes: bool,
        actor: str | None,
        store: Store,
    ) -> None:
        flt = matching.job_filter()
        who = actor_name(actor)
        app = store.app(existing=True)
        by_ids, by_filter = _OPERATIONS[verb]
        _act(
            verb,
            ids,
            flt,
            everything,
            cap,
            yes,
            app,
            who,
            matching.summary(),
            lambda a: getattr(a.backend, by_ids)(ids=ids, actor=who),
            lambda a: getattr(a.backend, by_filter)(filter=flt, actor=who, cap=cap),
        )

    what = (
        "Move DLQ jobs back to pending (attempts reset, idempotency key cleared)"
        if verb == "requeue"
        else "Delete DLQ jobs for good (lifetime counters are kept)"
    )
    command.__doc__ = (
        f"{what}: the given IDS, or those matching a filter (preview, then confirm).\n\n"
        f"\b\nExample:\n  {example}\n"
    )
    return dlq.command(verb)(command)


_bulk_command("requeue", "chokaq dlq requeue --queue partners --reason throttled --cap 50")
_bulk_command("purge", "chokaq dlq purge --reason rejected --until 7d --yes")

COMMANDS = [dlq]

"""``chokaq archive requeue | delete``, ``chokaq job run-now`` and ``chokaq job cancel`` (by
ids or by a filter): the CLI's side of the Deck's bulk actions beyond the DLQ's.

An archive action takes ids or a filter (queue, type, finished since/until, search), pins the
filter's upper bound to now, prints the preview (how many match, how many the cap allows, the
first ids) and asks before it acts, unless ``--yes``; it then acts on that pinned set only, so a
job archived meanwhile is not swept up. ``run-now`` makes delayed jobs due now and names those
that were not delayed. Each logs its audit line (``ADMIN_COMPLETED``). ``--json`` prints one
JSON object. This module reaches data through the backend only.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import astuple, replace
from datetime import UTC, datetime
from typing import Any

import click

from ..app import App
from ..logs import log_admin, log_admin_refused
from ..models import CancelResult, JobFilter, Pillar, Preview, RequeuedJob
from .dlq import preview_table
from .jobs import cancel_filter_options, job, json_value, print_cancelled
from .options import (
    Matching,
    Store,
    actor_name,
    actor_option,
    cap_options,
    console,
    job_ids,
    logged,
    matching_options,
    run_with_app,
    store_options,
)
from .output import echo_json, echo_moves, json_flag

__all__ = ["COMMANDS"]


@click.group()
def archive() -> None:
    """Requeue archived (succeeded) jobs as new jobs, or delete them.

    \b
    Example:
      chokaq archive requeue --type report.build --since 1d --database sqlite:///jobs.db
    """


_PAST = {"requeue": "requeued as new", "delete": "deleted"}


Act = Callable[[JobFilter], Awaitable[Any]]


async def _preview_then_act(
    app: App,
    pillar: Pillar,
    flt: JobFilter,
    cap: int,
    verb: str,
    ask: str | None,
    act: Act,
    quiet: bool = False,
) -> tuple[Preview, Any]:
    """Pin ``flt`` to now, print the preview of ``verb`` (unless ``quiet``: --json), ask
    ``ask`` (its ``{n}`` the count; None: --yes), then ``act(pinned)``; None for the result
    when the operator said no."""
    now = datetime.now(UTC)
    pinned = replace(flt, until=min(flt.until or now, now))
    preview = await app.backend.jobs_preview(pillar=pillar, filter=pinned, cap=cap)
    if not quiet:
        console().print(preview_table(verb, preview))
    if preview.will_affect == 0:
        return preview, []
    if ask is not None and not click.confirm(
        ask.format(n=preview.will_affect), default=False, err=True
    ):
        return preview, None
    return preview, await act(pinned)


def _archive_command(verb: str, example: str, what: str) -> Any:
    @click.argument("ids", metavar="[ID]...", nargs=-1, callback=job_ids)
    @matching_options(
        click.option("--queue", help="Only this queue."),
        click.option("--type", "job_type", help="Only this job type."),
        click.option("--since", help="Finished at or after: ISO time or an age (2h: 2 hours ago)."),
        click.option("--until", help="Finished at or before: ISO time or an age (7d: 7 days ago)."),
        click.option("--search", help="Substring of id, type or tags."),
    )
    @cap_options("newest finished first")
    @json_flag("one JSON object (the preview and what was done)")
    @actor_option
    @store_options
    @logged
    def command(
        ids: list[str],
        matching: Matching,
        everything: bool,
        cap: int,
        yes: bool,
        as_json: bool,
        actor: str | None,
        store: Store,
    ) -> None:
        flt = matching.job_filter(ids)
        who = actor_name(actor)
        action = f"archive.{verb}_by_filter"
        if flt == JobFilter() and not everything:
            log_admin_refused("cli", action, who, "no ids, no filter and no --all")
            raise click.UsageError(
                f"give job ids, a filter (--queue, --type, --since, --until, --search) or "
                f"--all to {verb} without one"
            )
        app = store.app(existing=True)
        backend = app.backend

        async def act(pinned: JobFilter) -> list[Any]:
            if verb == "requeue":
                made = await backend.archive_requeue_by_filter(filter=pinned, actor=who, cap=cap)
                return list(made)
            return await backend.archive_delete_by_filter(filter=pinned, actor=who, cap=cap)

        ask = None if yes else f"{verb} {{n}} archived job(s)?"
        preview, done = run_with_app(
            app, lambda a: _preview_then_act(a, Pillar.ARCHIVE, flt, cap, verb, ask, act, as_json)
        )
        if done is None:
            click.echo("nothing done")
            sys.exit(1)
        summary = matching.summary()
        if ids:
            summary = f"{summary} ids={len(ids)}".removeprefix("everything ")
        log_admin("cli", action, who, summary, len(done), cap=cap)
        _report(verb, preview, done, as_json)

    command.__doc__ = (
        f"{what}: the given IDS, or those matching a filter (preview, then confirm).\n\n"
        f"\b\nExample:\n  {example}\n"
    )
    return archive.command(verb)(command)


def _report(verb: str, preview: Preview, done: list[Any], as_json: bool) -> None:
    if as_json:
        from ..views import dump

        key = "requeued" if verb == "requeue" else "ids"
        echo_json({"preview": dump(preview), "affected": len(done), key: dump(done)})
        return
    click.echo(f"{_PAST[verb]} {len(done)} job(s)")
    for item in done:
        if isinstance(item, RequeuedJob):
            click.echo(f"  {item.archived_id} -> new job {item.new_id}")


_archive_command(
    "requeue",
    "chokaq archive requeue --type report.build --since 1d --cap 50",
    "Make a new pending job from each archived job (new id; same type, queue, payload, tags, "
    "priority; attempts reset; created_by requeue:<archived id>); the archived jobs stay",
)
_archive_command(
    "delete",
    "chokaq archive delete --queue reports --until 30d --yes",
    "Delete archived jobs for good (lifetime counters and charts keep them; a parent that a "
    "pending job still depends on is kept)",
)


def cancel_matching(
    app: App,
    who: str,
    matching: Matching,
    *,
    everything: bool,
    cap: int,
    yes: bool,
) -> None:
    """``chokaq job cancel`` with no ID: cancel the active jobs matching the filter (pinned to
    now, previewed, confirmed) exactly as a cancel by id does."""
    flt = matching.job_filter()
    if flt == JobFilter() and not everything:
        log_admin_refused("cli", "jobs.cancel_by_filter", who, "no ids, no filter and no --all")
        raise click.UsageError(
            "give job ids, a filter (--queue, --type, --status, --since, --until, --search) "
            "or --all to cancel without one"
        )

    async def act(pinned: JobFilter) -> CancelResult:
        return await app.backend.jobs_cancel_by_filter(filter=pinned, actor=who, cap=cap)

    ask = None if yes else "cancel {n} active job(s)?"
    _, result = run_with_app(
        app, lambda a: _preview_then_act(a, Pillar.HOT, flt, cap, "cancel", ask, act)
    )
    if result is None:
        click.echo("nothing done")
        sys.exit(1)
    if isinstance(result, list):  # nothing matched
        result = CancelResult(cancelled=(), requested=(), not_found=())
    summary = matching.summary()
    rows = len(result.cancelled) + len(result.requested)
    log_admin("cli", "jobs.cancel_by_filter", who, summary, rows, cap=cap)
    print_cancelled(result, {})


@job.command("run-now")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True, callback=job_ids)
@json_flag("one JSON object ({moved, refused: {id: why}})")
@actor_option
@store_options
@logged
def job_run_now(
    job_ids: list[str],
    as_json: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Make delayed jobs (pending, scheduled in the future) due now and wake the workers. A job
    that is not delayed is left alone and named, and the exit code is 1.

    \b
    Example:
      chokaq job run-now 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --actor alice
    """
    app = store.app(existing=True)
    who = actor_name(actor)

    async def run_now(app: App) -> tuple[list[str], dict[str, str]]:
        moved = await app.backend.jobs_run_now(ids=job_ids, actor=who)
        why: dict[str, str] = {}
        done = set(moved)
        for job_id in (i for i in job_ids if i not in done):
            found = await app.backend.job_outcome(id=job_id)
            if found is None:
                why[job_id] = "not stored (never enqueued, or purged)"
            elif found.pillar is Pillar.HOT:
                state = json_value(found.status)
                why[job_id] = "already due" if state == "pending" else f"not delayed: {state}"
            else:
                why[job_id] = "already finished"
        return moved, why

    moved, why = run_with_app(app, run_now)
    log_admin("cli", "jobs.run_now", who, f"{len(job_ids)} id(s)", len(moved))
    if as_json:
        echo_json({"moved": moved, "refused": why})
    else:
        echo_moves(moved, why, done="due now", left="left alone", each="due now")
    if why:
        sys.exit(1)


COMMANDS = [archive]


async def _explain(app: App, ids: tuple[str, ...]) -> dict[str, str]:
    """Why each of ``ids`` (not in the hot table) was not cancelled."""
    why: dict[str, str] = {}
    for job_id in ids:
        found = await app.backend.job_outcome(id=job_id)
        if found is None:
            why[job_id] = "not stored (never enqueued, or purged)"
        elif found.pillar is Pillar.ARCHIVE:
            why[job_id] = "already succeeded"
        elif found.pillar is Pillar.DLQ:
            why[job_id] = f"already failed ({json_value(found.failure_reason)})"
        else:  # it entered hot again in between (a requeue): cancel it anew
            why[job_id] = "back in the hot table since; run the cancel again"
    return why


@job.command("cancel")
@click.argument("job_ids", metavar="[ID]...", nargs=-1, callback=job_ids)
@cancel_filter_options
@actor_option
@store_options
@logged
def job_cancel(
    job_ids: list[str],
    matching: Matching,
    everything: bool,
    cap: int,
    yes: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Cancel jobs by id, or all active jobs matching a filter (a preview, then confirm), from
    any process: a pending, fetched or waiting job goes to the DLQ as cancelled at once; a
    running one is asked to stop (its worker hears it). A job that has finished, or that no
    pillar holds, is left alone and named, and the exit code is 1 (as 'job retry' and
    'run-now'). Jobs waiting on a cancelled job are blocked from then on: 'chokaq workflow
    cancel' cancels a whole workflow.

    \b
    Example:
      chokaq job cancel 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --actor alice
      chokaq job cancel --queue emails --status pending --until 1h --cap 500
    """
    app = store.app(existing=True)
    who = actor_name(actor)
    if job_ids and any(astuple(matching)):
        raise click.UsageError("give job ids or a filter, not both")
    if not job_ids:
        cancel_matching(app, who, matching, everything=everything, cap=cap, yes=yes)
        return

    async def cancel(app: App) -> tuple[CancelResult, dict[str, str]]:
        result = await app.backend.jobs_cancel(ids=job_ids, actor=who)
        return result, await _explain(app, result.not_found)

    result, why = run_with_app(app, cancel)
    log_admin(
        "cli",
        "jobs.cancel",
        who,
        f"{len(job_ids)} id(s)",
        len(result.cancelled) + len(result.requested),
    )
    print_cancelled(result, why)
    if result.not_found:  # an unknown id was exit 0, unlike show, retry and run-now
        sys.exit(1)

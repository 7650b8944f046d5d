"""``chokaq job list | show | wait | cancel | retry``: jobs wherever they live, a job's result
and its workflow.

``show`` reads a job with its relatives (``Backend.job_get_related``); ``wait`` blocks on
``App.wait`` (woken by LISTEN/NOTIFY or SQLite's signal, with a poll as fallback) and says how
the job ended through its exit code; ``cancel`` cancels jobs from any process and logs its
audit line (``ADMIN_COMPLETED``). ``--json`` prints one JSON object instead of the tables. The
JSON shapes and the rendering helpers here are shared with ``chokaq workflow``.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import fields, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError
from ..logs import log_admin
from ..models import (
    CancelResult,
    JobAttempt,
    JobLink,
    JobOutcome,
    JobStatus,
    JobView,
    Pillar,
)
from ..storage.workflows import MAX_RELATIVES
from .options import (
    Matching,
    Store,
    actor_name,
    actor_option,
    cap_options,
    console,
    job_id_argument,
    job_ids,
    logged,
    matching_options,
    run_with_app,
    store_options,
)
from .output import echo_moves, job_data

__all__ = [
    "COMMANDS",
    "EXIT_BLOCKED",
    "EXIT_FAILED",
    "EXIT_NOT_FOUND",
    "EXIT_NOT_KEPT",
    "EXIT_TIMEOUT",
    "json_value",
    "state_style",
]

# ``chokaq job wait``'s exit codes besides 0 (succeeded) and 2 (bad usage). 124 is what
# timeout(1) exits with when the command it runs outlives its limit.
EXIT_FAILED = 1
EXIT_NOT_FOUND = 3
EXIT_NOT_KEPT = 4
EXIT_BLOCKED = 5
EXIT_TIMEOUT = 124

_STYLES = {
    "succeeded": "green",
    "failed": "red",
    "blocked": "red",
    "purged": "dim",
    "processing": "cyan",
    "fetched": "cyan",
    "waiting": "yellow",
}


def state_style(state: str) -> Text:
    return Text(state, style=_STYLES.get(state, ""))


def json_value(value: Any) -> Any:
    """A model value as JSON holds it: enums by lower-case name (``fatal_error``, ``waiting``;
    a pillar by its value), times as ISO 8601 in UTC ending in ``Z`` (as The Deck's API), tuples
    as lists."""
    if isinstance(value, Pillar):
        return value.value
    if isinstance(value, Enum):
        return value.name.lower()
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, JobLink):
        return {f.name: json_value(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [json_value(item) for item in value]
    return value


def _utc(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "-"


def _duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return f"{seconds:.3f} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


def _reason(link: JobLink | JobView) -> str:
    return link.failure_reason.name.lower() if link.failure_reason is not None else ""


def _state_line(view: JobView) -> Text:
    text = state_style(view.state)
    if view.parents_left is not None and view.parents:
        text.append(f": waiting on {view.parents_left} of {len(view.parents)} parent(s)")
        failed = [p.id for p in view.parents if p.state == "failed"]
        if failed:
            text.append(f"; parent {failed[0]} is in the DLQ (requeue it, or cancel this job)")
    if view.pillar is Pillar.DLQ and view.failure_reason is not None:
        text.append(f" ({_reason(view)})")
    return text


def _rows(view: JobView) -> list[tuple[str, str | Text]]:
    attempts = str(view.attempt_count)
    if view.max_attempts is not None:
        attempts += f" of {view.max_attempts}"
    rows: list[tuple[str, str | Text]] = [
        ("pillar", view.pillar.value),
        ("state", _state_line(view)),
        ("type", view.type),
        ("queue", view.queue),
        ("priority", "-" if view.priority is None else str(view.priority)),
        ("tags", ", ".join(view.tags) or "-"),
        ("attempts", attempts),
    ]
    optional: list[tuple[str, Any]] = [
        ("timeout", None if view.timeout_seconds is None else f"{view.timeout_seconds:g} s"),
        ("idempotency key", view.idempotency_key),
        ("created", _utc(view.created_at)),
        ("scheduled", view.scheduled_at and _utc(view.scheduled_at)),
        ("expires", view.expires_at and f"{_utc(view.expires_at)} (not started by then: DLQ)"),
        ("started", view.started_at and _utc(view.started_at)),
        ("heartbeat", view.heartbeat_at and _utc(view.heartbeat_at)),
        ("updated", view.updated_at and _utc(view.updated_at)),
        ("finished", view.finished_at and _utc(view.finished_at)),
        ("failed", view.failed_at and _utc(view.failed_at)),
        ("exception", view.error_type),
        ("duration", _duration(view.duration_seconds)),
        ("progress", None if view.progress is None else f"{view.progress} %"),
        ("worker", view.worker_id),
        ("created by", view.created_by),
        ("last modified by", view.last_modified_by),
        ("cancel requested", view.cancel_requested_at and _utc(view.cancel_requested_at)),
        ("cancelled by", view.cancelled_by),
    ]
    rows += [(name, str(value)) for name, value in optional if value is not None]
    if view.workflow_id is not None:
        first = " (its first job)" if view.workflow_id == view.id else ""
        rows.append(("workflow", view.workflow_id + first))
    return rows


def _links(title: str, links: tuple[JobLink, ...]) -> Table:
    """Parents or children with their states (a waiting one whose parent is in the DLQ reads
    ``blocked``, as the storage seam says)."""
    table = Table(title=f"{title} ({len(links)})", title_justify="left")
    for column in ("id", "type", "state", "reason"):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis")
    for link in links:
        table.add_row(link.id, Text(link.type or "-"), state_style(link.state), _reason(link))
    return table


def _attempts(attempts: tuple[JobAttempt, ...]) -> Table:
    """The failed attempts, newest first: the error's first line here (``--json`` has it all)."""
    table = Table(title=f"failed attempts ({len(attempts)}, newest first)", title_justify="left")
    for column in ("#", "failed at", "worker", "ran", "outcome", "error"):
        table.add_column(column, overflow="fold" if column == "error" else "ellipsis")
    for a in attempts:
        outcome = "retried" if a.failure_reason is None else a.failure_reason.name.lower()
        first_line = (a.error or "").strip().split("\n", 1)[0]
        ran = _duration(a.duration_seconds) or "-"
        table.add_row(
            str(a.attempt),
            _utc(a.failed_at),
            Text(a.worker_id or "-"),
            ran,
            outcome,
            Text(first_line),
        )
    return table


def _block(title: str, text: str) -> None:
    """A heading and text as it is (no wrapping: JSON and tracebacks stay copyable)."""
    click.secho(title, bold=True)
    click.echo(text)


def _not_kept(why: str) -> str:
    """Why a result was not kept, in one phrase (the worker's text starts "not kept: ")."""
    return why.removeprefix("not kept: ")


def _pretty(json_text: str) -> str:
    return json.dumps(json.loads(json_text), indent=2, ensure_ascii=False)


def _print_job(view: JobView, limit: int) -> None:
    out = console()
    click.secho(f"job {view.id}", bold=True)  # not a table title: that wraps to its width
    table = Table(show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for name, value in _rows(view):
        table.add_row(name, value if isinstance(value, Text) else Text(value))
    out.print(table)
    for title, links in (("parents", view.parents), ("children", view.children)):
        if links:
            out.print(_links(title, links))
            if len(links) >= limit:
                out.print(f"(the first {limit} {title} are shown)", style="yellow")
    _block("payload", view.payload or "")
    if view.pillar is Pillar.ARCHIVE:
        if view.result_error is not None:
            _block("result", f"not kept: {_not_kept(view.result_error)}")
        else:
            _block("result", "null" if view.result is None else _pretty(view.result))
    if view.error:
        _block("error", view.error)
    elif view.last_error:
        _block("last error (of the attempt before)", view.last_error)
    if view.attempts:
        out.print(_attempts(view.attempts))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")


def cancel_filter_options(fn: Any) -> Any:
    """``job cancel``'s filter, cap and confirmation (used when no ID is given)."""
    fn = cap_options(
        "newest created first", all_help="Allow a cancel by no filter.", as_in_deck=False
    )(fn)
    return matching_options(
        click.option("--queue", help="Only this queue (with no ID: cancel by filter)."),
        click.option("--type", "job_type", help="Only this job type."),
        click.option(
            "--status",
            type=click.Choice(["pending", "fetched", "processing", "waiting"]),
            help="Only jobs in this state.",
        ),
        click.option("--since", help="Created at or after: ISO time or an age (2h)."),
        click.option("--until", help="Created at or before: ISO time or an age (7d)."),
        click.option("--search", help="Substring of id, type, tags or last error."),
    )(fn)


@click.group()
def job() -> None:
    """Show a job with its result and workflow, wait for one, cancel jobs.

    \b
    Example:
      chokaq job show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --database sqlite:///jobs.db
    """


@job.command("show")
@click.argument("job_id", metavar="ID", callback=job_id_argument)
@json_option
@store_options
def job_show(job_id: str, as_json: bool, store: Store) -> None:
    """Show job ID wherever it lives: pillar, state, type, queue, attempts, times, its
    payload, its result (or why it was not kept) or its error, its failed attempts (newest
    first), its workflow, and its parents and children with their states. Exit code 1 when no
    pillar holds it.

    \b
    Example:
      chokaq job show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json | jq .result
    """
    app = store.app(existing=True)
    view = run_with_app(app, lambda a: a.backend.job_get_related(id=job_id))
    if view is None:
        raise NotFoundError(f"no job {job_id} in hot, archive or DLQ (never enqueued, or purged)")
    if as_json:
        click.echo(json.dumps(job_data(view), ensure_ascii=False))
        return
    _print_job(view, MAX_RELATIVES)


def _wait_json(job_id: str, outcome: str, **fields: Any) -> str:
    line = {
        "id": job_id,
        "outcome": outcome,
        "state": None,
        "result": None,
        "result_error": None,
        "failure_reason": None,
        "error": None,
        "blocked_by": None,
    }
    line.update(fields)
    return json.dumps(line, ensure_ascii=False)


def _finished(job_id: str, found: JobOutcome, as_json: bool) -> int:
    """Print how a job that left the hot table ended (or why it cannot: blocked); its exit
    code."""
    if found.blocked_by is not None:
        reason = json_value(found.blocked_reason)
        if as_json:
            click.echo(
                _wait_json(
                    job_id,
                    "blocked",
                    state="blocked",
                    blocked_by=found.blocked_by,
                    failure_reason=reason,
                )
            )
        else:
            click.secho(
                f"job {job_id} is blocked: it waits on job {found.blocked_by}, which is in the "
                f"DLQ ({reason}); requeue or purge that job, then wait again",
                fg="red",
                err=True,
            )
        return EXIT_BLOCKED
    if found.pillar is Pillar.DLQ:
        reason = json_value(found.failure_reason)
        if as_json:
            click.echo(
                _wait_json(
                    job_id, "failed", state="failed", failure_reason=reason, error=found.error
                )
            )
        else:
            click.secho(f"job {job_id} failed: {reason}", fg="red", err=True)
            if found.error:
                click.echo(found.error, err=True)
        return EXIT_FAILED
    if found.result_error is not None:
        if as_json:
            click.echo(
                _wait_json(job_id, "succeeded", state="succeeded", result_error=found.result_error)
            )
        else:
            click.secho(
                f"job {job_id} succeeded, but its result was not kept: "
                f"{_not_kept(found.result_error)}",
                fg="yellow",
                err=True,
            )
        return EXIT_NOT_KEPT
    if as_json:
        value = None if found.result is None else json.loads(found.result)
        click.echo(_wait_json(job_id, "succeeded", state="succeeded", result=value))
    else:
        click.echo("null" if found.result is None else found.result)
    return 0


def _check_timeout(ctx: click.Context, param: click.Parameter, value: float | None) -> Any:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(
            "must be a finite number of seconds (leave it out to wait without a limit)"
        )
    return value


@job.command("wait")
@click.argument("job_id", metavar="ID", callback=job_id_argument)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    callback=_check_timeout,
    help="Give up after this many seconds (exit code 124); default: wait as long as it takes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line, whatever the outcome.")
@store_options
def job_wait(
    job_id: str,
    timeout: float | None,
    as_json: bool,
    store: Store,
) -> None:
    """Wait until job ID has finished and print its result as JSON.

    \b
    Exit codes:
      0    it succeeded; its result is printed (null when it returned None)
      1    it failed (is in the DLQ); the reason and error go to stderr
      2    bad usage (an id that is not one, a bad --timeout)
      3    no pillar holds it (never enqueued, or purged)
      4    it succeeded, but its result was not kept (too large, or not JSON)
      5    it is blocked: it waits on a job in the DLQ (a parent, or an ancestor through
           parents that wait themselves), named on stderr; it runs only once that job is
           requeued and succeeds
      124  it has not finished within --timeout seconds

    \b
    Example:
      chokaq job wait 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --timeout 300 | jq .total
    """
    app = store.app(existing=True)

    async def wait(app: App) -> tuple[str, JobOutcome | JobView | None]:
        try:
            return "finished", await app.wait(job_id, timeout_seconds=timeout)
        except NotFoundError:
            return "not_found", None
        except TimeoutError:
            # Name where it stands, so that a wait on a blocked job says why it never ended.
            return "timeout", await app.backend.job_get_related(id=job_id)

    what, found = run_with_app(app, wait)
    if isinstance(found, JobOutcome):
        sys.exit(_finished(job_id, found, as_json))
    if what == "not_found":
        if as_json:
            click.echo(_wait_json(job_id, "not_found"))
        else:
            click.secho(
                f"error: job {job_id} is not stored (never enqueued, or purged)",
                fg="red",
                err=True,
            )
        sys.exit(EXIT_NOT_FOUND)
    state = found.state if isinstance(found, JobView) else "purged"
    if as_json:
        click.echo(_wait_json(job_id, "timeout", state=state))
    else:
        assert timeout is not None
        message = f"job {job_id} has not finished within {timeout:g} s; it is {state}"
        if isinstance(found, JobView):
            message += "".join(
                f"; parent {p.id} is in the DLQ" for p in found.parents if p.state == "failed"
            )
        click.secho(message, fg="yellow", err=True)
    sys.exit(EXIT_TIMEOUT)


def print_cancelled(result: CancelResult, why: dict[str, str]) -> None:
    """The outcome of a cancel, one line per job, after a summary line."""
    click.echo(
        f"cancelled {len(result.cancelled)}, cancel requested {len(result.requested)}, "
        f"not cancelled {len(result.not_found)}"
    )
    for job_id in result.cancelled:
        click.echo(f"  cancelled (now in the DLQ): {job_id}")
    for job_id in result.requested:
        click.echo(f"  cancel requested (running; its worker stops it): {job_id}")
    for job_id in result.not_found:
        reason = why.get(job_id, "already finished")
        click.secho(f"  not cancelled, {reason}: {job_id}", fg="yellow")


_PLACES = {"active": Pillar.HOT, "archive": Pillar.ARCHIVE, "dlq": Pillar.DLQ}
_STATUSES = sorted(s.name.lower() for s in JobStatus)
_DATES = {Pillar.HOT: "created_at", Pillar.ARCHIVE: "finished_at", Pillar.DLQ: "failed_at"}


@job.command("list")
@click.option(
    "--in",
    "place",
    type=click.Choice(sorted(_PLACES)),
    default="active",
    show_default=True,
    help="Which pillar: active (hot), archive (succeeded) or dlq (failed).",
)
@matching_options(
    click.option("--queue", help="Only this queue."),
    click.option("--type", "job_type", help="Only this job type."),
    click.option("--status", type=click.Choice(_STATUSES), help="Only this status (active only)."),
    click.option("--reason", help="Only this failure reason (dlq only; e.g. timeout, expired)."),
    click.option("--partition", help="Only this partition."),
    click.option("--since", help="At or after (created, finished or failed): ISO time or an age."),
    click.option("--until", help="At or before: ISO time or an age (7d: 7 days ago)."),
    click.option("--search", help="Substring of id, type, tags or error text."),
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of the jobs.")
@store_options
def job_list(
    place: str,
    matching: Matching,
    partition: str | None,
    limit: int,
    as_json: bool,
    store: Store,
) -> None:
    """List jobs of one pillar, newest first (by created, finished or failed time), up to
    --limit; --json prints them as a JSON array of the objects 'job show --json' prints
    (without payloads: 'job show' reads one).

    \b
    Example:
      chokaq job list --in dlq --reason expired --since 1h --json | jq -r '.[].id'
    """
    pillar = _PLACES[place]
    if matching.status is not None and pillar is not Pillar.HOT:
        raise click.UsageError("--status applies to active jobs only (--in active)")
    if matching.reason is not None and pillar is not Pillar.DLQ:
        raise click.UsageError("--reason applies to failed jobs only (--in dlq)")
    flt = replace(matching.job_filter(), partition=partition)
    app = store.app(existing=True)
    page = run_with_app(
        app, lambda a: a.backend.jobs_page(pillar=pillar, filter=flt, page_size=limit)
    )
    if as_json:
        click.echo(json.dumps([job_data(v) for v in page.items], ensure_ascii=False))
        return
    about = "about " if page.total_estimated else ""  # the database's estimate, past 10,000
    table = Table(
        title=f"{place}: {len(page.items)} of {about}{page.total} job(s)", title_justify="left"
    )
    for column in ("id", "state", "type", "queue", "attempts", _DATES[pillar][:-3]):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis")
    for view in page.items:
        when = getattr(view, _DATES[pillar])
        table.add_row(
            view.id,
            state_style(view.state),
            view.type,
            view.queue,
            str(view.attempt_count),
            _utc(when) if when is not None else "-",
        )
    console().print(table)


@job.command("retry")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True, callback=job_ids)
@actor_option
@store_options
@logged
def job_retry(
    job_ids: list[str],
    actor: str | None,
    store: Store,
) -> None:
    """Run failed jobs again: each job ID in the DLQ goes back to pending (attempts reset,
    due now, its error kept as the last error). A job that is not in the DLQ is left alone and
    named; 'chokaq dlq requeue' retries by filter.

    \b
    Example:
      chokaq job retry 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --actor alice
    """
    app = store.app(existing=True)
    who = actor_name(actor)

    async def retry(app: App) -> tuple[list[str], dict[str, str]]:
        moved = await app.backend.dlq_resurrect(ids=job_ids, actor=who)
        why: dict[str, str] = {}
        for job_id in (i for i in job_ids if i not in set(moved)):
            found = await app.backend.job_outcome(id=job_id)
            if found is None:
                why[job_id] = "not stored (never enqueued, or purged)"
            elif found.pillar is Pillar.HOT:
                why[job_id] = f"not failed: it is {json_value(found.status)}"
            elif found.pillar is Pillar.ARCHIVE:
                why[job_id] = "already succeeded"
            else:  # it entered the DLQ again in between: retry it anew
                why[job_id] = "back in the DLQ since; run the retry again"
        return moved, why

    moved, why = run_with_app(app, retry)
    log_admin("cli", "jobs.retry", who, f"{len(job_ids)} id(s)", len(moved))
    echo_moves(moved, why, done="retried", left="not retried", each="back to pending")
    if why:
        sys.exit(1)


COMMANDS = [job]

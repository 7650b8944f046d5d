"""``chokaq workflow show | cancel``: the jobs linked by ``after=`` to a workflow's first job.

``show`` lists every job of a workflow, parents first, with its state and parents, and counts
them by state (``--json``: one JSON object). ``cancel`` previews what it will cancel and asks
first, unless ``--yes``, then cancels every job that has not finished and logs its audit line
(``ADMIN_COMPLETED``). Both read and act through the backend's workflow operations only.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError
from ..logs import log_admin
from ..models import CancelResult, Workflow, WorkflowMember
from ..storage.workflows import MAX_WORKFLOW_JOBS
from .jobs import json_value, print_cancelled, state_style
from .options import (
    Store,
    actor_name,
    actor_option,
    console,
    job_id_argument,
    logged,
    run_with_app,
    store_options,
)

__all__ = ["COMMANDS"]

DEFAULT_LIMIT = 10_000
_FINISHED = ("succeeded", "failed", "purged")


def _states(workflow: Workflow) -> dict[str, str]:
    """Each job's state, by id (the storage seam says ``blocked`` of a waiting job whose
    parent is in the DLQ)."""
    return {job.id: job.state for job in workflow.jobs}


def _counts(states: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for state in states.values():
        out[state] = out.get(state, 0) + 1
    return out


def _summary(states: dict[str, str]) -> str:
    counts = _counts(states)
    parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    return f"{len(states)} job(s): {parts}"


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _member_json(job: WorkflowMember, state: str) -> dict[str, Any]:
    return {
        "id": job.id,
        "type": job.type,
        "queue": job.queue,
        "state": state,
        "parents": list(job.parents),
        "after_outcome": ("any" if job.any_outcome else "success") if job.parents else None,
        "failure_reason": json_value(job.failure_reason),
        "error": job.error,
    }


def _workflow_json(workflow: Workflow, states: dict[str, str]) -> dict[str, Any]:
    return {
        "id": workflow.id,
        "finished": workflow.finished,
        "counts": _counts(states),
        "jobs": [_member_json(job, states[job.id]) for job in workflow.jobs],
    }


def _print(workflow: Workflow, states: dict[str, str]) -> None:
    """One row per job, numbered; parents are named by their number (their id when outside
    the list), so that a row stays readable with several parents, and marked "(any outcome)"
    for a job that runs once they have all finished, succeeded or not. The first line of each
    failed job's error follows the table, unwrapped (a table cell would cut it)."""
    number = {job.id: str(i) for i, job in enumerate(workflow.jobs, 1)}
    progress = "finished" if workflow.finished else "in progress"
    click.secho(f"workflow {workflow.id} ({progress}): {_summary(states)}", bold=True)
    table = Table()
    for column in ("#", "id", "type", "queue", "state", "parents"):
        table.add_column(column, overflow="fold" if column == "parents" else "ellipsis")
    errors: list[str] = []
    for job in workflow.jobs:
        parents = ", ".join(f"#{number[p]}" if p in number else p for p in job.parents)
        if job.any_outcome:  # it runs once they all finished, succeeded or not
            parents += " (any outcome)"
        state = state_style(states[job.id])
        if job.failure_reason is not None:
            state.append(f" ({job.failure_reason.name.lower()})")
        if job.error:
            errors.append(f"  #{number[job.id]} {_first_line(job.error)}")
        table.add_row(
            number[job.id],
            job.id,
            Text(job.type or "-"),
            Text(job.queue or "-"),
            state,
            parents or "-",
        )
    console().print(table)
    if errors:
        click.secho("errors", bold=True)
        click.echo("\n".join(errors))


async def _find(app: App, given: str, limit: int) -> tuple[Workflow, str | None]:
    """The workflow ``given`` names, and a note when ``given`` is one of its other jobs.
    Raises ``NotFoundError`` when neither a workflow nor a job of one has that id."""
    found = await app.backend.workflow_get(id=given, limit=limit)
    if found is not None:
        return found, None
    view = await app.backend.job_get_related(id=given, limit=1)
    if view is None:
        raise NotFoundError(f"no workflow and no job {given} (never enqueued, or purged)")
    if view.workflow_id is None or view.workflow_id == given:
        raise NotFoundError(
            f"job {given} is not part of a workflow (no after=, and no job waits on it)"
        )
    found = await app.backend.workflow_get(id=view.workflow_id, limit=limit)
    if found is None:
        raise NotFoundError(f"job {given}'s workflow {view.workflow_id} has no job left")
    return found, view.workflow_id


@click.group()
def workflow() -> None:
    """Show the jobs of a workflow (jobs linked by after=), or cancel what is left of one.

    \b
    Example:
      chokaq workflow show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --database sqlite:///jobs.db
    """


@workflow.command("show")
@click.argument("workflow_id", metavar="ID", callback=job_id_argument)
@click.option(
    "--limit",
    default=DEFAULT_LIMIT,
    show_default=True,
    type=click.IntRange(1, MAX_WORKFLOW_JOBS),
    help="Read at most this many of its jobs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@store_options
def workflow_show(
    workflow_id: str,
    limit: int,
    as_json: bool,
    store: Store,
) -> None:
    """Show every job of workflow ID, parents first: state, parents, failure reason and error,
    with counts by state. ID is the workflow's first job ('workflow' in chokaq job show); the
    id of another job of it shows its workflow. Exit code 1 when there is none.

    \b
    Example:
      chokaq workflow show 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json | jq .counts
    """
    app = store.app(existing=True)
    found, via = run_with_app(app, lambda a: _find(a, workflow_id, limit))
    if via is not None:
        click.echo(f"job {workflow_id} is in workflow {via}", err=True)
    states = _states(found)
    if as_json:
        click.echo(json.dumps(_workflow_json(found, states), ensure_ascii=False))
        return
    _print(found, states)
    if len(found.jobs) >= limit:
        click.secho(f"(the first {limit} jobs are shown: --limit to read more)", fg="yellow")


@workflow.command("cancel")
@click.argument("workflow_id", metavar="ID", callback=job_id_argument)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@actor_option
@store_options
@logged
def workflow_cancel(
    workflow_id: str,
    yes: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Cancel every job of workflow ID that has not finished (asks first, unless --yes): a
    blocked job (waiting on a parent in the DLQ) goes to the DLQ as dependency_failed, a
    pending, fetched or waiting one as cancelled, and a running one is asked to stop. ID must
    be the workflow's first job. Finished jobs are left as they are.

    \b
    Example:
      chokaq workflow cancel 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --yes --actor alice
    """
    app = store.app(existing=True)
    who = actor_name(actor)

    async def confirm_then_cancel(app: App) -> CancelResult | None:
        found, via = await _find(app, workflow_id, MAX_WORKFLOW_JOBS)
        if via is not None:
            # Cancelling takes the workflow's own id: a job of it may stand for more than the
            # operator meant (a job can be linked to several workflows).
            raise NotFoundError(
                f"job {workflow_id} is not a workflow's first job; it is in workflow {via} "
                f"(chokaq workflow cancel {via})"
            )
        states = _states(found)
        left = sum(1 for state in states.values() if state not in _FINISHED)
        click.echo(f"workflow {found.id}: {_summary(states)}")
        if left == 0:
            return CancelResult((), (), ())
        if not yes and not click.confirm(
            f"cancel the {left} job(s) of it that have not finished?", default=False, err=True
        ):
            return None
        result: CancelResult = await app.backend.workflow_cancel(id=found.id, actor=who)
        return result

    result = run_with_app(app, confirm_then_cancel)
    if result is None:
        click.echo("nothing done")
        raise SystemExit(1)
    if not (result.cancelled or result.requested or result.not_found):
        click.echo("every job of it has finished: nothing to cancel")
        return
    log_admin(
        "cli",
        "workflows.cancel",
        who,
        workflow_id,
        len(result.cancelled) + len(result.requested),
    )
    print_cancelled(result, {})


COMMANDS = [workflow]

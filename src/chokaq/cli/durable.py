"""The CLI of durable jobs: ``chokaq job steps ID`` (what a durable job recorded), ``chokaq
job stream ID`` (the items a job emits, followed like ``tail -f``) and ``chokaq event send KEY
--data JSON`` (wake the job waiting on KEY, or keep the event for it).

Owns these commands' arguments and output; the JSON shape of a step is ``views.step_json``,
shared with The Deck. It holds no SQL and imports no other face.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from ..app import App
from ..errors import NotFoundError, ValidationError
from ..logs import log_admin
from ..views import step_json
from .jobs import job
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

__all__ = ["COMMANDS", "event"]


@job.command("steps")
@click.argument("job_id", metavar="ID", callback=job_id_argument)
@click.option("--json", "as_json", is_flag=True, help="Print the steps as one JSON array.")
@store_options
def job_steps(job_id: str, as_json: bool, store: Store) -> None:
    """Show the steps durable job ID recorded, in order: each step, sleep and event wait with
    its state (done, failed: it runs again, pending: the job is suspended on it), start, end,
    duration, the size of its stored value, and its error. Exit code 1 when no pillar holds
    the job.

    \b
    Example:
      chokaq job steps 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json | jq '.[].name'
    """
    app = store.app(existing=True)

    async def read(app: App) -> Any:
        view = await app.backend.job_get(job_id)
        if view is None:
            return None
        return await app.backend.steps_list(job_id=job_id)

    steps = run_with_app(app, read)
    if steps is None:
        raise NotFoundError(f"no job {job_id} in hot, archive or DLQ (never enqueued, or purged)")
    rows = [step_json(step) for step in steps]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        console().print("no steps recorded (not a durable job, or none of its calls ran yet)")
        return
    table = Table("#", "name", "kind", "state", "started", "duration", "value", "error / wake")
    for row in rows:
        duration = row["duration_seconds"]
        size = row["value_bytes"]
        detail = row["error"] or (
            f"until {row['wake_at']}" if row["wake_at"] and row["state"] == "pending" else ""
        )
        if row["event_key"]:
            detail = f"event {row['event_key']!r} {detail}".strip()
        table.add_row(
            str(row["seq"]),
            row["name"],
            row["kind"],
            row["state"],
            row["started_at"] or "",
            "" if duration is None else f"{duration:.3f} s",
            "" if size is None else f"{size} B",
            (detail or "").split("\n", 1)[0][:120],
        )
    console().print(table)


@job.command("stream")
@click.argument("job_id", metavar="ID", callback=job_id_argument)
@click.option(
    "--from",
    "from_index",
    type=int,
    default=0,
    show_default=True,
    help="The first item to print (0: the stream's first).",
)
@click.option(
    "--json", "as_json", is_flag=True, help='Print JSON lines: {"index": N, "item": ...}.'
)
@store_options
def job_stream(job_id: str, from_index: int, as_json: bool, store: Store) -> None:
    """Print the items job ID emits (ctx.emit), in order, as they are written, like
    ``tail -f``: those already written at once, then each as it comes, until the job leaves
    the hot table (succeeded, dead-lettered, cancelled); then the command ends. Each line is
    ``[N] ITEM`` (the item as JSON), or with --json one JSON object per line. Exit code 1
    when no pillar holds the job.

    \b
    Example:
      chokaq job stream 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json | jq .item
    """
    app = store.app(existing=True)
    stream = app.stream(job_id, from_index=from_index)  # a bad --from is refused here

    async def follow(app: App) -> None:
        index = from_index  # the stream has no gap: the n-th item read is from_index + n
        async for item in stream:
            text = json.dumps(item, ensure_ascii=False)
            if as_json:
                click.echo(f'{{"index": {index}, "item": {text}}}')
            else:
                click.echo(f"[{index}] {text}")
            index += 1

    run_with_app(app, follow)


@click.group()
def event() -> None:
    """Send events to durable jobs waiting on a key (ctx.wait_for_event).

    \b
    Example:
      chokaq event send verified-42 --data '{"ok": true}' --database sqlite:///jobs.db
    """


@event.command("send")
@click.argument("key")
@click.option("--data", "data", default="null", show_default=True, help="The event's JSON.")
@actor_option
@store_options
@logged
def event_send(
    key: str,
    data: str,
    actor: str | None,
    store: Store,
) -> None:
    """Send an event under KEY carrying --data (JSON): the durable job that has waited on
    KEY the longest gets it and runs again; with none waiting it is kept 7 days for the first
    job that waits on KEY. Prints the job woken, or that the event was kept.

    \b
    Example:
      chokaq event send approve-order-17 --data '{"by": "alice"}'
    """
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise ValidationError("data", f"must be JSON ({exc})") from None
    app = store.app(existing=True)
    who = actor_name(actor)
    woken = run_with_app(app, lambda a: a.send_event(key, value))
    log_admin("cli", "events.send", who, key, 1 if woken else 0)
    if woken:
        click.echo(f"delivered to job {woken}")
    else:
        click.echo("kept for the first job that waits on this key (7 days)")


COMMANDS = [event]

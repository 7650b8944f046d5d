"""``chokaq batches``: what batch handlers did (docs/batches.md). ``batches sizes TYPE`` shows a
type's batches over a window (how many, how many jobs, mean and largest size, the newest
sizes), ``batches of ID`` the batches one job ran in with their other jobs. Both read through
the backend and render the JSON shapes of ``chokaq.views`` (what The Deck shows too).
"""

from __future__ import annotations

import json

import click
from rich.table import Table

from ..limits import check_name
from ..views import batch_json, batch_sizes_json, dump
from .options import Store, console, job_id_argument, parse_when, run_with_app, store_options

__all__ = ["COMMANDS"]

# The newest batches listed, and a job's siblings shown per batch (``--json`` has them all).
RECENT = 20
SIBLINGS = 10_000


@click.group()
def batches() -> None:
    """What batch handlers did: a type's batch sizes, the batches a job ran in.

    \b
    Examples:
      chokaq batches sizes embed --since 1h --app myproject.jobs:app
      chokaq batches of 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 --json
    """


@batches.command("sizes")
@click.argument("job_type", metavar="TYPE")
@click.option("--since", default="1h", show_default=True, help="ISO time or an age (30m, 7d).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@store_options
def batches_sizes(job_type: str, since: str, as_json: bool, store: Store) -> None:
    """TYPE's batches claimed since --since: how many, how many jobs, their mean and largest
    size and the newest 20 (id, claim time, size), newest first."""
    check_name("type", job_type)
    start = parse_when(since, param="--since")
    assert start is not None
    app = store.app(existing=True)
    sizes = run_with_app(app, lambda a: a.backend.batch_sizes(type=job_type, since=start))
    data = batch_sizes_json(job_type, sizes, RECENT)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    out = console()
    out.print(
        f"{job_type}: {data['batches']} batch(es), {data['jobs']} job(s) since "
        f"{start:%Y-%m-%d %H:%M:%S} UTC; mean size {data['mean_size'] or '-'}, "
        f"largest {data['max_size'] or '-'}",
        markup=False,
    )
    table = Table(title="newest batches", title_justify="left")
    for column in ("batch", "claimed at (UTC)", "size"):
        table.add_column(column, justify="right" if column == "size" else "left")
    for size in sizes[:RECENT]:
        table.add_row(size.batch_id, f"{size.claimed_at:%Y-%m-%d %H:%M:%S}", str(size.size))
    out.print(table)


@batches.command("of")
@click.argument("job_id", metavar="ID", callback=job_id_argument)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@store_options
def batches_of(job_id: str, as_json: bool, store: Store) -> None:
    """The batches job ID ran in (one per attempt a batch handler ran it), newest first, with
    the other jobs of each."""
    app = store.app(existing=True)
    found = run_with_app(app, lambda a: a.backend.job_batches(id=job_id))
    data = [batch_json(batch, job_id, SIBLINGS) for batch in found]
    if as_json:
        click.echo(json.dumps({"id": job_id, "batches": dump(data)}, ensure_ascii=False))
        return
    out = console()
    if not data:
        out.print(f"job {job_id} ran in no batch (or its batches were pruned)", markup=False)
        return
    table = Table(title=f"batches of {job_id}", title_justify="left")
    for column in ("batch", "attempt", "claimed at", "worker", "size", "other jobs"):
        table.add_column(column, overflow="fold")
    for batch in data:
        table.add_row(
            batch["batch_id"],
            str(batch["attempt"]),
            str(batch["claimed_at"]),
            batch["worker_id"],
            str(batch["size"]),
            " ".join(batch["siblings"]),
        )
    out.print(table)


COMMANDS = [batches]

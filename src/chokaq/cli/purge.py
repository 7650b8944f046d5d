"""``chokaq purge``: retention on demand, with a progress display.

Deletes archive rows older than N days and DLQ rows older than M days in small batches (each its
own short transaction, so workers keep running), then rolls second-wide metric buckets into
minute buckets and prunes old minute buckets. Lifetime counters are never touched. The work is
the backend's (the same operations the elected worker runs); this command only paces and shows
it, and logs its audit line (``ADMIN_COMPLETED``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import click
from click.decorators import FC
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from ..app import App
from ..logs import log_admin
from ..models import JobFilter, Pillar
from ..runtime.maintenance import REST_RATIO, purge_pillar
from .options import Store, actor_name, console, logged, run_with_app, store_options

__all__ = ["COMMANDS"]


def _advancer(progress: Progress, task: TaskID) -> Callable[[int], None]:
    return lambda n: progress.advance(task, n)


def _age_option(name: str, default: float, help: str) -> Callable[[FC], FC]:
    """An age over zero, with its default shown (the unit is in ``name``: days or hours)."""
    return click.option(
        name, default=default, show_default=True, type=click.FloatRange(0, min_open=True), help=help
    )


@click.command()
@_age_option(
    "--archive-days", 7.0, "Delete archived (succeeded) jobs finished more than this many days ago."
)
@_age_option("--dlq-days", 30.0, "Delete DLQ jobs failed more than this many days ago.")
@_age_option(
    "--second-buckets-hours",
    1.0,
    "Roll 1-second metric buckets older than this into 1-minute buckets.",
)
@_age_option("--minute-buckets-days", 14.0, "Delete 1-minute metric buckets older than this.")
@click.option(
    "--rest",
    default=REST_RATIO,
    show_default=True,
    type=click.FloatRange(0, 100),
    help="After each batch, rest this many times as long as it took (0: flat out).",
)
@click.option("--no-archive", is_flag=True, help="Leave the archive alone.")
@click.option("--no-dlq", is_flag=True, help="Leave the DLQ alone.")
@click.option("--no-metrics", is_flag=True, help="Leave metric buckets alone.")
@store_options
@logged
def purge(
    archive_days: float,
    dlq_days: float,
    second_buckets_hours: float,
    minute_buckets_days: float,
    rest: float,
    no_archive: bool,
    no_dlq: bool,
    no_metrics: bool,
    store: Store,
) -> None:
    """Apply retention now: old archive and DLQ rows, metric roll-up and pruning.

    \b
    Example:
      chokaq purge --archive-days 7 --dlq-days 30 --database postgresql://app@db/app
    """
    out = console()
    now = datetime.now(UTC)
    app = store.app(existing=True)

    async def run(app: App) -> dict[str, int]:
        done: dict[str, int] = {}
        backend = app.backend
        plan = []
        if not no_archive:
            plan.append(("archive", Pillar.ARCHIVE, now - timedelta(days=archive_days)))
        if not no_dlq:
            plan.append(("dlq", Pillar.DLQ, now - timedelta(days=dlq_days)))
        with Progress(
            TextColumn("{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=out,
            transient=False,
        ) as progress:
            for name, pillar, cutoff in plan:
                count = await backend.jobs_page(
                    pillar=pillar, filter=JobFilter(until=cutoff), page_size=1
                )
                task = progress.add_task(f"{name} rows", total=count.total)
                done[name] = await purge_pillar(
                    backend, pillar, cutoff, _advancer(progress, task), rest_ratio=rest
                )
                progress.update(task, total=max(count.total, done[name]), completed=done[name])
            if not no_metrics:
                task = progress.add_task("metric buckets", total=2)
                done["rolled_up"] = await backend.metrics_rollup(
                    older_than=now - timedelta(hours=second_buckets_hours)
                )
                progress.advance(task)
                done["minute_buckets"] = await backend.metrics_prune(
                    older_than=now - timedelta(days=minute_buckets_days), width_seconds=60
                )
                progress.advance(task)
        return done

    done = run_with_app(app, run)
    kept = {"archive": archive_days, "dlq": dlq_days}
    target = " ".join(f"{k}>{v:g}d" for k, v in kept.items() if k in done) or "metric buckets"
    rows = sum(done.values())
    log_admin("cli", "retention.purge", actor_name(None), target, rows, **done)
    parts = [f"{key.replace('_', ' ')}: {value}" for key, value in done.items()]
    out.print("purged - " + ", ".join(parts))


COMMANDS = [purge]

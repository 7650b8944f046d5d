"""``chokaq schedule list | show | pause | resume | trigger | set | reset | delete``: the periodic
schedules' control plane.

Workers declare schedules from their code (``@app.periodic``); these commands read where their
slots stand and steer them: pause and resume, run one now, an operator's edit of the timing or
kwargs (kept across deploys until ``reset``), and deleting a schedule no running worker declares
any more. Every change logs its audit line (``ADMIN_COMPLETED``). The checks are the storage
seam's: bad input is refused there, naming the field, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import click
from rich.table import Table
from rich.text import Text

from ..app import App
from ..errors import NotFoundError, ValidationError
from ..health import schedule_late, schedule_lateness
from ..logs import log_admin, log_admin_refused
from ..models import Schedule, SlotRecord
from ..periodic import Timing
from ..storage import UNSET
from .options import (
    Store,
    actor_name,
    actor_option,
    console,
    logged,
    run_with_app,
    store_options,
)
from .output import echo_json, json_flag

__all__ = ["COMMANDS"]

# The seam names the fields by its keywords; the operator typed these options.
_OPTIONS = {
    "cron": "--cron",
    "every_seconds": "--every",
    "timezone": "--timezone",
    "kwargs": "--kwargs",
}


def _utc(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _local(moment: datetime | None, zone: str) -> str:
    if moment is None:
        return "-"
    return moment.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S %Z")


def _duration(seconds: float) -> str:
    """``42s``, ``5m 03s``, ``2h 05m``, ``3d 04h``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"


def _when(s: Schedule) -> str:
    """The next slot in the schedule's time zone, and in UTC when that is another zone."""
    if s.next_slot is None:
        return "none"
    local = _local(s.next_slot, s.timezone)
    return local if s.timezone == "UTC" else f"{local} ({_utc(s.next_slot)} UTC)"


def _timing(schedule: Schedule) -> str:
    return Timing.of(schedule).describe()


def _state(schedule: Schedule) -> Text:
    text = Text()
    markers = []
    if schedule.paused:
        markers.append(("paused", "yellow"))
    if schedule.orphaned:
        markers.append(("orphaned", "magenta"))
    if schedule.edited_by is not None:
        markers.append((f"edited by {schedule.edited_by}", "cyan"))
    for i, (word, style) in enumerate(markers or [("active", "green")]):
        if i:
            text.append(", ")
        text.append(word, style=style)
    return text


def _lag(schedule: Schedule, now: datetime) -> Text:
    """How long the next slot has been due; '-' for schedules that do not fire (paused,
    orphaned), red and 'late' past one slot (what the schedules health check fails on)."""
    if schedule.paused or schedule.orphaned:
        return Text("-", style="dim")
    lag, _ = schedule_lateness(schedule, now)
    if schedule_late(schedule, now):
        return Text(f"{_duration(lag)} late", style="red")
    return Text(_duration(lag), style="yellow" if lag >= 1 else "green")


def _last(schedule: Schedule) -> str:
    if schedule.last_run_at is None:
        return "-"
    return f"{_utc(schedule.last_run_at)} {schedule.last_outcome or '-'}"


def _expiry(schedule: Schedule) -> str:
    """How long each run may wait to start, or "never"."""
    seconds = schedule.expires_after_seconds
    if seconds is None:
        return "never"
    return f"{_span(seconds)} after its enqueue (not started by then: DLQ as EXPIRED)"


def _job(schedule: Schedule) -> Text:
    """What a run is: its queue and priority, and its expiry when it has one."""
    text = f"{schedule.queue}, p{schedule.priority}"
    if schedule.expires_after_seconds is not None:
        text += f", expires {_span(schedule.expires_after_seconds)}"
    return Text(text)


def _span(seconds: float) -> str:
    """An expiry as ``_duration`` says it, but a fraction of a second as it is (not ``0s``)."""
    return f"{seconds:g}s" if seconds < 1 else _duration(seconds)


def _table(schedules: list[Schedule], now: datetime) -> Table:
    table = Table(title=f"Schedules: {len(schedules)}", title_justify="left")
    for column in (
        "schedule",
        "timing",
        "queue, priority",
        "next (local)",
        "next (UTC)",
        "last run (UTC), outcome",
        "last job",
        "state",
        "lag",
    ):
        table.add_column(column, overflow="fold" if column == "last job" else "ellipsis")
    for s in schedules:
        table.add_row(
            s.name,
            _timing(s),
            _job(s),
            _local(s.next_slot, s.timezone),
            _utc(s.next_slot),
            _last(s),
            s.last_job_id or "-",
            _state(s),
            _lag(s, now),
        )
    return table


@click.group()
def schedule() -> None:
    """List periodic schedules; pause, resume, trigger, edit, reset or delete one.

    \b
    Example:
      chokaq schedule list --database sqlite:///jobs.db
    """


@schedule.command("list")
@json_flag("a JSON array of the schedules (the Deck API's fields)")
@store_options
def schedule_list(as_json: bool, store: Store) -> None:
    """List every schedule: timing, next run (in its time zone and UTC), last run with its
    outcome and job, state (paused, orphaned, edited) and lag.

    \b
    Example:
      chokaq schedule list --app myproject.jobs:app
      chokaq schedule list --json | jq -r '.[] | select(.paused) | .name'
    """
    app = store.app(existing=True)
    now = datetime.now(UTC)
    schedules = run_with_app(app, lambda a: a.backend.schedules_list(now=now))
    if as_json:
        from ..views import schedule_json

        echo_json([schedule_json(s, now) for s in schedules])
        return
    console().print(_table(schedules, now))


def _details(schedule: Schedule, now: datetime) -> Table:
    s = schedule
    table = Table(show_header=False, title=f"schedule {s.name}", title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, str | Text]] = [
        ("type", s.type),
        ("queue", s.queue),
        ("priority", str(s.priority)),
        ("expires", _expiry(s)),
        ("timing", _timing(s)),
        ("kwargs", s.kwargs),
        ("misfire", s.misfire),
        ("overlap", "allowed" if s.overlap else "skip a slot while the last run is unfinished"),
        ("state", _state(s)),
    ]
    if s.edited_by is not None:
        declared = Timing.declared_of(s)
        rows += [
            ("edited at", f"{_utc(s.edited_at)} UTC"),
            ("declared", f"{declared.describe()}, kwargs {s.declared_kwargs}"),
        ]
    rows += [
        ("next run", _when(s)),
        ("lag", _lag(s, now)),
        ("last slot", f"{_utc(s.last_slot)} UTC"),
        ("last run", f"{_last(s)}" + (f" (job {s.last_job_id})" if s.last_job_id else "")),
        ("seen by a worker", f"{_utc(s.seen_at)} UTC"),
        ("last changed by", s.last_modified_by or "-"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _history(records: list[SlotRecord]) -> Table:
    table = Table(title="history, newest first", title_justify="left")
    for column in ("slot (UTC)", "outcome", "job", "detail", "recorded (UTC)"):
        table.add_column(column, overflow="fold" if column in ("job", "detail") else "ellipsis")
    for r in records:
        table.add_row(
            _utc(r.slot), str(r.outcome), r.job_id or "-", r.detail or "", _utc(r.recorded_at)
        )
    return table


@schedule.command("show")
@click.argument("name")
@click.option(
    "--history",
    "limit",
    default=20,
    show_default=True,
    type=click.IntRange(1, 100),
    help="How many of the newest slot records to show (100 are kept).",
)
@json_flag("one JSON object (the schedule and its history, as the Deck's API)")
@store_options
def schedule_show(
    name: str,
    limit: int,
    as_json: bool,
    store: Store,
) -> None:
    """Show one schedule and its recent history (slot, outcome, job, detail).

    \b
    Example:
      chokaq schedule show nightly-report --history 50
    """
    app = store.app(existing=True)
    now = datetime.now(UTC)

    async def read(app: App) -> tuple[Schedule | None, list[SlotRecord]]:
        found = await app.backend.schedule_get(name, now=now)
        if found is None:
            return None, []
        return found, await app.backend.schedule_history(found.name, limit=limit)

    found, records = run_with_app(app, read)
    if found is None:
        raise NotFoundError(f"no schedule named {name!r} (chokaq schedule list)")
    if as_json:
        from ..views import schedule_json, slot_json

        echo_json({**schedule_json(found, now), "history": [slot_json(r) for r in records]})
        return
    out = console()
    out.print(_details(found, now))
    out.print(_history(records) if records else "no history yet")


@contextmanager
def _options_named() -> Iterator[None]:
    """Name the option the operator typed in the seam's refusal (``--every``, not
    ``every_seconds``)."""
    try:
        yield
    except ValidationError as exc:
        option = _OPTIONS.get(exc.field)
        if option is None:
            raise
        raise ValidationError(option, exc.limit, value=exc.value) from exc


def _on_schedule(app: App, name: str, fn: Any) -> Any:
    """``run_with_app`` with the seam's unknown-name refusal worded for the CLI."""
    try:
        return run_with_app(app, fn)
    except NotFoundError:
        raise NotFoundError(
            f"no schedule named {name!r}; check the name (chokaq schedule list)"
        ) from None


def _next(s: Schedule) -> str:
    if s.paused:
        return "paused: no slot fires until it is resumed"
    return f"next run {_when(s)}"


def _pause_command(paused: bool) -> Any:
    verb = "pause" if paused else "resume"

    @click.argument("name")
    @actor_option
    @store_options
    @logged
    def command(
        name: str,
        actor: str | None,
        store: Store,
    ) -> None:
        app = store.app(existing=True)
        who = actor_name(actor)
        changed = _on_schedule(
            app, name, lambda a: a.backend.schedule_pause(name, actor=who, paused=paused)
        )
        log_admin("cli", f"schedules.{verb}", who, changed.name, 1)
        click.echo(f"schedule {changed.name} {verb}d; {_next(changed)}")

    effect = (
        "no slot fires until it is resumed; a running job finishes"
        if paused
        else "its slots count afresh from now: the ones that fell while paused are not run"
    )
    command.__doc__ = (
        f"{verb.capitalize()} schedule NAME ({effect}).\n\n"
        f"\b\nExample:\n  chokaq schedule {verb} nightly-report --database sqlite:///jobs.db\n"
    )
    return schedule.command(verb)(command)


_pause_command(True)
_pause_command(False)


@schedule.command("trigger")
@click.argument("name")
@actor_option
@store_options
@logged
def schedule_trigger(name: str, actor: str | None, store: Store) -> None:
    """Enqueue one run of schedule NAME now, outside its slots (paused or not); prints the job
    id. Its slots are unchanged; the history records who triggered it.

    \b
    Example:
      chokaq schedule trigger nightly-report --actor alice
    """
    app = store.app(existing=True)
    who = actor_name(actor)
    job_id = _on_schedule(app, name, lambda a: a.backend.schedule_trigger(name, actor=who))
    log_admin("cli", "schedules.trigger", who, name, 1, job_id=job_id)
    click.echo(job_id)


@schedule.command("set")
@click.argument("name")
@click.option("--cron", help="A 5-field cron expression ('0 7 * * 1-5'), in --timezone.")
@click.option("--every", type=float, help="An interval in seconds (instead of --cron).")
@click.option("--timezone", help="The IANA time zone of the cron expression ('Europe/Berlin').")
@click.option("--kwargs", help="The runs' keyword arguments, a JSON object ('{\"days\": 7}').")
@actor_option
@store_options
@logged
def schedule_set(
    name: str,
    cron: str | None,
    every: float | None,
    timezone: str | None,
    kwargs: str | None,
    actor: str | None,
    store: Store,
) -> None:
    """An operator's edit of schedule NAME: its timing (--cron or --every, --timezone) and/or
    kwargs; what is left out is unchanged. The edit wins over the code's declaration, across
    restarts and deploys, until 'chokaq schedule reset'; a new timing counts its slots from now.

    \b
    Example:
      chokaq schedule set nightly-report --cron '30 6 * * *' --timezone Europe/Berlin
    """
    if cron is not None and every is not None:
        raise click.UsageError("give --cron or --every, not both")
    given: dict[str, Any] = {
        "cron": cron,
        "every_seconds": every,
        "timezone": timezone,
        "kwargs": kwargs,
    }
    changes = {k: (UNSET if v is None else v) for k, v in given.items()}
    if all(v is UNSET for v in changes.values()):
        raise click.UsageError("nothing to change: give --cron, --every, --timezone or --kwargs")
    app = store.app(existing=True)
    who = actor_name(actor)
    with _options_named():
        changed = _on_schedule(
            app, name, lambda a: a.backend.schedule_edit(name, actor=who, **changes)
        )
    log_admin(
        "cli", "schedules.edit", who, changed.name, 1, **{k: v for k, v in given.items() if v}
    )
    click.echo(
        f"schedule {changed.name}: {_timing(changed)}, kwargs {changed.kwargs}; {_next(changed)}"
    )


@schedule.command("reset")
@click.argument("name")
@actor_option
@store_options
@logged
def schedule_reset(name: str, actor: str | None, store: Store) -> None:
    """Drop the operator's edit of schedule NAME: the code's declaration (timing and kwargs) is
    in force again, its slots counted from now.

    \b
    Example:
      chokaq schedule reset nightly-report
    """
    app = store.app(existing=True)
    who = actor_name(actor)
    changed = _on_schedule(app, name, lambda a: a.backend.schedule_reset(name, actor=who))
    log_admin("cli", "schedules.reset", who, changed.name, 1)
    click.echo(
        f"schedule {changed.name} back to its declaration: {_timing(changed)}, "
        f"kwargs {changed.kwargs}; {_next(changed)}"
    )


@schedule.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@actor_option
@store_options
@logged
def schedule_delete(
    name: str,
    yes: bool,
    actor: str | None,
    store: Store,
) -> None:
    """Delete orphaned schedule NAME and its history (asks first, unless --yes). Only an
    orphan can go: a schedule a running worker declares would come straight back; remove it
    from the code and stop those workers first, or pause it.

    \b
    Example:
      chokaq schedule delete old-report --yes
    """
    app = store.app(existing=True)
    who = actor_name(actor)

    async def confirm_then_delete(app: App) -> bool | None:
        found = await app.backend.schedule_get(name)
        if found is None:
            raise NotFoundError(
                f"no schedule named {name!r}; check the name (chokaq schedule list)"
            )
        if not found.orphaned:
            reason = "declared by a running worker"
            log_admin_refused("cli", "schedules.delete", who, reason, target=found.name)
            raise ValidationError(
                "name",
                f"schedule {found.name!r} is {reason}; remove it from the code and stop those "
                "workers first (or pause it: chokaq schedule pause)",
            )
        if not yes and not click.confirm(
            f"delete schedule {found.name!r} and its history?", default=False, err=True
        ):
            return None
        deleted: bool = await app.backend.schedule_delete(found.name, actor=who)
        return deleted

    deleted = run_with_app(app, confirm_then_delete)
    if deleted is None:
        click.echo("nothing done")
        raise SystemExit(1)
    if not deleted:
        raise NotFoundError(f"no schedule named {name!r}; check the name (chokaq schedule list)")
    log_admin("cli", "schedules.delete", who, name, 1)
    click.echo(f"schedule {name} deleted")


COMMANDS = [schedule]

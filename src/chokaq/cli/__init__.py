"""The command line: ``chokaq worker | migrate | demo | ...``.

Each command lives in its own module of this package; this one holds the group (turning our
errors into one clear line and an exit code) and re-exports ``load_app`` from ``options``.
It reaches storage only through the App and its backend.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import __version__
from ..errors import ChokaqError, ConfigurationError
from ..logs import LOG_LEVELS, set_default_level
from .options import load_app

__all__ = ["load_app", "main"]


class _Group(click.Group):
    """Turns our exceptions into one clear line on stderr and a non-zero exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigurationError as exc:
            click.secho(f"error: {_one_line(exc)}", fg="red", err=True)
            sys.exit(2)
        except ChokaqError as exc:
            click.secho(f"error: {_one_line(exc)}", fg="red", err=True)
            sys.exit(1)


def _one_line(exc: BaseException) -> str:
    """The first line of an error (drivers append SQL excerpts and carets on later lines)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
# The source's own version, not the installed distribution's metadata (an editable install's
# metadata keeps the version it was installed at).
@click.version_option(version=__version__, prog_name="chokaq")
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    envvar="CHOKAQ_LOG_LEVEL",
    show_envvar=True,
    help="Lowest level of chokaq's log lines on stderr (worker, deck, demo, audit lines of the "
    "commands that change something); default info.",
)
def main(log_level: str | None) -> None:
    """chokaq: background jobs on PostgreSQL or SQLite.

    \b
    Example:
      chokaq --log-level debug worker --app myproject.jobs:app --queues emails,default
    """
    # Set on every invocation (None restores INFO), so one run's level never leaks into the
    # next when the group is invoked more than once in a process (tests, embedding).
    set_default_level(log_level)


def _register() -> None:
    from . import (
        batches,
        bulk,
        config,
        deck,
        demo,
        dlq,
        durable,
        enqueue,
        jobs,
        limits,
        migrate,
        purge,
        schedules,
        stats,
        worker,
        workflows,
    )

    for module in (
        worker,
        migrate,
        deck,
        demo,
        enqueue,
        stats,
        limits,
        jobs,
        workflows,
        dlq,
        durable,
        bulk,
        batches,
        schedules,
        purge,
        config,
    ):
        for command in module.COMMANDS:
            main.add_command(command)


_register()

"""The command line: ``chokaq worker | migrate | demo | ...``.

Each command lives in its own module of this package; this one holds the group and the shared
helpers (loading ``--app module:attr``, turning our errors into one clear line and an exit code).
It reaches storage only through the App and its backend.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from ..app import App
from ..errors import ChokaqError, ConfigurationError

__all__ = ["load_app", "main"]


def load_app(spec: str | None, database: str | None = None) -> App:
    """Import ``module:attribute`` (an ``App`` or a callable returning one); with no spec, a bare
    App on ``--database`` / ``CHOKAQ_DATABASE_URL``."""
    if not spec:
        return App(database)
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected module:attribute, got {spec!r}", param_hint="--app")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(
            f"cannot import {module_name!r}: {exc}", param_hint="--app"
        ) from None
    try:
        target: Any = getattr(module, attr)
    except AttributeError:
        raise click.BadParameter(
            f"{module_name!r} has no attribute {attr!r}", param_hint="--app"
        ) from None
    if callable(target) and not isinstance(target, App):
        target = target()
    if not isinstance(target, App):
        raise click.BadParameter(f"{spec!r} is not a chokaq.App", param_hint="--app")
    if database:
        target.configure(url=database)
    return target


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
@click.version_option(package_name="chokaq")
def main() -> None:
    """chokaq: background jobs on PostgreSQL or SQLite.

    \b
    Example:
      chokaq worker --app myproject.jobs:app --queues emails,default --concurrency 20
    """


def _register() -> None:
    from . import config, deck, demo, dlq, enqueue, migrate, purge, stats, worker

    for module in (worker, migrate, deck, demo, enqueue, stats, dlq, purge, config):
        for command in module.COMMANDS:
            main.add_command(command)


_register()

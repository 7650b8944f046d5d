"""Run one chokaq command on ``settings.CHOKAQ_APP`` from a management command: ``run`` and the
``ChokaqCommand`` base each ``chokaq_<command>`` module's ``Command`` names its command on."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from chokaq.errors import ConfigurationError

Prepare = Callable[[str, Sequence[str]], None]


def run(command: str, args: Sequence[str], prepare: Prepare | None = None) -> None:
    """``chokaq <command> --app <settings.CHOKAQ_APP> <args...>``, after ``prepare(spec,
    args)`` when given; its exit status ends the management command (non-zero raises
    ``CommandError``)."""
    from chokaq.cli import main
    from chokaq.contrib.django import app_spec

    try:
        spec = app_spec()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    if prepare is not None:
        prepare(spec, args)
    try:
        main.main([command, "--app", spec, *args], prog_name=f"manage.py chokaq_{command}")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise CommandError(f"chokaq {command} exited with {exc.code}") from None


class ChokaqCommand(BaseCommand):
    """``manage.py chokaq_<command> [options]``: every option is handed to ``chokaq <command>``
    as given (a subclass sets ``chokaq_command`` and ``help``)."""

    chokaq_command: str
    prepare: Prepare | None = None  # called with the App's spec and the options before the run

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("options", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # Every option is chokaq's (Django's parser would refuse --burst and the like).
        run(self.chokaq_command, argv[2:], self.prepare)

    def handle(self, *args: Any, **options: Any) -> None:  # call_command("chokaq_<command>", ...)
        run(self.chokaq_command, options["options"], self.prepare)

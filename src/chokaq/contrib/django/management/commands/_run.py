"""Run one chokaq command on ``settings.CHOKAQ_APP`` from a management command."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.management.base import CommandError

from chokaq.errors import ConfigurationError


def run(command: str, args: Sequence[str]) -> None:
    """``chokaq <command> --app <settings.CHOKAQ_APP> <args...>``; its exit status ends the
    management command (non-zero raises ``CommandError``)."""
    from chokaq.cli import main
    from chokaq.contrib.django import app_spec

    try:
        spec = app_spec()
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    try:
        main.main([command, "--app", spec, *args], prog_name=f"manage.py chokaq_{command}")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise CommandError(f"chokaq {command} exited with {exc.code}") from None

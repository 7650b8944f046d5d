"""``manage.py chokaq_worker [chokaq worker options]``: ``chokaq worker`` on settings.CHOKAQ_APP."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand

from ._run import run


class Command(BaseCommand):
    help = "Run a chokaq worker for settings.CHOKAQ_APP (options: see `chokaq worker --help`)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("options", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # Every option is chokaq's (Django's parser would refuse --burst and the like).
        run("worker", argv[2:])

    def handle(self, *args: Any, **options: Any) -> None:  # call_command("chokaq_worker", ...)
        run("worker", options["options"])

"""``manage.py chokaq_migrate``: ``chokaq migrate`` on settings.CHOKAQ_APP's store."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand

from ._run import run


class Command(BaseCommand):
    help = "Apply chokaq's migrations to settings.CHOKAQ_APP's store (see `chokaq migrate`)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("options", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # Every option is chokaq's (Django's parser would refuse --burst and the like).
        run("migrate", argv[2:])

    def handle(self, *args: Any, **options: Any) -> None:  # call_command("chokaq_migrate", ...)
        run("migrate", options["options"])

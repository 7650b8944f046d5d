"""``manage.py chokaq_worker [chokaq worker options]``: ``chokaq worker`` on settings.CHOKAQ_APP."""

from __future__ import annotations

from ._run import ChokaqCommand


class Command(ChokaqCommand):
    help = "Run a chokaq worker for settings.CHOKAQ_APP (options: see `chokaq worker --help`)."
    chokaq_command = "worker"

"""``manage.py chokaq_migrate``: ``chokaq migrate`` on settings.CHOKAQ_APP's store."""

from __future__ import annotations

from ._run import ChokaqCommand


class Command(ChokaqCommand):
    help = "Apply chokaq's migrations to settings.CHOKAQ_APP's store (see `chokaq migrate`)."
    chokaq_command = "migrate"

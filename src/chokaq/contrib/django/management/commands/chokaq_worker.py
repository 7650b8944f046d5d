"""``manage.py chokaq_worker [chokaq worker options]``: ``chokaq worker`` on settings.CHOKAQ_APP,
running the project's Django tasks too (``chokaq.contrib.django.runner``)."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.management.base import CommandError

from ._run import ChokaqCommand


def serve_tasks(spec: str, args: Sequence[str]) -> None:
    """Register the installed apps' Django tasks on the App the worker is about to load;
    ``--processes`` is refused when there are any (its children are ``chokaq worker``
    processes, without Django: they would not run them)."""
    from chokaq.cli.options import load_app
    from chokaq.contrib.django.runner import serve

    served = serve(load_app(spec))
    if served and any(arg == "--processes" or arg.startswith("--processes=") for arg in args):
        raise CommandError(
            "--processes: its worker processes run without Django, so they would not run "
            f"this project's {len(served)} Django tasks; start several chokaq_worker instead"
        )


class Command(ChokaqCommand):
    help = (
        "Run a chokaq worker for settings.CHOKAQ_APP and the project's Django tasks "
        "(options: see `chokaq worker --help`)."
    )
    chokaq_command = "worker"
    prepare = staticmethod(serve_tasks)

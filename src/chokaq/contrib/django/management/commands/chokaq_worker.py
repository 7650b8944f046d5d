"""``manage.py chokaq_worker [chokaq worker options]``: ``chokaq worker`` on settings.CHOKAQ_APP,
running the project's Django tasks too (``chokaq.contrib.django.runner``)."""

from __future__ import annotations

from ._run import ChokaqCommand


def serve_tasks(spec: str) -> None:
    """Register the installed apps' Django tasks on the App the worker is about to load."""
    from chokaq.cli.options import load_app
    from chokaq.contrib.django.runner import serve

    serve(load_app(spec))


class Command(ChokaqCommand):
    help = (
        "Run a chokaq worker for settings.CHOKAQ_APP and the project's Django tasks "
        "(options: see `chokaq worker --help`)."
    )
    chokaq_command = "worker"
    prepare = staticmethod(serve_tasks)

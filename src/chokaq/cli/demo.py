"""``chokaq demo``: a worker, The Deck and a live sample workload on one database."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import signal
from pathlib import Path

import click

from ..errors import ConfigurationError
from ..logs import configure_logging
from ..storage import check_url

__all__ = ["COMMANDS"]


def _postgres(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--postgres``'s URL: an empty one is a usage error, not a quiet fall back to SQLite."""
    try:
        return None if value is None else check_url("--postgres", value)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc).removeprefix("--postgres: ")) from None


async def _run_demo(url: str, host: str, port: int, with_deck: bool) -> None:
    from ..demo import build_demo_app, produce

    app = build_demo_app(url)
    await app.open()
    stop = asyncio.Event()
    worker = app.create_worker()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        stop.set()
        worker.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    tasks = [asyncio.create_task(worker.run()), asyncio.create_task(produce(app, stop=stop))]
    server = None
    if with_deck:
        try:
            deck = importlib.import_module("chokaq.deck")
        except ImportError:
            deck = None
        build_server = getattr(deck, "build_server", None)
        if build_server is not None:
            from ..deck.hosts import browse_url

            server = build_server(app, host=host, port=port, demo=True)
            tasks.append(asyncio.create_task(server.serve()))
            click.secho(f"The Deck: {browse_url(host, port)}", fg="green", bold=True)
    click.secho(f"demo running on {url} - press Ctrl-C to stop", fg="cyan")
    await stop.wait()
    if server is not None:
        server.should_exit = True
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=40)
    await app.close()
    click.echo("demo stopped")


@click.command()
@click.option(
    "--postgres",
    "postgres_url",
    callback=_postgres,
    help="Run on this PostgreSQL URL instead of SQLite.",
)
@click.option(
    "--database",
    "db_path",
    default="chokaq-demo.db",
    show_default=True,
    help="The SQLite file to create or reuse.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The Deck's address.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--no-deck", is_flag=True, help="Run the worker and workload only.")
def demo(postgres_url: str | None, db_path: str, host: str, port: int, no_deck: bool) -> None:
    """Run a worker, The Deck and a live sample workload.

    \b
    Example:
      chokaq demo                      # SQLite file chokaq-demo.db, The Deck on :8000
      chokaq demo --postgres postgresql://postgres@127.0.0.1/test
    """
    configure_logging()
    url = postgres_url or f"sqlite:///{Path(db_path).resolve()}"
    asyncio.run(_run_demo(url, host, port, not no_deck))


COMMANDS = [demo]

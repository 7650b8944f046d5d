"""``chokaq deck``: serve The Deck (the web dashboard) on its own."""

from __future__ import annotations

import os
import sys

import click

from ..errors import ConfigurationError
from ..logs import configure_logging
from .options import Store, store_options

__all__ = ["COMMANDS"]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--root-path", default="", help="URL prefix when served behind a proxy.")
@click.option(
    "--proxy-headers",
    is_flag=True,
    help="Trust X-Forwarded-Proto/-For from the --trusted-proxy addresses (HTTPS cookies behind "
    "a TLS proxy; the login throttle tells clients apart by their own addresses).",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDRESS",
    help="An address or network (10.0.0.0/8) whose X-Forwarded-* headers --proxy-headers "
    "trusts (repeatable; default 127.0.0.1; '*' trusts every client).",
)
@click.option(
    "--public-metrics",
    is_flag=True,
    help="Serve /metrics and /health/ready without the Deck's login (they name queues; by "
    "default they take the same token or user as the Deck). /health/live never asks.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name to answer, such as a reverse proxy's (repeatable; *.example.com matches "
    "subdomains). Beside these it answers localhost, 127.0.0.1, [::1], the bound address and "
    "the address a request arrives on; others get 400.",
)
@store_options
def deck(
    host: str,
    port: int,
    root_path: str,
    proxy_headers: bool,
    trusted_proxies: tuple[str, ...],
    public_metrics: bool,
    allowed_hosts: tuple[str, ...],
    store: Store,
) -> None:
    """Serve The Deck. Outside loopback it needs CHOKAQ_DECK_TOKEN, CHOKAQ_DECK_READONLY_TOKEN
    or CHOKAQ_DECK_USERS (see docs/deck.md). It also serves /metrics (Prometheus),
    /health/live and /health/ready (see docs/observability.md).

    \b
    Environment:
      CHOKAQ_DECK_TOKEN           the admin token (bearer or login)
      CHOKAQ_DECK_READONLY_TOKEN  a read-only token
      CHOKAQ_DECK_USERS           users as name:password:role,... (role admin or readonly)
      CHOKAQ_DECK_SECRET          the session signing key (random per process when unset)
      CHOKAQ_DECK_ALLOWED_HOSTS   Host names to answer, comma-separated (as --allowed-host)

    \b
    Example:
      CHOKAQ_DECK_TOKEN=s3cret chokaq deck --database postgresql://app@db/app --host 0.0.0.0 \
        --allowed-host deck.example.com
    """
    from .. import deck as deck_module
    from ..deck.hosts import browse_url, is_wildcard

    configure_logging()
    app = store.app()
    click.secho(f"The Deck: {browse_url(host, port)}", fg="green", bold=True)
    if is_wildcard(host) and not allowed_hosts and not os.environ.get("CHOKAQ_DECK_ALLOWED_HOSTS"):
        click.secho(
            f"Listening on {host}, it answers the Host names localhost, 127.0.0.1, [::1] and "
            "the address a request arrives on: reached by any other name (a reverse proxy's, "
            "a DNS name), pass --allowed-host NAME or set CHOKAQ_DECK_ALLOWED_HOSTS.",
            fg="yellow",
            err=True,
        )
    deck_module.serve(
        app,
        host=host,
        port=port,
        root_path=root_path,
        proxy_headers=proxy_headers,
        trusted_proxies=trusted_proxies or ("127.0.0.1",),
        public_metrics=public_metrics,
        allowed_hosts=allowed_hosts,
    )


@click.command("deck-password")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the password from stdin.")
def deck_password(from_stdin: bool) -> None:
    """Print a bcrypt hash of a password for CHOKAQ_DECK_USERS (name:HASH:role), so that the
    environment holds no password in plain text. Asks twice unless --stdin.

    \b
    Example:
      CHOKAQ_DECK_USERS="alice:$(chokaq deck-password):admin" chokaq deck
    """
    from ..deck.auth import hash_password

    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    try:
        click.echo(hash_password(password))
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="password") from None


COMMANDS = [deck, deck_password]

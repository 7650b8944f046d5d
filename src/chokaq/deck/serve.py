"""Running The Deck on its own: ``chokaq deck --app module:app`` calls ``serve``.

Owns the standalone process: reading credentials from the environment, refusing to expose an
unauthenticated Deck beyond loopback, and running uvicorn. It must not hold routes or SQL.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
from collections.abc import Sequence
from typing import Any

from ..app import App
from ..errors import ConfigurationError
from .app import create_deck
from .auth import Authorizer, credentials_from_env
from .hosts import LOOPBACK_NAMES, bound_names

__all__ = ["build_server", "is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; every other bind address is exposed."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def build_server(
    app: App,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    authorizer: Authorizer | None = None,
    root_path: str = "",
    proxy_headers: bool = False,
    log_level: str = "info",
    demo: bool = False,
    public_metrics: bool = False,
    allowed_hosts: Sequence[str] = (),
    trusted_proxies: Sequence[str] = ("127.0.0.1",),
) -> Any:
    """A ``uvicorn.Server`` for the Deck of ``app``, not started (``await server.serve()``).

    Authentication comes from ``authorizer`` or the environment: ``CHOKAQ_DECK_TOKEN`` (admin
    bearer/login token), ``CHOKAQ_DECK_READONLY_TOKEN``, ``CHOKAQ_DECK_USERS``
    (``"alice:secret:admin,bob:pw:readonly"``) and ``CHOKAQ_DECK_SECRET`` (session signing key;
    random per process when unset). Bound to anything but loopback without any of these, it
    raises ``ConfigurationError`` instead of starting. ``proxy_headers`` trusts
    X-Forwarded-Proto and X-Forwarded-For so cookies get ``Secure`` behind TLS, from the
    addresses of ``trusted_proxies`` only (default the proxy on this machine, 127.0.0.1; a
    network such as ``10.0.0.0/8`` or ``*`` for any, which lets every client pick its own
    address and scheme). ``demo`` only
    changes the page title. ``public_metrics`` serves ``/metrics`` and ``/health/ready``
    without the login (``/health/live`` never asks for one).

    ``allowed_hosts`` (also ``CHOKAQ_DECK_ALLOWED_HOSTS``, comma-separated) are the ``Host``
    names it answers, beside the loopback names (``localhost``, ``127.0.0.1``, ``[::1]``), the
    bound address unless it is a wildcard (``0.0.0.0``, ``::``) and the address a request
    arrived on. Every other name gets a 400, with authentication or without: a page on another
    site that points its own name at this machine would otherwise reach the login form, the
    page and the API as that site. So a Deck reached through a reverse proxy that passes its
    own name (nginx's ``proxy_set_header Host $host``) needs that name given.
    """
    import uvicorn

    credentials = credentials_from_env()
    if authorizer is None and not credentials.configured and not is_loopback(host):
        raise ConfigurationError(
            f"deck: refusing to listen on {host} without authentication; set "
            "CHOKAQ_DECK_TOKEN, CHOKAQ_DECK_READONLY_TOKEN or CHOKAQ_DECK_USERS "
            "(or bind to 127.0.0.1)"
        )
    hosts = list(allowed_hosts) + [
        name.strip()
        for name in os.environ.get("CHOKAQ_DECK_ALLOWED_HOSTS", "").split(",")
        if name.strip()
    ]
    hosts += [*LOOPBACK_NAMES, *bound_names(host)]  # a browser or check on this machine
    deck = create_deck(
        app,
        allowed_hosts=hosts,
        authorizer=authorizer,
        credentials=credentials if credentials.configured else None,
        session_secret=os.environ.get("CHOKAQ_DECK_SECRET") or None,
        title="chokaq demo" if demo else "chokaq",
        public_metrics=public_metrics,
    )
    deck.state.listen = {"host": host, "port": port}
    config = uvicorn.Config(
        deck,
        host=host,
        port=port,
        root_path=root_path,
        proxy_headers=proxy_headers,
        forwarded_allow_ips=list(trusted_proxies) if proxy_headers else None,
        log_level=log_level,
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    return uvicorn.Server(config)


def serve(app: App, **options: Any) -> None:
    """Serve the Deck of ``app`` until interrupted (blocking); options as ``build_server``.
    Closes ``app`` on the way out."""

    async def run() -> None:
        server = build_server(app, **options)
        try:
            await server.serve()
        finally:
            await app.close()

    asyncio.run(run())

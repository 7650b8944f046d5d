"""chokaq in a FastAPI (or any Starlette) application: the App's lifespan, enqueues that join
the request's own database transaction, and The Deck mounted safely.

Owns only the wiring between a web app's request and lifespan and chokaq's public API: it
opens and closes the ``App`` with the web app, hands handlers the caller's connection through
``handle.options(connection=...)``, and refuses to mount an unguarded Deck anywhere but on
loopback. It holds no SQL and no job logic.

    app = App("postgresql://app@db/app")
    api = FastAPI(lifespan=lifespan(app))

    async def db() -> AsyncIterator[psycopg.AsyncConnection]:
        async with pool.connection() as conn:   # commits when the request succeeds
            yield conn

    Jobs = Annotated[Enqueuer, Depends(enqueuer(db))]

    @api.post("/signup")
    async def signup(email: str, conn: Annotated[AsyncConnection, Depends(db)], jobs: Jobs):
        await conn.execute("INSERT INTO users (email) VALUES (%s)", (email,))
        await jobs.enqueue(send_welcome, email=email)   # committed with the row, or not at all

    mount_deck(api, app, credentials=credentials_from_env())
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..app import App
from ..deck import Authorizer, Credentials, create_deck
from ..deck.hosts import LOOPBACK_NAMES
from ..deck.serve import is_loopback
from ..errors import ConfigurationError
from ..handles import JobHandle, JobId

__all__ = ["Enqueuer", "enqueuer", "lifespan", "mount_deck"]

P = ParamSpec("P")
R = TypeVar("R")


def lifespan(
    app: App, inner: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] | None = None
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """A lifespan for ``FastAPI(lifespan=...)`` that opens ``app`` at startup (its pools, and
    on SQLite its migrations) and closes it at shutdown; ``inner``, the web app's own lifespan,
    runs inside it, so the App is open for the whole of it."""

    @contextlib.asynccontextmanager
    async def run(web: Any) -> AsyncIterator[None]:
        async with app:
            if inner is None:
                yield
            else:
                async with inner(web):
                    yield

    return run


class Enqueuer:
    """Enqueues on one request's database connection: each job is written by the request's
    own transaction, so it exists if and only if the request's writes commit (PostgreSQL,
    psycopg 3). Get one per request with ``Depends(enqueuer(your_connection_dependency))``."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    async def enqueue(self, handle: JobHandle[P, R], /, *args: P.args, **kwargs: P.kwargs) -> JobId:
        """``handle.enqueue(...)`` in the request's transaction (typed by the handler)."""
        return await handle.options(connection=self.connection).enqueue(*args, **kwargs)


def enqueuer(
    connection: Callable[..., Any],
) -> Callable[..., Awaitable[Enqueuer]]:
    """A FastAPI dependency giving an ``Enqueuer`` on the connection ``connection`` (itself a
    dependency) yields. FastAPI resolves a dependency once per request, so the route's own
    ``Depends(connection)`` and the enqueuer's are the same connection and transaction."""
    from fastapi import Depends  # the framework is the caller's: imported when used

    async def dependency(conn: Any = Depends(connection)) -> Enqueuer:  # noqa: B008
        return Enqueuer(conn)

    return dependency


def mount_deck(
    web: Starlette,
    app: App,
    *,
    path: str = "/deck",
    authorizer: Authorizer | None = None,
    credentials: Credentials | None = None,
    loopback_only: bool = False,
    **deck_options: Any,
) -> None:
    """Mount The Deck on ``web`` at ``path``, guarded: by ``authorizer`` (your own login:
    ``request -> Role | Principal | None``), or by ``credentials`` (the Deck's users and
    tokens). Without either it refuses (``ConfigurationError``), unless ``loopback_only=True``
    says that every visitor may be an admin because only this machine can reach it: then a
    request that reached the server on any other address than loopback is refused with 403,
    and one for any other ``Host`` than ``localhost``, ``127.0.0.1`` or ``[::1]`` (or the
    ``allowed_hosts=`` given) with 400: a page of another site that points its own name at
    127.0.0.1 comes from loopback too (DNS rebinding).

    A guarded Deck checks no ``Host`` unless ``allowed_hosts=`` is given: ``web`` is expected
    to check it for all its routes (Starlette's ``TrustedHostMiddleware``)."""
    guarded = authorizer is not None or (credentials is not None and credentials.configured)
    if not guarded and not loopback_only:
        raise ConfigurationError(
            "mount_deck: The Deck makes every visitor an admin without an authorizer or "
            "credentials; give one of them, or loopback_only=True for a server bound to "
            "127.0.0.1 only"
        )
    if not guarded:
        given = deck_options.pop("allowed_hosts", None) or ()
        deck_options["allowed_hosts"] = [*LOOPBACK_NAMES, *given]
    deck: ASGIApp = create_deck(app, authorizer=authorizer, credentials=credentials, **deck_options)
    if not guarded:
        deck = _LoopbackOnly(deck)
    web.mount(path, deck)


class _LoopbackOnly:
    """Refuses every HTTP request that did not reach the server on a loopback address (the
    ASGI ``server`` the connection came in on; a proxy in front makes it the proxy's)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            server, client = scope.get("server"), scope.get("client")
            hosts = [str(end[0]) for end in (server, client) if end]
            if len(hosts) < 2 or not all(is_loopback(host) for host in hosts):
                response = PlainTextResponse(
                    "The Deck is mounted without authentication and serves loopback only",
                    status_code=403,
                )
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)

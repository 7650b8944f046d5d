"""The Deck's ASGI application: the page, the login form, the live event stream, the API routes
and the security headers, assembled by ``create_deck``.

It owns HTTP concerns (routing, cookies, headers, the SSE loop); data comes from the API module's
handlers, which reach storage only through the backend. It must not hold SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from logging import WARNING
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..app import App
from ..errors import ChokaqError
from ..http import deck_routes
from ..logs import Event, log_event
from . import api, audit, batches, bulk, lag, limits, series
from .auth import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    SESSION_SECONDS,
    Authorizer,
    Credentials,
    Revocations,
    SessionSigner,
    new_csrf_token,
    origin_ok,
)
from .hosts import AllowedHosts, HostCheck
from .state import DeckState
from .throttle import TOKEN, LoginThrottle, client_of, user_key

__all__ = ["DeckState", "create_deck"]

HERE = Path(__file__).parent
# Every module of the page's script, named in the page's head as modulepreload links: the
# browser fetches them all at once instead of one level of imports after another.
MODULES = tuple(sorted(p.name for p in (HERE / "static" / "js").glob("*.js")))
# Every API operation: the core ones, then the limits', why jobs wait, bulk actions, the
# chart's and the batch handlers' (modules of their own).
ROUTES: tuple[api.ApiRoute, ...] = (
    api.ROUTES + limits.ROUTES + lag.ROUTES + bulk.ROUTES + series.ROUTES + batches.ROUTES
)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)


class SecurityHeaders:
    """Adds CSP and the usual hardening headers to every response of the Deck."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _base(request: Request) -> str:
    """The mount prefix the Deck is served under ('' when at the root)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _cookie_path(request: Request) -> str:
    return _base(request) + "/" if _base(request) else "/"


def _set_cookie(
    response: Response, request: Request, name: str, value: str, *, max_age: int | None = None
) -> None:
    """Set one of the Deck's cookies, all alike: HTTP-only, same-site strict, secure when served
    over HTTPS, and scoped to the Deck's path."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=_cookie_path(request),
    )


async def page(request: Request) -> Response:
    state: DeckState = request.app.state.deck
    principal = await state.principal(request)
    if principal is None:
        if state.credentials is not None:
            return RedirectResponse(_base(request) + "/login", status_code=303)
        return JSONResponse({"error": "authentication required"}, status_code=401)
    csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
    templates: Jinja2Templates = request.app.state.templates
    response = templates.TemplateResponse(
        request,
        "index.html",
        {
            "base": _base(request),
            "csrf": csrf,
            "user": principal.name,
            "role": principal.role.value,
            "title": state.title,
            # The DLQ's reason filter, from the enum itself (one list, never a copy).
            "reasons": " ".join(api.REASONS),
            "modules": MODULES,
        },
    )
    _set_cookie(response, request, CSRF_COOKIE, csrf)
    return response


def _login_page(
    request: Request, state: DeckState, *, error: str | None = None, status_code: int = 200
) -> Response:
    """The login form (a token field, a user and password, or both, as configured), with
    ``error`` above it when a login was refused."""
    templates: Jinja2Templates = request.app.state.templates
    creds = state.credentials
    return templates.TemplateResponse(
        request,
        "login.html",
        {
            "base": _base(request),
            "error": error,
            "title": state.title,
            "tokens": bool(creds and (creds.admin_token or creds.readonly_token)),
            "users": bool(creds and creds.users),
        },
        status_code=status_code,
    )


async def login_form(request: Request) -> Response:
    state: DeckState = request.app.state.deck
    return _login_page(request, state)


async def login_submit(request: Request) -> Response:
    state: DeckState = request.app.state.deck
    creds = state.credentials
    if not origin_ok(request):  # a login forced from another site (into the attacker's account)
        return JSONResponse({"error": "cross-site request refused"}, status_code=403)
    form = await request.form()
    principal = None
    token, name, password = (str(form.get(k) or "") for k in ("token", "username", "password"))
    account, client = TOKEN if token else user_key(name), client_of(request)
    wait = state.throttle.retry_after(account, client)
    error, status = "Wrong credentials.", 401
    if wait > 0:
        error, status = f"Too many failed logins: try again in {math.ceil(wait)} s.", 429
    elif creds is not None:
        if token:
            principal = creds.check_token(token)
        elif name:
            principal = creds.check_user(name, password)
        if principal is None:
            state.throttle.failed(account, client)
        else:
            state.throttle.succeeded(account, client)
    if principal is None:
        refused = _login_page(request, state, error=error, status_code=status)
        if wait > 0:
            refused.headers["retry-after"] = str(math.ceil(wait))
        return refused
    assert creds is not None  # a principal came from them
    credential = creds.credential(principal, state.signer) or ""
    response = RedirectResponse(_base(request) + "/", status_code=303)
    signed = state.signer.sign(principal, credential=credential)
    _set_cookie(response, request, SESSION_COOKIE, signed, max_age=SESSION_SECONDS)
    return response


async def logout(request: Request) -> Response:
    if not origin_ok(request):
        return JSONResponse({"error": "cross-site request refused"}, status_code=403)
    state: DeckState = request.app.state.deck
    cookie = request.cookies.get(SESSION_COOKIE)
    session = state.signer.session(cookie) if cookie else None
    if session is not None:
        state.revoked.revoke(session)  # the cookie no longer works, wherever it was copied
    response = RedirectResponse(_base(request) + "/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=_cookie_path(request))
    return response


async def openapi_json(request: Request) -> Response:
    return JSONResponse(api.openapi(_base(request), ROUTES))


async def events(request: Request) -> Response:
    """Server-sent events: a full snapshot every poll interval (only when it changed, else a
    keep-alive comment). ``EventSource`` reconnects by itself; the page reloads its data on
    every (re)connect, so a dropped connection is reconciled with storage."""
    state: DeckState = request.app.state.deck
    if await state.principal(request) is None:
        return JSONResponse({"error": "authentication required"}, status_code=401)
    await state.ensure_open()

    async def stream() -> AsyncIterator[str]:
        last = ""
        yield "retry: 1000\n\n"
        while True:
            try:
                data = json.dumps(await state.live_snapshot(), separators=(",", ":"))
            except ChokaqError as exc:
                yield f"event: storage-error\ndata: {json.dumps(str(exc))}\n\n"
            else:
                # The timestamp changes every time; compare the rest to skip idle repeats.
                body = data.split(",", 1)[1]
                if body != last:
                    yield f"event: snapshot\ndata: {data}\n\n"
                else:
                    yield "event: tick\ndata: {}\n\n"
                last = body
            await asyncio.sleep(state.poll_interval_seconds)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
    )


def _routes(app: App, state: DeckState, public_metrics: bool) -> list[BaseRoute]:
    async def signed_in(request: Request) -> bool:
        return await state.principal(request) is not None

    routes: list[BaseRoute] = [
        Route("/", page),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login_submit, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/api/openapi.json", openapi_json),
        Route("/api/events", events),
    ]
    routes += [Route(r.path, api.endpoint(r), methods=[r.method]) for r in ROUTES]
    # /metrics and /health/ready name queues and schedules: behind the Deck's own login (any
    # role; a scraper sends the read-only token as a bearer) unless the operator opened them.
    routes += deck_routes(app, guard=None if public_metrics else signed_in)
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    return routes


async def _not_found(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "not found"}, status_code=404)


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": "method not allowed"}, status_code=405)


async def _server_error(request: Request, exc: Exception) -> Response:
    # The API's endpoints answer their own 500s; this catches the page, login and stream.
    audit.failed(request.method, request.url.path, exc)
    return JSONResponse({"error": "internal error"}, status_code=500)


def create_deck(
    app: App,
    *,
    authorizer: Authorizer | None = None,
    credentials: Credentials | None = None,
    session_secret: str | None = None,
    poll_interval_seconds: float = 0.5,
    title: str = "chokaq",
    close_app_on_shutdown: bool = False,
    public_metrics: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    login_throttle: LoginThrottle | None = None,
) -> Starlette:
    """The Deck as an ASGI application, ready to serve or to mount under a prefix.

    ``authorizer(request)`` returns ``Role.ADMIN``, ``Role.READONLY``, a ``Principal`` (name
    recorded as actor plus role) or ``None`` (refused); it may be async. Without one, every
    request is an admin: the host application must guard the mount. ``credentials`` (tokens and
    users, see ``auth.credentials_from_env``) enable the login form and the built-in authorizer
    when no ``authorizer`` is given. ``poll_interval_seconds`` is how often the live stream reads
    storage (default 0.5 s). The chokaq ``app`` is opened on first use.

    It also serves ``/metrics`` (Prometheus text, read from the database), ``/health/live`` and
    ``/health/ready`` (``chokaq.http.deck_routes``). ``/health/live`` answers everyone; the
    other two ask for the same login as the Deck (any role) unless ``public_metrics`` is true
    (default false), for a scraper on a private network that cannot send a token.

    ``allowed_hosts`` (names and addresses, ``*.example.com`` for subdomains, ``*`` for any;
    every port) are the only ``Host`` names it answers, beside the address a request arrived
    on; others get a 400 saying how to allow them, and the first refusal of each name is
    logged (event 7004). That is against DNS rebinding, where another site's page reaches the
    Deck through a name of its own. ``None`` (the default) checks no ``Host``: the application
    that mounts the Deck checks it (Starlette's ``TrustedHostMiddleware``, Django's
    ``ALLOWED_HOSTS``); ``chokaq deck`` always passes a list. ``/health/live`` answers every
    ``Host``. A bad entry raises ``ConfigurationError``. Every mutation, login and logout also
    refuses an ``Origin`` of another host (403).

    ``login_throttle`` counts the failed logins of ``credentials`` (the form, Basic and Bearer)
    and refuses a client that keeps failing (429); default ``LoginThrottle()``, see
    ``chokaq.deck.throttle`` for its bounds.
    """
    hosts = None if allowed_hosts is None else AllowedHosts(allowed_hosts)
    signer = SessionSigner(session_secret)
    if authorizer is None and (credentials is None or not credentials.configured):
        log_event(
            Event.DECK_UNGUARDED,
            "The Deck has no authorizer and no credentials: every visitor is an admin, so "
            "whatever serves it must guard it (chokaq deck binds such a Deck to loopback only)",
            level=WARNING,
        )
    throttle, revoked = login_throttle or LoginThrottle(), Revocations()
    if authorizer is None and credentials is not None and credentials.configured:
        from .auth import env_authorizer

        authorizer = env_authorizer(credentials, signer, throttle, revoked)
        plain = credentials.plain_text_users
        if plain:
            log_event(
                Event.DECK_PLAIN_PASSWORDS,
                "CHOKAQ_DECK_USERS holds plain-text passwords; store bcrypt hashes instead "
                "(chokaq deck-password prints one)",
                level=WARNING,
                users=",".join(plain),
            )
    state = DeckState(
        app, authorizer, signer, credentials, poll_interval_seconds, title, throttle, revoked
    )

    @asynccontextmanager
    async def lifespan(deck: Starlette) -> AsyncIterator[None]:
        # Runs when a server (or a host app forwarding its lifespan) starts the Deck;
        # ``build_server`` records where it listens.
        listen: dict[str, Any] = getattr(deck.state, "listen", {})
        log_event(
            Event.DECK_STARTED,
            "the Deck is serving",
            host=listen.get("host"),
            port=listen.get("port"),
            auth=authorizer is not None,
            hosts="(not checked)" if hosts is None else ",".join(hosts.names),
        )
        try:
            yield
        finally:
            if close_app_on_shutdown:
                with contextlib.suppress(Exception):
                    await app.close()

    deck = Starlette(
        routes=_routes(app, state, public_metrics),
        lifespan=lifespan,
        exception_handlers={404: _not_found, 405: _method_not_allowed, 500: _server_error},
    )
    if hosts is not None:
        deck.add_middleware(HostCheck, allowed=hosts)
    deck.add_middleware(SecurityHeaders)  # outermost: a refused Host gets the headers too
    deck.state.deck = state
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    deck.state.templates = Jinja2Templates(env=env)
    return deck

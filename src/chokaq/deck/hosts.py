"""Which ``Host`` names The Deck answers, against DNS rebinding: a page of another site can point
its own name at this machine's address, and the victim's browser then reaches the Deck as that
site, reading what it answers; the request still carries the attacker's name in ``Host``, so a
Deck answers only the names it was told are its own.

Owns those names (loopback, the bound address, the configured ones and ``*.example.com``
patterns), how a ``Host`` header is read and compared, and the middleware that refuses the rest
with a 400 and a log line saying how to allow a name. It must not touch routes, credentials or
storage.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from logging import WARNING

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from ..errors import ConfigurationError
from ..logs import Event, log_event

__all__ = [
    "LOOPBACK_NAMES",
    "AllowedHosts",
    "HostCheck",
    "bound_names",
    "browse_url",
    "is_wildcard",
]

# The names every standalone Deck answers: a browser on this machine, a health check.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# Answered under any Host: it says only that the process answers (a load balancer's or
# Kubernetes' probe may send no Host, or the node's address).
EXEMPT_PATHS = frozenset({"/health/live"})
# A host name, an IPv4 address or a bracketed IPv6 one, and an optional port (RFC 9110's Host;
# an underscore is let through, as container names hold them).
_HOST = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>\d{1,5}))?"
)
# Refused names are logged once each, up to this many per process: a scan must not flood the log.
_LOGGED_MAX = 64


def parse_host(text: str) -> tuple[str, str | None] | None:
    """``(host, port)`` of a ``Host`` header as compared: lower case, without the trailing dot
    of a fully qualified name, an IP address in its short form (IPv6 in brackets); None when
    ``text`` is no host."""
    match = _HOST.fullmatch(text)
    if match is None:
        return None
    raw = match["v6"] or match["name"]
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        if match["v6"]:
            return None
        name = raw.lower().removesuffix(".")
        return (name, match["port"]) if name and not name.startswith(".") else None
    if match["name"] and address.version == 6:
        return None  # an IPv6 address must be bracketed
    return _address_name(address), match["port"]


def _address_name(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # a dual-stack socket's view of an IPv4 client
            return str(address.ipv4_mapped)
        return f"[{address}]"
    return str(address)


def is_wildcard(host: str) -> bool:
    """True for a bind address that listens on every interface (``0.0.0.0``, ``::``, empty)."""
    if not host.strip("[]"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def bound_names(host: str) -> list[str]:
    """The ``Host`` name of the address the Deck is bound to, when it is one address (a name
    or an IP; IPv6 bracketed), else none: a wildcard is no name a browser would send."""
    if is_wildcard(host):
        return []
    try:
        return [_address_name(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        return [host.lower().removesuffix(".")]


def browse_url(host: str, port: int) -> str:
    """The URL to open for a Deck listening on ``host``: loopback for a wildcard bind (a browser
    sent to ``0.0.0.0`` would name a host the Deck does not answer)."""
    [name] = bound_names(host) or ["127.0.0.1"]
    return f"http://{name}:{port}/"


class AllowedHosts:
    """The names a Deck answers: exact names and addresses, ``*.example.com`` (its subdomains,
    not ``example.com`` itself) and ``*`` (every name: for a proxy that checks ``Host`` itself).
    Every port of a name is answered. Raises ``ConfigurationError`` naming an entry that could
    never match (a port, a scheme, a ``*`` anywhere but in front)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(dict.fromkeys(_pattern(name) for name in names))
        self.any = "*" in self.names
        self._exact = frozenset(n for n in self.names if not n.startswith("*"))
        self._suffixes = tuple(n[1:] for n in self.names if n.startswith("*."))

    def answers(self, host: str, arrived_on: str | None = None) -> bool:
        """Whether a request for ``host`` (as ``parse_host`` gives it) is answered. The address
        the request ``arrived_on`` is answered as a ``Host`` too: a rebinding page's request
        names the attacker's domain, never an address, and a probe often names the address."""
        return (
            self.any
            or host in self._exact
            or host.endswith(self._suffixes)
            or (arrived_on is not None and host == arrived_on)
        )


def _pattern(text: str) -> str:
    entry = text.strip()
    if entry == "*":
        return entry
    wildcard = entry.startswith("*.")
    body = entry[2:] if wildcard else entry
    if not wildcard and ":" in body and not body.startswith("["):
        body = f"[{body}]"  # a bare IPv6 address, as --host takes it
    parsed = parse_host(body)
    if parsed is None or parsed[1] is not None or (wildcard and parsed[0].startswith("[")):
        raise ConfigurationError(
            f"allowed host {text!r}: give a name or address without scheme or port (every port "
            "is answered), such as deck.example.com, *.example.com, 10.0.0.5 or [fd00::5]"
        )
    return ("*." if wildcard else "") + parsed[0]


class HostCheck:
    """Answers HTTP requests whose ``Host`` is one of ``allowed`` (or the address the request
    arrived on); every other one gets a 400 naming the refused host and how to allow it, and
    the first refusal of each name is logged (event 7004). ``/health/live`` is answered under
    any ``Host``; a WebSocket under another one is closed."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed
        self._logged: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.allowed.any:
            await self.app(scope, receive, send)
            return
        raw = Headers(scope=scope).get("host")
        parsed = parse_host(raw or "")
        if _route_path(scope) in EXEMPT_PATHS or (
            parsed is not None and self.allowed.answers(parsed[0], _arrived_on(scope))
        ):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await WebSocketClose(code=1008)(scope, receive, send)
            return
        if parsed is None:
            message = f"a missing or malformed Host header ({_shown(raw)})"
        else:
            message = (
                f"this Deck does not answer the host name {parsed[0]!r}; if that is its own "
                "name (a reverse proxy's, a DNS name), allow it with --allowed-host "
                f"{parsed[0]} (or CHOKAQ_DECK_ALLOWED_HOSTS) for chokaq deck, allowed_hosts= "
                "for create_deck"
            )
            self._log(parsed[0], message)
        await JSONResponse({"error": message}, status_code=400)(scope, receive, send)

    def _log(self, host: str, message: str) -> None:
        if host in self._logged or len(self._logged) >= _LOGGED_MAX:
            return
        self._logged.add(host)
        answers = ", ".join(self.allowed.names)
        log_event(
            Event.DECK_HOST_REFUSED,
            f"{message} (it answers {answers} and the address a request arrives on)",
            level=WARNING,
            host=host,
            answers=answers,
        )


def _shown(raw: str | None) -> str:
    return "none" if raw is None else repr(raw[:100])


def _route_path(scope: Scope) -> str:
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def _arrived_on(scope: Scope) -> str | None:
    server = scope.get("server")
    if not server:
        return None
    try:
        return _address_name(ipaddress.ip_address(str(server[0]).strip("[]")))
    except ValueError:
        return None

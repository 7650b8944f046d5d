"""Who is asking, and may they: roles, authorizers, sessions and CSRF tokens of The Deck.

An *authorizer* is any callable ``authorizer(request) -> Role | Principal | None`` (or an
awaitable of one), so a host application plugs in its own authentication; ``None`` means
"not allowed in". ``env_authorizer()`` builds the standalone command's authorizer from tokens
and basic-auth users in the environment. This module owns identity and request forgery checks;
it must not touch storage.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import inspect
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from ..errors import ConfigurationError
from .throttle import TOKEN, LoginThrottle, client_of, user_key

__all__ = [
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "Authorizer",
    "Principal",
    "Role",
    "SessionSigner",
    "env_authorizer",
    "resolve",
]

SESSION_COOKIE = "chokaq_deck_session"
CSRF_COOKIE = "chokaq_deck_csrf"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600


class Role(enum.StrEnum):
    """``readonly`` sees everything and changes nothing; ``admin`` may act."""

    READONLY = "readonly"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated operator: the name recorded as actor, and the role."""

    name: str
    role: Role


Authorizer = Callable[[Request], "Role | Principal | Awaitable[Role | Principal | None] | None"]


async def resolve(authorizer: Authorizer | None, request: Request) -> Principal | None:
    """Run the authorizer; a bare ``Role`` gets a name from ``request.user`` when the host set
    one (Starlette's AuthenticationMiddleware), else ``"deck-admin"``/``"deck-readonly"``.
    Without an authorizer every request is an admin: the host application guards the mount."""
    if authorizer is None:
        return Principal(_host_user(request) or "deck-admin", Role.ADMIN)
    result = authorizer(request)
    if inspect.isawaitable(result):
        result = await result
    if result is None or isinstance(result, Principal):
        return result
    role = Role(result)
    return Principal(_host_user(request) or f"deck-{role.value}", role)


def _host_user(request: Request) -> str | None:
    if "user" not in request.scope:
        return None
    user = request.scope["user"]
    if getattr(user, "is_authenticated", False):
        name = getattr(user, "display_name", None) or getattr(user, "username", None)
        return str(name) if name else None
    return None


@dataclass(frozen=True)
class Session:
    """A verified session cookie: who, until when, its own id (``sid``, what a logout revokes)
    and the fingerprint of the credential it was made from (``credential``)."""

    principal: Principal
    expires: int
    sid: str
    credential: str


class SessionSigner:
    """Signs ``name|role|expiry|sid|credential`` cookies with a secret (``CHOKAQ_DECK_SECRET`` or
    random per process, which logs everyone out on restart: the safe default; a new secret
    logs everyone out too)."""

    def __init__(self, secret: str | None = None) -> None:
        self._key = (secret or secrets.token_hex(32)).encode()

    def fingerprint(self, kind: str, name: str, role: Role, secret: str) -> str:
        """What a session remembers of the credential it came from: changing or removing the
        user (or token), or their role, makes it differ, and the session ends."""
        text = f"{kind}|{name}|{role.value}|{secret}"
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()[:32]

    def sign(self, principal: Principal, *, credential: str = "", now: float | None = None) -> str:
        expires = int((now or time.time()) + SESSION_SECONDS)
        sid = secrets.token_urlsafe(12)
        body = f"{principal.name}|{principal.role.value}|{expires}|{sid}|{credential}"
        raw = base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")
        return f"{raw}.{self._mac(raw)}"

    def session(self, value: str, *, now: float | None = None) -> Session | None:
        """The session of a cookie this signer made and that has not expired, or None."""
        raw, _, mac = value.partition(".")
        if not raw or not hmac.compare_digest(mac, self._mac(raw)):
            return None
        try:
            body = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
            name, role, expires, sid, credential = body.rsplit("|", 4)
            if int(expires) < (now or time.time()):
                return None
            return Session(Principal(name, Role(role)), int(expires), sid, credential)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None

    def verify(self, value: str, *, now: float | None = None) -> Principal | None:
        found = self.session(value, now=now)
        return None if found is None else found.principal

    def _mac(self, raw: str) -> str:
        return hmac.new(self._key, raw.encode(), hashlib.sha256).hexdigest()


class Revocations:
    """Sessions ended by a logout, kept until they would have expired anyway (this process's
    memory: a Deck restarted with the same secret forgets them, see docs/deck.md)."""

    def __init__(self) -> None:
        self._ended: dict[str, int] = {}

    def revoke(self, session: Session) -> None:
        now = time.time()
        self._ended = {sid: t for sid, t in self._ended.items() if t >= now}
        self._ended[session.sid] = session.expires

    def __contains__(self, session: Session) -> bool:
        return session.sid in self._ended


@dataclass(frozen=True)
class Credentials:
    """What the standalone Deck accepts: bearer tokens and basic-auth users."""

    admin_token: str | None = None
    readonly_token: str | None = None
    users: Mapping[str, tuple[str, Role]] | None = None

    @property
    def configured(self) -> bool:
        return bool(self.admin_token or self.readonly_token or self.users)

    def check_token(self, token: str) -> Principal | None:
        if self.admin_token and hmac.compare_digest(token, self.admin_token):
            return Principal("token-admin", Role.ADMIN)
        if self.readonly_token and hmac.compare_digest(token, self.readonly_token):
            return Principal("token-readonly", Role.READONLY)
        return None

    def check_user(self, name: str, password: str) -> Principal | None:
        entry = (self.users or {}).get(name)
        if entry is None:
            # Check anyway so a wrong name costs as long as a wrong password.
            _password_matches(password, _DUMMY_HASH)
            return None
        secret, role = entry
        return Principal(name, role) if _password_matches(password, secret) else None

    def credential(self, principal: Principal, signer: SessionSigner) -> str | None:
        """The fingerprint of the credential ``principal`` holds now (a user of this name and
        role, or the token of its role), or None when none does any more."""
        if principal.name in ("token-admin", "token-readonly"):
            token = self.admin_token if principal.role is Role.ADMIN else self.readonly_token
            expected = "token-admin" if principal.role is Role.ADMIN else "token-readonly"
            if not token or principal.name != expected:
                return None
            return signer.fingerprint("token", principal.name, principal.role, token)
        entry = (self.users or {}).get(principal.name)
        if entry is None or entry[1] is not principal.role:
            return None
        return signer.fingerprint("user", principal.name, principal.role, entry[0])

    @property
    def plain_text_users(self) -> list[str]:
        """The users whose password is written in plain text rather than as a bcrypt hash."""
        return sorted(
            name for name, (secret, _) in (self.users or {}).items() if not _hashed(secret)
        )


# bcrypt hashes (``$2b$12$...``, from ``chokaq deck-password``): made for passwords (slow on
# purpose), no ``:`` or ``,`` in them, so they sit in CHOKAQ_DECK_USERS as a password would.
_BCRYPT = ("$2a$", "$2b$", "$2y$")
BCRYPT_ROUNDS = 12
_DUMMY_HASH = "$2b$12$" + "C" * 53
# A verified (user hash, password) pair is remembered in this process, so that a client
# sending Basic auth on every request pays bcrypt's cost once, not per request.
_verified: dict[tuple[str, str], bool] = {}
_VERIFIED_MAX = 1024


def _hashed(secret: str) -> bool:
    return secret.startswith(_BCRYPT)


def hash_password(password: str) -> str:
    """A bcrypt hash of ``password`` for CHOKAQ_DECK_USERS; ``ConfigurationError`` past bcrypt's
    72 bytes (it would silently ignore the rest)."""
    import bcrypt

    raw = password.encode("utf-8")
    if not raw or len(raw) > 72:
        raise ConfigurationError("a Deck password must be 1 to 72 bytes of UTF-8")
    return bcrypt.hashpw(raw, bcrypt.gensalt(BCRYPT_ROUNDS)).decode("ascii")


def _password_matches(password: str, secret: str) -> bool:
    if not _hashed(secret):
        return hmac.compare_digest(password.encode(), secret.encode())
    import bcrypt

    key = (secret, hashlib.sha256(password.encode()).hexdigest())
    if key in _verified:
        return True
    raw = password.encode("utf-8")
    try:
        ok = len(raw) <= 72 and bcrypt.checkpw(raw, secret.encode("ascii"))
    except ValueError:  # a malformed hash in the configuration
        return False
    if ok:
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[key] = True
    return ok


def parse_users(text: str) -> dict[str, tuple[str, Role]]:
    """``"alice:secret:admin,bob:pw:readonly"`` (role defaults to readonly) as a mapping.

    Raises ``ConfigurationError`` naming the bad entry (without its password)."""
    users: dict[str, tuple[str, Role]] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        name, _, rest = entry.partition(":")
        password, _, role = rest.rpartition(":") if rest.count(":") else (rest, "", "readonly")
        if not name or not password:
            raise ConfigurationError(f"CHOKAQ_DECK_USERS: entry for {name!r} needs name:password")
        try:
            users[name] = (password, Role(role or "readonly"))
        except ValueError:
            raise ConfigurationError(
                f"CHOKAQ_DECK_USERS: role of {name!r} must be admin or readonly, not {role!r}"
            ) from None
    return users


def credentials_from_env(environ: Mapping[str, str] | None = None) -> Credentials:
    """Read ``CHOKAQ_DECK_TOKEN``, ``CHOKAQ_DECK_READONLY_TOKEN`` and ``CHOKAQ_DECK_USERS``."""
    env = os.environ if environ is None else environ
    return Credentials(
        admin_token=env.get("CHOKAQ_DECK_TOKEN") or None,
        readonly_token=env.get("CHOKAQ_DECK_READONLY_TOKEN") or None,
        users=parse_users(env.get("CHOKAQ_DECK_USERS", "")) or None,
    )


def env_authorizer(
    credentials: Credentials,
    signer: SessionSigner,
    throttle: LoginThrottle | None = None,
    revoked: Revocations | None = None,
) -> Authorizer:
    """The standalone authorizer: ``Authorization: Bearer <token>``, ``Authorization: Basic``
    for a configured user, or a session cookie set by the login form. Basic and bearer
    attempts go through ``throttle``: a refused one sets ``request.state.retry_after``. A
    session holds only while its credential is still configured as it was (same user, role and
    password, or token), and until a logout ``revoked`` it."""
    throttle = throttle or LoginThrottle()
    revoked = revoked or Revocations()

    def authorize(request: Request) -> Principal | None:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() in ("bearer", "basic") and value:
            if scheme.lower() == "bearer":
                name, secret = "", value.strip()
            else:
                try:
                    name, _, secret = base64.b64decode(value.strip()).decode().partition(":")
                except (binascii.Error, UnicodeDecodeError):
                    return None
            account = TOKEN if scheme.lower() == "bearer" else user_key(name)
            client = client_of(request)
            wait = throttle.retry_after(account, client)
            if wait > 0:
                request.state.retry_after = wait
                return None
            found = (
                credentials.check_token(secret)
                if scheme.lower() == "bearer"
                else credentials.check_user(name, secret)
            )
            if found is None:
                throttle.failed(account, client)
            else:
                throttle.succeeded(account, client)
            return found
        cookie = request.cookies.get(SESSION_COOKIE)
        session = signer.session(cookie) if cookie else None
        if session is None or session in revoked:
            return None
        current = credentials.credential(session.principal, signer)
        if current is None or not hmac.compare_digest(current, session.credential):
            return None  # removed, its role or password changed: log in again
        return session.principal

    return authorize


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def origin_ok(request: Request) -> bool:
    """A state-changing request did not come from another site. ``Sec-Fetch-Site: cross-site``
    is refused; an ``Origin`` must name this very host. A browser sends ``Origin: null`` for a
    form of a page whose referrer policy is ``no-referrer`` (the Deck's own), and for a
    sandboxed frame: then only ``Sec-Fetch-Site: same-origin`` lets it through. A client that
    sends neither header (curl, a script) is not a browser another site could drive."""
    site = request.headers.get("sec-fetch-site")
    if site == "cross-site":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return site == "same-origin"
    parsed = urlsplit(origin)
    host = request.headers.get("host", "")
    return bool(parsed.netloc) and hmac.compare_digest(parsed.netloc.lower(), host.lower())


def csrf_ok(request: Request) -> bool:
    """Double-submit check: the header must equal the HttpOnly cookie the page was served with
    (the page carries the token in a meta tag). A request authenticated by an
    ``Authorization: Bearer`` header is exempt: a browser never attaches one on its own, so it
    cannot be forged cross-site."""
    if request.headers.get("authorization", "").lower().startswith("bearer "):
        return True
    cookie = request.cookies.get(CSRF_COOKIE, "")
    header = request.headers.get(CSRF_HEADER, "")
    return bool(cookie) and hmac.compare_digest(cookie, header)

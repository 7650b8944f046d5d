"""Who may try a password now: The Deck's login throttle, shared by the login form and Basic and
Bearer auth.

A lockout keyed by the user name alone lets anyone who knows a name keep that user out, the
right password included; so, as django-axes' ``[["username", "ip_address"]]`` lockout and
OWASP's advice on account lockout, failures lock out the *client that made them*, for that
user: a correct password from a client that has not been failing always gets through. Two
wider bounds stay: one client failing across many user names (password spraying) is locked
for all of them, and a user failing from many clients (distributed guessing) holds back every
client that has failed for her, while clients that have not are still let try. A client is
its address as the server sees it. This module counts and decides; it checks no password and
must not touch storage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from logging import INFO, WARNING

from starlette.requests import Request

from ..logs import Event, log_event

__all__ = ["TOKEN", "LoginThrottle", "client_of", "user_key"]

# The account a bearer token is tried against: it is no user name (those are ``user:`` keys).
TOKEN = "token"
_KEYS_MAX = 10_000


def user_key(name: str) -> str:
    """The throttle's account of a user name (apart from ``TOKEN``, whatever the name)."""
    return f"user:{name}"


def client_of(request: Request) -> str:
    """The client's address as the server sees it: behind a reverse proxy, the proxy's, unless
    the server trusts its ``X-Forwarded-For`` (``chokaq deck --proxy-headers``)."""
    return request.client.host if request.client else "?"


@dataclass(eq=False, kw_only=True)
class LoginThrottle:
    """Failed logins within ``window_seconds`` (default 15 minutes), counted three ways:

    * per (account, client): past ``free_failures`` (4), that client is refused for that account
      for 2, 4, 8 ... seconds (at most ``max_lock_seconds``, 300) after each further failure;
    * per client, every account: past ``client_failures`` (30), the client is refused for
      every account in the same way (one address spraying names);
    * per account, every client: past ``user_failures`` (30), a client that has failed for
      that account within the window is refused until its failures age out or the count falls
      back, while a client with none is still checked (many addresses guessing one name).

    A success forgets that client's failures for that account only: logging in to one's own
    account must not reset the count of a client guessing at others. ``clock`` gives seconds
    (``time.monotonic`` by default; tests move their own). Memory is bounded: past 10,000 keys
    the ones that failed least recently are forgotten.
    """

    window_seconds: float = 900.0
    free_failures: int = 4
    client_failures: int = 30
    user_failures: int = 30
    max_lock_seconds: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[tuple[str, ...], list[float]] = field(
        default_factory=dict, init=False, repr=False
    )

    def retry_after(self, account: str, client: str) -> float:
        """Seconds until ``client`` may try a password for ``account`` (0: now)."""
        now = self.clock()
        pair = self._recent(("pair", account, client), now)
        waits = [
            self._lock(pair, self.free_failures, now),
            self._lock(self._recent(("client", client), now), self.client_failures, now),
        ]
        users = self._recent(("account", account), now)
        if pair and len(users) > self.user_failures:
            # Held while the account is guessed at from many clients: until this client's own
            # failures leave the window, or enough of all of them do.
            oldest_over = users[len(users) - self.user_failures - 1]
            waits.append(min(pair[-1], oldest_over) + self.window_seconds - now)
        return max(0.0, *waits)

    def failed(self, account: str, client: str) -> None:
        now = self.clock()
        shown = repr(account[:64])
        bounds = (
            (
                ("pair", account, client),
                self.free_failures,
                f"for {shown} from {client}: that client now waits between tries for it",
            ),
            (
                ("client", client),
                self.client_failures,
                f"from {client}, across accounts: it now waits between tries for every one",
            ),
            (
                ("account", account),
                self.user_failures,
                f"for {shown}, across clients: the clients that failed for it now wait, the "
                "others are still let try",
            ),
        )
        for key, free, what in bounds:
            recent = [*self._recent(key, now), now][-64:]
            self._failures.pop(key, None)  # re-inserted last: the dict runs oldest to newest
            self._failures[key] = recent
            if len(recent) == free + 1:  # the first failure past the bound: said once a window
                log_event(
                    Event.DECK_LOGIN_THROTTLED,
                    f"{len(recent)} failed Deck logins in {self.window_seconds:g} s {what}",
                    level=INFO if key[0] == "pair" else WARNING,
                    account=account[:64],
                    client=client,
                    bound=key[0],
                    failures=len(recent),
                )
        if len(self._failures) > _KEYS_MAX:
            for stale in list(self._failures)[: _KEYS_MAX // 2]:
                del self._failures[stale]

    def succeeded(self, account: str, client: str) -> None:
        self._failures.pop(("pair", account, client), None)

    def _recent(self, key: tuple[str, ...], now: float) -> list[float]:
        return [t for t in self._failures.get(key, ()) if now - t < self.window_seconds]

    def _lock(self, recent: list[float], free: int, now: float) -> float:
        if len(recent) <= free:
            return 0.0
        lock = min(2.0 ** (len(recent) - free), self.max_lock_seconds)
        return recent[-1] + lock - now

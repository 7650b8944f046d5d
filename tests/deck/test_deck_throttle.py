"""The login throttle over real HTTP on a real server, its clock moved by the test: failures lock
out the client that made them for that user (2, 4, 8 ... s, reset by a success, forgotten after
15 minutes), one client failing across many names is locked for all of them, and a user
guessed at from many clients still gets in from a client that has not been failing."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Iterator

import httpx
import pytest

from chokaq.deck.throttle import LoginThrottle

from .conftest import Served, run

Me = Callable[..., httpx.Response]


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 10_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def me(db_url: str, clock: Clock) -> Iterator[Me]:
    """``me(client, user, password)``: ``GET /api/me`` with Basic auth from the address
    ``client`` (X-Forwarded-For, which the server trusts from 127.0.0.1) of a Deck whose
    throttle runs on ``clock``. Users alice (alice-pw) and bob (bob-pw)."""
    run(lambda app: asyncio.sleep(0), db_url)
    served = Served(db_url, login_throttle=LoginThrottle(clock=clock))
    served.start()
    http = httpx.Client(base_url=served.url)

    def call(client: str, user: str, password: str) -> httpx.Response:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers = {"authorization": f"Basic {token}", "x-forwarded-for": client}
        return http.get("/api/me", headers=headers)

    try:
        yield call
    finally:
        http.close()
        served.stop()


def codes(responses: list[httpx.Response]) -> list[int]:
    return [r.status_code for r in responses]


def test_a_lock_doubles_ends_on_the_clock_and_a_success_clears_it(me: Me, clock: Clock) -> None:
    a = "203.0.113.9"
    assert codes([me(a, "alice", f"guess-{i}") for i in range(5)]) == [401] * 5
    locked = me(a, "alice", "alice-pw")
    assert locked.status_code == 429 and locked.headers["retry-after"] == "2"
    clock.advance(1.9)
    assert me(a, "alice", "alice-pw").status_code == 429
    clock.advance(0.1)
    assert me(a, "alice", "guess-5").status_code == 401  # tried, failed: the lock doubles
    assert me(a, "alice", "alice-pw").headers["retry-after"] == "4"
    clock.advance(4)
    assert me(a, "alice", "alice-pw").status_code == 200  # and the client's count is cleared
    assert codes([me(a, "alice", f"again-{i}") for i in range(5)]) == [401] * 5
    assert me(a, "alice", "alice-pw").status_code == 429
    clock.advance(900)  # 15 minutes: every failure is forgotten
    assert me(a, "alice", "alice-pw").status_code == 200


def test_one_client_failing_across_many_names_is_locked_for_every_name(
    me: Me, clock: Clock
) -> None:
    sprayer = "203.0.113.9"
    assert codes([me(sprayer, f"user{i}", "Summer2024!") for i in range(31)]) == [401] * 31
    held = me(sprayer, "bob", "bob-pw")  # never failed for bob, but failing for everyone
    assert held.status_code == 429 and held.headers["retry-after"] == "2"
    assert me("198.51.100.7", "bob", "bob-pw").status_code == 200  # bob himself is not held
    clock.advance(2)
    assert me(sprayer, "bob", "bob-pw").status_code == 200


def test_a_user_guessed_at_from_many_clients_gets_in_from_a_clean_one(me: Me, clock: Clock) -> None:
    botnet = [f"10.0.0.{i}" for i in range(1, 32)]
    assert codes([me(bot, "alice", f"guess-{bot}") for bot in botnet]) == [401] * 31
    # 31 failures for alice from 31 clients: each has failed once, below its own lock, but
    # a client that failed for her now waits until its failure is 15 minutes old...
    held = me(botnet[0], "alice", "alice-pw")
    assert held.status_code == 429 and held.headers["retry-after"] == "900"
    # ... while a client that has not been failing is checked: the right password gets in,
    # a wrong one is answered, and from then on that client waits too.
    assert me("198.51.100.7", "alice", "alice-pw").status_code == 200
    assert me("198.51.100.8", "alice", "guess").status_code == 401
    assert me("198.51.100.8", "alice", "alice-pw").status_code == 429
    assert me(botnet[0], "bob", "bob-pw").status_code == 200  # held for alice only
    clock.advance(900)
    assert me(botnet[0], "alice", "alice-pw").status_code == 200

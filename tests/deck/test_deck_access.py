"""Who gets in, against real `chokaq deck` processes: a Deck, with authentication or without,
answers loopback names, its bound address and the address a request arrived on only (another
site's name rebound to 127.0.0.1 gets a 400, page, login form, token and all); every mutation,
login and logout refuses an Origin of another host; --allowed-host widens what a Deck answers;
passwords may be bcrypt hashes (plain text warns); failed logins lock out the client that made
them, not the user: the right password from another client gets in."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import USERS

REPO = Path(__file__).resolve().parents[2]

# A client's timeout guards against a hang, not a speed: a bcrypt check on a starved machine
# may take seconds.
HANG = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``start(*args, **env)`` -> the URL of a `chokaq deck` process on a fresh SQLite file."""
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def run(*args: str, **env: str) -> str:
        port = _free_port()
        environ = {k: v for k, v in os.environ.items() if not k.startswith("CHOKAQ_DECK_")}
        environ.update(env, PYTHONPATH=str(REPO / "src"))
        db = f"sqlite:///{tmp_path / f'deck-{port}.db'}"
        argv = [sys.executable, "-m", "chokaq", "deck", "--database", db, "--port", str(port)]
        log = (tmp_path / f"deck-{port}.log").open("wb")
        logs.append(log)
        procs.append(subprocess.Popen([*argv, *args], env=environ, stdout=log, stderr=log))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/health/live").status_code == 200:
                    return url
            except httpx.TransportError:
                pass
            assert procs[-1].poll() is None, (tmp_path / f"deck-{port}.log").read_text()
            assert time.monotonic() < deadline, "the Deck did not start"
            time.sleep(0.1)

    yield run
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)
    for log in logs:
        log.close()


def test_an_unguarded_deck_answers_loopback_names_only(start: Callable[..., str]) -> None:
    url = start()
    port = url.rsplit(":", 1)[1]
    with httpx.Client(timeout=HANG, base_url=url) as c:
        assert c.get("/", headers={"host": f"127.0.0.1:{port}"}).status_code == 200
        assert c.get("/", headers={"host": f"localhost:{port}"}).status_code == 200
        rebound = c.get("/", headers={"host": f"attacker.example:{port}"})
        assert rebound.status_code == 400 and "csrf" not in rebound.text.lower()
        api = c.get("/api/me", headers={"host": f"attacker.example:{port}"})
        assert api.status_code == 400


def _log(tmp_path: Path, url: str) -> str:
    return (tmp_path / f"deck-{url.rsplit(':', 1)[1]}.log").read_text()


def test_an_authenticated_deck_answers_its_own_names_only(
    start: Callable[..., str], tmp_path: Path
) -> None:
    url = start(CHOKAQ_DECK_USERS="alice:alice-pw:admin")
    port = url.rsplit(":", 1)[1]
    form = {"username": "alice", "password": "alice-pw"}
    with httpx.Client(timeout=HANG, base_url=url) as c:
        for name in ("127.0.0.1", "localhost", "[::1]", "LocalHost."):
            assert c.get("/login", headers={"host": f"{name}:{port}"}).status_code == 200, name
        # A page of attacker.example whose name now points at 127.0.0.1 reaches nothing: not
        # the login form, and not a session for the right password.
        rebound = {"host": f"attacker.example:{port}"}
        refused = c.get("/login", headers=rebound)
        assert refused.status_code == 400
        assert "--allowed-host attacker.example" in refused.json()["error"]
        assert refused.headers["x-content-type-options"] == "nosniff"
        posted = c.post("/login", data=form, headers=rebound)
        assert posted.status_code == 400 and "chokaq_deck_session" not in posted.cookies
        basic = _basic("alice", "alice-pw")
        assert c.get("/api/me", headers={**rebound, **basic}).status_code == 400
        assert c.get("/", headers={"host": ""}).status_code == 400
        # A probe may name anything: /health/live says only that the process answers.
        assert c.get("/health/live", headers=rebound).status_code == 200
        assert c.get("/health/ready", headers=rebound).status_code == 400
    log = _log(tmp_path, url)
    assert log.count("does not answer the host name 'attacker.example'") == 1, log  # once a name
    assert "--allowed-host attacker.example (or CHOKAQ_DECK_ALLOWED_HOSTS)" in log


def test_a_deck_on_every_interface_answers_the_address_a_request_arrived_on(
    start: Callable[..., str], tmp_path: Path
) -> None:
    url = start("--host", "0.0.0.0", CHOKAQ_DECK_USERS="alice:alice-pw:admin")
    port = url.rsplit(":", 1)[1]
    other = f"http://127.0.0.2:{port}"  # an address of this machine that is no loopback name
    with httpx.Client(base_url=other) as c:
        assert c.get("/login").status_code == 200  # Host 127.0.0.2, arrived on 127.0.0.2
        assert c.get("/login", headers={"host": f"127.0.0.3:{port}"}).status_code == 400
        assert c.get("/login", headers={"host": f"0.0.0.0:{port}"}).status_code == 400
        assert c.get("/login", headers={"host": f"deck.example.com:{port}"}).status_code == 400
    log = _log(tmp_path, url)
    assert f"The Deck: http://127.0.0.1:{port}/" in log  # not 0.0.0.0, which it does not answer
    assert "pass --allowed-host NAME or set CHOKAQ_DECK_ALLOWED_HOSTS" in log


def test_an_allowed_host_that_could_never_match_is_refused_at_start(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'd.db'}"
    argv = [sys.executable, "-m", "chokaq", "deck", "--database", db, "--port", str(_free_port())]
    done = subprocess.run(
        [*argv, "--allowed-host", "deck.example.com:8443"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "'deck.example.com:8443'" in done.stderr and "without scheme or port" in done.stderr


def test_a_mutation_from_another_origin_is_refused(start: Callable[..., str]) -> None:
    url = start()
    port = url.rsplit(":", 1)[1]
    with httpx.Client(timeout=HANG, base_url=url) as c:
        assert c.get("/").status_code == 200
        token = {"x-csrf-token": str(c.cookies.get("chokaq_deck_csrf"))}
        body = {"queue": "emails", "create": True, "paused": True}
        evil = c.post(
            "/api/queues",
            json=body,
            headers={**token, "origin": f"http://attacker.example:{port}"},
        )
        assert evil.status_code == 403 and "cross-site" in evil.json()["error"]
        sandboxed = c.post("/api/queues", json=body, headers={**token, "origin": "null"})
        assert sandboxed.status_code == 403
        # Origin null with Sec-Fetch-Site same-origin: the Deck's own form under no-referrer.
        own_form = c.post(
            "/api/queues",
            json=body,
            headers={**token, "origin": "null", "sec-fetch-site": "same-origin"},
        )
        assert own_form.status_code == 200, own_form.text
        fetched = c.post(
            "/api/queues", json=body, headers={**token, "sec-fetch-site": "cross-site"}
        )
        assert fetched.status_code == 403
        own = c.post(
            "/api/queues", json=body, headers={**token, "origin": f"http://127.0.0.1:{port}"}
        )
        assert own.status_code == 200, own.text


def test_login_and_logout_refuse_another_origin_and_allowed_hosts_widen(
    start: Callable[..., str],
) -> None:
    users = ",".join(f"{name}:{pw}:{role.value}" for name, (pw, role) in USERS.items())
    url = start("--allowed-host", "deck.internal", CHOKAQ_DECK_USERS=users)
    port = url.rsplit(":", 1)[1]
    with httpx.Client(timeout=HANG, base_url=url) as c:
        form = {"username": "alice", "password": "alice-pw"}
        forced = c.post("/login", data=form, headers={"origin": "http://attacker.example"})
        assert forced.status_code == 403 and "chokaq_deck_session" not in forced.headers.get(
            "set-cookie", ""
        )
        login = c.post("/login", data=form, headers={"origin": f"http://127.0.0.1:{port}"})
        assert login.status_code == 303
        assert c.post("/logout", headers={"origin": "http://attacker.example"}).status_code == 403
        # Given names (and only they) are answered once some are.
        assert c.get("/login", headers={"host": f"deck.internal:{port}"}).status_code == 200
        assert c.get("/login", headers={"host": f"other.example:{port}"}).status_code == 400


def _hash(password: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chokaq", "deck-password", "--stdin"],
        input=password + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _basic(name: str, password: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


def test_a_hashed_password_logs_in_and_plain_text_warns(
    start: Callable[..., str], tmp_path: Path
) -> None:
    hashed = _hash("correct horse")
    assert hashed.startswith("$2b$12$") and "correct" not in hashed
    url = start(CHOKAQ_DECK_USERS=f"alice:{hashed}:admin,bob:bob-pw:readonly")
    with httpx.Client(timeout=HANG, base_url=url) as c:
        assert c.get("/api/me", headers=_basic("alice", "correct horse")).json()["role"] == "admin"
        assert c.get("/api/me", headers=_basic("alice", hashed)).status_code == 401
        form = {"username": "alice", "password": "correct horse"}
        assert c.post("/login", data=form).status_code == 303
    logs = "".join(p.read_text() for p in tmp_path.glob("deck-*.log"))
    assert "plain-text passwords" in logs and "bob" in logs and "alice," not in logs
    too_long = subprocess.run(
        [sys.executable, "-m", "chokaq", "deck-password", "--stdin"],
        input="x" * 73 + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=60,
    )
    assert too_long.returncode == 2 and "1 to 72 bytes" in too_long.stderr


def test_failed_logins_lock_out_the_client_that_made_them_not_the_user(
    start: Callable[..., str], tmp_path: Path
) -> None:
    # --proxy-headers: the Deck takes each client's address from X-Forwarded-For, as it does
    # behind a proxy on this machine.
    url = start("--proxy-headers", CHOKAQ_DECK_USERS="alice:alice-pw:admin,bob:bob-pw:readonly")
    attacker = {"x-forwarded-for": "203.0.113.9"}
    with httpx.Client(timeout=HANG, base_url=url, headers=attacker) as c:
        codes = [
            c.get("/api/me", headers=_basic("alice", f"guess-{i}")).status_code for i in range(8)
        ]
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}
        locked = c.get("/api/me", headers=_basic("alice", "alice-pw"))
        assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
        form = c.post("/login", data={"username": "alice", "password": "alice-pw"})
        assert form.status_code == 429 and "Too many failed logins" in form.text
        # Locked for alice, not for every name: its own account still opens.
        assert c.get("/api/me", headers=_basic("bob", "bob-pw")).status_code == 200
    with httpx.Client(
        timeout=HANG, base_url=url, headers={"x-forwarded-for": "198.51.100.7"}
    ) as alice:
        # The user is not locked out: from a client that has not been failing she gets in,
        # by Basic auth and by the form.
        assert alice.get("/api/me", headers=_basic("alice", "alice-pw")).status_code == 200
        form = alice.post("/login", data={"username": "alice", "password": "alice-pw"})
        assert form.status_code == 303 and "chokaq_deck_session" in form.cookies
    log = _log(tmp_path, url)
    assert "5 failed Deck logins in 900 s for 'user:alice' from 203.0.113.9" in log


@pytest.mark.parametrize(("trusted", "secure"), [((), True), (("10.0.0.1",), False)])
def test_forwarded_headers_are_trusted_from_the_trusted_proxies_only(
    start: Callable[..., str], trusted: tuple[str, ...], secure: bool
) -> None:
    args = ["--proxy-headers", *(a for t in trusted for a in ("--trusted-proxy", t))]
    url = start(*args, CHOKAQ_DECK_USERS="alice:alice-pw:admin")
    with httpx.Client(timeout=HANG, base_url=url) as c:
        login = c.post(
            "/login",
            data={"username": "alice", "password": "alice-pw"},
            headers={"x-forwarded-proto": "https"},
        )
        assert login.status_code == 303
        cookie = login.headers["set-cookie"].lower()
        assert ("secure" in cookie) is secure  # 127.0.0.1 is the default proxy, 10.0.0.1 not


def _session_of(url: str, name: str, password: str) -> str:
    with httpx.Client(timeout=HANG, base_url=url) as c:
        login = c.post("/login", data={"username": name, "password": password})
        assert login.status_code == 303, login.text
        return str(login.cookies["chokaq_deck_session"])


def _me(url: str, session: str) -> int:
    with httpx.Client(timeout=HANG, base_url=url, cookies={"chokaq_deck_session": session}) as c:
        return c.get("/api/me").status_code


def test_a_logout_ends_the_session_wherever_its_cookie_was_copied(
    start: Callable[..., str],
) -> None:
    url = start(CHOKAQ_DECK_USERS="alice:alice-pw:admin")
    session = _session_of(url, "alice", "alice-pw")
    assert _me(url, session) == 200
    with httpx.Client(timeout=HANG, base_url=url, cookies={"chokaq_deck_session": session}) as c:
        assert c.post("/logout").status_code == 303
    assert _me(url, session) == 401  # a copy kept elsewhere is refused too


@pytest.mark.parametrize(
    ("users", "secret"),
    [
        ("bob:bob-pw:readonly", "same-secret"),  # alice removed
        ("alice:alice-pw:readonly,bob:bob-pw:readonly", "same-secret"),  # her role changed
        ("alice:new-pw:admin", "same-secret"),  # her password changed
        ("alice:alice-pw:admin", "a-new-secret"),  # the secret rotated
    ],
    ids=["removed", "role changed", "password changed", "secret rotated"],
)
def test_a_session_ends_when_its_credential_changes(
    start: Callable[..., str], users: str, secret: str
) -> None:
    before = start(CHOKAQ_DECK_USERS="alice:alice-pw:admin", CHOKAQ_DECK_SECRET="same-secret")
    session = _session_of(before, "alice", "alice-pw")
    assert _me(before, session) == 200
    after = start(CHOKAQ_DECK_USERS=users, CHOKAQ_DECK_SECRET=secret)
    assert _me(after, session) == 401
    unchanged = start(CHOKAQ_DECK_USERS="alice:alice-pw:admin", CHOKAQ_DECK_SECRET="same-secret")
    assert _me(unchanged, session) == 200  # the same credentials and secret: still valid

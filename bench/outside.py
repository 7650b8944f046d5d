"""A worker measured from outside, the same way for every system: the harness starts the worker's
own command line in a subprocess and times it from that start until all its jobs are done,
sampling the resident memory of the worker's whole process tree (a prefork pool's children, RQ's
forked job processes) from /proc while it runs. It also owns the Redis side of the handlers'
work: the counter the one-round-trip handler increments, which is how the harness sees that
every job is done when a system has no burst mode. It knows nothing of any one system.

Redis database numbers are fixed here, one per user, so that a flush never touches another's
data (never FLUSHALL): the handlers' counters in WORK_DB (keys are per run and deleted, never
flushed), Celery's Redis broker in CELERY_DB, RQ in RQ_DB.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REDIS_URL = os.environ.get("CHOKAQ_BENCH_REDIS_URL", "redis://127.0.0.1:6379")
AMQP_URL = os.environ.get("CHOKAQ_BENCH_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")
WORK_DB, CELERY_DB, RQ_DB = 10, 11, 12

# How often the harness looks: the done check is one Redis GET (or a waitpid), cheap enough to
# run every 5 ms, which bounds the error on the end time; reading /proc for the whole tree costs
# more, and memory changes slowly, so every 50 ms.
DONE_POLL_SECONDS = 0.005
RSS_POLL_SECONDS = 0.05


def redis_url(db: int) -> str:
    return f"{REDIS_URL.rstrip('/')}/{db}"


def reachable(url: str, timeout: float = 1.0) -> bool:
    """Whether a TCP connection to the host and port of ``url`` opens (a broker is up)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    default = {"redis": 6379, "amqp": 5672}.get(parts.scheme, 0)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or default), timeout):
            return True
    except OSError:
        return False


# -- the completion counter ----------------------------------------------------------------------


class Counter:
    """A fresh key in WORK_DB for one run, which the handlers INCR; ``value()`` reads it over
    one kept connection (the harness polls it every few milliseconds). Deleted on close."""

    def __init__(self) -> None:
        import redis

        self.key = f"bench:done:{uuid.uuid4().hex}"
        self._client = redis.Redis.from_url(redis_url(WORK_DB))
        self._client.delete(self.key)

    def value(self) -> int:
        got = self._client.get(self.key)
        return int(got) if got else 0

    def close(self) -> None:
        self._client.delete(self.key)
        self._client.close()


@contextlib.contextmanager
def counter() -> Iterator[Counter]:
    made = Counter()
    try:
        yield made
    finally:
        made.close()


# -- one worker, from outside --------------------------------------------------------------------


@dataclass
class Outside:
    """What the harness saw: seconds from the worker's start until its jobs were done, the
    peak resident memory of its process tree, and how it ended."""

    elapsed_s: float
    peak_rss_kb: int
    exit_code: int | None


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc/<pid>/task/<tid>/children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree_rss_kb(pid: int) -> int:
    """The resident memory of ``pid`` and its children now (0 once they are gone)."""
    return sum(_status_kb(p, "VmRSS:") for p in _tree(pid))


def _sample_rss_kb(pid: int) -> int:
    """The tree's resident memory now, or the main process's own high-water mark when that
    is larger (it catches a peak between two samples of a single-process worker). Pages a
    forked child shares with its parent count in both: an upper bound for a forking pool."""
    tree = sum(_status_kb(p, "VmRSS:") for p in _tree(pid))
    return max(tree, _status_kb(pid, "VmHWM:"))


def stop(proc: subprocess.Popen[bytes], hurry_after: float | None = None) -> None:
    """SIGTERM (every system's warm shutdown); a second one after ``hurry_after`` seconds when
    given (RQ's cold shutdown); SIGKILL of the whole session after 30 s."""
    if proc.poll() is None:
        proc.terminate()
    if hurry_after is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=hurry_after)
        if proc.poll() is None:
            proc.terminate()
    try:
        proc.wait(timeout=30.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # A forking pool's children normally go with their parent; make sure of it (a worker
    # started in its own session leads a process group of its pid; for any other, no group).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def measure(
    argv: list[str],
    env: dict[str, str],
    log: Path,
    *,
    done: Callable[[], bool] | None = None,
    timeout: float = 900.0,
    hurry_after: float | None = None,
) -> Outside:
    """Start ``argv`` and time it from outside until its jobs are done: until ``done()`` is
    true when given (then the worker is stopped: see ``stop``), else until the process exits
    (a burst mode). Raises RuntimeError with the worker's stderr
    when it fails or does not finish within ``timeout`` seconds."""
    with log.open("wb") as err:
        started = time.perf_counter()
        # Its own session, so that a stuck pool can be killed as a whole.
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    peak, next_rss, ended = 0, 0.0, None
    try:
        while ended is None:
            now = time.perf_counter()
            if now >= next_rss:
                peak, next_rss = max(peak, _sample_rss_kb(proc.pid)), now + RSS_POLL_SECONDS
            if done is not None and done():
                ended = time.perf_counter()
            elif proc.poll() is not None:
                # Done may have come true between the two looks: ask once more.
                if proc.returncode == 0 and (done is None or done()):
                    ended = time.perf_counter()
                else:
                    raise RuntimeError(_failure(argv, proc.returncode, log))
            elif now - started > timeout:
                raise RuntimeError(_failure(argv, None, log, f"not done after {timeout:.0f} s"))
            else:
                time.sleep(DONE_POLL_SECONDS)
    finally:
        if proc.poll() is None:
            stop(proc, hurry_after)
    return Outside(ended - started, peak, proc.returncode)


def _failure(argv: list[str], code: int | None, log: Path, why: str = "") -> str:
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    what = why or f"exited with {code}"
    return f"worker {' '.join(argv[:4])}... {what}:\n{tail}"

"""Wake-ups on SQLite: an in-process broadcast plus a signal file per database.

SQLite has no LISTEN/NOTIFY. An enqueue (or a cancel request, or the end of a job someone
waits on) that commits in this process wakes every listener registered for the same file in
this process, through ``loop.call_soon_threadsafe``; and it touches a small signal file beside
the database (``jobs.db-wake``, ``jobs.db-cancel``, ``jobs.db-done``) whose modification time
listeners in other processes watch every few milliseconds (a stat, not a query, so idle
workers cost the database nothing). (Leadership is a lease in the file itself:
``leadership``.) Owns the listener registry and the signal files; it must not touch the
database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..driver import Notifier

__all__ = ["FileNotifier", "broadcast_cancel", "broadcast_done", "broadcast_jobs"]

# How often a listener looks at the signal files of other processes.
SIGNAL_POLL_SECONDS = 0.002
ANY_QUEUE = ""  # on_jobs(ANY_QUEUE): some queue got work in another process


@dataclass(frozen=True, eq=False)
class _Listener:
    loop: asyncio.AbstractEventLoop
    on_jobs: Callable[[str], None]
    on_cancel: Callable[[str], None]
    on_done: Callable[[str], None] | None = None


_lock = threading.Lock()
_registry: dict[str, set[_Listener]] = {}


def _listeners(key: str) -> list[_Listener]:
    with _lock:
        return list(_registry.get(key, ()))


def _deliver(listener: _Listener, callback: Callable[[str], None], value: str) -> None:
    # A closed loop raises RuntimeError; its listener is unregistered by stop().
    with contextlib.suppress(RuntimeError):
        listener.loop.call_soon_threadsafe(callback, value)


def _signal_path(key: str, kind: str) -> str | None:
    return None if key == ":memory:" else f"{key}-{kind}"


def _touch(key: str, kind: str) -> None:
    path = _signal_path(key, kind)
    if path is None:
        return
    with contextlib.suppress(OSError):  # a read-only directory: other processes poll instead
        with open(path, "a"):
            pass
        os.utime(path)


def broadcast_jobs(key: str, queues: Iterable[str]) -> None:
    """Tell every listener on the file ``key`` that jobs were committed to ``queues``."""
    _touch(key, "wake")
    listeners = _listeners(key)
    if not listeners:
        return
    for queue in dict.fromkeys(queues):
        for listener in listeners:
            _deliver(listener, listener.on_jobs, queue)


def broadcast_cancel(key: str, job_ids: Iterable[str]) -> None:
    """Tell every listener on the file ``key`` that a cancel was requested for ``job_ids``."""
    _touch(key, "cancel")
    listeners = _listeners(key)
    for job_id in job_ids:
        for listener in listeners:
            _deliver(listener, listener.on_cancel, job_id)


def broadcast_done(key: str, job_ids: Iterable[str]) -> None:
    """Tell every listener on the file ``key`` that jobs someone waits on left the hot table."""
    ids = list(job_ids)
    if not ids:
        return
    _touch(key, "done")
    for listener in _listeners(key):
        if listener.on_done is not None:
            for job_id in ids:
                _deliver(listener, listener.on_done, job_id)


class FileNotifier(Notifier):
    """Hears enqueues and cancel requests committed by this process on one file."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._listener: _Listener | None = None
        self._watcher: asyncio.Task[None] | None = None

    async def start(
        self,
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
        on_done: Callable[[str], None] | None = None,
    ) -> None:
        await self.stop()
        listener = _Listener(asyncio.get_running_loop(), on_jobs, on_cancel, on_done)
        with _lock:
            _registry.setdefault(self._key, set()).add(listener)
        self._listener = listener
        if self._key != ":memory:":
            self._watcher = asyncio.create_task(self._watch(listener))

    async def _watch(self, listener: _Listener) -> None:
        """Poll the signal files' modification times; a change means another process (or
        this one) committed work, a cancel request, or the end of a waited job."""
        callbacks = {"wake": listener.on_jobs, "cancel": listener.on_cancel}
        if listener.on_done is not None:
            callbacks["done"] = listener.on_done
        paths = {kind: _signal_path(self._key, kind) for kind in callbacks}
        seen = {kind: _mtime(path) for kind, path in paths.items()}
        while True:
            await asyncio.sleep(SIGNAL_POLL_SECONDS)
            for kind, path in paths.items():
                stamp = _mtime(path)
                if stamp != seen[kind]:
                    seen[kind] = stamp
                    callbacks[kind](ANY_QUEUE)

    async def stop(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with _lock:
            group = _registry.get(self._key)
            if group is not None:
                group.discard(listener)
                if not group:
                    del _registry[self._key]

    @property
    def healthy(self) -> bool:
        # Nothing can be lost once started: delivery is a function call or a file's
        # modification time.
        return self._listener is not None

    @property
    def cross_process(self) -> bool:
        return self._key != ":memory:"


def _mtime(path: str | None) -> int:
    if path is None:
        return 0
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

"""Wake-ups on SQLite: an in-process broadcast plus a signal file per database.

SQLite has no LISTEN/NOTIFY. An enqueue (or a cancel request, or the end of a job someone
waits on) that commits in this process wakes every listener registered for the same file in
this process, through ``loop.call_soon_threadsafe``; and it touches a small signal file beside
the database (``jobs.db-wake``, ``jobs.db-cancel``, ``jobs.db-done``) that listeners in other
processes watch. On Linux the watch is inotify on the database's directory (the kernel wakes
the listener when a signal file's times change, so an idle listener costs nothing); elsewhere,
or where inotify cannot be had, or with ``CHOKAQ_SQLITE_WATCH=poll``, it is a stat of each
signal file every 2 ms (not a query, so idle workers cost the database nothing either way).
(Leadership is a lease in the file itself: ``leadership``.) Owns the listener registry and the
signal files; it must not touch the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..driver import Notifier

# inotify_simple: Linux only (a dependency with a platform marker); elsewhere the stat loop
# serves. It ships no types, so it is imported by name and used as Any.
try:
    _inotify: Any = importlib.import_module("inotify_simple")
except ImportError:  # pragma: no cover - not Linux
    _inotify = None

__all__ = ["FileNotifier", "broadcast_cancel", "broadcast_done", "broadcast_jobs"]

# How often a listener without inotify looks at the signal files of other processes.
SIGNAL_POLL_SECONDS = 0.002
# "poll" forces the stat loop where inotify would serve (a filesystem whose changes inotify
# does not see, or a test of the fallback); anything else (the default) prefers inotify.
WATCH_VARIABLE = "CHOKAQ_SQLITE_WATCH"
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
    """Hears enqueues, cancel requests and ends of waited jobs committed on one file: by this
    process through the registry, by other processes through the signal files."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._listener: _Listener | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._inotify: tuple[Any, asyncio.AbstractEventLoop] | None = None
        # How other processes are heard: "inotify", "poll" (the stat loop), or "" (in memory,
        # or not started).
        self.watching = ""

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
        if self._key == ":memory:":
            return
        callbacks = {"wake": listener.on_jobs, "cancel": listener.on_cancel}
        if listener.on_done is not None:
            callbacks["done"] = listener.on_done
        # Either watch takes its starting point here, before start() returns, so that a signal
        # sent once start() has returned is heard.
        lost = self._open_inotify(callbacks)
        if lost is not None:
            self.watching = "inotify"
            self._watcher = asyncio.create_task(self._hear(lost, callbacks))
        else:
            self.watching = "poll"
            self._watcher = asyncio.create_task(self._poll(callbacks, self._stamps(callbacks)))

    def _open_inotify(
        self, callbacks: dict[str, Callable[[str], None]]
    ) -> asyncio.Future[None] | None:
        """Watch the database's directory with inotify, read by this event loop (no thread);
        None where that cannot be had. The future completes if the kernel drops the watch.

        The directory is watched rather than the signal files, so that a file not yet created,
        or removed and created again, is heard all the same. Only attribute changes are asked
        for: every signal ends with ``os.utime``, which is also what the stat loop sees, and
        the database's own writes (its WAL) are modifications, not attribute changes."""
        if _inotify is None or os.environ.get(WATCH_VARIABLE) == "poll":
            return None
        directory, base = os.path.split(self._key)
        names = {f"{base}-{kind}": kind for kind in callbacks}
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()
        try:
            inotify = _inotify.INotify(nonblocking=True)
        except OSError:  # out of instances (fs.inotify.max_user_instances): poll instead
            return None
        try:
            inotify.add_watch(directory, _inotify.flags.ATTRIB)
            loop.add_reader(inotify.fileno(), self._readable, inotify, names, callbacks, lost)
        except (OSError, NotImplementedError):  # no watch, or a loop that cannot add readers
            inotify.close()
            return None
        self._inotify = (inotify, loop)
        return lost

    @staticmethod
    def _readable(
        inotify: Any,
        names: dict[str, str],
        callbacks: dict[str, Callable[[str], None]],
        lost: asyncio.Future[None],
    ) -> None:
        kinds: dict[str, None] = {}
        for event in inotify.read(timeout=0):
            if event.mask & _inotify.flags.Q_OVERFLOW:  # events were dropped: any may be ours
                kinds.update(dict.fromkeys(callbacks))
            elif event.mask & _inotify.flags.IGNORED:  # the directory is gone or unmounted
                if not lost.done():
                    lost.set_result(None)
            elif event.name in names:
                kinds[names[event.name]] = None
        for kind in kinds:
            callbacks[kind](ANY_QUEUE)

    async def _hear(
        self, lost: asyncio.Future[None], callbacks: dict[str, Callable[[str], None]]
    ) -> None:
        """Signals arrive through the reader; this waits only for the watch to be lost, and
        then polls rather than go deaf."""
        await lost
        stamps = self._stamps(callbacks)
        self._close_inotify()
        self.watching = "poll"
        await self._poll(callbacks, stamps)

    def _stamps(self, callbacks: dict[str, Callable[[str], None]]) -> dict[str, int]:
        return {kind: _mtime(_signal_path(self._key, kind)) for kind in callbacks}

    async def _poll(
        self, callbacks: dict[str, Callable[[str], None]], seen: dict[str, int]
    ) -> None:
        """Poll the signal files' modification times; a change means another process (or
        this one) committed work, a cancel request, or the end of a waited job."""
        paths = {kind: _signal_path(self._key, kind) for kind in callbacks}
        while True:
            await asyncio.sleep(SIGNAL_POLL_SECONDS)
            for kind, path in paths.items():
                stamp = _mtime(path)
                if stamp != seen[kind]:
                    seen[kind] = stamp
                    callbacks[kind](ANY_QUEUE)

    def _close_inotify(self) -> None:
        held, self._inotify = self._inotify, None
        if held is not None:
            inotify, loop = held
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.remove_reader(inotify.fileno())
            inotify.close()

    async def stop(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        self._close_inotify()  # here, not in the task: a task cancelled unstarted runs nothing
        self.watching = ""
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
        # Nothing can be lost once started: delivery is a function call, or a file's times
        # (an overflowing inotify queue wakes every kind, a lost watch falls back to polling).
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

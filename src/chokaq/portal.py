"""The sync client's machinery: a private event loop on a daemon thread per App, fork-aware.

Owns the loop and thread that ``enqueue_sync`` runs on, closing them at interpreter exit, and
what a forked child does with the portals it inherited (keeps them referenced and quiet, never
closes them: their connections are the parent's). It must not decide what runs on a portal;
``App`` does.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Portal", "abandon"]

R = TypeVar("R")


class Target(Protocol):
    """What a portal drives (an App): something it can close on its loop."""

    async def close(self) -> None: ...


T = TypeVar("T", bound=Target)


class Portal(Generic[T]):
    """A private event loop on a daemon thread, so sync code can call the async API.

    It drives a copy of the App with its own connections (``App._sync_copy``), since async
    resources are bound to one loop; except for a store that lives in this process's memory
    only (``in_process``: SQLite ``:memory:``), where a copy would open another, empty
    database: there it drives the App itself (that driver runs every statement on its own
    thread, from any loop).

    A portal belongs to the process that made it (``pid``): after a fork the child sees the
    parent's loop object but not its thread, and the parent's sockets and file handles;
    ``App`` then leaves it untouched (``abandon``) and makes a fresh one.
    """

    def __init__(self, app: T, *, shared: bool) -> None:
        """Drive ``app``: the App itself when ``shared``, else a copy the App made for it."""
        self.pid = os.getpid()
        self.shared = shared
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="chokaq-sync", daemon=True
        )
        self._thread.start()
        self._app = app
        _LIVE.add(self)

    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call(self, fn: Callable[[T], Awaitable[R]]) -> R:
        future: Future[R] = asyncio.run_coroutine_threadsafe(_call(fn, self._app), self._loop)
        return future.result()

    def stop(self) -> None:
        """Close the portal's connections and end its thread (never from the thread itself)."""
        _LIVE.discard(self)
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._app.close(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self._loop.close()


async def _call(fn: Callable[[T], Awaitable[R]], app: T) -> R:
    return await fn(app)


# Portals of this process, closed at interpreter exit: a PostgreSQL pool left open on a daemon
# loop dies with "Task was destroyed but it is pending" lines when the interpreter stops it.
_LIVE: weakref.WeakSet[Portal[Any]] = weakref.WeakSet()
# Portals a forked child inherited: kept referenced for the rest of the child's life, so that
# no finalizer ever closes the parent's connections or files from the child.
_ABANDONED: list[Portal[Any]] = []


def abandon(portal: Portal[Any]) -> None:
    """Forget ``portal`` without closing it (it is a forked parent's), keeping it referenced."""
    _LIVE.discard(portal)
    _ABANDONED.append(portal)


def _after_fork_in_child() -> None:
    """Every portal is the parent's now: keep it referenced and quiet. Its loop's tasks never
    run again here, and without this the child's exit prints "Task was destroyed but it is
    pending!" for each of them (the pool's workers)."""
    for portal in list(_LIVE):
        abandon(portal)
        for task in asyncio.all_tasks(portal._loop):
            task._log_destroy_pending = False  # type: ignore[attr-defined]


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _close_portals() -> None:
    for portal in list(_LIVE):
        if portal.pid == os.getpid():
            with contextlib.suppress(Exception):  # exiting: nothing left to tell
                portal.stop()

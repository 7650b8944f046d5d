"""Wake-ups and leadership on SQLite: an in-process broadcast per database file.

SQLite has no LISTEN/NOTIFY, so an enqueue (or a cancel request) that commits in this process
wakes every listener registered for the same file in this process, through
``loop.call_soon_threadsafe``; workers in other processes find new work by their short poll.
Leadership is always granted. Owns the listener registry only; it must not touch the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..base import Leadership, Notifier

__all__ = ["FileLeadership", "FileNotifier", "broadcast_cancel", "broadcast_jobs"]


@dataclass(frozen=True, eq=False)
class _Listener:
    loop: asyncio.AbstractEventLoop
    on_jobs: Callable[[str], None]
    on_cancel: Callable[[str], None]


_lock = threading.Lock()
_registry: dict[str, set[_Listener]] = {}


def _listeners(key: str) -> list[_Listener]:
    with _lock:
        return list(_registry.get(key, ()))


def _deliver(listener: _Listener, callback: Callable[[str], None], value: str) -> None:
    # A closed loop raises RuntimeError; its listener is unregistered by stop().
    with contextlib.suppress(RuntimeError):
        listener.loop.call_soon_threadsafe(callback, value)


def broadcast_jobs(key: str, queues: Iterable[str]) -> None:
    """Tell every listener on the file ``key`` that jobs were committed to ``queues``."""
    listeners = _listeners(key)
    if not listeners:
        return
    for queue in dict.fromkeys(queues):
        for listener in listeners:
            _deliver(listener, listener.on_jobs, queue)


def broadcast_cancel(key: str, job_ids: Iterable[str]) -> None:
    """Tell every listener on the file ``key`` that a cancel was requested for ``job_ids``."""
    listeners = _listeners(key)
    for job_id in job_ids:
        for listener in listeners:
            _deliver(listener, listener.on_cancel, job_id)


class FileNotifier(Notifier):
    """Hears enqueues and cancel requests committed by this process on one file."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._listener: _Listener | None = None

    async def start(
        self,
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
    ) -> None:
        await self.stop()
        listener = _Listener(asyncio.get_running_loop(), on_jobs, on_cancel)
        with _lock:
            _registry.setdefault(self._key, set()).add(listener)
        self._listener = listener

    async def stop(self) -> None:
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
        # Nothing can be lost: delivery is a function call inside this process.
        return True


class FileLeadership(Leadership):
    """Always the leader. Every maintenance statement (rescue, purge, roll-up) is guarded and
    idempotent and runs in its own short write transaction, so two processes running it on one
    file at once only repeat each other's no-op; electing one would buy nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def try_acquire(self) -> bool:
        return True

    async def release(self) -> None:
        return None

"""The threads of a worker's sync handlers, and the ones that ran past their job's end.

A Python thread cannot be interrupted: when the worker stops a sync job (its timeout, an
operator's cancel, a lost lease, shutdown) it records the outcome at once, and the handler's
thread runs on until the handler returns: an *overrun* thread. The pool has room for
``size`` running handlers plus ``overrun_limit`` overrun threads, so overrun threads never
starve later sync jobs of a thread. Past that bound each further overrun thread keeps its job
slot taken (``Slots.held``) until it returns, which bounds the threads at ``size`` +
``overrun_limit`` + the slots they hold, and says so loudly (event 2032). Owns the pool and the
overrun count; it neither runs nor finalizes jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from ..logs import Event, log_event
from .slots import Slots

__all__ = ["SyncThreads"]

ERROR = 40


class SyncThreads:
    """A thread pool sized for ``size`` sync handlers plus ``overrun_limit`` overrun threads;
    ``overrun`` counts the threads running a handler the worker stopped waiting for."""

    __slots__ = ("_finished", "_loop", "_told", "limit", "overrun", "pool", "size", "slots")

    def __init__(self, size: int, overrun_limit: int, slots: Slots) -> None:
        self.size = size
        self.limit = overrun_limit
        self.slots = slots
        self.overrun = 0
        self.pool = ThreadPoolExecutor(
            max_workers=size + overrun_limit, thread_name_prefix="chokaq-job"
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        # Handlers' futures that finished, for the loop to resolve their waiters in one go.
        self._finished: deque[tuple[asyncio.Future[Any], Future[Any]]] = deque()
        self._told = False  # a call to ``_resolve`` is on its way to the loop

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        """Run ``fn()`` in a thread (one is free unless ``size`` handlers already run)."""
        return self.pool.submit(fn)

    def waiter(self, future: Future[Any]) -> asyncio.Future[Any]:
        """An asyncio future of the running loop that ``future``'s outcome resolves.

        ``asyncio.wrap_future`` wakes the loop once for every handler that returns (a write to
        its self-pipe, and the loop's turn to read it); handlers returning together here share
        one wake-up. Cancelling the waiter does not cancel ``future`` (the caller does)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        future.add_done_callback(partial(self._done, loop, waiter))
        return waiter

    def _done(self, loop: asyncio.AbstractEventLoop, waiter: Any, future: Future[Any]) -> None:
        # In the handler's thread (or on the loop, for a future cancelled before it ran). The
        # flag is cleared on the loop before it takes the finished ones, so a future appended
        # after that asks again: none is left behind.
        self._finished.append((waiter, future))
        if not self._told:
            self._told = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        self._told = False
        finished = self._finished
        while finished:
            waiter, future = finished.popleft()
            if waiter.done():
                continue  # its task was stopped meanwhile
            if future.cancelled():
                waiter.cancel()
            elif (error := future.exception()) is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(future.result())

    def resize(self, size: int) -> None:
        """Room for ``size`` running handlers; it only grows (busy threads stay busy)."""
        if size <= self.size:
            return
        self.size = size
        # ThreadPoolExecutor cannot grow: new work goes to a larger pool, and the old one's
        # threads finish what they run (overrun ones included) and exit.
        old = self.pool
        self.pool = ThreadPoolExecutor(
            max_workers=size + self.limit, thread_name_prefix="chokaq-job"
        )
        old.shutdown(wait=False)

    def overran(self, future: Future[Any], *, job_id: str) -> None:
        """The worker stopped waiting for ``future``'s handler, whose thread runs on; called
        on the event loop. Past the bound, the thread holds a job slot until it returns."""
        self._loop = asyncio.get_running_loop()
        self.overrun += 1
        self._hold()
        if self.overrun > self.limit:
            log_event(
                Event.JOB_SYNC_OVERRUN_LIMIT,
                "a stopped sync handler's thread runs on past the overrun bound; its slot stays "
                "taken until it returns",
                level=ERROR,
                job_id=job_id,
                overrun_threads=self.overrun,
                limit=self.limit,
            )
        future.add_done_callback(self._returned)

    def _returned(self, _: Future[Any]) -> None:
        # In the overrun thread itself: hand over to the loop (gone if the worker has ended).
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._one_fewer)

    def _one_fewer(self) -> None:
        self.overrun -= 1
        self._hold()

    def _hold(self) -> None:
        held = max(0, self.overrun - self.limit)
        if held != self.slots.held:
            freed = held < self.slots.held
            self.slots.held = held
            if freed:
                self.slots.freed.set()
                self.slots.on_free()

    def shutdown(self) -> None:
        """Stop taking work; running threads (overrun ones included) finish on their own."""
        self.pool.shutdown(wait=False, cancel_futures=True)

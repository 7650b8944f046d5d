"""``chokaq worker --processes N``: a supervisor that keeps N worker processes running.

Each child is a fresh ``python -m chokaq worker ... --supervised`` interpreter (spawned, never
forked: a forked asyncio process would inherit its parent's event loop, threads and database
sockets in whatever state they were in, and a recycled child must really give its memory back),
registering as a worker of its own. The supervisor restarts a child that exits unexpectedly with
a backoff, replaces a child that recycled itself at once, forwards SIGTERM/SIGINT to every child
and waits for each to drain. It owns child processes and exit codes; it never opens the app nor
touches storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping

from ..logs import Event, log_event
from ..runtime.burst import EXIT_WORK_LEFT

__all__ = ["EXIT_RECYCLED", "Supervisor", "worst_exit"]

# A child that stopped to recycle (max jobs, max memory) exits with this code, so that the
# supervisor tells it from a burst child that finished (0); only the supervisor sees it.
EXIT_RECYCLED = 76
# A usage or configuration error (click, ``ConfigurationError``): restarting cannot fix it.
EXIT_USAGE = 2

WARNING = 30
ERROR = 40


def worst_exit(codes: list[int]) -> int:
    """The exit code of the supervisor: 0 when every child exited 0, else the worst child's
    (any error is worse than 75, work left)."""
    return max(codes, key=lambda c: (0 if c == 0 else 1 if c == EXIT_WORK_LEFT else 2, c))


def exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


class Supervisor:
    """Runs ``processes`` children, child ``slot`` started as ``argv(slot)``.

    A child that exits while the supervisor is not stopping is restarted: at once when it
    recycled itself (exit ``EXIT_RECYCLED``), after ``backoff_min_seconds`` doubling to
    ``backoff_max_seconds`` otherwise (reset once a child ran ``stable_seconds``). With
    ``burst`` a child that exits for any other reason is not restarted, and ``run`` returns
    once every child did. A child exiting with 2 (bad usage or settings) stops them all.
    """

    def __init__(
        self,
        argv: Callable[[int], list[str]],
        processes: int,
        *,
        burst: bool = False,
        env: Mapping[str, str] | None = None,
        backoff_min_seconds: float = 0.5,
        backoff_max_seconds: float = 30.0,
        stable_seconds: float = 30.0,
    ) -> None:
        self.argv = argv
        self.processes = processes
        self.burst = burst
        self.env = dict(os.environ if env is None else env)
        self.backoff_min_seconds = backoff_min_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.stable_seconds = stable_seconds
        self.children: dict[int, asyncio.subprocess.Process] = {}
        self.signals = 0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Send SIGTERM to every child (each drains, within its own shutdown grace); a second
        call sends SIGINT, which makes each child skip the rest of its grace (a supervised
        child takes a repeated SIGTERM as the same graceful stop: see ``run_worker_process``)."""
        self.signals += 1
        self._stopping.set()
        log_event(
            Event.WORKER_SUPERVISOR_STOPPING,
            "supervisor stopping: children drain"
            if self.signals == 1
            else "supervisor stopping: children hurry",
            children=len(self.children),
            signals=self.signals,
        )
        for proc in list(self.children.values()):
            self._signal(proc)

    async def run(self) -> int:
        """Run the children until stopped (or, in burst mode, until each finished); returns
        the exit code for the supervisor (``worst_exit`` of the children's last exits)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        log_event(
            Event.WORKER_SUPERVISOR_STARTED,
            f"supervisor started: {self.processes} worker process(es)",
            processes=self.processes,
            pid=os.getpid(),
            burst=self.burst,
        )
        try:
            codes = await asyncio.gather(*(self._keep(slot) for slot in range(self.processes)))
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        code = worst_exit(list(codes))
        log_event(
            Event.WORKER_SUPERVISOR_STOPPED,
            f"supervisor stopped (exit {code})",
            exit_code=code,
            children_exit_codes=",".join(str(c) for c in codes),
        )
        return code

    async def _keep(self, slot: int) -> int:
        """Keep child ``slot`` running; returns its last exit code."""
        delay = self.backoff_min_seconds
        code = 0
        while not self._stopping.is_set():
            started = time.monotonic()
            code = await self._run_child(slot)
            if self._stopping.is_set():
                # Recycled just then, or killed by our signal itself: it had not installed
                # its handler yet (still starting, so no job of its own) or had removed it
                # (drained, exiting). Each is a clean exit.
                if code in (EXIT_RECYCLED, 128 + signal.SIGTERM, 128 + signal.SIGINT):
                    code = 0
                break
            if code == EXIT_RECYCLED:
                delay = self.backoff_min_seconds
                continue  # logged by _run_child; a fresh one at once
            if self.burst:
                break
            if code == EXIT_USAGE:
                log_event(
                    Event.WORKER_CHILD_CRASHED,
                    f"worker process {slot} refused its usage or settings (exit 2); stopping",
                    level=ERROR,
                    slot=slot,
                    exit_code=code,
                )
                self.stop()
                break
            if time.monotonic() - started >= self.stable_seconds:
                delay = self.backoff_min_seconds
            log_event(
                Event.WORKER_CHILD_CRASHED,
                f"worker process {slot} exited with {code}; restarting it in {delay:g} s",
                level=ERROR if code else WARNING,
                slot=slot,
                exit_code=code,
                restart_in=delay,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)
            delay = min(delay * 2, self.backoff_max_seconds)
        return code

    async def _run_child(self, slot: int) -> int:
        # Its own session: a Ctrl-C on the terminal reaches the supervisor only, which
        # forwards it once (the child's process group would get it too, and a child hearing
        # two signals skips its grace). Its stdin is a pipe the supervisor never writes: the
        # child stops when it reads EOF, so children drain even if the supervisor is killed.
        proc = await asyncio.create_subprocess_exec(
            *self.argv(slot), stdin=asyncio.subprocess.PIPE, env=self.env, start_new_session=True
        )
        self.children[slot] = proc
        if self._stopping.is_set():  # a signal came while it was starting
            self._signal(proc)
        log_event(
            Event.WORKER_CHILD_STARTED,
            f"worker process {slot} started (pid {proc.pid})",
            slot=slot,
            pid=proc.pid,
        )
        try:
            code = exit_code(await proc.wait())
        finally:
            del self.children[slot]
            if proc.stdin is not None:
                proc.stdin.close()
        if code == EXIT_RECYCLED:
            log_event(
                Event.WORKER_CHILD_RECYCLED,
                f"worker process {slot} (pid {proc.pid}) recycled; starting a fresh one",
                slot=slot,
                pid=proc.pid,
            )
        return code

    def _signal(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM if self.signals <= 1 else signal.SIGINT)


def child_python() -> list[str]:
    """How to start a child: this interpreter, running chokaq's command line."""
    return [sys.executable, "-m", "chokaq"]

"""When a worker should recycle itself: after a number of jobs, or once its resident memory is
above a limit (``WorkerSettings.max_jobs`` / ``max_memory_mib``).

Owns the budget arithmetic and reading the process's memory; it must not stop the worker (the
worker's fetch loop asks it, and stops itself) nor restart anything (the CLI supervisor does).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

__all__ = ["Recycle", "rss_mib"]

# Reading /proc costs tens of microseconds: the fetch loop asks this often, the memory is read
# at most this often.
MEMORY_CHECK_SECONDS = 1.0


def rss_mib() -> float:
    """This process's resident memory now, in MiB (Linux: /proc/self/statm; elsewhere the peak
    from getrusage, which is what that platform offers without a dependency)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1_048_576
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1_048_576 if sys.platform == "darwin" else peak / 1024


@dataclass(eq=False)
class Recycle:
    """The recycle rule of one worker: ``budget`` caps what it may still start, ``reason`` says
    (once) why it should stop, or None."""

    max_jobs: int | None
    max_memory_mib: int | None
    _: KW_ONLY
    memory: Callable[[], float] = rss_mib  # the resident memory in MiB (tests give their own)
    clock: Callable[[], float] = time.monotonic
    _checked_at: float | None = field(default=None, init=False, repr=False)

    @property
    def active(self) -> bool:
        return self.max_jobs is not None or self.max_memory_mib is not None

    def budget(self, started: int, free: int) -> int:
        """How many of ``free`` slots may be filled, having started ``started`` jobs."""
        if self.max_jobs is None:
            return free
        return max(0, min(free, self.max_jobs - started))

    def reason(self, started: int) -> str | None:
        """Why the worker should recycle now (``started`` jobs so far), or None."""
        if self.max_jobs is not None and started >= self.max_jobs:
            return f"ran {started} jobs (max_jobs {self.max_jobs})"
        # Not before its first job: a process already above the limit when it starts would
        # otherwise be replaced by another just like it, over and over, running nothing.
        if self.max_memory_mib is None or started == 0:
            return None
        now = self.clock()
        if self._checked_at is not None and now - self._checked_at < MEMORY_CHECK_SECONDS:
            return None
        self._checked_at = now
        rss = self.memory()
        if rss > self.max_memory_mib:
            return f"resident memory {rss:.0f} MiB above max_memory_mib {self.max_memory_mib}"
        return None

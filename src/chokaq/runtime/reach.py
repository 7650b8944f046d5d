"""Since when this process has reached storage without interruption, as its leadership
renewals show: the evidence rescue needs before it may take a missing heartbeat for a dead
worker.

A heartbeat cannot be written while storage is out of reach, so its absence then says nothing
about its worker; rescue counts every heartbeat as written no earlier than ``since`` (see
``Maintenance.rescue``). The renewals are the probe: every worker sends one every renewal
interval, leading or not, and each is one small statement. One that fails interrupts the
stretch (the next that answers starts a new one); one that takes longer than a renewal interval
waited for the store (a pool with no live connection, a locked SQLite file, which makes writes
wait rather than fail), so the store was out of reach until about when it came back, and a new
stretch starts then. A failed maintenance pass interrupts it too. Owns that state only: it
never reaches storage, and it judges no job.
"""

from __future__ import annotations

import time

from ..logs import Event, log_event

__all__ = ["Reach"]


class Reach:
    """The current stretch of uninterrupted access to storage of one process; a renewal that
    takes longer than ``interval_seconds`` counts as an interruption that just ended."""

    __slots__ = ("_interrupted", "_since", "interval_seconds")

    def __init__(self, interval_seconds: float) -> None:
        self.interval_seconds = interval_seconds
        self._since: float | None = None
        self._interrupted: float | None = None  # monotonic time of the first sign, if any

    @property
    def since(self) -> float | None:
        """Monotonic time from which storage has answered without interruption; None while it
        does not (or before the first answer: what came before the process is not known)."""
        return self._since

    def answered(self, sent: float, came_back: float) -> None:
        """A renewal sent at ``sent`` came back at ``came_back`` (monotonic seconds)."""
        if came_back - sent > self.interval_seconds:
            if self._interrupted is None:
                self._interrupted = sent
            self._since = None
        if self._since is None:
            self._since = came_back
            if self._interrupted is not None:
                log_event(
                    Event.RESCUE_RESUMING,
                    "storage reachable again; rescue counts no heartbeat as missed before now",
                    interrupted_seconds=round(came_back - self._interrupted, 3),
                )
                self._interrupted = None

    def failed(self) -> None:
        """A storage call of this process's maintenance failed: the stretch is over."""
        if self._interrupted is None:
            self._interrupted = time.monotonic()
        self._since = None

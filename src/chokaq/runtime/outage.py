"""Whether a worker currently finds storage unavailable, and since when.

The fetch loop and the registry loop report trouble and recovery here; the first trouble of an
outage and its end are logged once each (events 1006 and 1007), and health checks read
``down_since``. Owns that state only: it must not retry, wait or reach storage itself.
"""

from __future__ import annotations

import time

from ..logs import Event, log_event

__all__ = ["Outage"]

ERROR = 40


class Outage:
    """Storage availability as one worker sees it. ``down_since`` is the monotonic time of the
    first failure of the current outage, or None while storage answers."""

    __slots__ = ("down_since",)

    def __init__(self) -> None:
        self.down_since: float | None = None

    @property
    def down(self) -> bool:
        """True while storage is unavailable."""
        return self.down_since is not None

    def trouble(self, exc: Exception) -> None:
        """A storage call failed; the first failure of an outage starts it and is logged."""
        if self.down_since is None:
            self.down_since = time.monotonic()
            log_event(
                Event.WORKER_STORAGE_UNAVAILABLE,
                "storage unavailable; retrying with backoff",
                level=ERROR,
                error=str(exc),
            )

    def recovered(self) -> None:
        """A storage call succeeded; ends (and logs the end of) the outage, if there was one."""
        if self.down_since is not None:
            log_event(
                Event.WORKER_STORAGE_RECOVERED,
                "storage reachable again",
                down_seconds=round(time.monotonic() - self.down_since, 3),
            )
            self.down_since = None

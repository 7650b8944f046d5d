"""The Deck's reads of why jobs wait (``chokaq.waits``), shared by every open stream: the queues
with due jobs no live worker serves (the banner), read at every snapshot, and the groups by
queue and type with their reasons (the "Why the wait" panel), read at most every
``WAITS_SECONDS``.

The banner's read is bounded (counts stop at a cap, off the fetch index: about 4 ms with 100,000
pending jobs on PostgreSQL), so it keeps the snapshot's pace and goes away within one poll of a
worker starting. The groups read every Pending row (about 40 ms at 100,000), so it runs at a
slower cadence. Owns that cache only; it must not import ``api`` or ``state``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..app import App
from ..waits import explain, unserved_json

__all__ = ["SNAPSHOT_GROUPS", "WAITS_SECONDS", "WaitReads"]

WAITS_SECONDS = 5.0
# The groups the live stream carries, the most due first: every event of every open tab
# carries them, so they are capped (GET /api/lag?limit= lists up to 1,000).
SNAPSHOT_GROUPS = 50


@dataclass
class WaitReads:
    """The cached "Why the wait" document and when it was read (monotonic seconds)."""

    _waits: dict[str, Any] | None = field(default=None, repr=False)
    _at: float = field(default=0.0, repr=False)

    async def snapshot(self, app: App) -> dict[str, Any]:
        """The snapshot's part: ``unserved`` (fresh) and ``waits`` (at most WAITS_SECONDS old)."""
        unserved = await app.backend.queues_unserved()
        return {"unserved": [unserved_json(u) for u in unserved], "waits": await self.waits(app)}

    async def waits(self, app: App) -> dict[str, Any]:
        if self._waits is None or time.monotonic() - self._at >= WAITS_SECONDS:
            self._waits = (await explain(app.backend, limit=SNAPSHOT_GROUPS)).as_json()
            self._at = time.monotonic()
        return self._waits

    def forget(self) -> None:
        """Read again at the next snapshot (after a mutation that may change a reason)."""
        self._waits = None

"""Storage faults for the torture run: poison rows and a killed LISTEN backend, mid-run.

Two scenarios that ``scripts/torture.py`` runs beside its other faults, kept here so they stay
small and separate:

* **poison rows** (both backends): at set moments a row that the claim cannot decode (a due
  time before year 1 on PostgreSQL, year 0 on SQLite; the API refuses both) is written with raw
  SQL into ``jobs_hot``, in the busy ``fast`` queue and first in its claim order, so the batch
  that claims it is full of healthy jobs. Each must end in the DLQ as REJECTED (or ZOMBIE, only
  when the worker that claimed it was SIGKILLed before it could reject it), and the run's
  accounting (lost 0, doubled 0, counters equal rows) holds with them in it.
* **LISTEN killed** (PostgreSQL): once, every worker's LISTEN backend on the run's channel is
  ended with ``pg_terminate_backend``. Every worker that lives on must log the loss (5010) and
  listening again (5011); the figure is how long that took (``down_seconds``, worst worker).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chokaq import FailureReason
from chokaq.ids import new_job_id

__all__ = ["StorageFaults"]

LISTEN_LOST = 5010
LISTEN_RESTORED = 5011
WORKER_STARTED = 1000
# Unix seconds of 31 December of year 0 (1 BC): SQLite stores it, Python cannot represent it.
YEAR_0 = -62_167_219_200.0 - 86_400
# A worker killed less than this after the LISTEN kill may not have had time to re-listen.
RELISTEN_BOUND_SECONDS = 10.0


@dataclass
class StorageFaults:
    """The plan (fractions of the fault phase) and what was done, for one run."""

    backend: str
    schema: str
    poison_at: list[float] = field(default_factory=lambda: [0.3, 0.6])
    listen_kill_at: float | None = 0.2
    poison_ids: list[str] = field(default_factory=list)
    listen_killed: list[int] = field(default_factory=list)
    listen_killed_at: float | None = None  # wall-clock seconds
    # When PostgreSQL accepted connections again after its restart (wall-clock seconds): no
    # worker can listen again before that.
    postgres_back_at: float | None = None
    postgres_down_at: float | None = None  # when its restart began (wall-clock seconds)

    @classmethod
    def plan(cls, backend: str, schema: str) -> StorageFaults:
        faults = cls(backend, schema)
        if backend != "postgres":
            faults.listen_kill_at = None
        return faults

    async def tick(
        self, elapsed: float, store: Any, accepted: dict[str, str], *, hold: bool = False
    ) -> None:
        """Apply what is due at ``elapsed`` (a fraction of the fault phase). Call it right
        after a producer tick, so the poison row lands beside fresh healthy jobs. ``hold``
        (PostgreSQL is restarting: the rig's own connections would be refused) keeps what is
        due for the first tick after it."""
        if hold:
            return
        while self.poison_at and elapsed >= self.poison_at[0]:
            self.poison_at.pop(0)
            job_id = new_job_id()
            await asyncio.to_thread(_plant_poison, store, job_id)
            self.poison_ids.append(job_id)
            accepted[job_id] = "poison"
        if self.listen_kill_at is not None and elapsed >= self.listen_kill_at:
            self.listen_kill_at = None
            self.listen_killed_at = time.time()
            self.listen_killed = await asyncio.to_thread(_kill_listen, store, self.schema)

    def verify(self, store: Any, workers: list[Any], report: Any) -> None:
        """The checks and figures of both scenarios (after the run's own ``verify``)."""
        self._verify_poison(store, workers, report)
        if self.backend == "postgres":
            self._verify_listen(workers, report)

    def _verify_poison(self, store: Any, workers: list[Any], report: Any) -> None:
        dlq = {
            str(r[0]): (r[1], int(r[2]), r[3] or "")
            for r in store.rows(
                f"SELECT id, worker_id, failure_reason, error FROM {store.table('jobs_dlq')}"
            )
        }
        killed = set()
        for w in workers:
            if w.fate == "killed":
                killed |= {
                    e.get("worker_id") for e in w.events() if e.get("event_id") == WORKER_STARTED
                }
        rejected = zombies = 0
        for job_id in self.poison_ids:
            row = dlq.get(job_id)
            report.check(row is not None, f"poison row {job_id} is not in the DLQ")
            if row is None:
                continue
            worker_id, reason, error = row
            if reason == FailureReason.REJECTED:
                rejected += 1
                report.check(
                    error.startswith("Rejected: undecodable row (scheduled_at"),
                    f"poison row {job_id} rejected with {error[:120]!r}",
                )
            elif reason == FailureReason.ZOMBIE and worker_id in killed:
                zombies += 1  # claimed by a worker SIGKILLed before it rejected it
            else:
                report.check(False, f"poison row {job_id} in the DLQ as {FailureReason(reason)}")
        report.figures.update(
            poison_rows=len(self.poison_ids),
            poison_rejected=rejected,
            poison_zombies_of_killed_workers=zombies,
        )

    def _listening_down(self, restored: dict[str, Any]) -> float:
        """How long a worker was without LISTEN before ``restored``, less the time PostgreSQL
        was restarting meanwhile (nobody can listen then: a worker whose first loss after the
        kill was the restart's would otherwise be charged the whole outage)."""
        down = float(restored.get("down_seconds", 0))
        back_at = _logged_at(restored)
        if self.postgres_down_at is None:
            return down
        server_back = self.postgres_back_at if self.postgres_back_at is not None else back_at
        overlap = min(back_at, server_back) - max(back_at - down, self.postgres_down_at)
        return down - max(overlap, 0.0)

    def _verify_listen(self, workers: list[Any], report: Any) -> None:
        if self.listen_killed_at is None:
            return
        report.figures["listen_backends_killed"] = len(self.listen_killed)
        report.check(bool(self.listen_killed), "no LISTEN backend was found to kill")
        down: list[float] = []
        for w in workers:
            events = [e for e in w.events() if _logged_at(e) >= self.listen_killed_at - 1.0]
            lost = [e for e in events if e.get("event_id") == LISTEN_LOST]
            back = [e for e in events if e.get("event_id") == LISTEN_RESTORED]
            if back:  # the first recovery after the kill (a later restart has its own)
                down.append(self._listening_down(back[0]))
            if w.index == 0:  # the witness is never signalled: it must have re-listened
                report.check(bool(lost), "the witness worker never logged its LISTEN loss")
                report.check(bool(back), "the witness worker never listened again")
            elif lost and not _recovered_after(back, lost[-1]):
                # Its last loss (the kill, or the PostgreSQL restart after it) was never
                # followed by a recovery: fine only if the worker ended soon after that loss,
                # or after PostgreSQL came back when the loss was the restart's.
                since = max(_logged_at(lost[-1]), self.postgres_back_at or 0.0)
                report.check(
                    _ended_soon_after(w, since),
                    f"worker {w.index} lost LISTEN and never listened again",
                )
        report.figures["relisten_seconds_worst"] = round(max(down), 3) if down else None
        report.check(
            not down or max(down) <= RELISTEN_BOUND_SECONDS,
            f"a worker took {max(down or [0]):.1f} s to listen again",
        )


def _plant_poison(store: Any, job_id: str) -> None:
    hot = store.table("jobs_hot")
    columns = "id, queue, type, payload, priority, status, scheduled_at, created_at, updated_at"
    if store.kind == "postgres":
        values = (
            f"'{job_id}', 'fast', 'fast', '{{\"n\": -1}}', 10, 0,"
            " '0001-01-01 00:00+00 BC', now(), now()"
        )
    else:
        now = time.time()
        values = f"'{job_id}', 'fast', 'fast', '{{\"n\": -1}}', 10, 0, {YEAR_0!r}, {now}, {now}"
    store.execute(f"INSERT INTO {hot} ({columns}) VALUES ({values})")


def _kill_listen(store: Any, schema: str) -> list[int]:
    """End every backend listening on the run's channel; their pids."""
    channel = f"chokaq_{schema.lower()}"
    rows = store.rows(
        "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE query = ? AND pid <> pg_backend_pid()",
        (f'LISTEN "{channel}"',),
    )
    return [int(pid) for pid, ended in rows if ended]


def _logged_at(event: dict[str, Any]) -> float:
    """A log line's wall-clock time in Unix seconds (0 when it has none)."""
    stamp = event.get("time")
    return datetime.fromisoformat(stamp).timestamp() if isinstance(stamp, str) else 0.0


def _recovered_after(back: list[dict[str, Any]], loss: dict[str, Any]) -> bool:
    return any(_logged_at(event) >= _logged_at(loss) for event in back)


def _ended_soon_after(worker: Any, moment: float) -> bool:
    """Whether the worker's log ends (it was killed or stopped) within the re-listen bound."""
    events = worker.events()
    if not events or worker.fate == "running":
        return False
    return _logged_at(events[-1]) <= moment + RELISTEN_BOUND_SECONDS

"""The torture run's stopped-leader scenario: SIGSTOP the maintenance leader during the fault
phase, measure how soon another worker takes the role over and rescues every job the stopped
one held, then SIGCONT it and check that it noticed, on waking, that its term was over.

Leadership is a lease on the database's clock (``docs/reliability.md``), so rescue must resume
within the zombie (or fetched) timeout plus the lease plus one renewal interval, however long
the leader stays frozen. ``torture.py`` calls ``step`` once per tick and ``check`` when the run
is over; this module owns the scenario only (the rig's pieces are in ``torture_rig.py``). On
SQLite the leader is stopped outside a write transaction (see ``_stop_outside_a_write``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass

from scripts.torture_rig import Config, Report, Store, WorkerProc, freeze

from chokaq import App, StorageError

LEADERSHIP_ACQUIRED = 4006
LEADERSHIP_LOST = 4007
# How long the ex-leader is left unsignalled after SIGCONT at most, so that it can log the loss.
WAKE_SECONDS = 15.0


@dataclass
class StoppedLeader:
    """One stop of the leader at ``at`` (monotonic), resumed once the rescue is done or after
    ``longest`` seconds."""

    at: float
    longest: float
    worker: WorkerProc | None = None
    holder: str = ""
    epoch: int = 0
    held: frozenset[str] = frozenset()
    stopped_at: float = 0.0
    resumed_at: float | None = None
    takeover: float | None = None
    rescued: float | None = None
    _seen_loss: bool = False

    def frozen(self) -> set[int]:
        """Workers the run must not signal now: the stopped one, and, once resumed, it still
        until it has logged the loss (or had ``WAKE_SECONDS`` to)."""
        if self.worker is None:
            return set()
        if self.resumed_at is not None and (
            self._noticed() or time.monotonic() - self.resumed_at > WAKE_SECONDS
        ):
            return set()
        return {self.worker.index}

    async def step(self, client: App, store: Store, workers: list[WorkerProc]) -> None:
        now = time.monotonic()
        if self.resumed_at is not None or now < self.at:
            return
        with contextlib.suppress(StorageError):
            if self.worker is None:
                await self._stop(client, store, workers)
                return
            term = await client.backend.leadership_get(name="maintenance")
            if self.takeover is None and term is not None and term.holder != self.holder:
                self.takeover = now - self.stopped_at
            if self.rescued is None and not await asyncio.to_thread(self._owned, store):
                self.rescued = now - self.stopped_at
        if (self.takeover is not None and self.rescued is not None) or (
            now - self.stopped_at > self.longest
        ):
            self.resume()

    async def _stop(self, client: App, store: Store, workers: list[WorkerProc]) -> None:
        term = await client.backend.leadership_get(name="maintenance")
        if term is None:
            return
        pids = {w.id: w.pid for w in await client.backend.workers_list()}
        leader = [w for w in workers if w.fate == "running" and w.proc.pid == pids.get(term.holder)]
        if not leader:
            return  # the leader is not registered yet, or just went away: try again next tick
        self.worker, self.holder, self.epoch = leader[0], term.holder, term.epoch
        self.held = frozenset(await asyncio.to_thread(self._owned, store))
        await asyncio.to_thread(_stop_outside_a_write, store, self.worker.proc.pid)
        self.stopped_at = time.monotonic()

    def _owned(self, store: Store) -> list[str]:
        """The hot jobs the stopped leader holds (Fetched or Processing under its id)."""
        rows = store.rows(
            f"SELECT id FROM {store.table('jobs_hot')} WHERE worker_id = ? AND status IN (1, 2)",
            (self.holder,),
        )
        return [str(row[0]) for row in rows]

    def excused(self, job_id: str, pid: int) -> bool:
        """Whether an execution that found no lease on its row is the stopped leader's: a job it
        held when frozen, rescued meanwhile, whose handler took its first step after SIGCONT
        (at least once, as documented; its outcome is refused by the lease fence)."""
        return self.worker is not None and pid == self.worker.proc.pid and job_id in self.held

    def resume(self) -> None:
        """SIGCONT the stopped leader (also the run's safety net in its ``finally``)."""
        if self.worker is not None and self.resumed_at is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.worker.proc.pid, signal.SIGCONT)
            self.resumed_at = time.monotonic()

    def _announced(self) -> bool:
        """Whether the stopped leader logged the grant of the term it was stopped in."""
        return self.worker is not None and any(
            e.get("event_id") == LEADERSHIP_ACQUIRED and e.get("epoch") == self.epoch
            for e in self.worker.events()
        )

    def _noticed(self) -> bool:
        if not self._seen_loss and self.worker is not None:
            self._seen_loss = any(
                e.get("event_id") == LEADERSHIP_LOST and e.get("epoch") == self.epoch
                for e in self.worker.events()
            )
        return self._seen_loss

    def check(self, config: Config, report: Report) -> None:
        if self.worker is None:
            report.check(False, "stopped leader: the leader was never found to stop")
            return
        bound = max(config.zombie_timeout_seconds, config.fetched_timeout_seconds)
        bound += config.leadership_lease_seconds * 4 / 3 + 2 * config.rescue_interval_seconds
        bound += 3.0  # a loaded machine
        report.figures.update(
            stopped_leader_jobs_held=len(self.held),
            stopped_leader_takeover_seconds=_round(self.takeover),
            stopped_leader_rescue_seconds=_round(self.rescued),
            stopped_leader_bound_seconds=round(bound, 2),
        )
        report.check(self.takeover is not None, "stopped leader: nobody took the role over")
        report.check(
            self.rescued is not None and self.rescued <= bound,
            f"stopped leader: its jobs rescued after {self.rescued} s (bound {bound:.1f} s)",
        )
        if self.worker.fate in {"running", "stopped"} and self._announced():
            # Not killed before it could say so, and it knew it led: a leader stopped after
            # the database granted its term but before it read the answer never led under
            # that term (it finds the term already lapsed when it wakes), so it has no loss
            # to log. Every grant a worker logged must end in a logged loss or release.
            report.check(self._noticed(), "stopped leader: never logged leadership_lost")


def _stop_outside_a_write(store: Store, pid: int) -> None:
    """SIGSTOP ``pid``, on SQLite outside a write transaction (``torture_rig.freeze``)."""
    freeze(pid, store.url.removeprefix("sqlite:///") if store.kind == "sqlite" else None)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)

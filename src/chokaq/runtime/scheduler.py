"""Periodic schedules in the worker: declare this app's schedules, keep them marked as seen, and,
while this worker holds the maintenance leadership, enqueue every slot that falls due.

Each worker upserts the schedules its code declares when it starts and re-marks them seen every
``SEEN_INTERVAL_SECONDS`` (a schedule no running worker marks is orphaned and does not fire).
The elected worker (the one whose maintenance term is current, read from the shared
``Leadership`` handle: one lease, one leader) reads the due schedules every
``schedule_tick_seconds`` and fires each through ``Backend.schedule_fire``, whose compare-and-set
on the row makes every slot enqueued exactly once even when two workers believe they lead for a
moment or a worker of an older deploy fires too. It holds no SQL and computes no slot: slots are
``chokaq.periodic``'s, their enqueue is the seam's.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field

from ..errors import SchemaError, StorageError, StorageUnavailableError
from ..logs import Event, log_event
from ..models import Schedule, ScheduleDeclaration, SlotOutcome, SlotRecord
from ..settings import WorkerSettings
from ..storage import Backend, Leadership
from ..storage.schedules import SEEN_INTERVAL_SECONDS, missed_slots
from .events import Events

__all__ = ["Scheduler"]

WARNING = 30


@dataclass(eq=False)
class Scheduler:
    """The schedules side task of one worker; ``declarations`` are its app's, by name."""

    backend: Backend
    settings: WorkerSettings
    declarations: Mapping[str, ScheduleDeclaration]
    leadership: Leadership
    events: Events
    _: KW_ONLY
    worker_id: str
    declared: bool = field(default=False, init=False)  # this worker's schedules are upserted
    _seen_at: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.declarations = dict(self.declarations)  # its own copy of the App's, as given

    async def run(self) -> None:
        """Declare, then tick until cancelled; storage errors are logged and retried."""
        failures = 0
        while True:
            try:
                await self.step()
                failures = 0
                await asyncio.sleep(self.settings.schedule_tick_seconds)
            except StorageError as exc:
                failures += 1
                log_event(
                    Event.SCHEDULE_FAILED,
                    "schedule pass failed; retrying",
                    level=WARNING,
                    worker_id=self.worker_id,
                    error=str(exc),
                )
                await asyncio.sleep(min(5.0, 0.2 * 2 ** min(failures, 5)) * random.uniform(0.5, 1))

    async def step(self) -> None:
        """One pass: declare (once), re-mark as seen (when due), fire what is due (leading)."""
        if self.declarations and not self.declared:
            await self.backend.schedules_declare(list(self.declarations.values()))
            self.declared = True
            self._seen_at = time.monotonic()
            log_event(
                Event.SCHEDULES_DECLARED,
                "periodic schedules declared",
                worker_id=self.worker_id,
                count=len(self.declarations),
                names=",".join(sorted(self.declarations)[:50]),
            )
        if self.declarations and time.monotonic() - self._seen_at >= SEEN_INTERVAL_SECONDS:
            await self.backend.schedules_seen(list(self.declarations))
            self._seen_at = time.monotonic()
        if self.leadership.term is not None:
            await self.tick()

    async def tick(self) -> int:
        """Fire every due schedule once; returns how many jobs were enqueued."""
        enqueued = 0
        for schedule in await self.backend.schedules_due():
            if self.leadership.term is None:
                break  # the term lapsed mid-pass: the next leader goes on
            try:
                written = await self.backend.schedule_fire(schedule)
            except (StorageUnavailableError, SchemaError):
                raise  # the store is away: the whole pass backs off
            except Exception as exc:
                # One schedule that cannot be fired (a row another version wrote, an
                # expression this parser refuses) must not stop the others.
                log_event(
                    Event.SCHEDULE_FAILED,
                    f"schedule {schedule.name} could not be fired; the others go on",
                    level=WARNING,
                    worker_id=self.worker_id,
                    schedule=schedule.name,
                    error=f"{type(exc).__name__}: {exc}",
                )
                continue
            if written:
                enqueued += self._report(schedule, written)
        return enqueued

    def _report(self, schedule: Schedule, written: list[SlotRecord]) -> int:
        runs = [r for r in written if r.outcome is SlotOutcome.ENQUEUED]
        missed = [r for r in written if r.outcome is SlotOutcome.MISSED]
        skipped = [r for r in written if r.outcome is SlotOutcome.SKIPPED]
        missed_count = sum(missed_slots(r) for r in missed)
        for record in runs:
            log_event(
                Event.SCHEDULE_ENQUEUED,
                f"schedule {schedule.name} enqueued its slot",
                schedule=schedule.name,
                slot=record.slot.isoformat(),
                job_id=record.job_id,
                type=schedule.type,
            )
        for record in missed:
            log_event(
                Event.SCHEDULE_MISSED,
                f"schedule {schedule.name} missed slots",
                level=WARNING,
                schedule=schedule.name,
                slot=record.slot.isoformat(),
                misfire=schedule.misfire,
                detail=record.detail,
            )
        for record in skipped:
            log_event(
                Event.SCHEDULE_SKIPPED,
                f"schedule {schedule.name} skipped a slot: its previous run had not finished",
                schedule=schedule.name,
                slot=record.slot.isoformat(),
                job_id=record.job_id,
            )
        self.events.emit(
            "schedule",
            schedule=schedule.name,
            enqueued=len(runs),
            missed=missed_count,
            skipped=len(skipped),
        )
        return len(runs)

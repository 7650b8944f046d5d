"""Periodic schedules on PostgreSQL: declaring, listing, firing slots and operators' changes.

Owns turning the schedule operations into the named statements of ``sql/schedules.sql``. A slot is
fired in one transaction: the compare-and-set on the schedule's row (``schedule_advance``),
which also locks it, then the enqueue of its jobs through the ordinary enqueue path, then its
records. Arguments arrive checked; this module holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...models import (
    NewJob,
    Schedule,
    ScheduleChange,
    ScheduleDeclaration,
    SlotOutcome,
    SlotRecord,
    run_outcome,
)
from .jobs import PostgresJobs

__all__ = ["PostgresSchedules"]


def _schedule(row: tuple[Any, ...]) -> Schedule:
    return Schedule(
        name=row[0],
        type=row[1],
        queue=row[2],
        priority=row[3],
        cron=row[4],
        every_seconds=row[5],
        timezone=row[6],
        kwargs=row[7],
        misfire=row[8],
        overlap=row[9],
        paused=row[10],
        declared_cron=row[11],
        declared_every_seconds=row[12],
        declared_timezone=row[13],
        declared_kwargs=row[14],
        edited_by=row[15],
        edited_at=row[16],
        revision=int(row[17]),
        last_slot=row[18],
        next_slot=row[19],
        last_job_id=row[20],
        last_run_at=row[21],
        last_outcome=run_outcome(row[26], row[27], row[28]),
        seen_at=row[22],
        created_at=row[23],
        updated_at=row[24],
        last_modified_by=row[25],
        expires_after_seconds=row[29],
    )


def _records(name: str, records: list[SlotRecord], now: datetime) -> dict[str, Any]:
    return {
        "name": name,
        "now": now,
        "slots": [r.slot for r in records],
        "outcomes": [str(r.outcome) for r in records],
        "job_ids": [r.job_id for r in records],
        "details": [r.detail for r in records],
    }


class PostgresSchedules(PostgresJobs):
    """The schedule operations of the driver contract."""

    async def schedules_declare(
        self,
        declarations: list[ScheduleDeclaration],
        next_slots: list[datetime],
        now: datetime,
    ) -> None:
        d = declarations
        await self._rows(
            "schedules_declare",
            {
                "names": [x.name for x in d],
                "types": [x.type for x in d],
                "queues": [x.queue for x in d],
                "priorities": [x.priority for x in d],
                "crons": [x.cron for x in d],
                "everies": [x.every_seconds for x in d],
                "tzs": [x.timezone for x in d],
                "kwargs": [x.kwargs for x in d],
                "misfires": [x.misfire for x in d],
                "overlaps": [x.overlap for x in d],
                "expiries": [x.expires_after_seconds for x in d],
                "next_slots": next_slots,
                "now": now,
            },
        )

    async def schedules_seen(self, names: list[str], now: datetime) -> None:
        await self._rows("schedules_seen", {"names": names, "now": now})

    async def schedules_list(
        self,
        names: list[str] | None,
        due_at: datetime | None,
        seen_since: datetime | None,
    ) -> list[Schedule]:
        params = {"names": names, "due_at": due_at, "seen_since": seen_since}
        return [_schedule(row) for row in await self._rows("schedules_list", params)]

    async def schedule_history(self, name: str, limit: int) -> list[SlotRecord]:
        rows = await self._rows("schedule_history", {"name": name, "limit": limit})
        return [
            SlotRecord(slot, SlotOutcome(outcome), job_id, detail, recorded_at)
            for slot, outcome, job_id, detail, recorded_at in rows
        ]

    async def schedule_fire(
        self,
        name: str,
        revision: int | None,
        last_slot: datetime | None,
        new_last_slot: datetime | None,
        next_slot: datetime | None,
        jobs: list[NewJob],
        runs: list[SlotRecord],
        records: list[SlotRecord],
        overlap: bool,
        now: datetime,
    ) -> list[SlotRecord] | None:
        async with self.pool.connection() as conn, conn.transaction():
            if revision is not None:
                params = {
                    "name": name,
                    "revision": revision,
                    "last_slot": last_slot,
                    "new_last_slot": new_last_slot,
                    "next_slot": next_slot,
                }
                moved = await self._run(conn, "schedule_advance", params)
            else:
                moved = await self._run(conn, "schedule_lock", {"name": name})
            if not moved:
                return None
            previous = moved[0][0]
            if (
                jobs
                and not overlap
                and previous is not None
                and await self._run(conn, "schedule_unfinished", {"id": previous})
            ):
                detail = "the previous run (this record's job) had not finished"
                runs = [SlotRecord(r.slot, SlotOutcome.SKIPPED, previous, detail) for r in runs]
                jobs = []
            if jobs:
                await self.jobs_enqueue(jobs, now, conn)
                await self._run(
                    conn, "schedule_ran", {"name": name, "job_id": jobs[-1].id, "now": now}
                )
            written = sorted([*records, *runs], key=lambda r: r.slot)
            if written:
                await self._run(conn, "schedule_record", _records(name, written, now))
                await self._run(conn, "schedule_trim", {"name": name})
        return [SlotRecord(r.slot, r.outcome, r.job_id, r.detail, now) for r in written]

    async def schedule_update(
        self, name: str, revision: int, change: ScheduleChange, actor: str, now: datetime
    ) -> bool:
        params = {
            "name": name,
            "revision": revision,
            "paused": change.paused,
            "cron": change.cron,
            "every": change.every_seconds,
            "tz": change.timezone,
            "kwargs": change.kwargs,
            "edited": change.edited,
            "restart_at": change.restart_at,
            "next_slot": change.next_slot,
            "actor": actor,
            "now": now,
        }
        return await self._count("schedule_update", params) > 0

    async def schedule_delete(self, name: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction():
            await self._run(conn, "schedule_delete_slots", {"name": name})
            cur = await conn.execute(self._q["schedule_delete"], {"name": name})
            return cur.rowcount > 0

"""Periodic schedules on SQLite: declaring, listing, firing slots and operators' changes.

The same operations as on PostgreSQL, each one write transaction (``BEGIN IMMEDIATE``, so two
processes firing the same slot are serialized and the second finds the row moved on). A slot is
fired as the compare-and-set on the schedule's row, then the enqueue of its jobs by the ordinary
enqueue path, then its records, in that one transaction. Runs on the connection's thread;
arguments arrive checked; no SQL text here.
"""

from __future__ import annotations

import json
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
from .connection import Database, SQLiteCore
from .jobs import enqueue_within
from .notify import broadcast_jobs
from .rows import from_ts, to_ts

__all__ = [
    "SQLiteSchedules",
    "declare",
    "delete",
    "fire",
    "history",
    "listed",
    "seen",
    "update",
]


def _ts(value: datetime | None) -> float | None:
    return None if value is None else to_ts(value)


def _at(value: Any) -> datetime:
    moment = from_ts(float(value))
    assert moment is not None
    return moment


def _schedule(row: Any) -> Schedule:
    return Schedule(
        name=row[0],
        type=row[1],
        queue=row[2],
        priority=int(row[3]),
        cron=row[4],
        every_seconds=row[5],
        timezone=row[6],
        kwargs=row[7],
        misfire=row[8],
        overlap=bool(row[9]),
        paused=bool(row[10]),
        declared_cron=row[11],
        declared_every_seconds=row[12],
        declared_timezone=row[13],
        declared_kwargs=row[14],
        edited_by=row[15],
        edited_at=from_ts(row[16]),
        revision=int(row[17]),
        last_slot=_at(row[18]),
        next_slot=from_ts(row[19]),
        last_job_id=row[20],
        last_run_at=from_ts(row[21]),
        last_outcome=run_outcome(row[26], bool(row[27]), row[28]),
        seen_at=_at(row[22]),
        created_at=_at(row[23]),
        updated_at=_at(row[24]),
        last_modified_by=row[25],
        expires_after_seconds=row[29],
    )


def declare(
    db: Database, declarations: list[ScheduleDeclaration], next_slots: list[datetime], now: datetime
) -> None:
    rows = [
        {
            "name": d.name,
            "type": d.type,
            "queue": d.queue,
            "priority": d.priority,
            "cron": d.cron,
            "every": d.every_seconds,
            "tz": d.timezone,
            "kwargs": d.kwargs,
            "misfire": d.misfire,
            "overlap": int(d.overlap),
            "expires": d.expires_after_seconds,
            "next_slot": to_ts(next_slot),
            "now": to_ts(now),
        }
        for d, next_slot in zip(declarations, next_slots, strict=True)
    ]
    db.write(lambda: db.conn.executemany(db.q["schedules_declare"], rows))


def seen(db: Database, names: list[str], now: datetime) -> None:
    params = {"names": json.dumps(names), "now": to_ts(now)}
    db.write(lambda: db.conn.execute(db.q["schedules_seen"], params))


def listed(
    db: Database, names: list[str] | None, due_at: datetime | None, seen_since: datetime | None
) -> list[Schedule]:
    params = {
        "names": None if names is None else json.dumps(names),
        "due_at": _ts(due_at),
        "seen_since": _ts(seen_since),
    }
    return [_schedule(row) for row in db.conn.execute(db.q["schedules_list"], params)]


def history(db: Database, name: str, limit: int) -> list[SlotRecord]:
    rows = db.conn.execute(db.q["schedule_history"], {"name": name, "limit": limit})
    return [
        SlotRecord(_at(slot), SlotOutcome(outcome), job_id, detail, _at(recorded_at))
        for slot, outcome, job_id, detail, recorded_at in rows
    ]


def fire(
    db: Database,
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
    conn, q = db.conn, db.q
    stamp = to_ts(now)

    def run() -> list[SlotRecord] | None:
        nonlocal jobs, runs
        if revision is not None:
            params = {
                "name": name,
                "revision": revision,
                "last_slot": _ts(last_slot),
                "new_last_slot": _ts(new_last_slot),
                "next_slot": _ts(next_slot),
            }
            moved = conn.execute(q["schedule_advance"], params).fetchone()
        else:
            moved = conn.execute(q["schedule_lock"], {"name": name}).fetchone()
        if moved is None:
            return None
        previous = moved[0]
        if (
            jobs
            and not overlap
            and previous is not None
            and conn.execute(q["schedule_unfinished"], {"id": previous}).fetchone() is not None
        ):
            detail = "the previous run (this record's job) had not finished"
            runs = [SlotRecord(r.slot, SlotOutcome.SKIPPED, previous, detail) for r in runs]
            jobs = []
        if jobs:
            enqueue_within(db, jobs, stamp)
            conn.execute(q["schedule_ran"], {"name": name, "job_id": jobs[-1].id, "now": stamp})
        written = sorted([*records, *runs], key=lambda r: r.slot)
        conn.executemany(
            q["schedule_record"],
            [
                {
                    "name": name,
                    "slot": to_ts(r.slot),
                    "outcome": str(r.outcome),
                    "job_id": r.job_id,
                    "detail": r.detail,
                    "now": stamp,
                }
                for r in written
            ],
        )
        if written:
            conn.execute(q["schedule_trim"], {"name": name})
        return [SlotRecord(r.slot, r.outcome, r.job_id, r.detail, now) for r in written]

    return db.write(run)


def update(
    db: Database, name: str, revision: int, change: ScheduleChange, actor: str, now: datetime
) -> bool:
    params = {
        "name": name,
        "revision": revision,
        "paused": int(change.paused),
        "cron": change.cron,
        "every": change.every_seconds,
        "tz": change.timezone,
        "kwargs": change.kwargs,
        "edited": int(change.edited),
        "restart_at": _ts(change.restart_at),
        "next_slot": _ts(change.next_slot),
        "actor": actor,
        "now": to_ts(now),
    }
    return db.write(lambda: db.conn.execute(db.q["schedule_update"], params).rowcount > 0)


def delete(db: Database, name: str) -> bool:
    def run() -> bool:
        db.conn.execute(db.q["schedule_delete_slots"], {"name": name})
        return db.conn.execute(db.q["schedule_delete"], {"name": name}).rowcount > 0

    return db.write(run)


class SQLiteSchedules(SQLiteCore):
    """Periodic schedules: declare, list, fire, change."""

    async def schedules_declare(
        self,
        declarations: list[ScheduleDeclaration],
        next_slots: list[datetime],
        now: datetime,
    ) -> None:
        await self._db.call(declare, declarations, next_slots, now)

    async def schedules_seen(self, names: list[str], now: datetime) -> None:
        await self._db.call(seen, names, now)

    async def schedules_list(
        self,
        names: list[str] | None,
        due_at: datetime | None,
        seen_since: datetime | None,
    ) -> list[Schedule]:
        return await self._db.call(listed, names, due_at, seen_since)

    async def schedule_history(self, name: str, limit: int) -> list[SlotRecord]:
        return await self._db.call(history, name, limit)

    async def schedule_fire(
        self,
        name: str,
        revision: int | None,
        last_slot: datetime | None,
        new_last_slot: datetime | None,
        next_slot: datetime | None,
        jobs_: list[NewJob],
        runs: list[SlotRecord],
        records: list[SlotRecord],
        overlap: bool,
        now: datetime,
    ) -> list[SlotRecord] | None:
        written = await self._db.call(
            fire,
            name,
            revision,
            last_slot,
            new_last_slot,
            next_slot,
            jobs_,
            runs,
            records,
            overlap,
            now,
        )
        if written is not None and any(r.job_id is not None for r in written):
            broadcast_jobs(self._db.key, [job.queue for job in jobs_])
        return written

    async def schedule_update(
        self, name: str, revision: int, change: ScheduleChange, actor: str, now: datetime
    ) -> bool:
        return await self._db.call(update, name, revision, change, actor, now)

    async def schedule_delete(self, name: str) -> bool:
        return await self._db.call(delete, name)

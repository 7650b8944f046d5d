"""The storage seam's periodic-schedule operations, checked once and observed once.

``Backend`` is assembled from this group and its own; the rules are the seam's (see
``chokaq.storage.backend``): every argument is checked and normalised here, the same for every
database, then one driver method runs. Slot arithmetic is ``chokaq.periodic``'s (pure).

Schedule times are the calling process's clock (``now``, default ``datetime.now(UTC)``), on
every database: a slot is computed and fired by one process, so hosts need synchronised clocks
as they would for any cron. Exactly-once does not depend on them: a slot is enqueued only by
moving the row's ``last_slot`` from the value read, in the enqueue's own transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import NotFoundError, ValidationError
from ..ids import new_job_ids
from ..limits import (
    Limits,
    check_expiry_seconds,
    check_name,
    check_payload,
    check_priority,
    check_time,
)
from ..models import (
    NewJob,
    Schedule,
    ScheduleChange,
    ScheduleDeclaration,
    SlotOutcome,
    SlotRecord,
)
from ..payloads import encode_payload
from ..periodic import Misfire, Timing, check_misfire, plan
from . import checks
from .checks import UNSET
from .group import OperationGroup
from .observed import operation

__all__ = [
    "MAX_SCHEDULE_NAME",
    "ORPHAN_AFTER_SECONDS",
    "SEEN_INTERVAL_SECONDS",
    "ScheduleOperations",
    "missed_slots",
    "slot_key",
]

# A schedule name is at most this long (its runs' created_by is "schedule:" + name).
MAX_SCHEDULE_NAME = 90
# A running worker re-marks the schedules it declares this often; one not marked for
# ORPHAN_AFTER_SECONDS is orphaned (no running worker declares it) and does not fire.
SEEN_INTERVAL_SECONDS = 10.0
ORPHAN_AFTER_SECONDS = 60.0
MAX_HISTORY = 100


def slot_key(name: str, slot: datetime) -> str:
    """The idempotency key of a slot's job: a second guard beside the compare-and-set."""
    return f"schedule:{name}@{slot.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}"


def missed_slots(record: SlotRecord) -> int:
    """How many slots a MISSED record stands for: one record covers a whole gap, and its detail
    starts with the count ("12 slots missed (...)", as ``schedule_fire`` writes it)."""
    head = (record.detail or "").split(" ", 1)[0]
    return int(head) if head.isdigit() else 1


def check_schedule_name(field: str, value: object) -> str:
    name = check_name(field, value)
    if len(name) > MAX_SCHEDULE_NAME:
        raise ValidationError(
            field,
            f"must be at most {MAX_SCHEDULE_NAME} characters for a schedule (got {len(name)})",
        )
    return name


def check_kwargs(field: str, value: object, limits: Limits) -> str:
    """A run's keyword arguments: a mapping (serialized here) or JSON text of an object."""
    if isinstance(value, Mapping):
        value = encode_payload(dict(value), field)
    text = check_payload(field, value, limits)
    if not text.lstrip().startswith("{"):
        raise ValidationError(field, "must be a JSON object of keyword arguments")
    return text


def _now(value: datetime | None) -> datetime:
    return datetime.now(UTC) if value is None else check_time("now", value)


class ScheduleOperations(OperationGroup):
    """Periodic schedules: declared by workers, fired by the elected one, steered by operators."""

    def _orphaned(self, schedules: list[Schedule], now: datetime) -> list[Schedule]:
        cutoff = now - timedelta(seconds=ORPHAN_AFTER_SECONDS)
        return [replace(s, orphaned=True) if s.seen_at < cutoff else s for s in schedules]

    @operation
    async def schedules_declare(
        self, declarations: Sequence[ScheduleDeclaration], *, now: datetime | None = None
    ) -> None:
        """Upsert the schedules a worker's code declares (see ``Driver.schedules_declare`` for
        what the code owns and what an operator's edit keeps), and mark them seen."""
        moment = _now(now)
        checked: list[ScheduleDeclaration] = []
        names: set[str] = set()
        for i, d in enumerate(declarations):
            if not isinstance(d, ScheduleDeclaration):
                raise ValidationError(f"declarations[{i}]", "must be a ScheduleDeclaration")
            name = check_schedule_name(f"declarations[{i}].name", d.name)
            if name in names:
                raise ValidationError(f"declarations[{i}].name", f"{name!r} is declared twice")
            names.add(name)
            timing = Timing.checked(
                d.cron, d.every_seconds, d.timezone, prefix=f"declarations[{i}]."
            )
            checked.append(
                ScheduleDeclaration(
                    name=name,
                    type=check_name(f"declarations[{i}].type", d.type),
                    queue=check_name(f"declarations[{i}].queue", d.queue),
                    priority=check_priority(f"declarations[{i}].priority", d.priority),
                    cron=timing.cron,
                    every_seconds=timing.every_seconds,
                    timezone=timing.timezone,
                    kwargs=check_kwargs(f"declarations[{i}].kwargs", d.kwargs, self._limits),
                    misfire=str(check_misfire(f"declarations[{i}].misfire", d.misfire)),
                    overlap=bool(d.overlap),
                    expires_after_seconds=check_expiry_seconds(
                        f"declarations[{i}].expires_after_seconds", d.expires_after_seconds
                    ),
                )
            )
        if not checked:
            return
        next_slots = [
            Timing(d.cron, d.every_seconds, d.timezone).next_after(moment) for d in checked
        ]
        await self.driver.schedules_declare(checked, next_slots, moment)

    @operation
    async def schedules_seen(self, names: Sequence[str], *, now: datetime | None = None) -> None:
        """Mark these schedules as still declared by a running worker."""
        checked = checks.names("names", names) or []
        if checked:
            await self.driver.schedules_seen(checked, _now(now))

    @operation
    async def schedules_list(self, *, now: datetime | None = None) -> list[Schedule]:
        """Every schedule, by name, with ``orphaned`` as of ``now``."""
        moment = _now(now)
        return self._orphaned(await self.driver.schedules_list(None, None, None), moment)

    @operation
    async def schedule_get(self, name: str, *, now: datetime | None = None) -> Schedule | None:
        """One schedule, or None."""
        found = await self.driver.schedules_list([check_name("name", name)], None, None)
        return self._orphaned(found, _now(now))[0] if found else None

    @operation
    async def schedules_due(self, *, now: datetime | None = None) -> list[Schedule]:
        """The schedules that have a slot due at ``now``: not paused, not orphaned."""
        moment = _now(now)
        since = moment - timedelta(seconds=ORPHAN_AFTER_SECONDS)
        return await self.driver.schedules_list(None, moment, since)

    @operation
    async def schedule_history(self, name: str, *, limit: int = 50) -> list[SlotRecord]:
        """The newest records of a schedule's slots (at most 100 are kept), newest first."""
        count = checks.positive_int("limit", limit, MAX_HISTORY)
        return await self.driver.schedule_history(check_name("name", name), count)

    @operation
    async def schedule_fire(
        self, schedule: Schedule, *, now: datetime | None = None
    ) -> list[SlotRecord] | None:
        """Enqueue the slots of ``schedule`` (as read) due at ``now``, by its misfire rule, and
        record the slots missed; all in one transaction, under the compare-and-set on the
        ``revision`` and ``last_slot`` read. Returns the records written ([] when no slot was
        due), or None when the row had moved on (another process fired it, or it changed)."""
        if not isinstance(schedule, Schedule):
            raise ValidationError("schedule", "must be a Schedule as read from storage")
        moment = _now(now)
        planned = plan(Timing.of(schedule), schedule.last_slot, moment, Misfire(schedule.misfire))
        if planned is None:
            return []
        jobs = [
            NewJob(
                type=schedule.type,
                payload=schedule.kwargs,
                queue=schedule.queue,
                priority=schedule.priority,
                idempotency_key=slot_key(schedule.name, slot),
                created_by=f"schedule:{schedule.name}",
                id=job_id,
                expires_after_seconds=schedule.expires_after_seconds,
            )
            for slot, job_id in zip(planned.run, new_job_ids(len(planned.run)), strict=True)
        ]
        runs = [
            SlotRecord(slot, SlotOutcome.ENQUEUED, job.id)
            for slot, job in zip(planned.run, jobs, strict=True)
        ]
        records = []
        if planned.missed and planned.missed_first is not None:
            last = planned.missed_last or planned.missed_first
            detail = (
                f"{planned.missed} slot{'s' if planned.missed != 1 else ''} missed "
                f"({planned.missed_first:%Y-%m-%d %H:%M:%S} .. {last:%Y-%m-%d %H:%M:%S} UTC), "
                f"misfire={schedule.misfire}"
            )
            records.append(SlotRecord(planned.missed_first, SlotOutcome.MISSED, None, detail))
        return await self.driver.schedule_fire(
            schedule.name,
            schedule.revision,
            schedule.last_slot,
            planned.last_slot,
            planned.next_slot,
            jobs,
            runs,
            records,
            schedule.overlap,
            moment,
        )

    async def _existing(self, name: str, now: datetime) -> Schedule:
        found = await self.driver.schedules_list([check_name("name", name)], None, None)
        if not found:
            raise NotFoundError(f"no schedule named {name!r}")
        return self._orphaned(found, now)[0]

    @operation
    async def schedule_trigger(self, name: str, *, actor: str, now: datetime | None = None) -> str:
        """Enqueue one run now, outside the slots (paused or not, overlapping or not); its
        record says who. Returns the job's id."""
        who = checks.actor(actor)
        moment = _now(now)
        schedule = await self._existing(name, moment)
        job_id = new_job_ids(1)[0]
        job = NewJob(
            type=schedule.type,
            payload=schedule.kwargs,
            queue=schedule.queue,
            priority=schedule.priority,
            created_by=f"schedule:{schedule.name}",
            id=job_id,
            expires_after_seconds=schedule.expires_after_seconds,
        )
        run = SlotRecord(moment, SlotOutcome.TRIGGERED, job_id, f"triggered by {who}")
        written = await self.driver.schedule_fire(
            schedule.name, None, None, None, None, [job], [run], [], True, moment
        )
        if written is None:
            raise NotFoundError(f"no schedule named {name!r}")
        return job_id

    async def _change(
        self, name: str, actor: str, now: datetime | None, **changes: Any
    ) -> Schedule:
        """Read, change and write back under the row's revision (once more if it moved)."""
        who = checks.actor(actor)
        moment = _now(now)
        for _ in range(3):
            current = await self._existing(name, moment)
            change = self._changed(current, moment, **changes)
            if await self.driver.schedule_update(
                current.name, current.revision, change, who, moment
            ):
                return await self._existing(name, moment)
        raise ValidationError("name", f"schedule {name!r} is changing under us; try again")

    def _changed(
        self,
        current: Schedule,
        now: datetime,
        *,
        paused: Any = UNSET,
        cron: Any = UNSET,
        every_seconds: Any = UNSET,
        timezone: Any = UNSET,
        kwargs: Any = UNSET,
        reset: bool = False,
    ) -> ScheduleChange:
        timing = Timing.of(current)
        kwargs_text = current.kwargs
        edited = current.edited_by is not None
        if reset:
            timing = Timing.declared_of(current)
            kwargs_text, edited = current.declared_kwargs, False
        if cron is not UNSET or every_seconds is not UNSET or timezone is not UNSET:
            if cron is not UNSET and every_seconds is not UNSET:
                raise ValidationError("cron", "give cron or every_seconds, not both")
            new_cron = timing.cron if cron is UNSET and every_seconds is UNSET else None
            new_every = timing.every_seconds if cron is UNSET and every_seconds is UNSET else None
            if cron is not UNSET:
                new_cron = cron
            if every_seconds is not UNSET:
                new_every = every_seconds
            zone = timing.timezone if timezone is UNSET else timezone
            timing = Timing.checked(new_cron, new_every, zone)
            edited = True
        if kwargs is not UNSET:
            kwargs_text = check_kwargs("kwargs", kwargs, self._limits)
            edited = True
        is_paused = current.paused if paused is UNSET else bool(paused)
        restart = timing != Timing.of(current) or (current.paused and not is_paused)
        return ScheduleChange(
            paused=is_paused,
            cron=timing.cron,
            every_seconds=timing.every_seconds,
            timezone=timing.timezone,
            kwargs=kwargs_text,
            edited=edited,
            restart_at=now if restart else None,
            next_slot=timing.next_after(now) if restart else None,
        )

    @operation
    async def schedule_pause(
        self, name: str, *, actor: str, paused: bool = True, now: datetime | None = None
    ) -> Schedule:
        """Pause (no slot fires) or resume a schedule; on resume its slots count afresh from
        ``now`` (the ones that fell while paused are not missed: they were not wanted)."""
        return await self._change(name, actor, now, paused=bool(paused))

    @operation
    async def schedule_edit(
        self,
        name: str,
        *,
        actor: str,
        cron: Any = UNSET,
        every_seconds: Any = UNSET,
        timezone: Any = UNSET,
        kwargs: Any = UNSET,
        now: datetime | None = None,
    ) -> Schedule:
        """An operator's edit of the timing (``cron`` or ``every_seconds``, ``timezone``) and
        ``kwargs`` (a mapping or JSON object text), kept across restarts and deploys until
        ``schedule_reset``; a new timing counts its slots from ``now``."""
        return await self._change(
            name,
            actor,
            now,
            cron=cron,
            every_seconds=every_seconds,
            timezone=timezone,
            kwargs=kwargs,
        )

    @operation
    async def schedule_reset(
        self, name: str, *, actor: str, now: datetime | None = None
    ) -> Schedule:
        """Drop an operator's edit: the code's declaration is in force again."""
        return await self._change(name, actor, now, reset=True)

    @operation
    async def schedule_delete(self, name: str, *, actor: str, now: datetime | None = None) -> bool:
        """Delete an orphaned schedule and its history (a schedule a running worker declares
        would only come back: remove it from the code first). False when there was none."""
        checks.actor(actor)
        moment = _now(now)
        found = await self.driver.schedules_list([check_name("name", name)], None, None)
        if not found:
            return False
        if not self._orphaned(found, moment)[0].orphaned:
            raise ValidationError(
                "name",
                f"schedule {name!r} is declared by a running worker; remove it from the code "
                "and stop those workers first (or pause it)",
            )
        return await self.driver.schedule_delete(found[0].name)

"""The job graph read back into models, the same for every driver: where a job is for a
waiter, a job's relatives and a workflow's members, from the rows of the statements that read
them (each driver's ``job_outcome``, ``job_relatives`` and ``workflow_members``, whose columns
are in the same order on every database). It must not run queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from ..models import (
    DurableCounts,
    FailureReason,
    JobLink,
    JobOutcome,
    JobStatus,
    ParentOutcome,
    Pillar,
    StepKind,
    StepRecord,
    StepState,
    StepWrite,
    WorkflowMember,
    located_state,
)

__all__ = [
    "counts_of",
    "gathered",
    "members_of",
    "outcome_of",
    "parents_of",
    "relatives_of",
    "step_of",
    "steps_by_job",
    "steps_in_order",
]

Row = Sequence[Any]


def _reason(value: int | None) -> FailureReason | None:
    return None if value is None else FailureReason(value)


def outcome_of(row: Row) -> JobOutcome:
    """(pillar, hot status, DLQ reason, error, result, result_error, blocked by, error type):
    for a hot job blocked by a job in the DLQ, the reason is that job's."""
    if row[6] is not None:
        return JobOutcome(
            pillar=Pillar(row[0]),
            status=JobStatus(row[1]),
            blocked_by=row[6],
            blocked_reason=_reason(row[2]),
        )
    return JobOutcome(
        pillar=Pillar(row[0]),
        status=None if row[1] is None else JobStatus(row[1]),
        failure_reason=_reason(row[2]),
        error=row[3],
        error_type=row[7],
        result=row[4],
        result_error=row[5],
    )


def parents_of(rows: Sequence[Row]) -> list[ParentOutcome]:
    """(parent id, argument position, then ``outcome_of``'s columns with a NULL pillar for a
    parent in no pillar) rows: each parent of a job and how it ended."""
    return [
        ParentOutcome(row[0], None if row[2] is None else outcome_of(row[2:]), row[1])
        for row in rows
    ]


def relatives_of(rows: Sequence[Row]) -> tuple[str | None, list[JobLink], list[JobLink]]:
    """(id, side 0 parent / 1 child, workflow, type, hot status, archived, DLQ reason, blocked,
    the edge's any outcome) rows: the job's workflow (the one it is a child in; a first job's,
    its children's), its parents and its children."""
    sides: tuple[list[JobLink], list[JobLink]] = ([], [])
    workflow = next((row[2] for row in rows if row[1] == 0), rows[0][2] if rows else None)
    for job_id, side, _, type_, status, archived, reason, blocked, any_outcome in rows:
        state = "blocked" if blocked else located_state(status, bool(archived), reason)
        sides[side].append(JobLink(job_id, type_, state, _reason(reason), bool(any_outcome)))
    return workflow, sides[0], sides[1]


def members_of(rows: Sequence[Row]) -> list[WorkflowMember]:
    """(id, type, queue, hot status, archived, DLQ reason, error, comma-joined parents, waits
    for any outcome) rows."""
    return [
        WorkflowMember(
            id=row[0],
            type=row[1],
            queue=row[2],
            state=located_state(row[3], bool(row[4]), row[5]),
            parents=tuple(row[7].split(",")) if row[7] else (),
            failure_reason=_reason(row[5]),
            error=row[6],
            any_outcome=bool(row[8]),
        )
        for row in rows
    ]


def _same(value: Any) -> datetime | None:
    return value  # type: ignore[no-any-return]  # the driver's column is a timestamptz


def step_of(row: Row, when: Callable[[Any], datetime | None] = _same) -> StepRecord:
    """One row of a driver's step statements (``steps_list``, ``steps_get``, ...: job id,
    name, seq, kind, state, value, error, event key, wake, start, end), its times read by
    ``when`` (SQLite's Unix seconds; PostgreSQL's are datetimes already)."""
    return StepRecord(
        job_id=row[0],
        name=row[1],
        seq=row[2],
        kind=StepKind(row[3]),
        state=StepState(row[4]),
        value=row[5],
        error=row[6],
        event_key=row[7],
        wake_at=when(row[8]),
        started_at=when(row[9]),
        finished_at=when(row[10]),
    )


def steps_by_job(
    job_ids: Sequence[str], steps: Iterable[StepRecord]
) -> dict[str, list[StepRecord]]:
    """A driver's ``steps_list_many`` answer: every job asked, with its steps (in the order
    the rows came: by seq within a job), empty for a job that recorded none."""
    found: dict[str, list[StepRecord]] = {job_id: [] for job_id in job_ids}
    for step in steps:
        found[step.job_id].append(step)
    return found


def steps_in_order(
    records: Sequence[StepWrite], steps: Iterable[StepRecord]
) -> list[StepRecord | None]:
    """A driver's ``steps_record_many`` answer: for each record, in input order, the step its
    statement wrote, or None (its lease did not hold, or the step was already done). The seam
    refuses one step twice in a call, so (job id, name) finds each record's row."""
    written = {(step.job_id, step.name): step for step in steps}
    return [written.get((r.lease.job_id, r.name)) for r in records]


def gathered(row: Row) -> list[Any]:
    """One row of a driver's ``gather_outcomes`` (id, in hot, archived, result, result_error,
    DLQ reason, DLQ error) as a gather records it: ``[id, where, result, result_error,
    reason, error]``, ``where`` one of "archive", "dlq" or "gone"."""
    job_id, _, archived, result, result_error, reason, error = row
    where = "archive" if archived else "dlq" if reason is not None else "gone"
    return [str(job_id), where, result, result_error, reason, error]


def counts_of(rows: Sequence[Row]) -> DurableCounts:
    """A driver's ``durable_counts`` rows (``("s", queue, kind, n)`` and ``("e", _, _, n)``)."""
    suspended = tuple((str(r[1]), str(r[2]), int(r[3])) for r in rows if r[0] == "s")
    kept = sum(int(r[3]) for r in rows if r[0] == "e")
    return DurableCounts(suspended=suspended, events_kept=kept)

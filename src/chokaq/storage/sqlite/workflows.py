"""Results and workflows on SQLite: where a job is for a waiter, its parents' results, its
relatives and the jobs of a workflow.

Each function runs on the connection's thread (a read, or one short write transaction).
Arguments arrive checked; it owns these statements' use only.
"""

from __future__ import annotations

from ...models import (
    FailureReason,
    JobLink,
    JobOutcome,
    JobStatus,
    Pillar,
    WorkflowMember,
)
from ...models import located_state as link_state
from .connection import Database

__all__ = ["job_outcome", "job_parent_results", "job_relatives", "workflow_members"]


def _reason(value: int | None) -> FailureReason | None:
    return None if value is None else FailureReason(value)


def job_outcome(db: Database, id: str, watch: bool) -> JobOutcome | None:
    def mark() -> JobOutcome | None:
        row = db.conn.execute(db.q["job_watch"], {"id": id}).fetchone()
        return None if row is None else JobOutcome(pillar=Pillar.HOT, status=JobStatus(row[0]))

    if watch:
        marked = db.write(mark)
        if marked is not None:
            return marked

    def read() -> JobOutcome | None:
        found = db.conn.execute(db.q["job_outcome"], {"id": id}).fetchone()
        if found is None:
            return None
        return JobOutcome(
            pillar=Pillar(found[0]),
            status=None if found[1] is None else JobStatus(found[1]),
            failure_reason=_reason(found[2]),
            error=found[3],
            result=found[4],
            result_error=found[5],
        )

    return db.read(read)


def job_parent_results(db: Database, id: str) -> list[tuple[str, str | None, str | None]]:
    return db.read(
        lambda: [
            (row[0], row[1], row[2])
            for row in db.conn.execute(db.q["job_parent_results"], {"id": id}).fetchall()
        ]
    )


def job_relatives(
    db: Database, id: str, limit: int
) -> tuple[str | None, list[JobLink], list[JobLink]]:
    rows = db.read(
        lambda: db.conn.execute(db.q["job_relatives"], {"id": id, "limit": limit}).fetchall()
    )
    sides: tuple[list[JobLink], list[JobLink]] = ([], [])
    # Its own workflow is the one it is a child in; a first job's, its children's.
    workflow = next((row[2] for row in rows if row[1] == 0), rows[0][2] if rows else None)
    for job_id, side, _, type_, status, archived, reason, blocked in rows:
        state = link_state(status, bool(archived), reason)
        sides[side].append(
            JobLink(
                id=job_id,
                type=type_,
                state="blocked" if blocked else state,
                failure_reason=_reason(reason),
            )
        )
    return workflow, sides[0], sides[1]


def workflow_members(db: Database, id: str, limit: int) -> list[WorkflowMember]:
    rows = db.read(
        lambda: db.conn.execute(db.q["workflow_members"], {"id": id, "limit": limit}).fetchall()
    )
    return [
        WorkflowMember(
            id=row[0],
            type=row[1],
            queue=row[2],
            state=link_state(row[3], bool(row[4]), row[5]),
            parents=tuple(row[7].split(",")) if row[7] else (),
            failure_reason=_reason(row[5]),
            error=row[6],
        )
        for row in rows
    ]

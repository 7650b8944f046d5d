"""Results and workflows on SQLite: where a job is for a waiter, its parents' results, its
relatives and the jobs of a workflow.

Each function runs on the connection's thread (a read, or one short write transaction); the
rows become models in ``chokaq.storage.links``. Arguments arrive checked; it owns these
statements' use only.
"""

from __future__ import annotations

from datetime import datetime

from ...models import JobLink, JobOutcome, JobStatus, ParentOutcome, Pillar, WorkflowMember
from ..links import members_of, outcome_of, parents_of, relatives_of
from . import jobs
from .connection import Database, SQLiteCore
from .rows import ts_now

__all__ = [
    "SQLiteWorkflows",
    "job_outcome",
    "job_parent_outcomes",
    "job_relatives",
    "workflow_members",
]


def job_outcome(db: Database, id: str, watch: bool) -> JobOutcome | None:
    def mark() -> JobOutcome | None:
        row = db.conn.execute(db.q["job_watch"], {"id": id}).fetchone()
        # A Waiting job is read in full below: it may be blocked by a job in the DLQ.
        if row is None or row[0] == JobStatus.WAITING:
            return None
        return JobOutcome(pillar=Pillar.HOT, status=JobStatus(row[0]))

    if watch:
        marked = db.write(mark)
        if marked is not None:
            return marked
    found = db.read(lambda: db.conn.execute(db.q["job_outcome"], {"id": id}).fetchone())
    return None if found is None else outcome_of(found)


def job_parent_outcomes(db: Database, id: str) -> list[ParentOutcome]:
    return parents_of(
        db.read(lambda: db.conn.execute(db.q["job_parent_outcomes"], {"id": id}).fetchall())
    )


def job_relatives(
    db: Database, id: str, limit: int
) -> tuple[str | None, list[JobLink], list[JobLink]]:
    params = {"id": id, "limit": limit}
    return relatives_of(db.read(lambda: db.conn.execute(db.q["job_relatives"], params).fetchall()))


def workflow_members(db: Database, id: str, limit: int) -> list[WorkflowMember]:
    params = {"id": id, "limit": limit}
    return members_of(db.read(lambda: db.conn.execute(db.q["workflow_members"], params).fetchall()))


class SQLiteWorkflows(SQLiteCore):
    """Outcomes, relatives, workflow members and dependency failure."""

    async def job_outcome(self, id: str, watch: bool) -> JobOutcome | None:
        return await self._db.call(job_outcome, id, watch)

    async def job_parent_outcomes(self, id: str) -> list[ParentOutcome]:
        return await self._db.call(job_parent_outcomes, id)

    async def job_relatives(
        self, id: str, limit: int
    ) -> tuple[str | None, list[JobLink], list[JobLink]]:
        return await self._db.call(job_relatives, id, limit)

    async def workflow_members(self, id: str, limit: int) -> list[WorkflowMember]:
        return await self._db.call(workflow_members, id, limit)

    async def jobs_dependency_fail(
        self, pairs: list[tuple[str, str]], actor: str, why: str, now: datetime | None
    ) -> list[str]:
        def run(db: Database) -> tuple[list[str], jobs.Moved]:
            return db.write(
                jobs.dependency_fail,
                db,
                pairs,
                lambda parent: f"Dependency failed: parent {parent} is in the DLQ; {why}",
                actor,
                ts_now(now),
            )

        failed, moved = await self._db.call(run)
        self._told(moved)
        return failed

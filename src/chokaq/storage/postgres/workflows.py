"""Results and workflows on PostgreSQL: where a job is for a waiter, its parents' results, its
relatives, the jobs of a workflow, and failing the waiting jobs of a cancelled workflow.

Owns turning these operations into the named statements of ``sql/workflows.sql``; the rows
become models in ``chokaq.storage.links``. Arguments arrive checked (``chokaq.storage.workflows``);
it holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...models import JobLink, JobOutcome, JobStatus, ParentOutcome, Pillar, WorkflowMember
from ..links import members_of, outcome_of, parents_of, relatives_of
from .connection import PostgresCore

__all__ = ["PostgresWorkflows"]


class PostgresWorkflows(PostgresCore):
    """Waiting on results and reading workflows."""

    async def job_outcome(self, id: str, watch: bool) -> JobOutcome | None:
        async with self.pool.connection() as conn:
            if watch:
                cur = await conn.execute(self._q["job_watch"], {"id": id})
                row = await cur.fetchone()
                # A Waiting job is read in full below: it may be blocked by a job in the DLQ.
                if row is not None and row[0] != JobStatus.WAITING:
                    return JobOutcome(pillar=Pillar.HOT, status=JobStatus(row[0]))
            # A new statement, so a new snapshot: a move the mark waited for is seen here.
            cur = await conn.execute(self._q["job_outcome"], {"id": id})
            found = await cur.fetchone()
        return None if found is None else outcome_of(found)

    async def job_parent_outcomes(self, id: str) -> list[ParentOutcome]:
        return parents_of(await self._rows("job_parent_outcomes", {"id": id}))

    async def job_relatives(
        self, id: str, limit: int
    ) -> tuple[str | None, list[JobLink], list[JobLink]]:
        return relatives_of(await self._rows("job_relatives", {"id": id, "limit": limit}))

    async def workflow_members(self, id: str, limit: int) -> list[WorkflowMember]:
        return members_of(await self._rows("workflow_members", {"id": id, "limit": limit}))

    async def jobs_dependency_fail(
        self, pairs: list[tuple[str, str]], actor: str, why: str, now: datetime | None
    ) -> list[str]:
        params: dict[str, Any] = {
            "children": [child for child, _ in pairs],
            "parents": [parent for _, parent in pairs],
            "actor": actor,
            "why": why,
            "now": now,
            "channel": self.channel,
        }
        rows = await self._rows("jobs_dependency_fail", params)
        return [row[0] for row in rows if row[0] is not None]

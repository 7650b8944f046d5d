"""Results and workflows on PostgreSQL: where a job is for a waiter, its parents' results, its
relatives, the jobs of a workflow, and failing the waiting jobs of a cancelled workflow.

Owns turning these operations into the named statements of ``queries.sql`` and the rows back
into models. Arguments arrive checked (``chokaq.storage.backend``); it holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...models import (
    FailureReason,
    JobLink,
    JobOutcome,
    JobStatus,
    Pillar,
    WorkflowMember,
)
from ...models import located_state as link_state
from .connection import PostgresCore

__all__ = ["PostgresWorkflows"]


def _reason(value: int | None) -> FailureReason | None:
    return None if value is None else FailureReason(value)


class PostgresWorkflows(PostgresCore):
    """Waiting on results and reading workflows."""

    async def job_outcome(self, id: str, watch: bool) -> JobOutcome | None:
        async with self.pool.connection() as conn:
            if watch:
                cur = await conn.execute(self._q["job_watch"], {"id": id})
                row = await cur.fetchone()
                if row is not None:
                    return JobOutcome(pillar=Pillar.HOT, status=JobStatus(row[0]))
            # A new statement, so a new snapshot: a move the mark waited for is seen here.
            cur = await conn.execute(self._q["job_outcome"], {"id": id})
            found = await cur.fetchone()
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

    async def job_parent_results(self, id: str) -> list[tuple[str, str | None, str | None]]:
        rows = await self._rows("job_parent_results", {"id": id})
        return [(row[0], row[1], row[2]) for row in rows]

    async def job_relatives(
        self, id: str, limit: int
    ) -> tuple[str | None, list[JobLink], list[JobLink]]:
        rows = await self._rows("job_relatives", {"id": id, "limit": limit})
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

    async def workflow_of(self, id: str) -> str | None:
        row = await self._one("workflow_of", {"id": id})
        return None if row is None else row[0]

    async def workflow_members(self, id: str, limit: int) -> list[WorkflowMember]:
        rows = await self._rows("workflow_members", {"id": id, "limit": limit})
        return [
            WorkflowMember(
                id=row[0],
                type=row[1],
                queue=row[2],
                state=link_state(row[3], row[4], row[5]),
                parents=tuple(row[7].split(",")) if row[7] else (),
                failure_reason=_reason(row[5]),
                error=row[6],
            )
            for row in rows
        ]

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

"""The storage seam's results and workflows, checked once and observed once: where a job is for
someone waiting on it, its parents' results, a job with its relatives, the jobs of a workflow,
and cancelling a workflow.

A job enqueued with ``after=`` waits (``JobStatus.WAITING``) in the hot table, outside the fetch
index, until its last parent succeeds (or, with ``after_outcome="any"``, finishes in the archive
or the DLQ); the parent's move releases it in the same statement (see ``chokaq.storage.graph``
and docs/concepts.md). ``Backend`` is assembled from this group and the others (see
``chokaq.storage.backend`` for the rules every operation follows). This module must not import a
database driver or hold SQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from ..limits import check_job_id
from ..models import (
    CancelResult,
    JobLink,
    JobOutcome,
    JobView,
    ParentOutcome,
    Pillar,
    Workflow,
    WorkflowMember,
)
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["MAX_RELATIVES", "MAX_WORKFLOW_JOBS", "WorkflowOperations"]

# The parents and children a job view carries, each side (a fan-out can have thousands).
MAX_RELATIVES = 1_000
# The jobs one read of a workflow returns, and one cancel of a workflow acts on.
MAX_WORKFLOW_JOBS = 100_000


class WorkflowOperations(OperationGroup):
    """Results, relatives and workflows."""

    @operation
    async def job_outcome(self, *, id: str, watch: bool = False) -> JobOutcome | None:
        """Where job ``id`` is: its pillar and hot status, DLQ reason and error, result and
        why a result was not kept; None when it is in no pillar (never stored, or purged).

        ``watch=True`` first marks a hot job as waited on: whichever statement later moves
        it out of hot (archive, DLQ, cancel, rescue, purge of a parent) sends a ``done``
        notification for it in the same transaction (see ``Notifier``)."""
        check_job_id("id", id)
        return await self.driver.job_outcome(id, bool(watch))

    @operation
    async def job_parent_results(self, *, id: str) -> dict[str, tuple[str | None, str | None]]:
        """The results of job ``id``'s parents that are in the archive: parent id ->
        (result JSON text, why a result was not kept)."""
        check_job_id("id", id)
        return {
            parent.id: (parent.outcome.result, parent.outcome.result_error)
            for parent in await self.driver.job_parent_outcomes(id)
            if parent.outcome is not None and parent.outcome.pillar is Pillar.ARCHIVE
        }

    @operation
    async def job_parent_outcomes(self, *, id: str) -> list[ParentOutcome]:
        """How each parent of job ``id`` ended, as the job reads them when it starts: where
        it is now (``outcome``: the archive with its result, the DLQ with its reason and
        error, hot again after a requeue; None once purged) and, for a job enqueued with
        ``pass_results``, the place of its result among the job's leading positional
        arguments (``argument``); parents in that order, then in the order of their edges."""
        check_job_id("id", id)
        return await self.driver.job_parent_outcomes(id)

    @operation
    async def job_get_related(self, *, id: str, limit: int = MAX_RELATIVES) -> JobView | None:
        """``job_get`` with the job's workflow, its parents and its children (at most
        ``limit`` of each, 1..1,000), each with where it is now, and its failed attempts
        (``job_attempts``, newest first)."""
        check_job_id("id", id)
        cap = checks.bounded_int("limit", limit, 1, MAX_RELATIVES)
        view = await self.driver.job_get(id)
        if view is None:
            return None
        workflow, parents, children = await self.driver.job_relatives(id, cap)
        attempts = await self.driver.job_attempts(id, checks.ATTEMPTS_KEPT)
        return replace(
            view,
            workflow_id=workflow,
            after_outcome=after_outcome(parents),
            parents=tuple(parents),
            children=tuple(children),
            attempts=tuple(attempts),
        )

    @operation
    async def workflow_get(self, *, id: str, limit: int = 10_000) -> Workflow | None:
        """The jobs of workflow ``id`` (the id of its first job: ``JobView.workflow_id``), at
        most ``limit`` (1..100,000), parents before their children; None when no job is
        linked to it."""
        check_job_id("id", id)
        cap = checks.bounded_int("limit", limit, 1, MAX_WORKFLOW_JOBS)
        members = _blocked(await self.driver.workflow_members(id, cap))
        if not members:
            return None
        return Workflow(id=id, jobs=tuple(_parents_first(members)))

    @operation
    async def workflow_cancel(
        self, *, id: str, actor: str, now: datetime | None = None
    ) -> CancelResult:
        """Cancel every job of workflow ``id`` that has not finished, from any process: a job
        waiting on a parent that is in the DLQ (blocked) goes to the DLQ as DEPENDENCY_FAILED
        naming that parent; every other job still in hot is cancelled as by ``jobs_cancel``
        (Pending, Fetched and Waiting ones to the DLQ as CANCELLED, running ones get a cancel
        request). ``not_found`` lists the jobs that had already finished."""
        check_job_id("id", id)
        who = checks.actor(actor)
        clock = checks.now(now)
        members = _blocked(await self.driver.workflow_members(id, MAX_WORKFLOW_JOBS))
        failed = {job.id for job in members if job.state == "failed"}
        blocked = [
            (job.id, next(p for p in job.parents if p in failed))
            for job in members
            if job.state == "blocked"
        ]
        moved: list[str] = []
        if blocked:
            why = f"workflow {id} cancelled by {who}"
            moved = await self.driver.jobs_dependency_fail(blocked, who, why, clock)
        done = set(moved)
        rest = tuple(
            job.id
            for job in members
            if job.id not in done and job.state not in ("succeeded", "failed", "purged")
        )
        result = CancelResult((), (), ())
        for start in range(0, len(rest), self._max_batch):
            part = await self.driver.jobs_cancel(rest[start : start + self._max_batch], who, clock)
            result = CancelResult(
                result.cancelled + part.cancelled,
                result.requested + part.requested,
                result.not_found + part.not_found,
            )
        return CancelResult(tuple(moved) + result.cancelled, result.requested, result.not_found)


def after_outcome(parents: list[JobLink]) -> str | None:
    """What a job with ``parents`` waits for: "any" when its edges release it on any outcome
    (one enqueue writes them all alike), "success" otherwise; None without parents."""
    if not parents:
        return None
    return "any" if parents[0].any_outcome else "success"


def _blocked(members: list[WorkflowMember]) -> list[WorkflowMember]:
    """The members with ``blocked`` for a waiting one whose parent is in the DLQ (every parent
    of a member waiting in the workflow is a member: its edges name the workflow), unless it
    waits for any outcome (such a parent has finished, for it)."""
    failed = {job.id for job in members if job.state == "failed"}
    return [
        replace(job, state="blocked")
        if job.state == "waiting" and not job.any_outcome and failed.intersection(job.parents)
        else job
        for job in members
    ]


def _parents_first(members: list[WorkflowMember]) -> list[WorkflowMember]:
    """The members ordered by depth (a job after every parent of it in the workflow), then by
    id; members whose parents are outside the list count from the depth of those inside."""
    by_id = {job.id: job for job in members}
    depth: dict[str, int] = {}

    def level(job_id: str) -> int:
        stack = [job_id]
        while stack:
            top = stack[-1]
            if top in depth:
                stack.pop()
                continue
            todo = [p for p in by_id[top].parents if p in by_id and p not in depth]
            if todo:
                stack.extend(todo)
                continue
            depth[top] = 1 + max((depth[p] for p in by_id[top].parents if p in by_id), default=-1)
            stack.pop()
        return depth[job_id]

    return sorted(members, key=lambda job: (level(job.id), job.id))

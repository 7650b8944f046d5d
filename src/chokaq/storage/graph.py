"""The dependencies of one enqueue batch (``after=``): checked, ordered and counted once, for
every database.

A job enqueued with ``after=`` waits (``JobStatus.WAITING``, outside the fetch index) until each
of its parents has succeeded, or, with ``after_outcome="any"``, finished either way (a parent
already in the DLQ then counts as finished at enqueue). Its parents are jobs of the same batch
(prepared with their ids) or jobs already stored. ``plan`` checks the graph before anything is
written (ids, cycles, keys) and says what a driver must write in the enqueue's own transaction:
each waiting job's count of parents still to succeed, the ``dependents`` list each parent row
carries (the ids the parent's move to the archive releases, read from the parent's own row so
that a child added while the parent finishes is never missed), the edges (for reads, retention
and purge) and the workflow each job belongs to (the id of its first parent's workflow; a job
without parents is its own workflow's first job). It must not touch a database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..errors import ValidationError
from ..ids import new_job_ids
from ..limits import check_job_id
from ..models import NewJob

__all__ = ["AFTER_OUTCOMES", "MAX_PARENTS", "Edge", "Graph", "plan", "unknown_parents"]

# Parents of one job: a fan-in of ten thousand jobs to one callback is one job's ``after``.
MAX_PARENTS = 10_000
# What a child waits for: every parent succeeded (the default), or every parent finished.
AFTER_OUTCOMES = ("success", "any")


@dataclass(frozen=True, slots=True)
class Graph:
    """The dependencies of a checked batch. ``parents`` maps each job with ``after`` to its
    parent ids (de-duplicated, in the order given); ``stored`` lists the parents that are not
    in the batch (sorted, so two enqueues lock them in the same order)."""

    parents: dict[str, tuple[str, ...]]
    batch: frozenset[str]
    stored: tuple[str, ...]
    order: tuple[str, ...]  # the jobs with parents, every parent before its children
    ids: tuple[str, ...] = ()  # the batch's ids in input order
    # The jobs released once every parent has finished, in the archive or the DLQ
    # (after_outcome="any"), and those that get their parents' results as arguments.
    any_outcome: frozenset[str] = frozenset()
    passing: frozenset[str] = frozenset()

    def child_counts(self) -> dict[str, int]:
        """Each parent's number of new children (counted on its row: see ``Driver``)."""
        out: dict[str, int] = {}
        for child in self.order:
            for parent in self.parents[child]:
                out[parent] = out.get(parent, 0) + 1
        return out

    def waiting(self, succeeded: set[str], failed: set[str] | None = None) -> dict[str, int]:
        """Each job's count of parents still to finish as it waits for them, given the stored
        parents that have succeeded (``succeeded``: found in the archive) and those that have
        failed (``failed``: found in the DLQ, which count as finished for a job released on
        any outcome)."""
        return {
            child: sum(
                1 for parent in parents if not self.satisfied(child, parent, succeeded, failed)
            )
            for child, parents in self.parents.items()
        }

    def satisfied(
        self, child: str, parent: str, succeeded: set[str], failed: set[str] | None
    ) -> bool:
        """Whether ``child`` no longer waits on stored ``parent`` at enqueue: it has succeeded,
        or it has failed and the child runs on any outcome."""
        return parent in succeeded or (
            failed is not None and parent in failed and child in self.any_outcome
        )

    def workflows(self, stored: dict[str, str]) -> dict[str, str]:
        """The workflow of each job with parents. The jobs a batch links (through its own
        edges, or through a stored parent they share) are one workflow: that of the first
        stored parent among them (``stored[parent]``, default the parent's own id) when they
        have one, else the id of the batch's first job among them."""
        root: dict[str, str] = {}

        def find(job: str) -> str:
            top = root.setdefault(job, job)
            while top != root[top]:
                top = root[top]
            while root[job] != top:  # path compression
                root[job], job = top, root[job]
            return top

        for child in self.order:
            for parent in self.parents[child]:
                a, b = find(child), find(parent)
                if a != b:
                    root[b] = a
        names: dict[str, str] = {}
        for child in self.order:  # the first stored parent names its workflow
            for parent in self.parents[child]:
                if parent not in self.batch:
                    names.setdefault(find(parent), stored.get(parent, parent))
        for job in self.ids:  # else the batch's first job among them
            if job in root:
                names.setdefault(find(job), job)
        return {child: names[find(child)] for child in self.order}

    def edges(self, workflows: dict[str, str]) -> list[Edge]:
        """Every dependency, children in ``order``."""
        return [
            Edge(
                child,
                parent,
                workflows[child],
                child in self.any_outcome,
                k if child in self.passing else None,
            )
            for child in self.order
            for k, parent in enumerate(self.parents[child])
        ]


class Edge(NamedTuple):
    """One dependency as the drivers write it: ``argument`` is the place of the parent's result
    among the child's leading positional arguments (None: not passed)."""

    child: str
    parent: str
    workflow: str
    any_outcome: bool
    argument: int | None


def plan(jobs: Sequence[NewJob]) -> tuple[list[NewJob], Graph | None]:
    """Check the dependencies of a batch whose jobs are already checked one by one; returns
    the jobs (those with ``after`` and no id get one) and the graph, or None when no job has
    ``after``. Raises ``ValidationError`` naming ``jobs[i].after`` (or ``.id``) for a parent
    id that is not a job id, a job that waits on itself, a cycle, a repeated id, or an
    idempotency key on a job that has or is a parent in the batch."""
    _check_outcomes(jobs)
    if not any(job.after for job in jobs):
        return list(jobs), None
    missing = [i for i, job in enumerate(jobs) if job.after and job.id is None]
    jobs = list(jobs)
    for i, job_id in zip(missing, new_job_ids(len(missing)), strict=True):
        jobs[i] = replace(jobs[i], id=job_id)
    position: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.id is None:
            continue
        if job.id in position:
            raise ValidationError(
                f"jobs[{i}].id", f"is the id of jobs[{position[job.id]}] too (ids are unique)"
            )
        position[job.id] = i
    parents: dict[str, tuple[str, ...]] = {}
    referenced: set[str] = set()
    stored: set[str] = set()
    for i, job in enumerate(jobs):
        if not job.after:
            continue
        field = f"jobs[{i}].after" if len(jobs) > 1 else "after"
        if isinstance(job.after, str) or not isinstance(job.after, tuple | list):
            raise ValidationError(field, "must be a list of jobs or job ids")
        if len(job.after) > MAX_PARENTS:
            raise ValidationError(field, f"must name at most {MAX_PARENTS} parents")
        ids = tuple(
            dict.fromkeys(check_job_id(f"{field}[{k}]", p) for k, p in enumerate(job.after))
        )
        assert job.id is not None
        if job.id in ids:
            raise ValidationError(
                field, f"names the job itself ({job.id}): a job cannot wait on itself"
            )
        if job.idempotency_key is not None:
            raise ValidationError(
                f"jobs[{i}].idempotency_key" if len(jobs) > 1 else "idempotency_key",
                "cannot be combined with after= (a duplicate would leave its dependents "
                "without a parent)",
            )
        parents[job.id] = ids
        referenced.update(ids)
        stored.update(p for p in ids if p not in position)
    for parent in referenced & position.keys():
        job = jobs[position[parent]]
        if job.idempotency_key is not None:
            raise ValidationError(
                f"jobs[{position[parent]}].idempotency_key",
                "cannot be set on a job that others of the batch wait on (a duplicate would "
                "leave them without a parent)",
            )
    order = _ordered(parents, position)
    return jobs, Graph(
        parents=parents,
        batch=frozenset(position),
        stored=tuple(sorted(stored)),
        order=order,
        ids=tuple(position),
        any_outcome=frozenset(
            job.id for job in jobs if job.after and job.after_outcome == "any" and job.id
        ),
        passing=frozenset(job.id for job in jobs if job.after and job.pass_results and job.id),
    )


def _check_outcomes(jobs: Sequence[NewJob]) -> None:
    """Refuse an ``after_outcome`` other than "success" or "any", and ``pass_results`` on a job
    without ``after`` (there would be no results to pass), naming the job's field."""
    for i, job in enumerate(jobs):
        if job.after_outcome == "success" and job.pass_results is False:
            continue
        prefix = f"jobs[{i}]." if len(jobs) > 1 else ""
        if job.after_outcome not in AFTER_OUTCOMES:
            raise ValidationError(
                f"{prefix}after_outcome",
                f"must be one of {', '.join(map(repr, AFTER_OUTCOMES))}, not {job.after_outcome!r}",
            )
        if not isinstance(job.pass_results, bool):
            raise ValidationError(f"{prefix}pass_results", "must be True or False")
        if job.pass_results and not job.after:
            raise ValidationError(
                f"{prefix}pass_results", "needs after= (the parents whose results it passes)"
            )


def _ordered(parents: dict[str, tuple[str, ...]], position: dict[str, int]) -> tuple[str, ...]:
    """The jobs with parents, each after its parents of the batch (Kahn's algorithm); a cycle
    is a ``ValidationError`` naming one job on it."""
    pending = {
        child: sum(1 for p in ps if p in parents) for child, ps in parents.items()
    }  # parents of the batch that themselves wait
    children: dict[str, list[str]] = {}
    for child, ps in parents.items():
        for p in ps:
            if p in parents:
                children.setdefault(p, []).append(child)
    ready = sorted((c for c, n in pending.items() if n == 0), key=lambda c: position[c])
    order: list[str] = []
    while ready:
        job = ready.pop()
        order.append(job)
        for child in children.get(job, ()):
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(child)
    if len(order) < len(parents):
        stuck = min((c for c, n in pending.items() if n > 0), key=lambda c: position[c])
        raise ValidationError(
            f"jobs[{position[stuck]}].after",
            f"makes a cycle: job {stuck} waits, through its parents, on itself",
        )
    return tuple(order)


def unknown_parents(jobs: Sequence[NewJob], ids: Sequence[str]) -> ValidationError:
    """The error for parents that are in no pillar, naming the first job that waits on one."""
    missing = set(ids)
    for i, job in enumerate(jobs):
        if missing.intersection(job.after):
            field = f"jobs[{i}].after" if len(jobs) > 1 else "after"
            break
    else:
        field = "after"
    shown = ", ".join(sorted(missing)[:5]) + (" ..." if len(missing) > 5 else "")
    return ValidationError(field, f"names jobs that are not stored: {shown}")

"""The jobs area on SQLite: enqueue (with its dependency graph), the operator's cancel, edit and
advance of hot jobs, and the moves out of hot every area shares (``Counters``, ``Moved``,
``move_by_status``: a job leaving hot updates the counters and tells its waiters).

Each function runs on the connection's thread and does its whole batch in one short write
transaction. Terminal moves update ``stats_summary`` and ``metric_buckets`` in the same
transaction; nothing here ever decrements a counter. Arguments arrive checked; it owns these
transitions only. ``SQLiteJobs`` is the driver's mixin for the area.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...ids import new_job_ids
from ...models import (
    CancelResult,
    EnqueueResult,
    FailureReason,
    JobStatus,
    NewJob,
    Outcome,
)
from ..checks import Edits
from ..graph import Graph, unknown_parents
from .connection import Database, SQLiteCore
from .notify import ANY_QUEUE, broadcast_cancel, broadcast_jobs
from .rows import tags_in, to_ts, ts_now

__all__ = [
    "Counters",
    "Moved",
    "SQLiteJobs",
    "cancel",
    "dependency_fail",
    "edit_params",
    "edits_params",
    "enqueue",
    "enqueue_within",
    "ensure_queues",
    "hot_advance",
    "hot_edit",
    "move_by_status",
    "superseded_cancels",
]


@dataclass
class _Bucket:
    count: int = 0
    duration_count: int = 0
    duration_total: float = 0.0
    duration_max: float | None = None


@dataclass
class Counters:
    """Counter deltas gathered during one transaction and written once at its end."""

    now: float
    stats: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))
    buckets: dict[tuple[str, int, int], _Bucket] = field(
        default_factory=lambda: defaultdict(_Bucket)
    )

    def outcome(
        self, queue: str, reason: FailureReason | None, duration: float | None = None
    ) -> None:
        self.stats[queue][0 if reason is None else 1] += 1
        outcome = Outcome.SUCCEEDED if reason is None else Outcome.FAILED
        bucket = self.buckets[(queue, int(outcome), -1 if reason is None else int(reason))]
        bucket.count += 1
        if duration is not None:
            bucket.duration_count += 1
            bucket.duration_total += duration
            bucket.duration_max = (
                duration if bucket.duration_max is None else max(bucket.duration_max, duration)
            )

    def retried(self, queue: str) -> None:
        self.stats[queue][2] += 1

    def write(self, db: Database) -> None:
        conn, q = db.conn, db.q
        if self.stats:
            conn.executemany(
                q["stats_bump"],
                [
                    {"queue": k, "succeeded": s, "failed": f, "retried": r, "now": self.now}
                    for k, (s, f, r) in self.stats.items()
                ],
            )
        if self.buckets:
            start = float(math.floor(self.now))
            conn.executemany(
                q["bucket_bump"],
                [
                    {
                        "bucket": start,
                        "queue": queue,
                        "outcome": outcome,
                        "reason": reason,
                        "count": b.count,
                        "duration_count": b.duration_count,
                        "duration_total": b.duration_total,
                        "duration_max": b.duration_max,
                        "now": self.now,
                    }
                    for (queue, outcome, reason), b in self.buckets.items()
                ],
            )


def ensure_queues(db: Database, queues: Sequence[str], now: float) -> None:
    rows = [{"queue": name, "now": now} for name in dict.fromkeys(queues)]
    db.conn.executemany(db.q["queue_ensure"], rows)
    db.conn.executemany(db.q["queue_stats_row"], rows)


# -- enqueue ----------------------------------------------------------------------------------


def enqueue(
    db: Database, jobs: Sequence[NewJob], now: float, graph: Graph | None = None
) -> list[EnqueueResult]:
    """Insert a validated batch; duplicates (by idempotency key) get the holder's id. With a
    ``graph``, the new children are attached to their stored parents, each job counts its
    parents still to succeed, and the edges are written, in the same transaction."""
    if graph is None:
        return db.write(_enqueue, db, jobs, *_enqueue_rows(jobs, now), now)
    return db.write(_enqueue_graph, db, jobs, graph, now)


def enqueue_within(db: Database, jobs: Sequence[NewJob], now: float) -> list[EnqueueResult]:
    """``enqueue`` inside a write transaction the caller holds (a schedule's slot)."""
    return _enqueue(db, jobs, *_enqueue_rows(jobs, now), now)


def _enqueue_graph(
    db: Database, jobs: Sequence[NewJob], graph: Graph, now: float
) -> list[EnqueueResult]:
    """Enqueue a batch with dependencies inside the write transaction (which no parent's move
    can interleave with): each job counts its parents still to succeed, then the edges."""
    conn, q = db.conn, db.q
    stored = list(graph.stored)
    where: dict[str, int] = {}
    workflows: dict[str, str] = {}
    if stored:
        ids = json.dumps(stored)
        where = dict(conn.execute(q["jobs_graph_where"], {"ids": ids}).fetchall())
        unknown = [p for p in stored if p not in where]
        if unknown:
            raise unknown_parents(jobs, unknown)
        for child, workflow in conn.execute(q["jobs_graph_workflows"], {"ids": ids}).fetchall():
            workflows[child] = workflow  # the oldest edge last: it wins
    counts = graph.child_counts()
    for parent, place in where.items():
        if place != 1:  # counted on the parent's row: its move out of hot releases them
            name = "jobs_graph_attach_hot" if place == 0 else "jobs_graph_attach_dlq"
            conn.execute(q[name], {"id": parent, "n": counts[parent]})
    succeeded = {p for p, place in where.items() if place == 1}
    failed = {p for p, place in where.items() if place == 2}
    columns = (graph.waiting(succeeded, failed), counts)
    results = _enqueue(db, jobs, *_enqueue_rows(jobs, now, columns), now)
    conn.executemany(
        q["jobs_graph_edge"],
        [
            {
                "child": e.child,
                "parent": e.parent,
                "workflow": e.workflow,
                "satisfied": 1 if graph.satisfied(e.child, e.parent, succeeded, failed) else 0,
                "any": 1 if e.any_outcome else 0,
                "argument": e.argument,
                "now": now,
            }
            for e in graph.edges(graph.workflows(workflows))
        ],
    )
    return results


def _enqueue_rows(
    jobs: Sequence[NewJob],
    now: float,
    columns: tuple[dict[str, int], dict[str, int]] | None = None,
) -> tuple[list[str], list[dict[str, object]], dict[str, int]]:
    """The ids, the rows to insert and the first job of each idempotency key; ``columns``
    holds, per job id of a batch with dependencies, its parents still to succeed and its
    children."""
    waits, children = columns or ({}, {})
    fresh = iter(new_job_ids(sum(job.id is None for job in jobs)))
    ids = [job.id or next(fresh) for job in jobs]
    first_by_key: dict[str, int] = {}
    rows: list[dict[str, object]] = []
    for i, job in enumerate(jobs):
        key = job.idempotency_key
        if key is not None and job.on_conflict == "keep":
            if key in first_by_key:
                continue
            first_by_key[key] = i
        # The due time is always stored (now when not delayed), so the fetch index orders
        # pending rows by (priority, due time) without an expression.
        if job.run_at is not None:
            scheduled: float = to_ts(job.run_at)
        elif job.delay_seconds:
            scheduled = now + job.delay_seconds
        else:
            scheduled = now
        if job.expires_at is not None:
            expires: float | None = to_ts(job.expires_at)
        elif job.expires_after_seconds is not None:
            expires = now + job.expires_after_seconds
        else:
            expires = None
        rows.append(
            {
                "id": ids[i],
                "queue": job.queue,
                "type": job.type,
                "payload": job.payload,
                "tags": tags_in(job.tags),
                "idempotency_key": key,
                "priority": job.priority,
                "max_attempts": job.max_attempts,
                "timeout_seconds": job.timeout_seconds,
                "scheduled_at": scheduled,
                "now": now,
                "created_by": job.created_by,
                "trace_context": job.trace_context,
                "parents_left": waits.get(ids[i]),
                "children": children.get(ids[i]),
                "partition": job.partition,
                "expires_at": expires,
            }
        )
    return ids, rows, first_by_key


def _enqueue(
    db: Database,
    jobs: Sequence[NewJob],
    ids: list[str],
    rows: list[dict[str, object]],
    first_by_key: dict[str, int],
    now: float,
) -> list[EnqueueResult]:
    conn, q = db.conn, db.q
    ensure_queues(db, [job.queue for job in jobs], now)
    conflicting: list[tuple[int, dict[str, object]]] = []
    if any(job.on_conflict != "keep" for job in jobs):
        rows, conflicting = _split_conflicting(jobs, ids, rows)
    windows: dict[str, float] = {}
    for held_key, i in first_by_key.items():
        seconds = jobs[i].unique_for_seconds
        if seconds is not None:
            windows[held_key] = seconds
    held: dict[str, str] = {}
    if windows:
        params = {"keys": json.dumps(list(windows)), "now": now}
        held = dict(conn.execute(q["jobs_unique_held"], params).fetchall())
        if held:
            rows = [row for row in rows if row["idempotency_key"] not in held]
    conn.executemany(q["jobs_enqueue"], rows)
    holders: dict[str, str] = {}
    if first_by_key:
        for key, holder in conn.execute(
            q["jobs_enqueue_holders"], {"keys": json.dumps(list(first_by_key))}
        ):
            holders[key] = holder
    if windows:
        holders.update(held)  # an open window names its job, wherever that is now
        conn.executemany(
            q["jobs_unique_take"],
            [
                {
                    "key": k,
                    "job_id": holders.get(k, ids[first_by_key[k]]),
                    "until": now + seconds,
                }
                for k, seconds in windows.items()
                if k not in held
            ],
        )
    # After the batch's other jobs, in input order: a later one acts on an earlier one.
    decided = {i: _enqueue_conflict(db, jobs[i], row, now) for i, row in conflicting}
    results = []
    for i, job in enumerate(jobs):
        key = job.idempotency_key
        if key is None:
            results.append(EnqueueResult(id=ids[i], duplicate=False))
            continue
        if i in decided:
            results.append(decided[i])
            continue
        holder = holders.get(key, ids[first_by_key[key]])
        first = first_by_key[key] == i
        results.append(EnqueueResult(id=holder, duplicate=not (first and holder == ids[i])))
    return results


def _split_conflicting(
    jobs: Sequence[NewJob], ids: list[str], rows: list[dict[str, object]]
) -> tuple[list[dict[str, object]], list[tuple[int, dict[str, object]]]]:
    """The rows of the jobs enqueued as usual, and (by index) those of the jobs with an
    ``on_conflict`` other than "keep" (``_enqueue_rows`` keeps a row for each of them)."""
    index = {ids[i]: i for i, job in enumerate(jobs) if job.on_conflict != "keep"}
    plain = [row for row in rows if row["id"] not in index]
    return plain, [(index[str(row["id"])], row) for row in rows if row["id"] in index]


def _enqueue_conflict(
    db: Database, job: NewJob, row: dict[str, object], now: float
) -> EnqueueResult:
    """One job with an ``on_conflict`` other than "keep" (docs/concepts.md), inside the write
    transaction, which keeps every other writer out: a Pending holder of the key takes the new
    payload in place; a holder past Pending gives its key up to the new job, the supersession
    is recorded, and with cancel_running a claimed or running holder is asked to stop."""
    conn, q = db.conn, db.q
    params = {**row, "mode": job.on_conflict}
    # The key is unique in hot: at most one row, read whole so that the statement completes.
    for holder, queue in conn.execute(q["jobs_conflict_replace"], params).fetchall():
        conn.execute(q["stats_conflict_bump"], {"queue": queue, "replaced": 1, "superseded": 0})
        return EnqueueResult(id=holder, duplicate=True, changed="replaced")
    found = conn.execute(q["jobs_conflict_holder"], row).fetchone()
    if found is None:
        conn.execute(q["jobs_enqueue"], row)
        return EnqueueResult(id=str(row["id"]), duplicate=False)
    holder, status, queue = found
    params.update(holder=holder, queue=queue)
    params["cancel"] = job.on_conflict == "cancel_running" and status in (
        JobStatus.FETCHED,
        JobStatus.PROCESSING,
    )
    conn.execute(q["jobs_conflict_release"], params)
    conn.execute(q["jobs_conflict_record"], params)
    conn.execute(q["jobs_enqueue"], row)
    conn.execute(q["stats_conflict_bump"], {**params, "replaced": 0, "superseded": 1})
    return EnqueueResult(id=str(row["id"]), duplicate=False, changed="superseded")


def superseded_cancels(db: Database, by_ids: list[str]) -> list[str]:
    """The jobs that the jobs ``by_ids`` superseded and asked to stop (cancel_running)."""
    params = {"ids": json.dumps(by_ids)}
    return [row[0] for row in db.conn.execute(db.q["jobs_superseded_cancels"], params)]


# -- moves out of hot -------------------------------------------------------------------------


@dataclass
class Moved:
    """What the moves of one transaction did beyond themselves: the queues that got released
    children (to wake their workers) and the waited jobs that left hot (to tell their
    waiters); both are told after the commit."""

    woken: set[str] = field(default_factory=set)
    waited: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # parents whose children to release

    def left_hot(self, job_id: str, waited: object, children: object) -> None:
        if waited:
            self.waited.append(job_id)
        if children:  # a job nobody waits on costs the release nothing
            self.finished.append(job_id)

    def release(self, db: Database, now: float) -> None:
        """Satisfy the edges from the parents that finished (every edge of one in the archive,
        those of children released on any outcome of one in the DLQ); each child counts its
        parents down, and one with none left goes to Pending. Called once by each transaction
        that moves jobs out of hot, after its moves (a child cancelled in the same
        transaction is in the DLQ by then, and stays there)."""
        if not self.finished:
            return
        counts: dict[str, int] = {}
        for (child,) in db.conn.execute(
            db.q["jobs_edges_satisfy"], {"ids": json.dumps(self.finished)}
        ).fetchall():
            counts[child] = counts.get(child, 0) + 1
        self.finished.clear()
        for child, n in counts.items():
            row = db.conn.execute(
                db.q["jobs_release_children"], {"id": child, "n": n, "now": now}
            ).fetchone()
            if row is not None and row[1] == JobStatus.PENDING:
                self.woken.add(str(row[0]))


def move_by_status(
    db: Database, params: dict[str, object], moved: Moved, insert: str = "hot_to_dlq_insert"
) -> str | None:
    """Hot row ``id`` in ``status`` -> DLQ, in a savepoint; the queue, or None."""
    conn, q = db.conn, db.q
    conn.execute(q["savepoint"])
    try:
        queue = None
        if conn.execute(q[insert], params).rowcount:
            row = conn.execute(q["hot_to_dlq_delete"], params).fetchone()
            if row is not None:
                queue = str(row[0])
                moved.left_hot(str(params["id"]), row[1], row[2])
    except sqlite3.IntegrityError:
        conn.execute(q["savepoint_rollback"])
        conn.execute(q["savepoint_release"])
        return None
    conn.execute(q["savepoint_release"])
    return queue


# -- operators --------------------------------------------------------------------------------


def cancel(
    db: Database, ids: Sequence[str], actor: str, now: float
) -> tuple[list[str], list[str], list[str], Moved]:
    """(cancelled now, cancel requested, not in hot), each in input order, and the waited
    jobs that left hot."""

    def run() -> tuple[list[str], list[str], list[str], Moved]:
        conn, q = db.conn, db.q
        moved = Moved()
        status = dict(
            conn.execute(q["jobs_cancel_status"], {"ids": json.dumps(list(ids))}).fetchall()
        )
        counters = Counters(now)
        cancelled, requested, missing = [], [], []
        for job_id in ids:
            current = status.get(job_id)
            if current is None:
                missing.append(job_id)
            elif current == JobStatus.PROCESSING:
                conn.execute(q["jobs_cancel_request"], {"id": job_id, "actor": actor, "now": now})
                requested.append(job_id)
            else:
                queue = move_by_status(
                    db,
                    {
                        "id": job_id,
                        "status": current,
                        "reason": int(FailureReason.CANCELLED),
                        "error": f"Cancelled by {actor}",
                        "actor": actor,
                        "now": now,
                    },
                    moved,
                )
                if queue is None:
                    missing.append(job_id)
                else:
                    cancelled.append(job_id)
                    counters.outcome(queue, FailureReason.CANCELLED)
        moved.release(db, now)
        counters.write(db)
        return cancelled, requested, missing, moved

    return db.write(run)


def dependency_fail(
    db: Database, pairs: Sequence[tuple[str, str]], error_of: Any, actor: str | None, now: float
) -> tuple[list[str], Moved]:
    """Each waiting child of (child, parent) -> DLQ as DEPENDENCY_FAILED, with the error
    ``error_of(parent)``; the ids moved. Runs inside the caller's write transaction."""
    counters = Counters(now)
    moved = Moved()
    failed = []
    for child, parent in pairs:
        params = {
            "id": child,
            "status": int(JobStatus.WAITING),
            "error": error_of(parent),
            "actor": actor,
            "now": now,
        }
        queue = move_by_status(db, params, moved, insert="jobs_orphans_fail")
        if queue is not None:
            failed.append(child)
            counters.outcome(queue, FailureReason.DEPENDENCY_FAILED)
    moved.release(db, now)
    counters.write(db)
    return failed, moved


def edit_params(
    *, id: str, actor: str, payload: str | None, tags: str | None, set_tags: bool,
    priority: int | None, now: float,
) -> dict[str, object]:  # fmt: skip
    """The parameters of an edit or a resurrection (``None`` leaves a field alone)."""
    return {
        "id": id,
        "actor": actor,
        "payload": payload,
        "tags": tags,
        "set_tags": 1 if set_tags else 0,
        "priority": priority,
        "now": now,
    }


def hot_edit(db: Database, params: dict[str, object]) -> bool:
    return db.write(lambda: db.conn.execute(db.q["jobs_edit"], params).rowcount > 0)


def hot_advance(db: Database, seconds: float, queues: list[str] | None, now: float) -> int:
    params = {
        "seconds": seconds,
        "queues": None if queues is None else json.dumps(queues),
        "now": now,
    }
    return db.write(lambda: db.conn.execute(db.q["jobs_advance"], params).rowcount)


def edits_params(id: str, actor: str, edits: Edits, now: datetime | None) -> dict[str, object]:
    """The parameters of an edit or a resurrection, from the seam's ``Edits``."""
    return edit_params(
        id=id,
        actor=actor,
        payload=edits.payload,
        tags=tags_in(edits.tags),
        set_tags=edits.tags is not None,
        priority=edits.priority,
        now=ts_now(now),
    )


class SQLiteJobs(SQLiteCore):
    """Hot jobs: enqueue, cancel, edit and advance."""

    async def jobs_enqueue(
        self,
        jobs_: list[NewJob],
        now: datetime | None,
        connection: Any,
        graph: Graph | None = None,
    ) -> list[EnqueueResult]:
        results = await self._db.call(enqueue, jobs_, ts_now(now), graph)
        broadcast_jobs(self._db.key, [job.queue for job in jobs_])
        latest = [
            r.id
            for r, job in zip(results, jobs_, strict=True)
            if r.changed == "superseded" and job.on_conflict == "cancel_running"
        ]
        if latest:  # the workers of this process hear it now, the others at their heartbeat
            broadcast_cancel(self._db.key, await self._db.call(superseded_cancels, latest))
        return results

    async def jobs_cancel(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> CancelResult:
        cancelled, requested, missing, moved = await self._db.call(cancel, ids, actor, ts_now(now))
        self._told(moved)
        if requested:
            broadcast_cancel(self._db.key, requested)
        return CancelResult(tuple(cancelled), tuple(requested), tuple(missing))

    async def jobs_edit(self, id: str, actor: str, edits: Edits, now: datetime | None) -> bool:
        return await self._db.call(hot_edit, edits_params(id, actor, edits, now))

    async def jobs_advance(
        self, seconds: float, queues: list[str] | None, now: datetime | None
    ) -> int:
        moved = await self._db.call(hot_advance, seconds, queues, ts_now(now))
        if moved:
            broadcast_jobs(self._db.key, [ANY_QUEUE])
        return moved

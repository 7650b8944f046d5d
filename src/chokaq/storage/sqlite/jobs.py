"""Jobs on SQLite: enqueue, the worker path (claim, start, heartbeat, release, finalize),
rescue, and the operator's cancel and edit of hot jobs.

Each function runs on the connection's thread and does its whole batch in one short write
transaction. Every worker transition is fenced by the lease (id, worker id, token, status).
Terminal moves update ``stats_summary`` and ``metric_buckets`` in the same transaction; nothing
here ever decrements a counter. Arguments arrive checked; it owns these transitions only.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...ids import new_job_ids, new_lease_token
from ...models import (
    ClaimedJob,
    EnqueueResult,
    FailMove,
    FailureReason,
    Heartbeat,
    HeartbeatAck,
    JobStatus,
    LeaderTerm,
    Lease,
    Move,
    NewJob,
    Outcome,
    RetryMove,
    Started,
    SucceedMove,
)
from ..checks import ATTEMPTS_KEPT
from ..driver import EXPIRE_BATCH, UndecodableRow
from ..graph import Graph, unknown_parents
from .connection import Database
from .leadership import check_fence
from .rows import claimed_or_undecodable, from_ts, order_key, tags_in, to_ts, tolerant_text

__all__ = [
    "Counters",
    "Moved",
    "cancel",
    "claim_ids",
    "dependency_fail",
    "edit_params",
    "enqueue",
    "enqueue_within",
    "fetch",
    "finalize",
    "heartbeat",
    "hot_edit",
    "progress",
    "release",
    "rescue",
    "start_many",
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


def _lease(lease: Lease) -> dict[str, str]:
    return {"id": lease.job_id, "worker_id": lease.worker_id, "token": lease.token}


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
    columns = (graph.waiting(succeeded), counts)
    results = _enqueue(db, jobs, *_enqueue_rows(jobs, now, columns), now)
    conn.executemany(
        q["jobs_graph_edge"],
        [
            {
                "child": child,
                "parent": parent,
                "workflow": workflow,
                "satisfied": 1 if parent in succeeded else 0,
                "now": now,
            }
            for child, parent, workflow in graph.edges(graph.workflows(workflows))
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
        if key is not None:
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
    results = []
    for i, job in enumerate(jobs):
        key = job.idempotency_key
        if key is None:
            results.append(EnqueueResult(id=ids[i], duplicate=False))
            continue
        holder = holders.get(key, ids[first_by_key[key]])
        first = first_by_key[key] == i
        results.append(EnqueueResult(id=holder, duplicate=not (first and holder == ids[i])))
    return results


# -- claim ------------------------------------------------------------------------------------


def fetch(
    db: Database,
    worker_id: str,
    limit: int,
    queues: Sequence[str] | None,
    exclude_types: Sequence[str],
    start: bool,
    now: float | None,
) -> list[ClaimedJob | UndecodableRow]:
    """Claim up to ``limit`` jobs; ``now`` None: the clock, read once the write lock is held
    (so the claim's start is never before it could see its slot free)."""
    return db.write(_fetch, db, worker_id, limit, queues, exclude_types, start, now)


def _fetch(
    db: Database,
    worker_id: str,
    limit: int,
    queues: Sequence[str] | None,
    exclude_types: Sequence[str],
    start: bool,
    given: float | None,
) -> list[ClaimedJob | UndecodableRow]:
    """Pick candidates, then claim them with one UPDATE ... FROM ... RETURNING.

    Queues with a ``max_workers`` bulkhead are picked one by one, each capped at its free slots;
    every other eligible queue is picked by one ordered scan of the partial fetch index. The
    write lock is held from the first read, so no other fetcher can interleave.
    """
    now = time.time() if given is None else given
    conn, q = db.conn, db.q
    exclude = json.dumps(list(exclude_types))
    base = {"now": now, "exclude": exclude, "limit": limit}
    wanted = None if queues is None else set(queues)
    if queues is None:
        picked = conn.execute(q["jobs_fetch_candidates"], base).fetchall()
    else:
        picked = conn.execute(
            q["jobs_fetch_candidates_in"], {**base, "queues": json.dumps(list(queues))}
        ).fetchall()
    for name, free in conn.execute(q["jobs_fetch_bulkheads"]).fetchall():
        if free <= 0 or (wanted is not None and name not in wanted):
            continue
        picked += conn.execute(
            q["jobs_fetch_candidates_queue"], {**base, "queue": name, "limit": min(free, limit)}
        ).fetchall()
    if not picked:
        return []
    picked.sort(key=order_key)
    return claim_ids(db, worker_id, [row["id"] for row in picked[:limit]], start, now)


def claim_ids(
    db: Database, worker_id: str, order: list[str], start: bool, now: float
) -> list[ClaimedJob | UndecodableRow]:
    """Claim the Pending rows ``order`` (in the write transaction), each with a new lease;
    returned in that order."""
    conn, q = db.conn, db.q
    claims = json.dumps([[job_id, new_lease_token()] for job_id in order])
    status = JobStatus.PROCESSING if start else JobStatus.FETCHED
    params = {
        "status": int(status),
        "worker_id": worker_id,
        "now": now,
        "started": 1 if start else 0,
        "claims": claims,
    }
    position = {job_id: i for i, job_id in enumerate(order)}
    try:
        rows = conn.execute(q["jobs_fetch"], params).fetchall()
    except sqlite3.OperationalError as exc:
        if "decode" not in str(exc):
            raise
        # A claimed row holds text that is not UTF-8. The claim itself has applied (SQLite
        # makes every change before the first RETURNING row is read): read the rows again with
        # such bytes let through, so that row alone is found out.
        rows = _read_tolerant(db, q["jobs_fetch_claimed"], params)
        rows.sort(key=lambda r: position[r["id"]])
        return [claimed_or_undecodable(row, check_text=True) for row in rows]
    rows.sort(key=lambda r: position[r["id"]])
    return [claimed_or_undecodable(row) for row in rows]


def _read_tolerant(db: Database, query: str, params: dict[str, object]) -> list[sqlite3.Row]:
    """Rows of ``query`` where text that is not UTF-8 comes back with its bytes escaped
    (lone surrogates) instead of raising; the connection's own text reading is restored."""
    conn = db.conn
    conn.text_factory = tolerant_text
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.text_factory = str


# -- lease-guarded transitions ----------------------------------------------------------------


def start_many(db: Database, leases: Sequence[Lease], given: float | None) -> dict[str, Started]:
    def run() -> dict[str, Started]:
        now = time.time() if given is None else given  # under the write lock, as fetch
        started: dict[str, Started] = {}
        for lease in leases:
            row = db.conn.execute(db.q["jobs_start"], {**_lease(lease), "now": now}).fetchone()
            if row is not None:
                started[lease.job_id] = Started(row[0], from_ts(row[1]))  # type: ignore[arg-type]
        return started

    return db.write(run)


def heartbeat(db: Database, beats: Sequence[Heartbeat], now: float) -> list[HeartbeatAck]:
    def run() -> list[HeartbeatAck]:
        acks = []
        for beat in beats:
            row = db.conn.execute(
                db.q["jobs_heartbeat"],
                {**_lease(beat.lease), "now": now, "progress": beat.progress},
            ).fetchone()
            if row is None:
                acks.append(HeartbeatAck(job_id=beat.lease.job_id, owned=False))
            else:
                acks.append(
                    HeartbeatAck(
                        job_id=beat.lease.job_id,
                        owned=True,
                        cancel_requested=row[0] is not None,
                        cancel_requested_by=row[1] if row[0] is not None else None,
                    )
                )
        return acks

    return db.write(run)


def progress(db: Database, lease: Lease, value: int, now: float) -> bool:
    def run() -> bool:
        cur = db.conn.execute(
            db.q["jobs_progress"], {**_lease(lease), "progress": value, "now": now}
        )
        return cur.rowcount > 0

    return db.write(run)


def release(db: Database, leases: Sequence[Lease], now: float) -> list[str]:
    def run() -> list[str]:
        released = []
        for lease in leases:
            if db.conn.execute(db.q["jobs_release"], {**_lease(lease), "now": now}).fetchone():
                released.append(lease.job_id)
        return released

    return db.write(run)


# -- finalize ---------------------------------------------------------------------------------


@dataclass
class Moved:
    """What the moves of one transaction did beyond themselves: the queues that got released
    children (to wake their workers) and the waited jobs that left hot (to tell their
    waiters); both are told after the commit."""

    woken: set[str] = field(default_factory=set)
    waited: list[str] = field(default_factory=list)
    succeeded: list[str] = field(default_factory=list)  # parents whose children to release

    def left_hot(self, job_id: str, waited: object, succeeded: bool, children: object) -> None:
        if waited:
            self.waited.append(job_id)
        if succeeded and children:  # a job nobody waits on costs the release nothing
            self.succeeded.append(job_id)

    def release(self, db: Database, now: float) -> None:
        """Satisfy the edges from the parents that succeeded; each child counts its parents
        down, and one with none left goes to Pending."""
        if not self.succeeded:
            return
        counts: dict[str, int] = {}
        for (child,) in db.conn.execute(
            db.q["jobs_edges_satisfy"], {"ids": json.dumps(self.succeeded)}
        ).fetchall():
            counts[child] = counts.get(child, 0) + 1
        self.succeeded.clear()
        for child, n in counts.items():
            row = db.conn.execute(
                db.q["jobs_release_children"], {"id": child, "n": n, "now": now}
            ).fetchone()
            if row is not None and row[1] == JobStatus.PENDING:
                self.woken.add(str(row[0]))


def finalize(db: Database, moves: Sequence[Move], now: float) -> tuple[list[bool], Moved]:
    def run() -> tuple[list[bool], Moved]:
        counters = Counters(now)
        moved = Moved()
        done = _succeed_batch(db, moves, now, counters, moved)
        applied = [
            done[i] if i in done else _apply_move(db, move, now, counters, moved)
            for i, move in enumerate(moves)
        ]
        moved.release(db, now)
        counters.write(db)
        return applied, moved

    return db.write(run)


def _succeed_batch(
    db: Database, moves: Sequence[Move], now: float, counters: Counters, moved: Moved
) -> dict[int, bool]:
    """The common case first: every succeed move of the batch in two statements.

    If that fails as a whole (one id already archived, say), its savepoint is rolled back and
    the moves are retried one by one, each in its own savepoint, so one bad move cannot block
    the others. Returns the outcome of each succeed move it settled, by index.
    """
    index: dict[str, int] = {}
    payload = []
    for i, move in enumerate(moves):
        if isinstance(move, SucceedMove) and move.lease.job_id not in index:
            index[move.lease.job_id] = i
            lease = move.lease
            row: list[object] = [
                lease.job_id,
                lease.worker_id,
                lease.token,
                move.duration_seconds,
                move.elapsed_seconds,
            ]
            if move.result is not None or move.result_error is not None:
                row += [move.result, move.result_error]
            payload.append(row)
    if len(payload) < 2:
        return {}
    conn, q = db.conn, db.q
    params = {"moves": json.dumps(payload), "now": now}
    conn.execute(q["savepoint_batch"])
    try:
        conn.execute(q["jobs_finalize_archive_many"], params)
        deleted = conn.execute(q["jobs_finalize_delete_many"], params).fetchall()
    except sqlite3.IntegrityError:
        conn.execute(q["savepoint_batch_rollback"])
        conn.execute(q["savepoint_batch_release"])
        return {}
    conn.execute(q["savepoint_batch_release"])
    done = dict.fromkeys(index.values(), False)
    for job_id, queue, waited, children in deleted:
        i = index[job_id]
        done[i] = True
        moved.left_hot(job_id, waited, True, children)
        move = moves[i]
        assert isinstance(move, SucceedMove)
        counters.outcome(queue, None, move.duration_seconds)
    return done


def _apply_move(db: Database, move: Move, now: float, counters: Counters, moved: Moved) -> bool:
    """One move inside its own savepoint: a move that fails (say, its id is already in the
    archive) rolls back alone and reports False; the others still apply. Its counters are only
    recorded once it has applied, and written with the batch."""
    conn, q = db.conn, db.q
    params: dict[str, object] = {
        **_lease(move.lease),
        "now": now,
        "elapsed": move.elapsed_seconds,
    }
    conn.execute(q["savepoint"])
    try:
        _record_attempt(db, move, params)
        if isinstance(move, RetryMove):
            if move.run_at is not None:
                scheduled = to_ts(move.run_at)
            else:
                scheduled = now + max(move.delay_seconds, 0.0)
            row = conn.execute(
                q["jobs_finalize_retry"],
                {
                    **params,
                    "scheduled_at": scheduled,
                    "error": move.error,
                    "refund": 1 if move.refund_attempt else 0,
                },
            ).fetchone()
            queue = None if row is None else row[0]
        elif isinstance(move, SucceedMove):
            params["duration"] = move.duration_seconds
            params["result"] = move.result
            params["result_error"] = move.result_error
            queue = _move_out(db, "jobs_finalize_archive", params, moved, True)
        else:
            assert isinstance(move, FailMove)
            params.update(
                reason=int(move.reason),
                error=move.error,
                actor=move.actor,
                duration=move.duration_seconds,
            )
            queue = _move_out(db, "jobs_finalize_dlq", params, moved, False)
    except sqlite3.IntegrityError:
        conn.execute(q["savepoint_rollback"])
        conn.execute(q["savepoint_release"])
        return False
    conn.execute(q["savepoint_release"])
    if queue is None:
        return False
    if isinstance(move, RetryMove):
        if move.count_retry:
            counters.retried(queue)
    elif isinstance(move, SucceedMove):
        counters.outcome(queue, None, move.duration_seconds)
    else:
        counters.outcome(queue, move.reason, move.duration_seconds)
    return True


def _record_attempt(db: Database, move: Move, params: dict[str, object]) -> None:
    """Keep a failed attempt in the job's history (the newest ``ATTEMPTS_KEPT``): a fail move,
    or a retry that used its attempt (a refunded one never ran). Only a running job has one."""
    if isinstance(move, SucceedMove) or (isinstance(move, RetryMove) and move.refund_attempt):
        return
    reason = int(move.reason) if isinstance(move, FailMove) else None
    record = {**params, "duration": move.duration_seconds, "reason": reason, "error": move.error}
    if db.conn.execute(db.q["attempts_record"], record).rowcount:
        db.conn.execute(db.q["attempts_trim"], {"id": move.lease.job_id, "keep": ATTEMPTS_KEPT})


def _move_out(
    db: Database, insert: str, params: dict[str, object], moved: Moved, succeeded: bool
) -> str | None:
    """Copy the leased hot row into a cold pillar, then delete it; the queue, or None."""
    if db.conn.execute(db.q[insert], params).rowcount == 0:
        return None
    row = db.conn.execute(db.q["jobs_finalize_delete"], params).fetchone()
    if row is None:
        return None
    moved.left_hot(str(params["id"]), row[1], succeeded, row[2])
    return str(row[0])


# -- rescue -----------------------------------------------------------------------------------


def rescue(
    db: Database,
    fetched_timeout: float,
    processing_timeout: float,
    now: float,
    reachable_since: float | None,
    fence: LeaderTerm | None,
) -> tuple[list[str], list[str], list[str], Moved]:
    def run() -> tuple[list[str], list[str], list[str], Moved]:
        conn, q = db.conn, db.q
        moved = Moved()
        check_fence(db, fence)
        requeued = [
            row[0]
            for row in conn.execute(
                q["jobs_rescue_fetched"], {"now": now, "cutoff": now - fetched_timeout}
            ).fetchall()
        ]
        counters = Counters(now)
        candidates = conn.execute(
            q["jobs_rescue_zombie_candidates"],
            {"now": now, "timeout": processing_timeout, "since": reachable_since},
        ).fetchall()

        def bury(job_id: str, status: JobStatus, reason: FailureReason, error: str) -> bool:
            params = {
                "id": job_id,
                "status": int(status),
                "reason": int(reason),
                "error": error,
                "actor": None,
                "now": now,
            }
            queue = move_by_status(db, params, moved)
            if queue is not None:
                counters.outcome(queue, reason)
                if status is JobStatus.PROCESSING:  # the attempt its dead worker ran failed
                    conn.execute(q["attempts_record_zombie"], {"id": job_id})
                    conn.execute(q["attempts_trim"], {"id": job_id, "keep": ATTEMPTS_KEPT})
            return queue is not None

        zombies = [
            job_id
            for job_id, timeout in candidates
            if bury(
                job_id,
                JobStatus.PROCESSING,
                FailureReason.ZOMBIE,
                f"Zombie: heartbeat expired (no heartbeat for more than {timeout:g} s)",
            )
        ]
        expiring = conn.execute(
            q["jobs_rescue_expired_candidates"], {"now": now, "limit": EXPIRE_BATCH}
        ).fetchall()
        expired = [
            job_id
            for job_id, expires_at in expiring
            if bury(
                job_id,
                JobStatus.PENDING,
                FailureReason.EXPIRED,
                f"Expired: not started by {from_ts(expires_at):%Y-%m-%d %H:%M:%S} UTC",
            )
        ]
        counters.write(db)
        return requeued, zombies, expired, moved

    return db.write(run)


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
                moved.left_hot(str(params["id"]), row[1], False, None)
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

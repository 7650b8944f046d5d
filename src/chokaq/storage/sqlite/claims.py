"""The claims area on SQLite: the worker path of a job, the claim (fetch), start, heartbeat,
progress, release and the finalize that moves it out of hot.

Each function runs on the connection's thread and does its whole batch in one short write
transaction. Every transition is fenced by the lease (id, worker id, token, status).
``SQLiteClaims`` is the driver's mixin for the area.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime

from ...ids import new_lease_token
from ...models import (
    ClaimedJob,
    FailMove,
    Heartbeat,
    HeartbeatAck,
    JobStatus,
    LeaderTerm,
    Lease,
    Move,
    RetryMove,
    Started,
    SucceedMove,
)
from ..checks import ATTEMPTS_KEPT
from ..driver import UndecodableRow
from .connection import Database, SQLiteCore
from .jobs import Counters, Moved
from .rows import (
    claimed_or_undecodable,
    from_ts,
    given_ts,
    order_key,
    to_ts,
    tolerant_text,
    ts_now,
)

__all__ = [
    "SQLiteClaims",
    "claim_ids",
    "fetch",
    "finalize",
    "heartbeat",
    "record_progress",
    "release",
    "start_many",
]


def lease_params(lease: Lease) -> dict[str, str]:
    """The parameters a lease-guarded statement matches a row by."""
    return {"id": lease.job_id, "worker_id": lease.worker_id, "token": lease.token}


# -- claim ------------------------------------------------------------------------------------


def fetch(
    db: Database,
    worker_id: str,
    limit: int,
    queues: Sequence[str] | None,
    exclude_types: Sequence[str],
    start: bool,
    given: float | None,
) -> list[ClaimedJob | UndecodableRow]:
    """Claim up to ``limit`` jobs; ``given`` None: the clock, read once the write lock is held
    (so the claim's start is never before it could see its slot free).

    Candidates are picked, then claimed with one UPDATE ... FROM ... RETURNING. Queues with a
    ``max_workers`` bulkhead are picked one by one, each capped at its free slots; every other
    eligible queue is picked by one ordered scan of the partial fetch index. The write lock is
    held from the first read, so no other fetcher can interleave."""

    def run() -> list[ClaimedJob | UndecodableRow]:
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

    return db.write(run)


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
            params = {**lease_params(lease), "now": now}
            row = db.conn.execute(db.q["jobs_start"], params).fetchone()
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
                {**lease_params(beat.lease), "now": now, "progress": beat.progress},
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


def record_progress(db: Database, lease: Lease, value: int, now: float) -> bool:
    def run() -> bool:
        cur = db.conn.execute(
            db.q["jobs_progress"], {**lease_params(lease), "progress": value, "now": now}
        )
        return cur.rowcount > 0

    return db.write(run)


def release(db: Database, leases: Sequence[Lease], now: float) -> list[str]:
    def run() -> list[str]:
        released = []
        for lease in leases:
            params = {**lease_params(lease), "now": now}
            if db.conn.execute(db.q["jobs_release"], params).fetchone():
                released.append(lease.job_id)
        return released

    return db.write(run)


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
        moved.left_hot(job_id, waited, children)
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
        **lease_params(move.lease),
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
            queue = _move_out(db, "jobs_finalize_archive", params, moved)
        else:
            assert isinstance(move, FailMove)
            params.update(
                reason=int(move.reason),
                error=move.error,
                actor=move.actor,
                duration=move.duration_seconds,
                error_type=move.error_type,
            )
            queue = _move_out(db, "jobs_finalize_dlq", params, moved)
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


def _move_out(db: Database, insert: str, params: dict[str, object], moved: Moved) -> str | None:
    """Copy the leased hot row into a cold pillar, then delete it; the queue, or None."""
    if db.conn.execute(db.q[insert], params).rowcount == 0:
        return None
    row = db.conn.execute(db.q["jobs_finalize_delete"], params).fetchone()
    if row is None:
        return None
    moved.left_hot(str(params["id"]), row[1], row[2])
    return str(row[0])


class SQLiteClaims(SQLiteCore):
    """A claimed job's transitions, each guarded by its lease."""

    async def jobs_fetch(
        self,
        worker_id: str,
        limit: int,
        queues_: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> list[ClaimedJob | UndecodableRow]:
        # The clock is read under the write lock (None here): see fetch.
        return await self._db.call(
            fetch, worker_id, limit, queues_, exclude_types, start, given_ts(now)
        )

    async def jobs_start(self, leases: list[Lease], now: datetime | None) -> dict[str, Started]:
        return await self._db.call(start_many, leases, given_ts(now))

    async def jobs_heartbeat(
        self, beats: list[Heartbeat], now: datetime | None
    ) -> list[HeartbeatAck]:
        return await self._db.call(heartbeat, beats, ts_now(now))

    async def jobs_progress(self, lease: Lease, progress: int, now: datetime | None) -> bool:
        return await self._db.call(record_progress, lease, progress, ts_now(now))

    async def jobs_release(self, leases: list[Lease], now: datetime | None) -> list[str]:
        return await self._db.call(release, leases, ts_now(now))

    async def jobs_finalize(self, moves: list[Move], now: datetime | None) -> list[bool]:
        applied, moved = await self._db.call(finalize, moves, ts_now(now))
        self._told(moved)
        return applied

    async def jobs_release_missed(self, fence: LeaderTerm | None) -> int:
        # The write lock serializes an enqueue and the move of its parent: a move sees every
        # child, so it never leaves a release for later.
        return 0

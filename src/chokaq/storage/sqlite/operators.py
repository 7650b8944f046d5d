"""Operator and retention actions on SQLite: cancel, edit, resurrect, purge, metric roll-ups.

Each function runs on the connection's thread; an action is one short write transaction, except
the age-based purges, which loop over small transactions so a long purge never holds the write
lock for long. Lifetime counters are never decremented here. Owns these statements' use only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...models import FailureReason, JobFilter, JobStatus, Pillar
from .connection import Database
from .reads import filter_params, order_by
from .transitions import Counters, ensure_queues, move_by_status

__all__ = [
    "cancel",
    "dlq_edit",
    "dlq_filter_ids",
    "dlq_purge",
    "dlq_purge_by_filter",
    "edit_params",
    "hot_edit",
    "metrics_prune",
    "metrics_rollup",
    "purge_older",
    "resurrect",
    "resurrect_by_filter",
]


def cancel(
    db: Database, ids: Sequence[str], actor: str, now: float
) -> tuple[list[str], list[str], list[str]]:
    """(cancelled now, cancel requested, not in hot), each in input order."""

    def run() -> tuple[list[str], list[str], list[str]]:
        conn, q = db.conn, db.q
        status = dict(conn.execute(q["hot_status_of"], {"ids": json.dumps(list(ids))}).fetchall())
        counters = Counters(now)
        cancelled, requested, missing = [], [], []
        for job_id in ids:
            current = status.get(job_id)
            if current is None:
                missing.append(job_id)
            elif current == JobStatus.PROCESSING:
                conn.execute(q["cancel_request"], {"id": job_id, "actor": actor, "now": now})
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
                )
                if queue is None:
                    missing.append(job_id)
                else:
                    cancelled.append(job_id)
                    counters.outcome(queue, FailureReason.CANCELLED)
        counters.write(db)
        return cancelled, requested, missing

    return db.write(run)


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
    return db.write(lambda: db.conn.execute(db.q["hot_edit"], params).rowcount > 0)


def dlq_edit(db: Database, params: dict[str, object]) -> bool:
    return db.write(lambda: db.conn.execute(db.q["dlq_edit"], params).rowcount > 0)


Moved = tuple[list[str], list[str]]


def resurrect(db: Database, ids: Sequence[str], params: dict[str, object]) -> Moved:
    """DLQ -> hot for each id (``params`` carries the repairs and the actor); the ids moved and
    their queues."""
    return db.write(_resurrect, db, ids, params)


def _resurrect(db: Database, ids: Sequence[str], params: dict[str, object]) -> Moved:
    conn, q = db.conn, db.q
    moved, queues = [], []
    for job_id in ids:
        row_params = {**params, "id": job_id}
        if conn.execute(q["dlq_to_hot"], row_params).rowcount == 0:
            continue
        row = conn.execute(q["dlq_delete_one"], row_params).fetchone()
        if row is not None:
            moved.append(job_id)
            queues.append(str(row[0]))
    if queues:
        ensure_queues(db, queues, float(params["now"]))  # type: ignore[arg-type]
    return moved, queues


def dlq_filter_ids(db: Database, filter: JobFilter, cap: int) -> tuple[int, list[str]]:
    """How many DLQ rows match, and the ids of the newest ``cap`` of them."""
    params = filter_params(filter)
    sql = db.q["dlq_page"].replace("{order}", order_by_newest())
    matched = db.conn.execute(db.q["dlq_count"], params).fetchone()[0]
    rows = db.conn.execute(sql, {**params, "limit": cap, "offset": 0}).fetchall()
    return matched, [row["id"] for row in rows]


def order_by_newest() -> str:
    return order_by(Pillar.DLQ, "date", True)


def resurrect_by_filter(
    db: Database, filter: JobFilter, cap: int, params: dict[str, object]
) -> Moved:
    def run() -> Moved:
        _, ids = dlq_filter_ids(db, filter, cap)
        return _resurrect(db, ids, params)

    return db.write(run)


def dlq_purge(db: Database, ids: Sequence[str]) -> list[str]:
    def run() -> list[str]:
        rows = db.conn.execute(db.q["dlq_delete_ids"], {"ids": json.dumps(list(ids))}).fetchall()
        deleted = {row[0] for row in rows}
        return [job_id for job_id in ids if job_id in deleted]

    return db.write(run)


def dlq_purge_by_filter(db: Database, filter: JobFilter, cap: int) -> list[str]:
    def run() -> list[str]:
        _, ids = dlq_filter_ids(db, filter, cap)
        rows = db.conn.execute(db.q["dlq_delete_ids"], {"ids": json.dumps(ids)}).fetchall()
        deleted = {row[0] for row in rows}
        return [job_id for job_id in ids if job_id in deleted]

    return db.write(run)


def purge_older(db: Database, query: str, cutoff: float, batch_size: int, limit: int | None) -> int:
    """Delete in batches of ``batch_size``, each its own transaction, oldest first."""
    total = 0
    while limit is None or total < limit:
        size = batch_size if limit is None else min(batch_size, limit - total)
        deleted = db.write(
            lambda n=size: db.conn.execute(db.q[query], {"cutoff": cutoff, "limit": n}).rowcount
        )
        total += deleted
        if deleted < size:
            break
    return total


def metrics_prune(db: Database, cutoff: float, width: int) -> int:
    return db.write(
        lambda: db.conn.execute(db.q["metrics_prune"], {"cutoff": cutoff, "width": width}).rowcount
    )


def metrics_rollup(db: Database, cutoff: float, now: float) -> int:
    def run() -> int:
        params = {"cutoff": cutoff, "now": now}
        db.conn.execute(db.q["metrics_rollup_fold"], params)
        return db.conn.execute(db.q["metrics_rollup_delete"], params).rowcount

    return db.write(run)

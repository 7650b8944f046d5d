"""Retention on SQLite: age purges of the archive and the DLQ, metric-bucket pruning and
roll-ups.

Each function runs on the connection's thread. The age purges loop over small write
transactions, so a long purge never holds the write lock for long; lifetime counters are never
touched here. Arguments arrive checked; it owns these statements' use only.
"""

from __future__ import annotations

import json

from ...models import LeaderTerm
from .connection import Database
from .leadership import check_fence

__all__ = ["metrics_prune", "metrics_rollup", "purge_older"]


def purge_older(
    db: Database,
    query: str,
    cutoff: float,
    batch_size: int,
    limit: int | None,
    fence: LeaderTerm | None,
) -> int:
    """Delete in batches of ``batch_size``, each its own (fenced) transaction, oldest first."""

    def batch(size: int) -> int:
        check_fence(db, fence)
        rows = db.conn.execute(db.q[query], {"cutoff": cutoff, "limit": size}).fetchall()
        if rows:  # a purged job takes its edges (as a child) and its attempts with it
            ids = json.dumps([row[0] for row in rows])
            db.conn.execute(db.q["edges_unlink"], {"ids": ids})
            db.conn.execute(db.q["attempts_forget"], {"ids": ids})
        return len(rows)

    total = 0
    while limit is None or total < limit:
        size = batch_size if limit is None else min(batch_size, limit - total)
        deleted = db.write(batch, size)
        total += deleted
        if deleted < size:
            break
    return total


def metrics_prune(db: Database, cutoff: float, width: int, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        return db.conn.execute(db.q["metrics_prune"], {"cutoff": cutoff, "width": width}).rowcount

    return db.write(run)


def unique_keys_tidy(db: Database, before: float, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        return db.conn.execute(db.q["unique_keys_tidy"], {"before": before}).rowcount

    return db.write(run)


def metrics_rollup(db: Database, cutoff: float, now: float, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        params = {"cutoff": cutoff, "now": now}
        db.conn.execute(db.q["metrics_rollup"], params)
        return db.conn.execute(db.q["metrics_rollup_delete"], params).rowcount

    return db.write(run)

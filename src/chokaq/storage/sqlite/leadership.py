"""Leadership on SQLite: leases in the ``leadership`` table of the shared file.

Every worker process on the host shares the file, so the lease is what elects one of them,
exactly as on PostgreSQL: taken and renewed by compare-and-set on SQLite's own clock, inside a
write transaction (``BEGIN IMMEDIATE``, so claims are serialized). Owns these operations and
the fence (``check_fence``) that maintenance calls first inside their own write
transactions. Runs on the connection's thread; arguments arrive checked; no SQL text here.
"""

from __future__ import annotations

from ...errors import LeadershipLostError
from ...models import LeaderTerm
from .connection import Database, SQLiteCore
from .rows import from_ts

__all__ = [
    "SQLiteLeadership",
    "check_fence",
    "claim",
    "get",
    "release",
]


def _term(row: tuple[object, ...] | None) -> LeaderTerm | None:
    if row is None:
        return None
    name, holder, epoch, expires_at = row
    expires = from_ts(float(expires_at))  # type: ignore[arg-type]
    assert expires is not None
    return LeaderTerm(str(name), str(holder), int(epoch), expires)  # type: ignore[call-overload]


def claim(
    db: Database, name: str, holder: str, lease_seconds: float, epoch: int | None
) -> LeaderTerm | None:
    params = {"name": name, "holder": holder, "lease": lease_seconds, "epoch": epoch}
    return db.write(lambda: _term(db.conn.execute(db.q["leadership_claim"], params).fetchone()))


def release(db: Database, term: LeaderTerm) -> bool:
    params = {"name": term.name, "holder": term.holder, "epoch": term.epoch}
    return db.write(lambda: db.conn.execute(db.q["leadership_release"], params).rowcount > 0)


def get(db: Database, name: str) -> LeaderTerm | None:
    return _term(db.conn.execute(db.q["leadership_get"], {"name": name}).fetchone())


def check_fence(db: Database, fence: LeaderTerm | None) -> None:
    """Inside a write transaction: raise ``LeadershipLostError`` unless ``fence`` (when given)
    is the current term."""
    if fence is None:
        return
    params = {"name": fence.name, "holder": fence.holder, "epoch": fence.epoch}
    if db.conn.execute(db.q["leadership_fence"], params).fetchone() is None:
        raise LeadershipLostError(fence)


class SQLiteLeadership(SQLiteCore):
    """Leadership leases on the file's clock."""

    async def leadership_claim(
        self, name: str, holder: str, lease_seconds: float, epoch: int | None
    ) -> LeaderTerm | None:
        return await self._db.call(claim, name, holder, lease_seconds, epoch)

    async def leadership_release(self, term: LeaderTerm) -> bool:
        return await self._db.call(release, term)

    async def leadership_get(self, name: str) -> LeaderTerm | None:
        return await self._db.call(get, name)

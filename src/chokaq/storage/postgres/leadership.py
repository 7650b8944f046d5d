"""Leadership on PostgreSQL: leases in the ``leadership`` table, on the database's clock.

Owns taking, renewing, releasing and reading a role's term, and the fence every write made
under leadership opens its transaction with (``PostgresCore._fence``, shared with
maintenance). Arguments arrive checked; this module holds no SQL text.
"""

from __future__ import annotations

from ...models import LeaderTerm
from .connection import PostgresCore

__all__ = ["PostgresLeadership"]


class PostgresLeadership(PostgresCore):
    """The leadership operations of the driver contract."""

    async def leadership_claim(
        self, name: str, holder: str, lease_seconds: float, epoch: int | None
    ) -> LeaderTerm | None:
        row = await self._one(
            "leadership_claim",
            {"name": name, "holder": holder, "lease": lease_seconds, "epoch": epoch},
        )
        return None if row is None else LeaderTerm(row[0], row[1], int(row[2]), row[3])

    async def leadership_release(self, term: LeaderTerm) -> bool:
        params = {"name": term.name, "holder": term.holder, "epoch": term.epoch}
        return await self._count("leadership_release", params) > 0

    async def leadership_get(self, name: str) -> LeaderTerm | None:
        row = await self._one("leadership_get", {"name": name})
        return None if row is None else LeaderTerm(row[0], row[1], int(row[2]), row[3])

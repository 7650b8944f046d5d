"""Leadership on PostgreSQL while the database is away: a failed reconnect is a storage error
(maintenance logs a failed pass and tries again), not a crash of the maintenance side task.

Found by the torture run: ``PgLeadership.try_acquire`` let psycopg's ``OperationalError``
escape, so every maintenance pass during an outage killed its supervised task (event 1003).
"""

from __future__ import annotations

import psycopg
import pytest

from chokaq.errors import StorageUnavailableError
from chokaq.storage.postgres.notify import PgLeadership


async def test_leadership_reconnect_failure_is_translated() -> None:
    async def refuse() -> psycopg.AsyncConnection[object]:
        raise psycopg.OperationalError("connection refused")

    leadership = PgLeadership(refuse, key="k", try_lock="select 1", unlock="select 1", ping="x")
    with pytest.raises(StorageUnavailableError, match="connection refused"):
        await leadership.try_acquire()

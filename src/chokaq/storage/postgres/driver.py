"""The PostgreSQL driver: the adapter class the storage seam calls, for PostgreSQL 14+.

Owns assembling the per-area mixins (``jobs``, ``claims``, ``dlq``, ``bulk``, ``queues``,
``schedules``, ``ratelimits``, ``workflows``, ``reads``, ``maintenance``, ``leadership``,
``durable``, ``streams``, all on the pool and queries of ``connection``) into one ``Driver``,
declaring what PostgreSQL can do (``Capabilities``) and handing out its notifier
(LISTEN/NOTIFY). It must not check arguments or hold SQL text.
"""

from __future__ import annotations

from ...models import Capabilities
from ..driver import Notifier
from .batches import PostgresBatches
from .bulk import PostgresBulk
from .claims import PostgresClaims
from .dlq import PostgresDlq
from .durable import PostgresDurable
from .jobs import PostgresJobs
from .leadership import PostgresLeadership
from .maintenance import PostgresMaintenance
from .notify import PgNotifier
from .queues import PostgresQueues
from .ratelimits import PostgresLimits
from .reads import PostgresReads
from .schedules import PostgresSchedules
from .streams import PostgresStreams
from .workflows import PostgresWorkflows

__all__ = ["PostgresDriver"]


class PostgresDriver(
    PostgresSchedules,
    PostgresBulk,
    PostgresJobs,
    PostgresClaims,
    PostgresDlq,
    PostgresQueues,
    PostgresLimits,
    PostgresWorkflows,
    PostgresReads,
    PostgresMaintenance,
    PostgresLeadership,
    PostgresDurable,
    PostgresStreams,
    PostgresBatches,
):
    """Every storage operation on PostgreSQL (psycopg 3, async, pooled)."""

    capabilities = Capabilities(
        name="postgresql",
        caller_transactions=True,
        migrates_on_open=False,
        row_versions=True,
    )

    def notifier(self) -> Notifier:
        return PgNotifier(self._connect, self._q["listen"])

"""The SQLite driver: the adapter class the storage seam calls, for one file on one host.

Owns assembling the per-area mixins (``jobs``, ``claims``, ``dlq``, ``bulk``, ``queues``,
``schedules``, ``ratelimits``, ``workflows``, ``reads``, ``maintenance``, ``leadership``,
``durable``, ``streams``, all on the file, thread and statements of ``connection``) into one
``Driver``, declaring what SQLite can do (``Capabilities``) and handing out its notifier (a
watched file). Each mixin hops onto the connection's thread (``Database.call``), converts times
to the stored Unix seconds and sends the in-process wake-ups after a commit (``notify``). It
must not check arguments (the seam did) or hold SQL. It is imported only when the URL is
``sqlite:``.
"""

from __future__ import annotations

from ...models import Capabilities
from ..driver import Notifier
from .batches import SQLiteBatches
from .bulk import SQLiteBulk
from .claims import SQLiteClaims
from .dlq import SQLiteDlq
from .durable import SQLiteDurable
from .jobs import SQLiteJobs
from .leadership import SQLiteLeadership
from .maintenance import SQLiteMaintenance
from .notify import FileNotifier
from .queues import SQLiteQueues
from .ratelimits import SQLiteLimits
from .reads import SQLiteReads
from .schedules import SQLiteSchedules
from .streams import SQLiteStreams
from .workflows import SQLiteWorkflows

__all__ = ["SQLiteDriver"]


class SQLiteDriver(
    SQLiteSchedules,
    SQLiteBulk,
    SQLiteJobs,
    SQLiteClaims,
    SQLiteDlq,
    SQLiteQueues,
    SQLiteLimits,
    SQLiteWorkflows,
    SQLiteReads,
    SQLiteMaintenance,
    SQLiteLeadership,
    SQLiteDurable,
    SQLiteStreams,
    SQLiteBatches,
):
    """Every storage operation on one SQLite file (WAL mode), safe for several processes."""

    capabilities = Capabilities(
        name="sqlite",
        caller_transactions=False,
        migrates_on_open=True,
        row_versions=False,
    )

    def notifier(self) -> Notifier:
        return FileNotifier(self._db.key)

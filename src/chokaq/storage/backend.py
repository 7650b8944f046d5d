"""The storage seam: every domain operation, checked once and observed once, for any database.

The worker runtime, the client API, the CLI and The Deck talk to the database only through
``Backend``; none of them holds SQL. Each operation checks and normalises its arguments with the
rules of ``chokaq.storage.checks`` and ``chokaq.limits`` (the same rules for every database, so
both refuse the same input with the same ``ValidationError``), then calls one method of its
``Driver`` (``chokaq.storage.driver``), and the call is observed exactly once (timings, errors;
driver errors translated into our tree). A driver never calls the seam back, so one public call
is one observation. What a database cannot do is declared in its ``Capabilities`` and refused
here. This module must not import a database driver or hold SQL.

``Backend`` is assembled from one group of operations per storage area, each in the module of
that area's name (the same names as each driver's modules and SQL files; see
``docs/architecture.md``): ``jobs`` (enqueue, cancel, edit, advance), ``claims`` (the worker
path: fetch, start, heartbeat, progress, release, finalize), ``dlq``, ``bulk`` (actions by
filter, run-now), ``queues`` (queues and workers), ``schedules``, ``ratelimits``, ``workflows``
(outcomes, relatives, members), ``reads`` (what the faces list, count and chart),
``maintenance`` (rescue, retention, metric roll-ups, tidying), ``leadership``, ``durable``
(the steps, sleeps, waits and events of durable jobs) and ``streams`` (the items a job
emits). This module
holds the lifecycle and the assembly. Every group follows the rules below.

Semantics shared by all backends (the conformance suite in ``tests/storage`` checks each):

* A transition is atomic (one statement or one short transaction) and reports whether it applied.
  "Not applied" is a value (``False``, ``None``, an id missing from a result), never an exception.
* Lease-guarded transitions match ``id``, ``worker_id`` and ``lease_token`` and the expected status;
  a stale lease changes nothing.
* Succeed and fail moves update ``stats_summary`` (lifetime counters, never decremented by
  anything) and ``metric_buckets`` (1-second buckets) in the same transaction.
* ``now`` (aware, any zone; stored in UTC) defaults to the database's clock (PostgreSQL) or the
  process clock (SQLite). Every time lies between 1970-01-01 and 9999-01-01 UTC.
"""

from __future__ import annotations

import contextlib

from ..errors import ChokaqError
from ..limits import check_name
from ..logs import Event, log_event
from ..models import Capabilities
from . import checks
from .batches import BatchOperations
from .bulk import BulkOperations
from .claims import ClaimOperations
from .dlq import DlqOperations
from .driver import Driver, Notifier, StorageSettings
from .durable import DurableOperations
from .group import OperationGroup
from .jobs import JobOperations
from .leadership import DEFAULT_LEASE_SECONDS, Leadership, LeadershipOperations
from .maintenance import MaintenanceOperations
from .observed import Observer, observed_operations, operation, unobserved
from .queues import QueueOperations
from .ratelimits import LimitOperations
from .reads import ReadOperations
from .schedules import ScheduleOperations
from .streams import StreamOperations
from .workflows import WorkflowOperations

__all__ = ["Backend", "Observer"]


class Backend(
    JobOperations,
    BatchOperations,  # before ClaimOperations: it builds on it
    ClaimOperations,
    DlqOperations,
    BulkOperations,
    QueueOperations,
    ScheduleOperations,
    LimitOperations,
    WorkflowOperations,
    ReadOperations,
    MaintenanceOperations,
    LeadershipOperations,
    DurableOperations,
    StreamOperations,
    OperationGroup,
):
    """Every storage operation, for the database its ``driver`` adapts.

    Created by ``chokaq.storage.create_backend(url)``; open it with ``await backend.open()``
    before use and close it with ``await backend.close()``. ``capabilities`` says what this
    database can do; an operation it cannot do raises ``ValidationError`` naming the argument.
    """

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.settings: StorageSettings = driver.settings
        self.capabilities: Capabilities = driver.capabilities
        self._observers: list[Observer] = []
        self._limits = driver.settings.limits
        self._max_batch = driver.settings.limits.max_batch

    # -- instrumentation --------------------------------------------------------------------

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(operation, seconds, error)`` after every storage operation."""
        self._observers.append(observer)

    def _observe(self, operation: str, seconds: float, error: BaseException | None) -> None:
        for observer in self._observers:
            with contextlib.suppress(Exception):  # an observer must never break storage
                observer(operation, seconds, error)

    @classmethod
    def operations(cls) -> list[str]:
        """The names of every observed storage operation."""
        return observed_operations(cls)

    # -- lifecycle --------------------------------------------------------------------------

    @operation
    async def open(self) -> None:
        """Connect (create pools, open files). Does not migrate."""
        await self.driver.open()

    @operation
    async def close(self) -> None:
        """Release every connection; safe to call twice."""
        await self.driver.close()

    @operation
    async def migrate(self, *, via_migrations: bool = False) -> list[int]:
        """Bring the schema up to date under a lock (safe when two processes race); returns the
        versions applied by this call (empty when already current).

        The numbered migrations are the only schema source. An empty database gets all of them
        in one transaction (a fresh install); an existing one gets the pending ones, each in
        its own transaction. ``via_migrations=True`` takes the one-per-transaction path even
        on an empty database.

        Logs ``MIGRATION_STARTED`` (from and to version) when the schema is behind,
        ``MIGRATION_COMPLETED`` with the versions applied, or ``MIGRATION_FAILED`` with the
        error, for every caller alike (``App.open``, ``chokaq migrate``)."""
        versions = {
            "from_version": await self.driver.schema_version(),
            "to_version": self.driver.latest_version(),
        }
        if versions["from_version"] < versions["to_version"]:
            log_event(Event.MIGRATION_STARTED, "migrating the schema", **versions)
        try:
            applied = await self.driver.migrate(bool(via_migrations))
        except Exception as exc:
            error = exc if isinstance(exc, ChokaqError) else self.driver.translate(exc)
            log_event(
                Event.MIGRATION_FAILED,
                "schema migration failed",
                level=40,
                error_type=type(error).__name__,
                error=str(error),
                **versions,
            )
            if error is exc:
                raise
            raise error from exc
        if applied:
            log_event(Event.MIGRATION_COMPLETED, "schema migrated", versions=applied)
        return applied

    @operation
    async def schema_version(self) -> int:
        """The highest applied migration version (0 when the schema does not exist)."""
        return await self.driver.schema_version()

    def latest_version(self) -> int:
        """The highest migration version this code ships."""
        return self.driver.latest_version()

    def notifier(self) -> Notifier:
        """A new notifier for one worker (see ``Notifier``)."""
        return self.driver.notifier()

    def leadership(
        self, name: str, *, holder: str, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> Leadership:
        """A handle on the role ``name`` (``"maintenance"``; later ``"schedules"``) for
        ``holder`` (a worker id), leased ``lease_seconds`` at a time (see ``Leadership``)."""
        return Leadership(
            self,
            name=check_name("name", name),
            holder=check_name("holder", holder),
            lease_seconds=checks.lease_seconds(lease_seconds),
        )


# Every public coroutine above is an observed operation; a new one without ``@operation``
# would escape the instrumentation point, so say so at import time.
_unobserved = unobserved(Backend)
assert not _unobserved, f"storage operations without @operation: {_unobserved}"

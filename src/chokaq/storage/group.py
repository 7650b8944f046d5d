"""What every group of the storage seam's operations shares: ``Backend`` sets these attributes
when it is built, and each group (one per storage area: ``jobs``, ``claims``, ``dlq``, ``bulk``,
``queues``, ``schedules``, ``ratelimits``, ``workflows``, ``reads``, ``maintenance``,
``leadership``) reads them. No behaviour of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..limits import Limits
    from ..models import Capabilities
    from .driver import Driver, StorageSettings

__all__ = ["OperationGroup"]


class OperationGroup:
    """The shared state of the seam's operation groups (set by ``Backend.__init__``)."""

    driver: Driver
    settings: StorageSettings
    capabilities: Capabilities
    _limits: Limits
    _max_batch: int

"""The storage package: the seam (``Backend``) over one driver per database. Holds no SQL itself.

``create_backend("sqlite:///jobs.db")`` or ``create_backend("postgresql://user@host/db")`` returns
an unopened ``Backend``; call ``await backend.open()``. The map: ``backend.py`` is the seam (each
operation checked by ``checks.py`` and observed once), ``driver.py`` the contract a database
implements, ``leadership.py`` the handle on a leased role, and ``postgres/`` and ``sqlite/`` the
two drivers, laid out alike. The storage areas (``jobs``, ``claims``, ``dlq``, ``bulk``,
``queues``, ``schedules``, ``ratelimits``, ``workflows``, ``reads``, ``maintenance``,
``leadership``) each name one group module of the seam here, one mixin module in each driver and
one ``sql/<area>.sql`` file in each driver; ``driver.py``, ``connection.py``, ``rows.py``,
``notify.py`` and ``migrations/`` are each driver's support (see ``docs/architecture.md``).
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError
from ..limits import DEFAULT_LIMITS, Limits
from .backend import Backend, Observer
from .checks import UNSET
from .driver import Driver, Notifier, StorageSettings
from .leadership import Leadership

__all__ = [
    "UNSET",
    "Backend",
    "Driver",
    "Leadership",
    "Notifier",
    "Observer",
    "StorageSettings",
    "check_url",
    "create_backend",
]

SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")


def check_url(field: str, value: object) -> str:
    """A database URL as given (``field`` names where it came from: ``url``,
    ``CHOKAQ_DATABASE_URL``, ``--database``): text that is not empty or blank, else
    ``ConfigurationError`` naming ``field``. An empty URL is never "the default": that made
    ``App()`` and ``chokaq enqueue`` write to a new ``./chokaq.db`` no worker reads. Its scheme
    is ``create_backend``'s to check."""
    if not isinstance(value, str):
        raise ConfigurationError(
            f"{field}: must be a database URL (text), not {type(value).__name__}"
        )
    if not value.strip():
        raise ConfigurationError(
            f"{field}: must not be {'empty' if not value else 'blank'}: give a database URL "
            "(sqlite:///path or postgresql://user@host/db)"
        )
    return value


def create_backend(
    url: str, *, schema: str = "chokaq", limits: Limits = DEFAULT_LIMITS, **options: object
) -> Backend:
    """The backend for ``url`` (``sqlite:///path`` or ``postgresql://...``), not yet opened.

    ``options`` are further ``StorageSettings`` fields (``pool_max_size`` and so on).
    Raises ``ConfigurationError`` for an empty URL, an unknown scheme or a bad schema name.
    """
    check_url("url", url)
    if not isinstance(schema, str) or not SCHEMA_NAME.match(schema):
        raise ConfigurationError(f"schema: must match {SCHEMA_NAME.pattern} (got {schema!r})")
    settings = StorageSettings(url=url, schema=schema, limits=limits, **options)  # type: ignore[arg-type]
    driver: Driver
    if url.startswith("sqlite:"):
        from .sqlite.driver import SQLiteDriver

        driver = SQLiteDriver(settings)
    elif url.startswith(("postgresql:", "postgres:")):
        from .postgres.driver import PostgresDriver

        driver = PostgresDriver(settings)
    else:
        raise ConfigurationError(
            f"database url: expected sqlite:///path or postgresql://..., got {url.split(':')[0]!r}"
        )
    return Backend(driver)

"""The storage package: picks a backend for a database URL. Holds no SQL itself.

``open_backend("sqlite:///jobs.db")`` or ``open_backend("postgresql://user@host/db")`` returns an
unopened ``Backend``; call ``await backend.open()``.
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError
from ..limits import DEFAULT_LIMITS, Limits
from .base import UNSET, Backend, Leadership, Notifier, StorageSettings

__all__ = ["UNSET", "Backend", "Leadership", "Notifier", "StorageSettings", "create_backend"]

SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")


def create_backend(
    url: str, *, schema: str = "chokaq", limits: Limits = DEFAULT_LIMITS, **options: object
) -> Backend:
    """The backend for ``url`` (``sqlite:///path`` or ``postgresql://...``), not yet opened.

    ``options`` are further ``StorageSettings`` fields (``pool_max_size`` and so on).
    Raises ``ConfigurationError`` for an unknown scheme or a bad schema name.
    """
    if not SCHEMA_NAME.match(schema):
        raise ConfigurationError(f"schema: must match {SCHEMA_NAME.pattern} (got {schema!r})")
    settings = StorageSettings(url=url, schema=schema, limits=limits, **options)  # type: ignore[arg-type]
    if url.startswith("sqlite:"):
        from .sqlite.backend import SQLiteBackend

        return SQLiteBackend(settings)
    if url.startswith(("postgresql:", "postgres:")):
        from .postgres.backend import PostgresBackend

        return PostgresBackend(settings)
    raise ConfigurationError(
        f"database url: expected sqlite:///path or postgresql://..., got {url.split(':')[0]!r}"
    )

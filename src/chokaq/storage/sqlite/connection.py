"""The SQLite connection: one file, one dedicated thread, short transactions, the loaded SQL.

Owns opening the file (PRAGMAs, version check), the single-thread executor every statement runs
on, the statement text with the table prefix substituted, write transactions (``BEGIN
IMMEDIATE`` with a bounded retry on a locked file), the migration ledger (``sql/connection.sql``)
and ``SQLiteCore``, the base of every area's mixin: the file it opens, translating ``sqlite3``
errors into our tree, and the wake-ups sent after a commit. It knows nothing of jobs: the
operations live in one module per storage area (``jobs`` to ``leadership``; see ``driver``).
"""

from __future__ import annotations

import asyncio
import functools
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...errors import (
    ChokaqError,
    ConfigurationError,
    SchemaError,
    StorageError,
    StorageUnavailableError,
)
from ..driver import Driver, StorageSettings
from ..families import error_family
from ..sqlfile import Migration, load_migrations, load_queries
from .notify import broadcast_done, broadcast_jobs

__all__ = ["Database", "SQLiteCore", "Told", "database_path", "quote_identifier"]

T = TypeVar("T")

_PACKAGE = "chokaq.storage.sqlite"
_TABLE = re.compile(r"\{p\}([A-Za-z_][A-Za-z0-9_]*)")
_MIN_VERSION = (3, 35, 0)  # RETURNING
_LOCK_RETRIES = 6


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQLite identifier (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def database_path(url: str) -> str:
    """The file of a ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URL."""
    if not url.startswith("sqlite:///"):
        raise ConfigurationError(f"database url: expected sqlite:///path, got {url!r}")
    path = url[len("sqlite:///") :].split("?", 1)[0]
    if not path:
        raise ConfigurationError("database url: sqlite:/// needs a file path")
    return path


def _prefixed(sql: str, prefix: str) -> str:
    return _TABLE.sub(lambda m: quote_identifier(prefix + m.group(1)), sql)


def _statements(script: str) -> Iterable[str]:
    """Split a script into complete statements (executescript would commit our transaction)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip() and sqlite3.complete_statement(buffer + ";"):
        yield buffer


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "database is locked" in text or "database is busy" in text


@dataclass(frozen=True, slots=True)
class _Loaded:
    queries: dict[str, str]
    migrations: list[Migration]


@functools.lru_cache(maxsize=16)
def _load(prefix: str) -> _Loaded:
    """Every statement with the table prefix substituted, once per prefix."""
    queries = {k: _prefixed(v, prefix) for k, v in load_queries(_PACKAGE).items()}
    migrations = [
        Migration(m.version, m.name, _prefixed(m.sql, prefix)) for m in load_migrations(_PACKAGE)
    ]
    return _Loaded(queries, migrations)


class Database:
    """The connection to one SQLite file, used only from its own thread.

    ``call`` hops onto that thread once per operation; the operation then runs every statement
    it needs there (a batch is one hop, not one per row).
    """

    def __init__(
        self, *, path: str, prefix: str, busy_timeout_seconds: float, create_missing: bool = True
    ) -> None:
        self.path = path
        self.create_missing = create_missing
        self.key = path if path == ":memory:" else str(Path(path).resolve())
        self.prefix = prefix
        self.busy_timeout_seconds = busy_timeout_seconds
        loaded = _load(prefix)
        self.q = loaded.queries
        self.migrations = loaded.migrations
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    # -- lifecycle --------------------------------------------------------------------------

    async def open(self) -> None:
        if sqlite3.sqlite_version_info < _MIN_VERSION:
            raise ConfigurationError(
                f"SQLite {sqlite3.sqlite_version} is too old: chokaq needs 3.35 or newer "
                "(for RETURNING)"
            )
        if self._executor is not None:
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chokaq-sqlite")
        try:
            await self.call(Database._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise

    def _connect(self) -> None:
        if self.path != ":memory:":
            self._check_path()
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout_seconds, isolation_level=None
            )
        except sqlite3.OperationalError as exc:  # "unable to open database file" names nothing
            raise StorageUnavailableError(
                f"cannot open the SQLite database {self.key}: {exc}"
            ) from exc
        try:
            # sqlite3.connect(timeout=...) already installs the busy timeout.
            for name in ("pragma_wal", "pragma_synchronous", "pragma_foreign_keys"):
                conn.execute(self.q[name])
        except BaseException:
            conn.close()
            raise
        conn.row_factory = sqlite3.Row
        # The DLQ's error_family column is filled by this function in SQL (migration 008).
        conn.create_function("chokaq_error_family", 1, error_family, deterministic=True)
        self._conn = conn

    def _check_path(self) -> None:
        """Name the path when the file cannot be opened for a reason we can see."""
        path = Path(self.path)
        if not path.parent.is_dir():
            raise ConfigurationError(
                f"SQLite database {self.key}: the directory {path.parent.resolve()} does not "
                "exist (create it, or fix the sqlite:/// path)"
            )
        if not self.create_missing and not path.exists():
            raise ConfigurationError(
                f"SQLite database {self.key} does not exist (nothing to read; give the right "
                "--database or --app, or run `chokaq migrate` to create it)"
            )

    async def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
        finally:
            executor.shutdown(wait=True)

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError("the SQLite store is not open: call await backend.open()")
        return self._conn

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(self, *args)`` on the connection's thread."""
        if self._executor is None:
            raise StorageError("the SQLite store is not open: call await backend.open()")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, self, *args))

    # -- transactions (on the connection's thread) ------------------------------------------

    def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` inside ``BEGIN IMMEDIATE``; retried when the file stays locked.

        ``BEGIN IMMEDIATE`` takes the write lock up front, so two processes never deadlock on a
        read-to-write upgrade; busy_timeout makes each attempt wait, the retry covers the rare
        case where the wait runs out under a burst.
        """
        return self._transaction("begin_write", fn, args)

    def exclusive(self, fn: Callable[..., T], *args: Any) -> T:
        return self._transaction("begin_exclusive", fn, args)

    def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` in a read transaction (one consistent snapshot)."""
        conn = self.conn
        conn.execute(self.q["begin_read"])
        try:
            return fn(*args)
        finally:
            conn.execute(self.q["rollback"])

    def _transaction(self, begin: str, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        conn = self.conn
        for attempt in range(_LOCK_RETRIES):
            try:
                conn.execute(self.q[begin])
                try:
                    result = fn(*args)
                    conn.execute(self.q["commit"])
                    return result
                except BaseException:
                    if conn.in_transaction:
                        conn.execute(self.q["rollback"])
                    raise
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc) or attempt == _LOCK_RETRIES - 1:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    def script(self, text: str) -> None:
        """Execute every statement of ``text`` inside the current transaction."""
        for statement in _statements(text):
            self.conn.execute(statement)

    # -- migrations (on the connection's thread) --------------------------------------------

    def migrate(self, via_migrations: bool) -> list[int]:
        return self.exclusive(self._migrate, via_migrations)

    def _migrate(self, via_migrations: bool) -> list[int]:
        conn, q = self.conn, self.q
        conn.execute(q["migrate_ledger"])
        done = {row[0] for row in conn.execute(q["migrate_applied"])}
        now = time.time()
        applied: list[int] = []
        # The whole migration runs in one exclusive transaction, so a fresh install and a
        # walk through the migrations (via_migrations) are the same statements in the same
        # order on SQLite.
        for migration in self.migrations:
            if migration.version in done:
                continue
            self.script(migration.sql)
            conn.execute(
                q["migrate_record"],
                {"version": migration.version, "name": migration.name, "now": now},
            )
            applied.append(migration.version)
        return applied

    def schema_version(self) -> int:
        conn = self.conn
        exists = conn.execute(
            self.q["migrate_has_ledger"], {"name": self.prefix + "schema_migrations"}
        ).fetchone()[0]
        if not exists:
            return 0
        versions = [row[0] for row in conn.execute(self.q["migrate_applied"])]
        return max(versions, default=0)


class Told(Protocol):
    """What a transaction's moves leave to tell after the commit (``jobs.Moved``)."""

    woken: set[str]
    waited: list[str]


class SQLiteCore(Driver):
    """The file, its thread and the loaded statements shared by every SQLite area's mixin, and
    the wake-ups sent after a commit."""

    def __init__(self, settings: StorageSettings) -> None:
        super().__init__(settings)
        self._db = Database(
            path=database_path(settings.url),
            prefix=f"{settings.schema}_",
            busy_timeout_seconds=settings.busy_timeout_seconds,
            create_missing=settings.create_missing,
        )
        if self._db.key == ":memory:":
            self.capabilities = replace(type(self).capabilities, in_process=True)

    def translate(self, exc: Exception) -> ChokaqError:
        message = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc)
            if "database is locked" in text or "database is busy" in text:
                return StorageUnavailableError(message)
            if "no such table" in text:
                return SchemaError(f"{message} (run `chokaq migrate`)")
            if "unable to open" in text:
                return StorageUnavailableError(message)
        return StorageError(message)

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def migrate(self, via_migrations: bool) -> list[int]:
        return await self._db.call(Database.migrate, via_migrations)

    async def schema_version(self) -> int:
        return await self._db.call(Database.schema_version)

    def latest_version(self) -> int:
        return max((m.version for m in self._db.migrations), default=0)

    def _told(self, moved: Told) -> None:
        """After a commit: wake the workers of queues that got released children, and tell
        the waiters of jobs that left hot."""
        if moved.woken:
            broadcast_jobs(self._db.key, moved.woken)
        if moved.waited:
            broadcast_done(self._db.key, moved.waited)

"""Render a migrated store's schema as the lines of ``schema/<backend>.txt``, read from the catalog.

The description files are written by hand from the migrations and reviewed; this module reads
what the database actually holds (PostgreSQL: ``pg_catalog``; SQLite: ``sqlite_master`` and the
table/index pragmas) and prints it in the same format, so that a test can compare the two line by
line. It must never read the migration files: the point is two independent accounts of one schema.

Table names are unprefixed (SQLite's ``<schema>_jobs_hot`` and PostgreSQL's ``<schema>.jobs_hot``
both print as ``jobs_hot``). Anything in the schema the renderer has no words for (a view, a
trigger, a function, a sequence) still prints a line, so that it cannot slip past the comparison.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

DESCRIPTIONS = Path(__file__).parent / "schema"


def _described(backend_name: str) -> list[str]:
    """The reviewed description for ``backend_name``, without its comments and blank lines."""
    text = (DESCRIPTIONS / f"{backend_name}.txt").read_text()
    return [
        line.rstrip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


class Catalog(Protocol):
    def description(self) -> list[str]:
        """The lines this store must render, from its backend's description file."""
        ...

    def render(self) -> list[str]:
        """The store's schema as it is, in the description's format."""
        ...

    def execute(self, template: str) -> None:
        """Run raw SQL on the store: ``{q[jobs_hot]}`` is a relation's qualified name there,
        ``{i[jobs_hot_fetch]}`` the name a new index is created under."""
        ...

    def drop(self) -> None:
        """Remove every relation of this schema from the store."""
        ...


def catalog(backend_name: str, url: str, schema: str) -> Catalog:
    """The catalog reader for a store, picked by the backend's declared name."""
    readers: dict[str, type[SQLiteCatalog] | type[PostgresCatalog]] = {
        "sqlite": SQLiteCatalog,
        "postgresql": PostgresCatalog,
    }
    return readers[backend_name](url, schema)


@dataclass
class _Names:
    """``names[relation]`` in a ``str.format`` template: the relation as this store spells it."""

    spell: Callable[[str], str]

    def __getitem__(self, relation: str) -> str:
        return self.spell(relation)


def _column(name: str, type_: str, notnull: bool, default: str | None) -> str:
    line = f"  column {name} {type_} {'not null' if notnull else 'null'}"
    return line if default is None else f"{line} default {default}"


def _row(values: tuple[Any, ...]) -> str:
    return "  row " + ", ".join(str(v) for v in values)


# -- SQLite ------------------------------------------------------------------------------------


def _balanced(text: str, start: int) -> str:
    """The text inside the parenthesis that opens at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i]
    raise ValueError(f"unbalanced parenthesis in {text!r}")


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class SQLiteCatalog:
    url: str
    schema: str

    @property
    def prefix(self) -> str:
        return f"{self.schema}_"

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)

    def description(self) -> list[str]:
        return _described("sqlite")

    def execute(self, template: str) -> None:
        names = _Names(lambda relation: _quote(self.prefix + relation))
        conn = self._connect()
        try:
            conn.executescript(template.format(q=names, i=names))
        finally:
            conn.close()

    def drop(self) -> None:
        conn = self._connect()
        try:
            tables = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND substr(name, 1, length(?)) = ?",
                (self.prefix, self.prefix),
            ).fetchall()
            for (table,) in tables:
                conn.execute(f"DROP TABLE {_quote(table)}")
        finally:
            conn.close()

    def render(self) -> list[str]:
        conn = self._connect()
        try:
            objects = conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master"
                " WHERE substr(tbl_name, 1, length(?)) = ? ORDER BY tbl_name, type, name",
                (self.prefix, self.prefix),
            ).fetchall()
            lines: list[str] = []
            for kind, name, _, sql in objects:
                if kind == "table":
                    lines += self._table(conn, name, sql)
            for kind, name, table, _ in objects:
                if kind not in {"table", "index"}:
                    lines.append(f"{kind} {self._bare(name)} on {self._bare(table)}")
            return lines
        finally:
            conn.close()

    def _bare(self, name: str) -> str:
        return name.removeprefix(self.prefix)

    def _table(self, conn: sqlite3.Connection, table: str, sql: str) -> list[str]:
        lines = [f"table {self._bare(table)}"]
        flags = conn.execute(
            "SELECT wr, strict FROM pragma_table_list WHERE name = ?", (table,)
        ).fetchone()
        lines += [
            f"  option {o}" for o, on in zip(("without rowid", "strict"), flags, strict=True) if on
        ]
        primary: list[tuple[int, str]] = []
        for _, col, type_, notnull, default, pk, hidden in conn.execute(
            "SELECT * FROM pragma_table_xinfo(?) ORDER BY cid", (table,)
        ):
            line = _column(col, type_, bool(notnull), default)
            lines.append(line if not hidden else f"{line} hidden {hidden}")
            if pk:
                primary.append((pk, col))
        if primary:
            lines.append(f"  primary key ({', '.join(c for _, c in sorted(primary))})")
        # Check constraints are kept only in the CREATE TABLE text; read them from there.
        lines += [
            f"  check ({_squash(_balanced(sql, m.end() - 1))})"
            for m in re.finditer(r"\bCHECK\s*\(", sql, re.I)
        ]
        lines += self._indexes(conn, table)
        lines += self._rows(conn, table, [c for _, c in sorted(primary)])
        return lines

    def _indexes(self, conn: sqlite3.Connection, table: str) -> list[str]:
        lines = []
        for _, index, unique, origin, partial in sorted(
            conn.execute("SELECT * FROM pragma_index_list(?)", (table,)), key=lambda r: r[1]
        ):
            if origin == "pk":
                continue  # the "primary key" line already says it
            (sql,) = conn.execute(
                "SELECT coalesce(sql, '') FROM sqlite_master WHERE name = ?", (index,)
            ).fetchone()
            on = re.search(r"\bON\s+\S+?\s*\(", sql, re.I)
            written = _split_top_level(_balanced(sql, on.end() - 1)) if on else []
            keys = []
            for seqno, cid, col, desc, coll, key in conn.execute(
                "SELECT * FROM pragma_index_xinfo(?) ORDER BY seqno", (index,)
            ):
                if not key:
                    continue
                item = col if cid >= 0 else (written[seqno] if cid == -2 else "rowid")
                if cid == -2:
                    keys.append(_squash(item))  # an expression: as written, order included
                    continue
                keys.append(
                    item
                    + (" DESC" if desc else "")
                    + ("" if coll == "BINARY" else f" COLLATE {coll}")
                )
            line = f"  {'unique ' if unique else ''}index {self._bare(index)} ({', '.join(keys)})"
            if origin == "u":
                line += " from a UNIQUE constraint"
            if partial:
                where = re.search(r"\)\s*WHERE\s+(.*)$", sql, re.I | re.S)
                line += f" WHERE {_squash(where.group(1)) if where else '?'}"
            lines.append(line)
        return lines

    def _rows(self, conn: sqlite3.Connection, table: str, key: list[str]) -> list[str]:
        # Identifiers cannot be bound, so they are quoted here (the names come from the catalog).
        if not key:
            (count,) = conn.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()
            return [f"  rows {count}"] if count else []
        columns = ", ".join(_quote(c) for c in key)
        query = f"SELECT {columns} FROM {_quote(table)} ORDER BY {columns}"
        return [_row(r) for r in conn.execute(query)]


# -- PostgreSQL --------------------------------------------------------------------------------

_PG_TABLES = """
SELECT c.oid, c.relname, c.relkind, c.relpersistence, coalesce(c.reloptions, '{}')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %s
 ORDER BY c.relname
"""

_PG_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attcompression, a.attidentity, a.attgenerated
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
"""

_PG_CONSTRAINTS = """
SELECT conname, pg_get_constraintdef(oid), contype, conkey
  FROM pg_constraint WHERE conrelid = %s ORDER BY conname
"""

# Indexes that back a constraint are said by the constraint's line. The table's indexes by its
# oid, with the definition the pg_indexes view would show (pg_get_indexdef): the view joined by
# schema and table name took seconds per table on a server holding many test schemas (its generic
# plan, once psycopg prepares it, read every index of the server).
_PG_INDEXES = """
SELECT c.relname, pg_get_indexdef(c.oid)
  FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
 WHERE x.indrelid = %s
   AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid)
 ORDER BY c.relname
"""

_PG_ROUTINES = """
SELECT p.prokind, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = %s ORDER BY 2
"""

# Enums, domains and ranges; a table's own row type and array types come with what they belong to.
_PG_TYPES = """
SELECT t.typname, t.typtype
  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE n.nspname = %s AND t.typrelid = 0 AND t.typcategory <> 'A'
 ORDER BY 1
"""

_PG_TRIGGERS = """
SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = %s AND NOT t.tgisinternal ORDER BY 1
"""

_PG_COMPRESSION = {"": "", "p": " compression pglz", "l": " compression lz4"}
_PG_KINDS = {
    "S": "sequence",
    "v": "view",
    "m": "materialized view",
    "c": "type",
    "f": "foreign table",
}


@dataclass
class PostgresCatalog:
    url: str
    schema: str

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def description(self) -> list[str]:
        lines = _described("postgresql")
        with self._connect() as conn:
            # enumvals lists only the methods this server was built with.
            (lz4,) = conn.execute(
                "SELECT 'lz4' = ANY (enumvals) FROM pg_settings"
                " WHERE name = 'default_toast_compression'"
            ).fetchone()
        # The migration falls back to the server default without lz4 (see postgresql.txt).
        return lines if lz4 else [line.replace(" compression lz4", "") for line in lines]

    def execute(self, template: str) -> None:
        # PostgreSQL creates an index in its table's schema and refuses a qualified index name.
        qualified = _Names(lambda relation: f"{_quote(self.schema)}.{_quote(relation)}")
        with self._connect() as conn:
            conn.execute(template.format(q=qualified, i=_Names(_quote)))

    def drop(self) -> None:
        from psycopg import sql

        with self._connect() as conn:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )

    def render(self) -> list[str]:
        with self._connect() as conn:
            lines: list[str] = []
            for oid, name, kind, persistence, options in conn.execute(
                _PG_TABLES, (self.schema,)
            ).fetchall():
                if kind in {"r", "p"}:
                    lines += self._table(conn, oid, name, kind, persistence, options)
                elif kind not in {"i", "I"}:
                    lines.append(f"{_PG_KINDS.get(kind, f'relation of kind {kind}')} {name}")
            for name, kind in conn.execute(_PG_TYPES, (self.schema,)):
                lines.append(f"type {name} of kind {kind}")
            for kind, signature in conn.execute(_PG_ROUTINES, (self.schema,)):
                lines.append(f"{'procedure' if kind == 'p' else 'function'} {signature}")
            return lines

    def _table(
        self, conn: Any, oid: int, name: str, kind: str, persistence: str, options: list[str]
    ) -> list[str]:
        lines = [f"table {name}"]
        if kind == "p":
            lines.append("  option partitioned")
        if persistence != "p":
            lines.append(f"  option {'unlogged' if persistence == 'u' else 'temporary'}")
        lines += [f"  option {o}" for o in sorted(options)]
        quoted = conn.execute("SELECT quote_ident(%s)", (self.schema,)).fetchone()[0]
        for col, type_, notnull, default, compression, identity, generated in conn.execute(
            _PG_COLUMNS, (oid,)
        ):
            if default is not None:  # a generated column calls a function of the test's schema
                default = default.replace(f"{quoted}.", "")
            line = _column(col, type_, notnull, default) + _PG_COMPRESSION[compression]
            line += f" identity {identity}" if identity else ""
            line += f" generated {generated}" if generated else ""
            lines.append(line)
        primary: list[str] = []
        for con, definition, contype, conkey in conn.execute(_PG_CONSTRAINTS, (oid,)).fetchall():
            lines.append(f"  constraint {con} {definition}")
            if contype == "p":
                primary = self._columns(conn, oid, conkey)
        for _, definition in conn.execute(_PG_INDEXES, (oid,)):
            bare = definition.removeprefix("CREATE ").replace(f" ON {quoted}.", " ON ", 1)
            for word in ("UNIQUE INDEX ", "INDEX "):
                if bare.startswith(word):
                    bare = word.lower() + bare.removeprefix(word)
                    break
            lines.append(f"  {bare}")
        lines += [f"  trigger {t}" for (t,) in conn.execute(_PG_TRIGGERS, (oid,))]
        return lines + self._rows(conn, name, primary)

    def _rows(self, conn: Any, table: str, key: list[str]) -> list[str]:
        from psycopg import sql

        relation = sql.Identifier(self.schema, table)
        if not key:
            (count,) = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(relation)).fetchone()
            return [f"  rows {count}"] if count else []
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in key)
        query = sql.SQL("SELECT {c} FROM {t} ORDER BY {c}").format(c=columns, t=relation)
        return [_row(r) for r in conn.execute(query)]

    def _columns(self, conn: Any, oid: int, attnums: list[int]) -> list[str]:
        names = dict(
            conn.execute(
                "SELECT attnum, attname FROM pg_attribute WHERE attrelid = %s", (oid,)
            ).fetchall()
        )
        return [names[n] for n in attnums]

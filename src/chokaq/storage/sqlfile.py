"""Loads a backend's SQL: named blocks from the files of ``sql/`` and numbered migration files.

Each driver keeps one file per storage area under ``sql/`` (``sql/jobs.sql``, ``sql/reads.sql``,
...). A block starts with a line ``-- name: some_query`` and runs to the next such line; all the
files of one driver share one namespace, so a block may include a fragment of another file. Owns
reading the files shipped inside the package; it must not execute anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["Migration", "includes", "load_blocks", "load_migrations", "load_queries"]

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"^--\s*include:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_INDENTED_INCLUDE = re.compile(r"^[ \t]+--\s*include:", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{3,})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered migration: version, name and the SQL text (statements split by ``;``-lines)."""

    version: int
    name: str
    sql: str


def load_queries(package: str, folder: str = "sql") -> dict[str, str]:
    """Every named block of the ``*.sql`` files of ``package/folder``, keyed by name (a name
    defined twice, in one file or two, is an error).

    A line ``-- include: fragment_x`` is replaced by the block ``fragment_x``; blocks named
    ``fragment_*`` exist only to be included and are not returned."""
    raw = {name: body for name, (_, body) in load_blocks(package, folder).items()}
    return {
        name: _compact(_expand(name, raw, ())).rstrip(";").strip()
        for name in raw
        if not name.startswith("fragment_")
    }


def load_blocks(package: str, folder: str = "sql") -> dict[str, tuple[str, str]]:
    """Every named block of the ``*.sql`` files of ``package/folder`` as written (includes not
    expanded, fragments kept): name -> (the file's stem, the block's text). A name defined
    twice, in one file or two, is an error."""
    found: dict[str, tuple[str, str]] = {}
    files = sorted(
        (entry for entry in resources.files(package).joinpath(folder).iterdir()),
        key=lambda entry: entry.name,
    )
    for entry in files:
        if not entry.name.endswith(".sql"):
            continue
        parts = _NAME.split(entry.read_text(encoding="utf-8"))
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise ValueError(f"{package}/{folder}: query {name!r} is defined twice")
            found[name] = (entry.name.removesuffix(".sql"), body)
    return found


def includes(body: str) -> list[str]:
    """The names of the blocks ``body`` includes (its ``-- include:`` lines), in order."""
    return _INCLUDE.findall(body)


def _expand(name: str, raw: dict[str, str], seen: tuple[str, ...]) -> str:
    """The block ``name`` with each ``-- include: other`` line replaced by that block."""
    if name in seen:
        raise ValueError(f"query {name!r} includes itself")
    if name not in raw:
        raise ValueError(f"query {seen[-1]!r} includes unknown block {name!r}")
    if _INDENTED_INCLUDE.search(raw[name]):
        raise ValueError(f"query {name!r}: an include line must start at column 0")

    def include(match: re.Match[str]) -> str:
        return _expand(match.group(1), raw, (*seen, name)).strip()

    return _INCLUDE.sub(include, raw[name])


def _compact(body: str) -> str:
    """The SQL without comments and indentation: shorter text to send, and short enough for
    the driver to cache its parse (psycopg caches statements of up to 4096 characters)."""
    lines = []
    for line in body.splitlines():
        code = _tighten(_strip_comment(line).strip())
        if code:
            lines.append(code)
    return "\n".join(lines)


def _tighten(code: str) -> str:
    """Drop the spaces around ``(``, ``)``, ``,`` and ``=`` outside string literals."""
    out: list[str] = []
    quoted = False
    for char in code:
        if char == "'":
            quoted = not quoted
        elif not quoted and char in "(),=":
            while out and out[-1] == " ":
                out.pop()
            out.append(char)
            continue
        elif not quoted and char == " " and out and out[-1] in "(),= ":
            continue
        out.append(char)
    return "".join(out)


def _strip_comment(line: str) -> str:
    """``line`` up to a ``--`` comment that is not inside a string literal."""
    quoted = False
    for i, char in enumerate(line):
        if char == "'":
            quoted = not quoted
        elif char == "-" and not quoted and line.startswith("--", i):
            return line[:i]
    return line


def load_migrations(package: str) -> list[Migration]:
    """The migrations of ``package/migrations`` ordered by version (gaps are an error)."""
    folder = resources.files(package).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append(
                Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8"))
            )
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise ValueError(f"{package}: migration {expected} is missing")
    return found

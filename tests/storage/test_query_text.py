"""The SQL files load into statements the driver can cache.

psycopg caches the parse of statements up to 4096 bytes; longer ones are re-parsed on every
call, which costs the worker's hottest statements tens of microseconds each.
"""

from __future__ import annotations

from chokaq.storage import create_backend

LONGEST_SCHEMA = "s" * 40


def test_every_postgres_statement_fits_the_drivers_cache() -> None:
    backend = create_backend("postgresql://nobody@nowhere/db", schema=LONGEST_SCHEMA)
    queries: dict[str, str] = backend.driver._q  # type: ignore[attr-defined]
    assert "jobs_finalize" in queries
    for name, text in queries.items():
        assert len(text.encode()) <= 4096, name


def test_comments_and_alignment_are_stripped_but_literals_kept() -> None:
    from chokaq.storage.sqlfile import _compact

    sql = "SELECT  a ,  b   -- why\n  FROM t WHERE x = 'a  -- b , ( c'  -- trailing\n"
    assert _compact(sql) == "SELECT a,b\nFROM t WHERE x='a  -- b , ( c'"


def test_an_indented_include_is_refused_rather_than_read_as_a_comment() -> None:
    import pytest

    from chokaq.storage.sqlfile import _expand

    with pytest.raises(ValueError, match="column 0"):
        _expand("q", {"q": "SELECT 1\n  -- include: fragment_x", "fragment_x": "x"}, ())
    assert _expand("q", {"q": "SELECT\n-- include: fragment_x", "fragment_x": " 1 "}, ()) == (
        "SELECT\n1"
    )

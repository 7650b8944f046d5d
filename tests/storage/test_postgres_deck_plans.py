"""The Deck's listings on an analyzed PostgreSQL archive, by the shape of their plans (issue 40).

* A page by key in the duration sort, either way, is a range of its index (migration 11): an
  index scan that starts at the key, with no sort over the rows before it.
* A partition filter reads the partial partition index, never the whole archive.
* A broad search that the planner expects to match more than the bound (10,000) is answered
  with the planner's estimate: no count statement is sent; a preview counts what it takes.

The statements a backend call sends are captured by wrapping psycopg's cursor and planned with
``EXPLAIN (FORMAT JSON)`` on a separate connection (as ``test_postgres_claims`` does); never a time.
"""

from __future__ import annotations

import plans
import psycopg
import pytest

from chokaq.models import JobFilter, PageKey, Pillar


@pytest.fixture
def store(pg_store):
    """These claims are about the PostgreSQL driver's indexes: its store only."""
    return pg_store


ROWS = 50_000


def _fill(pg, schema):
    """An analyzed archive of ``ROWS`` jobs: one in 50 without a duration, half of them in one
    of 100 partitions, every tenth tenant acme's."""
    pg.execute(
        psycopg.sql.SQL(
            """INSERT INTO {}.jobs_archive (id, queue, type, payload, tags, priority,
                   attempt_count, worker_id, created_at, started_at, finished_at,
                   duration_seconds, partition_key)
               SELECT gen_random_uuid(), 'q' || (g %% 8), 'type_' || (g %% 50), '{{}}',
                      'tag' || (g %% 20) || CASE WHEN g %% 10 = 3 THEN ' tenant:acme' ELSE '' END,
                      10, 1, 'w', now() - make_interval(secs => g),
                      now() - make_interval(secs => g), now() - make_interval(secs => g),
                      CASE WHEN g %% 50 = 1 THEN NULL ELSE (g %% 997) / 100.0 END,
                      CASE WHEN g %% 2 = 0 THEN 'p' || (g / 2 %% 100) END
               FROM generate_series(1, %s) g"""
        ).format(psycopg.sql.Identifier(schema)),
        (ROWS,),
    )
    pg.execute(
        psycopg.sql.SQL("VACUUM ANALYZE {}.jobs_archive").format(psycopg.sql.Identifier(schema))
    )


def _listing(sent):
    found = [(q, p) for q, p in sent if "jobs_archive" in q and "ORDER BY" in q]
    assert found, "no listing statement was captured"
    return found[-1]


def _archive_scans(pg, query, params):
    return [
        (n["Node Type"], n.get("Index Name"), "Index Cond" in n)
        for n in plans.nodes(plans.plan(pg, query, params))
        if n.get("Relation Name") == "jobs_archive"
        or n.get("Index Name", "").startswith("jobs_archive")
        or n["Node Type"] == "Sort"
    ]


@pytest.mark.parametrize(("descending", "index"), [(True, "desc"), (False, "asc")])
@pytest.mark.parametrize("backward", [False, True])
async def test_a_duration_page_by_key_is_a_range_of_its_index(
    backend, store, pg, capture, descending, index, backward
):
    _fill(pg, store.schema)
    # The key of a row halfway down the sort (NULLs sort as the infinity on their side).
    way, infinity = ("DESC", "-Infinity") if descending else ("ASC", "Infinity")
    value, job_id = pg.execute(
        psycopg.sql.SQL(
            "SELECT duration_seconds, id::text FROM {} ORDER BY coalesce(duration_seconds, "
            + f"'{infinity}'::float8) {way}, id {way} OFFSET %s LIMIT 1"
        ).format(psycopg.sql.Identifier(store.schema, "jobs_archive")),
        (ROWS // 2,),
    ).fetchone()
    key = PageKey(value, job_id)
    with capture() as sent:
        side = {"before": key} if backward else {"after": key}
        page = await backend.jobs_page(
            pillar=Pillar.ARCHIVE, sort="duration", descending=descending, page_size=50, **side
        )
    assert len(page.items) == 50
    scans = _archive_scans(pg, *_listing(sent))
    # One scan of the index that starts at the key (its Index Cond), and no Sort above it:
    # a page deep in the sort reads its own 50 entries, not the rows before them.
    assert scans == [("Index Scan", f"jobs_archive_duration_{index}", True)], scans


async def test_a_page_by_key_among_jobs_without_a_duration_is_a_range_too(
    backend, store, pg, capture
):
    _fill(pg, store.schema)
    null_id = pg.execute(
        psycopg.sql.SQL(
            "SELECT id::text FROM {}.jobs_archive WHERE duration_seconds IS NULL LIMIT 1"
        ).format(psycopg.sql.Identifier(store.schema))
    ).fetchone()[0]
    with capture() as sent:
        page = await backend.jobs_page(
            pillar=Pillar.ARCHIVE, sort="duration", after=PageKey(None, null_id)
        )
    assert all(job.duration_seconds is None for job in page.items)
    scans = _archive_scans(pg, *_listing(sent))
    assert scans == [("Index Scan", "jobs_archive_duration_desc", True)], scans


@pytest.mark.parametrize("queue", [None, "q6"])
async def test_a_partition_filter_reads_the_partition_index(backend, store, pg, capture, queue):
    _fill(pg, store.schema)
    with capture() as sent:
        page = await backend.jobs_page(
            pillar=Pillar.ARCHIVE, filter=JobFilter(partition="p7", queue=queue)
        )
    assert page.items and all(job.partition == "p7" for job in page.items)
    statements = [(q, p) for q, p in sent if "jobs_archive" in q and "EXPLAIN" not in q]
    assert len(statements) == 2  # the page and its count
    for query, params in statements:
        scans = _archive_scans(pg, query, params)
        indexes = {name for _, name, _ in scans if name is not None}
        # With a queue too, the planner may AND the queue's index in: never a full read.
        assert "jobs_archive_partition" in indexes, scans
        assert not [s for s in scans if s[0] == "Seq Scan"], scans


async def test_a_broad_search_is_estimated_without_counting(backend, store, pg, capture):
    _fill(pg, store.schema)
    with capture() as sent:
        page = await backend.jobs_page(pillar=Pillar.ARCHIVE, filter=JobFilter(search="tag1"))
    assert page.total_estimated and page.total > 10_000  # tag1, tag10..19: 55 %
    assert not [q for q, _ in sent if "count(" in q], "a count was sent"
    with capture() as sent:
        preview = await backend.jobs_preview(
            pillar=Pillar.ARCHIVE, filter=JobFilter(search="tag1"), cap=100
        )
    assert (preview.will_affect, preview.matched_estimated) == (100, True)
    assert preview.matched > 10_000
    # The preview counts what it takes (up to the cap, and one more), never every match.
    counts = [p for q, p in sent if "count(" in q]
    assert [p["bound"] for p in counts] == [101], counts


@pytest.mark.parametrize(("descending", "index"), [(True, "desc"), (False, "asc")])
async def test_the_dlq_by_duration_is_read_from_its_index(
    backend, store, pg, capture, descending, index
):
    # Migration 12: the DLQ's duration sort, either way, walks an index from its first entry
    # instead of sorting every dead job.
    pg.execute(
        psycopg.sql.SQL(
            """INSERT INTO {}.jobs_dlq (id, queue, type, payload, priority, failure_reason,
                   attempt_count, created_at, failed_at, duration_seconds)
               SELECT gen_random_uuid(), 'q' || (g %% 8), 'type_' || (g %% 50), '{{}}', 10, 1,
                      1, now() - make_interval(secs => g), now() - make_interval(secs => g),
                      CASE WHEN g %% 50 = 1 THEN NULL ELSE (g %% 997) / 100.0 END
               FROM generate_series(1, %s) g"""
        ).format(psycopg.sql.Identifier(store.schema)),
        (ROWS // 2,),
    )
    pg.execute(
        psycopg.sql.SQL("VACUUM ANALYZE {}.jobs_dlq").format(psycopg.sql.Identifier(store.schema))
    )
    with capture() as sent:
        page = await backend.jobs_page(
            pillar=Pillar.DLQ, sort="duration", descending=descending, page_size=50
        )
    assert len(page.items) == 50
    durations = [job.duration_seconds for job in page.items]
    assert None not in durations and durations == sorted(durations, reverse=descending)
    query, params = [(q, p) for q, p in sent if "jobs_dlq" in q and "ORDER BY" in q][-1]
    scans = [
        (n["Node Type"], n.get("Index Name"))
        for n in plans.nodes(plans.plan(pg, query, params))
        if n.get("Relation Name") == "jobs_dlq" or n["Node Type"] == "Sort"
    ]
    assert scans == [("Index Scan", f"jobs_dlq_duration_{index}")], scans

"""The seeds' claims about the PostgreSQL layout, checked against a loaded store.

* The fetch walks the partial index ``jobs_hot_fetch``, in order, also as the generic plan the
  claim lane caches once the table has statistics (a plan that is fast only without statistics
  is a bug).
* A move of leased rows (start, heartbeat, release, finalize, cancel) finds them by primary key,
  never by walking ``jobs_hot_active``.
* The partial index holds Pending rows only: once jobs are claimed or archived it is empty.
* The summary read never touches ``jobs_archive`` or ``jobs_dlq``.

The statements a backend call sends are captured by wrapping psycopg's cursor, then planned with
``EXPLAIN`` (and run in a rolled-back transaction) on a separate connection, so the test checks
the SQL the backend really uses without reaching into its internals.
"""

from __future__ import annotations

import time

import plans
import psycopg
import pytest
from conformance import T0, at

from chokaq.models import FailMove, FailureReason, Heartbeat, NewJob, RetryMove, SucceedMove


@pytest.fixture
def store(pg_store):
    """These claims are about the PostgreSQL driver's layout: its store only."""
    return pg_store


async def _load(backend, count, queues=("default",), *, distinct=False):
    """Enqueue ``count`` jobs; ``distinct`` gives every job its own priority, so that B-tree
    deduplication cannot fold their index entries into posting lists and physical index tuples
    count one per row."""
    for first in range(0, count, 10_000):
        size = min(10_000, count - first)
        jobs = [
            NewJob(
                type="t",
                queue=queues[i % len(queues)],
                priority=first + i if distinct else i % 5,
            )
            for i in range(size)
        ]
        await backend.jobs_enqueue(jobs, now=T0)


def _index_scans(pg, schema, index):
    pg.execute("SELECT pg_stat_clear_snapshot()")
    [[scans]] = pg.execute(
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = %s AND indexrelname = %s",
        (schema, index),
    ).fetchall()
    return scans


def _index_tuples(pg, schema, table, index, *, expect=None, deadline_seconds=60.0):
    """Entries in ``index`` after a VACUUM of ``table``, counted page by page by pgstattuple.

    VACUUM can only remove row versions older than every snapshot open anywhere in the database,
    so another session (a parallel test run on the same server) can hold dead entries in place
    for a while. With ``expect`` this polls, vacuuming again, until the count matches or the
    deadline passes, and returns the last count.

    The extension is installed into the test's own schema (dropped with it) unless the database
    already has it somewhere.
    """
    give_up = time.monotonic() + deadline_seconds
    while True:
        tuples = _count_index_tuples(pg, schema, table, index)
        if expect is None or tuples == expect or time.monotonic() > give_up:
            return tuples
        time.sleep(0.2)


def _count_index_tuples(pg, schema, table, index):
    pg.execute(f'VACUUM (INDEX_CLEANUP ON) "{schema}".{table}')
    # The extension is database-wide: when a parallel run on the same server installed it into
    # its own schema, ours is a no-op and theirs may vanish with their schema. Retry briefly.
    for attempt in range(10):
        pg.execute(f'CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA "{schema}"')
        found = pg.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'pgstattuple'"
        ).fetchall()
        try:
            [[tuples]] = pg.execute(
                f'SELECT tuple_count FROM "{found[0][0]}".pgstattuple(%s::regclass)',
                (f'"{schema}".{index}',),
            ).fetchall()
            return tuples
        except (IndexError, psycopg.Error):
            if attempt == 9:
                raise
    raise AssertionError("unreachable")


async def test_fetch_uses_the_partial_fetch_index(backend, store, pg, capture):
    await _load(backend, 20_000, queues=("default", "mail", "pdf", "etl"))
    pg.execute(f'ANALYZE "{store.schema}".jobs_hot')
    with capture() as sent:
        claimed = await backend.jobs_fetch(worker_id="w1", limit=10, now=at(1))
    assert len(claimed) == 10
    fetches = [(q, p) for q, p in sent if "jobs_hot" in q and "SKIP LOCKED" in q.upper()]
    assert fetches, "no claiming statement was captured"
    query, params = fetches[0]
    scans = [
        (n["Node Type"], n.get("Index Name"))
        for n in plans.nodes(plans.plan(pg, query, params))
        if n.get("Relation Name") == "jobs_hot" and "Scan" in n["Node Type"]
    ]
    # The pending rows are found through the partial index; nothing reads jobs_hot sequentially
    # (other scans, such as the bulkhead's count of running rows, use their own indexes).
    assert ("Index Scan", "jobs_hot_fetch") in scans, scans
    assert not [s for s in scans if s[0] == "Seq Scan"], scans
    # And at run time: the same statement, run and rolled back here, scans that index.
    before = _index_scans(pg, store.schema, "jobs_hot_fetch")
    with pg.transaction(force_rollback=True):
        assert len(pg.execute(query, params).fetchall()) == 10
    pg.execute("SELECT pg_stat_force_next_flush()")
    assert _index_scans(pg, store.schema, "jobs_hot_fetch") > before


@pytest.mark.parametrize("plan_cache_mode", ["force_generic_plan", "force_custom_plan"])
@pytest.mark.parametrize("exclude_types", [(), ("held",)], ids=["none-excluded", "excluded"])
async def test_claim_walks_the_fetch_index_in_order_on_an_analyzed_table(
    backend, store, pg, capture, plan_cache_mode, exclude_types
):
    # 20,000 pending jobs of one type in one queue, as the benchmark's backlog, then ANALYZE as
    # autovacuum would. The lane caches a generic plan, which knows nothing of the excluded
    # types: estimated from the column's statistics, "not one of a few types" left about one
    # row, and the plan read and sorted every pending row (13 ms a claim instead of 0.1 ms).
    await _load(backend, 20_000)
    pg.execute(f'ANALYZE "{store.schema}".jobs_hot')
    with capture() as sent:
        claimed = await backend.jobs_fetch(
            worker_id="w1", limit=10, exclude_types=exclude_types, now=at(1)
        )
    assert len(claimed) == 10
    [(query, params)] = [(q, p) for q, p in sent if "SKIP LOCKED" in q.upper()]
    nodes = list(
        plans.nodes(plans.prepared_plan(store, query, params, plan_cache_mode=plan_cache_mode))
    )
    # The scan that finds pending rows is the one that tests the due time.
    pending = [
        n
        for n in nodes
        if n.get("Relation Name") == "jobs_hot"
        and "scheduled_at" in " ".join(n.get(k, "") for k in ("Index Cond", "Filter"))
    ]
    assert [(n["Node Type"], n.get("Index Name")) for n in pending] == [
        ("Index Scan", "jobs_hot_fetch")
    ], pending
    # Walked in order and stopped early: it read no more rows than the claim took.
    assert pending[0]["Actual Rows"] <= 10, pending[0]
    sorts = [n for n in nodes if n["Node Type"] == "Sort"]
    assert not [n for n in sorts if any(k.startswith("h.") for k in n["Sort Key"])], sorts
    assert all(n.get("Actual Rows", 0) <= 10 for n in sorts), sorts
    seq = [n for n in nodes if n.get("Relation Name") == "jobs_hot" and "Seq" in n["Node Type"]]
    assert not seq, seq


LEASE_MOVES = {
    "start": lambda b, c: b.jobs_start_many(leases=[j.lease for j in c], now=at(2)),
    "heartbeat": lambda b, c: b.jobs_heartbeat(beats=[Heartbeat(j.lease) for j in c], now=at(2)),
    "release": lambda b, c: b.jobs_release(leases=[j.lease for j in c], now=at(2)),
    "succeed": lambda b, c: b.jobs_finalize(moves=[SucceedMove(j.lease, 0.1) for j in c]),
    "retry": lambda b, c: b.jobs_finalize(moves=[RetryMove(j.lease, "again") for j in c]),
    "fail": lambda b, c: b.jobs_finalize(
        moves=[FailMove(j.lease, FailureReason.FATAL_ERROR, "boom") for j in c]
    ),
}


@pytest.mark.parametrize("move", sorted(LEASE_MOVES))
async def test_lease_moves_find_their_rows_by_primary_key(backend, store, pg, capture, move):
    # Statistics taken while every row was pending say that jobs_hot_active (Fetched and
    # Processing rows) is empty, so a plan that trusted them walked that index for every batch,
    # the dead entries of every row moved since included: a burn-down fell from about 5,000 to
    # 600 jobs/s. As the lanes run them (generic plans), each move must look its rows up by id.
    await _load(backend, 20_000)
    pg.execute(f'ANALYZE "{store.schema}".jobs_hot')
    started = move not in ("start", "release")
    claimed = await backend.jobs_fetch(worker_id="w1", limit=100, start=started, now=at(1))
    assert len(claimed) == 100
    await backend.jobs_fetch(worker_id="w2", limit=100, start=True, now=at(1))  # others' rows
    with capture() as sent:
        await LEASE_MOVES[move](backend, claimed[:10])
    statements = [(q, p) for q, p in sent if p and ("ids" in p or "moves" in p)]
    assert statements, f"no statement of {move} was captured"
    for query, params in statements:
        plan = plans.prepared_plan(store, query, params, plan_cache_mode="force_generic_plan")
        scans = [
            (n["Node Type"], n.get("Index Name"))
            for n in plans.nodes(plan)
            if n.get("Relation Name") == "jobs_hot"
            and n.get("Alias") == "h"
            and "Scan" in n["Node Type"]
        ]
        assert scans == [("Index Scan", "jobs_hot_pkey")], (move, scans)


async def test_fetch_index_holds_pending_rows_only(backend, store, pg):
    await _load(backend, 10_000, distinct=True)
    assert _index_tuples(pg, store.schema, "jobs_hot", "jobs_hot_fetch") == 10_000
    claimed = []
    while batch := await backend.jobs_fetch(worker_id="w1", limit=1000, start=True, now=at(1)):
        claimed += batch
    assert len(claimed) == 10_000
    # Processing rows are still in jobs_hot but not in the fetch index.
    assert _index_tuples(pg, store.schema, "jobs_hot", "jobs_hot_fetch", expect=0) == 0
    for first in range(0, len(claimed), 1000):
        moves = [SucceedMove(c.lease, 0.1) for c in claimed[first : first + 1000]]
        assert all(await backend.jobs_finalize(moves=moves, now=at(2)))
    assert (await backend.stats_summary()).succeeded_total == 10_000
    assert _index_tuples(pg, store.schema, "jobs_hot", "jobs_hot_fetch", expect=0) == 0
    assert _index_tuples(pg, store.schema, "jobs_hot", "jobs_hot_pkey", expect=0) == 0
    [[archived]] = pg.execute(f'SELECT count(*) FROM "{store.schema}".jobs_archive').fetchall()
    assert archived == 10_000


async def test_summary_never_reads_archive_or_dlq(backend, store, pg, capture):
    await _load(backend, 100)
    claimed = await backend.jobs_fetch(worker_id="w1", limit=100, start=True, now=at(1))
    moves = [SucceedMove(c.lease, 0.1) for c in claimed[:50]]
    await backend.jobs_finalize(moves=moves, now=at(2))
    with capture() as sent:
        summary = await backend.stats_summary()
    assert summary.succeeded_total == 50
    assert sent, "no statement was captured"
    touched = set()
    for query, params in sent:
        if query.lstrip().upper().startswith(("SELECT", "WITH")):
            touched |= {n.get("Relation Name") for n in plans.nodes(plans.plan(pg, query, params))}
    assert touched, "no read was planned"
    assert not touched & {"jobs_archive", "jobs_dlq"}, touched
    # Run the same statements here and read the table counters to confirm.
    counts = (
        "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables"
        " WHERE schemaname = %s AND relname IN ('jobs_archive', 'jobs_dlq')"
    )
    pg.execute("SELECT pg_stat_force_next_flush()")
    pg.execute("SELECT pg_stat_clear_snapshot()")
    [[before]] = pg.execute(counts, (store.schema,)).fetchall()
    for query, params in sent:
        with pg.transaction(force_rollback=True):
            pg.execute(query, params)
    pg.execute("SELECT pg_stat_force_next_flush()")
    pg.execute("SELECT pg_stat_clear_snapshot()")
    [[after]] = pg.execute(counts, (store.schema,)).fetchall()
    assert after == before

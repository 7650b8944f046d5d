"""The jobs area on PostgreSQL: enqueue (with its dependency graph), and the operator's cancel,
edit and the test clock's advance of hot jobs.

Owns turning these operations into the named statements of ``sql/jobs.sql`` with array
parameters, so that a batch costs one round trip, and the rows back into models. Arguments
arrive checked (``chokaq.storage.jobs``); this module checks none and holds no SQL text.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from functools import partial
from typing import Any, LiteralString

import psycopg
from psycopg.rows import tuple_row

from ...errors import StorageError, ValidationError
from ...ids import new_job_ids
from ...models import (
    CancelResult,
    EnqueueResult,
    NewJob,
)
from ..checks import Edits
from ..graph import Graph, unknown_parents
from .connection import Params, PostgresCore
from .rows import finite, join_tags

__all__ = ["PostgresJobs", "edit_params"]

# Jobs per statement of a large enqueue (its statements overlap with the client's work).
ENQUEUE_CHUNK = 1_000
# Per job id of a batch with dependencies: its parents still to succeed, its children.
GraphColumns = tuple[dict[str, int], dict[str, int]]
# How often an enqueue looks for a stored parent that moved between pillars while it looked.
GRAPH_LOCATE_TRIES = 5
# How often an enqueue with on_conflict runs again after losing its key to a concurrent one
# (each loss means another enqueue of the key committed: a few suffice under any contention).
CONFLICT_TRIES = 20


def edit_params(edits: Edits) -> dict[str, Any]:
    """The parameters of an edit or a resurrection (``None`` leaves a field alone)."""
    return {
        "payload": edits.payload,
        "set_tags": edits.tags is not None,
        "tags": join_tags(edits.tags) if edits.tags is not None else None,
        "priority": edits.priority,
    }


class PostgresJobs(PostgresCore):
    """Hot jobs: enqueue, cancel, edit and advance."""

    # -- enqueue ----------------------------------------------------------------------------

    async def jobs_enqueue(
        self,
        jobs: list[NewJob],
        now: datetime | None,
        connection: Any,
        graph: Graph | None = None,
    ) -> list[EnqueueResult]:
        checked = jobs
        ids: list[str | None] = [job.id for job in checked]  # the rest are made per statement
        results: list[EnqueueResult | None] = [None] * len(checked)
        first_with_key: dict[str, int] = {}
        later: dict[int, int] = {}  # in-batch duplicate -> the first job with its key
        todo: list[int] = []
        conflicting: list[int] = []  # on_conflict other than "keep": one statement each, last
        for i, job in enumerate(checked):
            key = job.idempotency_key
            if key is not None:
                if job.on_conflict != "keep":
                    conflicting.append(i)
                    continue
                if key in first_with_key:
                    later[i] = first_with_key[key]
                    continue
                first_with_key[key] = i
            todo.append(i)
        # A large batch goes as several statements in one transaction, overlapped (below); so
        # does a batch with dependencies (the parents are locked, then the jobs and edges go).
        unique = [i for i in todo if checked[i].unique_for_seconds is not None]
        chunked = len(todo) > ENQUEUE_CHUNK or graph is not None or bool(unique)
        rounds = self._enqueue_rounds if graph is None else partial(self._enqueue_graph, graph)
        if conflicting:
            # Several statements (another job, or a retry) hold together in one transaction.
            chunked = chunked or len(checked) > 1
            rounds = partial(self._enqueue_conflicting, rounds, conflicting)

        if connection is None:
            async with self._connection("enqueue") as conn, _holding(conn, chunked):
                await rounds(conn.execute, checked, ids, todo, results, now)
            # Committed: these queues' rows exist for good (queue rows are never deleted).
            # Not learned from a caller's connection, whose transaction may still roll back.
            self._ensured_queues.update(job.queue for job in checked)
        elif isinstance(connection, psycopg.AsyncConnection):
            # The caller's transaction holds the statements together; only a connection that
            # would commit each one on its own (autocommit, outside a block) gets one here.
            # Each statement goes through a cursor of our own row factory: the rows read back
            # are ours to decode, whatever row factory the caller opened the connection with.
            async_conn: psycopg.AsyncConnection[Any] = connection

            async def run_async(query: LiteralString, params: Params) -> Any:
                cur = async_conn.cursor(row_factory=tuple_row)
                return await cur.execute(query, params)

            idle = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            async with _holding(connection, chunked and connection.autocommit and idle):
                await rounds(run_async, checked, ids, todo, results, now)
        else:
            # The seam let only psycopg connections through (checks.caller_connection).
            sync_conn: psycopg.Connection[Any] = connection

            def run_sync(query: LiteralString, params: Params) -> psycopg.Cursor[Any]:
                return sync_conn.cursor(row_factory=tuple_row).execute(query, params)

            async def run(query: LiteralString, params: Params) -> psycopg.Cursor[Any]:
                return await asyncio.to_thread(run_sync, query, params)

            if graph is not None and sync_conn.autocommit:
                raise ValidationError(
                    "connection",
                    "must not be in autocommit mode to enqueue jobs with after= (their "
                    "parents, jobs and edges are written by several statements)",
                )
            # One statement for the whole batch: no transaction is opened on a thread's behalf.
            await rounds(run, checked, ids, todo, results, now, chunk=None)

        for i, first in later.items():
            winner = results[first]
            assert winner is not None
            results[i] = EnqueueResult(id=winner.id, duplicate=True)
        return [r for r in results if r is not None]

    async def _enqueue_rounds(
        self,
        execute: Any,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        results: list[EnqueueResult | None],
        now: datetime | None,
        chunk: int | None = ENQUEUE_CHUNK,
        columns: GraphColumns | None = None,
    ) -> None:
        """Insert, then resolve the keys that conflicted to the hot rows holding them; a key
        whose holder left hot in between is inserted again."""
        unique = [i for i in todo if jobs[i].unique_for_seconds is not None]
        if unique:
            todo = await self._take_unique(execute, jobs, ids, todo, unique, results, now)
        queues = {jobs[i].queue for i in todo}
        if not queues <= self._ensured_queues:
            query = self._q["jobs_enqueue"]
        elif any(jobs[i].idempotency_key is not None for i in todo):
            query = self._q["jobs_enqueue_known"]
        else:
            query = self._q["jobs_enqueue_plain"]
        while todo:
            conflicted = await self._insert(
                execute, query, jobs, ids, todo, results, now, chunk, columns
            )
            if not conflicted:
                return
            keys = [jobs[i].idempotency_key for i in conflicted]
            if any(key is None for key in keys):
                raise StorageError("enqueue: a job without an idempotency key was not inserted")
            cur = await execute(self._q["jobs_enqueue_holders"], {"keys": keys})
            holders = {row[0]: row[1] for row in await _fetchall(cur)}
            todo = []
            pointed: list[int] = []
            for i in conflicted:
                holder = holders.get(jobs[i].idempotency_key)
                if holder is None:
                    todo.append(i)
                else:
                    results[i] = EnqueueResult(id=holder, duplicate=True)
                    if jobs[i].unique_for_seconds is not None:
                        pointed.append(i)
            if pointed:
                params = {
                    "keys": [jobs[i].idempotency_key for i in pointed],
                    "ids": [results[i].id for i in pointed],  # type: ignore[union-attr]
                }
                await execute(self._q["jobs_unique_point"], params)

    async def _enqueue_conflicting(
        self,
        rounds: Any,
        conflicting: list[int],
        execute: Any,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        results: list[EnqueueResult | None],
        now: datetime | None,
        chunk: int | None = ENQUEUE_CHUNK,
    ) -> None:
        """The batch's other jobs as usual, then each job with an ``on_conflict`` other than
        "keep" in input order (a later one with the same key acts on the earlier one), each
        decided by one statement (``fragment_enqueue_conflict``). A statement that wrote
        nothing lost a race to a holder committed after its snapshot, and runs again."""
        if todo:
            await rounds(execute, jobs, ids, todo, results, now, chunk)
        for i in conflicting:
            job = jobs[i]
            known = job.queue in self._ensured_queues
            query = self._q["jobs_enqueue_conflict_known" if known else "jobs_enqueue_conflict"]
            params = {
                **self._enqueue_params(jobs, ids, [i], now),
                "keep_due": job.on_conflict == "replace_payload",
                "cancel": job.on_conflict == "cancel_running",
            }
            for _ in range(CONFLICT_TRIES):
                rows = await _rows(execute, query, params)
                decided = [row for row in rows if row[0] is not None]
                if decided:
                    results[i] = _decided(*decided[0])
                    break
            else:
                raise StorageError(
                    f"enqueue: the idempotency key {job.idempotency_key!r} changed hands "
                    f"{CONFLICT_TRIES} times during one enqueue"
                )

    async def _take_unique(
        self,
        execute: Any,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        unique: list[int],
        results: list[EnqueueResult | None],
        now: datetime | None,
    ) -> list[int]:
        """Take the uniqueness windows of the jobs ``unique`` (each gets its id now); a job
        whose key's window is still open gets the job that opened it, as a duplicate. Returns
        the jobs of ``todo`` left to insert."""
        missing = [i for i in unique if ids[i] is None]
        for i, job_id in zip(missing, new_job_ids(len(missing)), strict=True):
            ids[i] = job_id
        params = {
            "keys": [jobs[i].idempotency_key for i in unique],
            "ids": [ids[i] for i in unique],
            "seconds": [float(jobs[i].unique_for_seconds or 0) for i in unique],
            "now": now,
        }
        taken = {row[0] for row in await _rows(execute, self._q["jobs_unique_take"], params)}
        held = [i for i in unique if jobs[i].idempotency_key not in taken]
        if not held:
            return todo
        keys = [jobs[i].idempotency_key for i in held]
        rows = await _rows(execute, self._q["jobs_unique_holders"], {"keys": keys})
        holders = {row[0]: row[1] for row in rows}
        skip = set()
        for i in held:
            holder = holders.get(jobs[i].idempotency_key)
            if holder is not None:  # else its window ended and was purged since: insert it
                results[i] = EnqueueResult(id=holder, duplicate=True)
                skip.add(i)
        return [i for i in todo if i not in skip]

    async def _enqueue_graph(
        self,
        graph: Graph,
        execute: Any,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        results: list[EnqueueResult | None],
        now: datetime | None,
        chunk: int | None = ENQUEUE_CHUNK,
    ) -> None:
        """Enqueue a batch with dependencies, in the transaction the caller holds: count the
        new children on the stored parents that are in hot or the DLQ (their rows stay locked
        until commit, so a parent's move out of them waits and reads the new count), count
        each job's parents still to succeed, insert the jobs, then the edges."""
        q = self._q
        stored = list(graph.stored)
        succeeded: set[str] = set()
        failed: set[str] = set()  # in the DLQ, locked there until this commits
        workflows: dict[str, str] = {}
        counts = graph.child_counts()
        if stored:
            rows = await _rows(execute, q["jobs_graph_where"], {"ids": stored})
            where = {row[0]: row[1] for row in rows}
            unknown = [p for p in stored if p not in where]
            if unknown:
                raise unknown_parents(jobs, unknown)
            # A parent in the archive has succeeded: nothing to count on it or to lock. The
            # others are counted, and so locked, where they are now.
            succeeded.update(p for p, place in where.items() if place == 1)
            left = [p for p in stored if p not in succeeded]
            for _ in range(GRAPH_LOCATE_TRIES):
                locked: set[str] = set()
                for name in ("jobs_graph_attach_hot", "jobs_graph_attach_dlq"):
                    rest = [p for p in left if p not in locked]
                    if rest:
                        params = {"ids": rest, "counts": [counts[p] for p in rest]}
                        found = {row[0] for row in await _rows(execute, q[name], params)}
                        locked.update(found)
                        if name == "jobs_graph_attach_dlq":
                            failed.update(found)
                rest = [p for p in left if p not in locked]
                if rest:
                    archived = await _rows(execute, q["jobs_graph_archived"], {"ids": rest})
                    succeeded.update(row[0] for row in archived)
                # Neither counted nor archived: it moved between two of these statements (a
                # resurrection out of the DLQ, say); count it where it is now.
                left = [p for p in rest if p not in succeeded]
                if not left:
                    break
            else:
                raise unknown_parents(jobs, left)
            rows = await _rows(execute, q["jobs_graph_workflows"], {"ids": stored})
            workflows = {row[0]: row[1] for row in rows}
        columns = (graph.waiting(succeeded, failed), counts)
        await self._enqueue_rounds(execute, jobs, ids, todo, results, now, chunk, columns)
        edges = graph.edges(graph.workflows(workflows))
        await execute(
            q["jobs_graph_edges"],
            {
                "children": [e.child for e in edges],
                "parents": [e.parent for e in edges],
                "workflows": [e.workflow for e in edges],
                "satisfied": [graph.satisfied(e.child, e.parent, succeeded, failed) for e in edges],
                "any": [e.any_outcome for e in edges],
                "arguments": [e.argument for e in edges],
                "now": now,
            },
        )

    async def _insert(
        self,
        execute: Any,
        query: LiteralString,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        results: list[EnqueueResult | None],
        now: datetime | None,
        chunk: int | None,
        columns: GraphColumns | None,
    ) -> list[int]:
        """Insert the jobs ``todo`` and record them in ``results``; returns those whose key was
        taken. More than ``chunk`` jobs go as statements of ``chunk`` (the caller holds the
        transaction), and each one's parameters are built while the server inserts the one
        before: the client's share of the cost hides behind the server's."""
        size = chunk or len(todo)
        parts = [todo[k : k + size] for k in range(0, len(todo), size)]
        conflicted: list[int] = []
        pending: tuple[list[int], asyncio.Future[list[Any]]] | None = None
        try:
            for part in parts:
                params = self._enqueue_params(jobs, ids, part, now, columns)
                done = None
                if pending is not None:
                    done = (pending[0], await pending[1])
                pending = (part, asyncio.ensure_future(_rows(execute, query, params)))
                if len(parts) > 1:
                    await asyncio.sleep(0)  # the statement goes out before the next is built
                if done is not None:
                    conflicted += _inserted(jobs, ids, *done, results)
            assert pending is not None
            part, future = pending
            pending = None
            conflicted += _inserted(jobs, ids, part, await future, results)
        finally:
            if pending is not None and not pending[1].done():
                pending[1].cancel()
                with contextlib.suppress(BaseException):
                    await pending[1]
        return conflicted

    def _enqueue_params(
        self,
        jobs: list[NewJob],
        ids: list[str | None],
        todo: list[int],
        now: datetime | None,
        columns: GraphColumns | None = None,
    ) -> Params:
        """The parameters of an enqueue statement for the jobs ``todo``; jobs without an id get
        one here, in order."""
        missing = [i for i in todo if ids[i] is None]
        for i, job_id in zip(missing, new_job_ids(len(missing)), strict=True):
            ids[i] = job_id
        batch = [jobs[i] for i in todo] if len(todo) < len(jobs) else jobs
        # A job with parents still to succeed waits, and a job's children are counted on it;
        # a batch without dependencies sends neither.
        if columns is None:
            left = children = None
        else:
            left = _column([columns[0].get(j.id or "") for j in batch])
            children = _column([columns[1].get(j.id or "") for j in batch])
        return {
            "ids": ",".join([ids[i] for i in todo]),  # type: ignore[misc]
            "queues": _joined("queue", [j.queue for j in batch]),
            "types": _joined("type", [j.type for j in batch]),
            "payloads": _joined("payload", [j.payload for j in batch]),
            # Options no job of the batch sets go as NULL (unnest pads them): dumping a column
            # of NULLs costs the client more than the rest of the row.
            "tags": _column([join_tags(j.tags) for j in batch]),
            "keys": _column([j.idempotency_key for j in batch]),
            "priorities": ",".join([str(j.priority) for j in batch]),
            "max_attempts": _column([j.max_attempts for j in batch]),
            "timeouts": _column([finite(j.timeout_seconds) for j in batch]),
            "run_ats": _column([j.run_at for j in batch]),
            "delays": _column([finite(j.delay_seconds) for j in batch]),
            "created_by": _column([j.created_by for j in batch]),
            "traces": _column([j.trace_context for j in batch]),
            "partitions": _column([j.partition for j in batch]),
            "expires_ats": _column([j.expires_at for j in batch]),
            "expires_afters": _column([finite(j.expires_after_seconds) for j in batch]),
            "waits": left,
            "children": children,
            "now": now,
            "channel": self.channel,
            "wake": list({j.queue: None for j in batch}),  # read by jobs_enqueue_plain only
        }

    # -- operator moves ---------------------------------------------------------------------

    async def jobs_cancel(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> CancelResult:
        wanted = list(ids)
        params = {"actor": actor, "now": now, "channel": self.channel}
        try:
            rows = await self._cancel_locked(params, wanted)
        except psycopg.IntegrityError:
            # One id collides with a row already in the DLQ: cancel each in a savepoint of one
            # transaction, so that one cannot block the others.
            rows = []
            async with self.pool.connection() as conn, conn.transaction():
                for job_id in wanted:
                    try:
                        async with conn.transaction():
                            await conn.execute(self._q["jobs_cancel_lock"], {"ids": [job_id]})
                            rows += await self._run(
                                conn, "jobs_cancel", {**params, "ids": [job_id]}
                            )
                    except psycopg.IntegrityError:
                        continue
        cancelled = {row[0] for row in rows if row[1] is True}
        requested = {row[0] for row in rows if row[1] is False}
        return CancelResult(
            cancelled=tuple(i for i in wanted if i in cancelled),
            requested=tuple(i for i in wanted if i in requested),
            not_found=tuple(i for i in wanted if i not in cancelled and i not in requested),
        )

    async def _cancel_locked(self, params: Params, ids: list[str]) -> list[tuple[Any, ...]]:
        """Lock the hot rows first, then cancel, in one transaction (pipelined: one round trip).

        The cancel statement alone reads each row as its snapshot saw it: a row a claim or a
        start held (and changed to Processing) when it began was then neither deleted (no
        longer Pending or Fetched) nor marked (not yet Processing in the snapshot), and the
        answer was ``not_found``. The lock waits for such a transaction to end, and the cancel
        statement, which runs after it with a snapshot of its own, sees the row as committed.
        """
        async with self.pool.connection() as conn:
            async with conn.pipeline(), conn.transaction():
                await conn.execute(self._q["jobs_cancel_lock"], {"ids": ids})
                cur = await conn.execute(self._q["jobs_cancel"], {**params, "ids": ids})
            return await cur.fetchall()

    async def jobs_edit(self, id: str, actor: str, edits: Edits, now: datetime | None) -> bool:
        params = {**edit_params(edits), "id": id, "actor": actor, "now": now}
        return await self._count("jobs_edit", params) > 0

    async def jobs_advance(
        self, seconds: float, queues: list[str] | None, now: datetime | None
    ) -> int:
        params = {"seconds": seconds, "queues": queues, "now": now, "channel": self.channel}
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q["jobs_advance"], params)
            row = await cur.fetchone()
        return int(row[0]) if row else 0


def _holding(
    conn: psycopg.AsyncConnection[Any], needed: bool
) -> contextlib.AbstractAsyncContextManager[Any]:
    """A transaction around several enqueue statements when ``needed``, else nothing."""
    return conn.transaction() if needed else contextlib.nullcontext()


async def _rows(execute: Any, query: LiteralString, params: Params) -> list[Any]:
    return await _fetchall(await execute(query, params))


def _inserted(
    jobs: list[NewJob],
    ids: list[str | None],
    part: list[int],
    rows: list[Any],
    results: list[EnqueueResult | None],
) -> list[int]:
    """Record the jobs of ``part`` an enqueue statement inserted; returns the others (their key
    was taken). Keyed rows come back by id, the rest as a count."""
    inserted: set[str] = set()
    unkeyed = 0
    for job_id, count in rows:
        if job_id is not None:
            inserted.add(job_id)
        elif count is not None:
            unkeyed += count
    conflicted: list[int] = []
    for i in part:
        job_id = ids[i]
        assert job_id is not None
        if jobs[i].idempotency_key is None:
            unkeyed -= 1
            results[i] = EnqueueResult(id=job_id, duplicate=False)
        elif job_id in inserted:
            results[i] = EnqueueResult(id=job_id, duplicate=False)
        else:
            conflicted.append(i)
    if unkeyed:
        raise StorageError("enqueue: the server inserted a different number of jobs")
    return conflicted


def _decided(outcome: int, job_id: str) -> EnqueueResult:
    """The result of an enqueue with on_conflict, from what its statement returned (0
    replaced, 1 inserted, 2 superseded)."""
    if outcome == 0:
        return EnqueueResult(id=job_id, duplicate=True, changed="replaced")
    if outcome == 2:
        return EnqueueResult(id=job_id, duplicate=False, changed="superseded")
    return EnqueueResult(id=job_id, duplicate=False)


def _joined(field: str, values: list[str]) -> str:
    """Values joined by chr(31) for ``string_to_array`` (validation keeps it out of them)."""
    text = "\x1f".join(values)
    if text.count("\x1f") != len(values) - 1:
        raise ValidationError(field, "must not contain control characters")
    return text


def _column(values: list[Any]) -> list[Any] | None:
    """An enqueue column, or None when every value is None."""
    return None if values.count(None) == len(values) else values


async def _fetchall(cur: Any) -> list[Any]:
    """Rows of an async or a sync cursor (a caller's connection may be either)."""
    if isinstance(cur, psycopg.AsyncCursor):
        return await cur.fetchall()
    return list(cur.fetchall())

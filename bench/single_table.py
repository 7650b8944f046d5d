"""The single-table baseline the Three Pillars design is measured against: one ``jobs`` table with
a status column, and the same storage operations chokaq's backend offers (enqueue, fetch with
SKIP LOCKED in priority/due order straight into processing, finalize by UPDATE, the dashboard
summary by COUNT(*) GROUP BY status, and an archive page of succeeded rows with a filter).

It is given the best reasonable indexes, not a straw man: a partial fetch index on pending rows in
claim order (the same key chokaq's hot table uses), a partial index on fetched/processing rows,
the same UUIDv7 ids, fillfactor 80, and an index on (status, finished_at) for the archive page.
Bench code may hold SQL; this module is never imported by the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from chokaq.ids import new_job_id

# Statuses: 0 pending, 1 fetched, 2 processing, 3 succeeded, 4 failed.
SCHEMA_SQL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE {schema}.jobs (
    id               uuid PRIMARY KEY,
    queue            text NOT NULL,
    type             text NOT NULL,
    payload          text NOT NULL,
    priority         integer NOT NULL DEFAULT 10,
    status           smallint NOT NULL DEFAULT 0,
    attempt_count    integer NOT NULL DEFAULT 0,
    worker_id        text,
    lease_token      uuid,
    heartbeat_at     timestamptz,
    scheduled_at     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    duration_seconds double precision,
    failure_reason   smallint,
    error            text
) WITH (fillfactor = 80);
CREATE INDEX jobs_fetch ON {schema}.jobs (queue, priority DESC, scheduled_at, created_at)
    WHERE status = 0;
CREATE INDEX jobs_active ON {schema}.jobs (queue, status) WHERE status IN (1, 2);
CREATE INDEX jobs_finished ON {schema}.jobs (status, finished_at DESC);
"""

# History: 90 % succeeded, 10 % failed, ten job types, finished over the last 30 days.
HISTORY_SQL = """
INSERT INTO {schema}.jobs (id, queue, type, payload, priority, status, attempt_count, worker_id,
                           scheduled_at, created_at, started_at, updated_at, finished_at,
                           duration_seconds, failure_reason, error)
SELECT gen_random_uuid(), 'default', 'bench.t' || (g %% 10), '{{"i": ' || g || '}}', 10,
       CASE WHEN g %% 10 = 0 THEN 4 ELSE 3 END, 1, 'bench',
       f - interval '1 second', f - interval '1 second', f - interval '1 millisecond', f, f,
       0.001, CASE WHEN g %% 10 = 0 THEN 6 END,
       CASE WHEN g %% 10 = 0 THEN 'RuntimeError: boom ' || (g %% 7) END
FROM (SELECT g, now() - (g %% 2592000) * interval '1 second' AS f
      FROM generate_series(1, %(rows)s) AS g) AS s
"""

ENQUEUE_SQL = """
INSERT INTO {schema}.jobs (id, queue, type, payload, priority, status, scheduled_at, created_at,
                           updated_at)
SELECT i, 'default', t, p, 10, 0, now(), now(), now()
FROM unnest(%(ids)s::uuid[], %(types)s::text[], %(payloads)s::text[]) AS u(i, t, p)
"""

FETCH_SQL = """
WITH picked AS (
    SELECT id FROM {schema}.jobs
    WHERE status = 0 AND queue = 'default' AND scheduled_at <= now()
    ORDER BY priority DESC, scheduled_at, created_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobs AS j
SET status = 2, worker_id = %(worker)s, lease_token = gen_random_uuid(),
    attempt_count = j.attempt_count + 1, started_at = now(), heartbeat_at = now(),
    updated_at = now()
FROM picked
WHERE j.id = picked.id
RETURNING j.id, j.lease_token, j.type, j.payload
"""

FINALIZE_SQL = """
UPDATE {schema}.jobs AS j
SET status = 3, finished_at = now(), duration_seconds = m.duration, lease_token = NULL,
    updated_at = now()
FROM unnest(%(ids)s::uuid[], %(tokens)s::uuid[], %(durations)s::float8[])
     AS m(id, token, duration)
WHERE j.id = m.id AND j.lease_token = m.token AND j.status IN (1, 2)
RETURNING j.id
"""

SUMMARY_SQL = "SELECT status, count(*) FROM {schema}.jobs GROUP BY status"

# The archive page as chokaq's jobs_page returns it: one page plus the total of matches.
ARCHIVE_PAGE_SQL = """
SELECT id, queue, type, attempt_count, created_at, started_at, finished_at, duration_seconds
FROM {schema}.jobs
WHERE status = 3 AND type = %(type)s AND finished_at >= %(since)s
ORDER BY finished_at DESC
LIMIT %(limit)s
"""
ARCHIVE_COUNT_SQL = """
SELECT count(*) FROM {schema}.jobs WHERE status = 3 AND type = %(type)s AND finished_at >= %(since)s
"""


def _q(template: str, schema: str) -> sql.Composed:
    return sql.SQL(template).format(schema=sql.Identifier(schema))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Claim:
    id: str
    token: str


class SingleTable:
    """The baseline's operations on one async connection (autocommit: each is one statement)."""

    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.schema = schema
        self.conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None

    async def open(self) -> None:
        self.conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    def _c(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        assert self.conn is not None
        return self.conn

    async def install(self) -> None:
        await self._c().execute(_q(SCHEMA_SQL, self.schema))

    async def load_history(self, rows: int) -> None:
        if rows:
            await self._c().execute(_q(HISTORY_SQL, self.schema), {"rows": rows})
        await self._c().execute(
            sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(self.schema, "jobs"))
        )

    async def enqueue(self, count: int, job_type: str = "bench.noop") -> None:
        await self._c().execute(
            _q(ENQUEUE_SQL, self.schema),
            {
                "ids": [new_job_id() for _ in range(count)],
                "types": [job_type] * count,
                "payloads": ['{"n": 1}'] * count,
            },
        )

    async def fetch(self, worker_id: str, limit: int) -> list[Claim]:
        cur = await self._c().execute(
            _q(FETCH_SQL, self.schema), {"limit": limit, "worker": worker_id}
        )
        return [Claim(str(row[0]), str(row[1])) for row in await cur.fetchall()]

    async def finalize(self, claims: Sequence[Claim]) -> int:
        cur = await self._c().execute(
            _q(FINALIZE_SQL, self.schema),
            {
                "ids": [c.id for c in claims],
                "tokens": [c.token for c in claims],
                "durations": [0.0] * len(claims),
            },
        )
        return len(await cur.fetchall())

    async def summary(self) -> dict[int, int]:
        cur = await self._c().execute(_q(SUMMARY_SQL, self.schema))
        return {int(s): int(n) for s, n in await cur.fetchall()}  # type: ignore[call-overload]

    async def archive_page(self, job_type: str, since: object, limit: int = 50) -> int:
        params = {"type": job_type, "since": since, "limit": limit}
        cur = await self._c().execute(_q(ARCHIVE_PAGE_SQL, self.schema), params)
        await cur.fetchall()
        cur = await self._c().execute(_q(ARCHIVE_COUNT_SQL, self.schema), params)
        row = await cur.fetchone()
        return int(row[0]) if row else 0  # type: ignore[call-overload]

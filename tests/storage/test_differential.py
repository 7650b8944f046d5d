"""The differential test: the same calls, bad and edge inputs included, give the same answers on
SQLite and PostgreSQL.

Each test seeds both stores with the same jobs (fixed ids, an injected clock), then runs one
operation's table of calls against both, in order, and demands the same outcome for each: the
same value, or a ``ValidationError`` naming the same field with the same limit, or the same kind
of storage error. Lease tokens and times taken from a database's own clock are the only things
left out of the comparison. A storage operation without a table here fails
``test_every_operation_has_a_table``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conformance import T0, at
from tests.conftest import PG_URL, drop_schema, require_postgres, schedule_declaration

from chokaq.errors import ChokaqError, ValidationError
from chokaq.ids import is_job_id
from chokaq.models import (
    FailMove,
    FailureReason,
    Heartbeat,
    JobFilter,
    JobStatus,
    LeaderTerm,
    Lease,
    NewJob,
    PageKey,
    Pillar,
    RetryMove,
    ScheduleDeclaration,
    StepWrite,
    SucceedMove,
    TypeLimit,
    WorkerInfo,
)
from chokaq.storage import UNSET, Backend, create_backend
from chokaq.storage.checks import SORT_COLUMNS

pytestmark = pytest.mark.postgres


def _id(n: int) -> str:
    return str(uuid.UUID(int=n))


A, B, C, D, D2, E, F, G, H = (_id(n) for n in range(1, 10))
W1, W2, W3, W4, W5, W6 = (_id(n) for n in range(20, 26))  # jobs of workflows
X1, X2, X3 = (_id(n) for n in range(30, 33))  # jobs released on any outcome
Y1, Y2, Y3 = (_id(n) for n in range(40, 43))  # a batch type's jobs
UNKNOWN = _id(99)
FIXED = {A, B, C, D, D2, E, F, G, H, W1, W2, W3, W4, W5, W6, X1, X2, X3, Y1, Y2, Y3, UNKNOWN}
NAIVE = datetime(2025, 1, 1, 12, 0, 0)
PLUS_14 = timezone(timedelta(hours=14))


@dataclasses.dataclass
class Seeded:
    """One store after seeding: the leases its claims got (tokens differ between stores)."""

    running: Lease  # C, Processing
    fetched: Lease  # G, Fetched

    def stale(self, lease: Lease) -> Lease:
        return dataclasses.replace(lease, token=_id(777))


async def _seed(backend: Backend) -> Seeded:
    async def put(queue: str, *ids: str, **fields: Any) -> None:
        jobs = [NewJob(type="t", queue=queue, id=i, **fields) for i in ids]
        await backend.jobs_enqueue(jobs, now=at(0))

    async def claim(queue: str, n: int, *, start: bool = True, when: float = 1) -> list[Lease]:
        claimed = await backend.jobs_fetch(
            worker_id="w1", limit=n, queues=[queue], start=start, now=at(when)
        )
        return [job.lease for job in sorted(claimed, key=lambda j: j.id)]

    await put("run", C)
    [running] = await claim("run", 1)
    await put("pre", G)
    [fetched] = await claim("pre", 1, start=False)
    await put("done", D, D2)
    done = await claim("done", 2)
    await backend.jobs_finalize(
        moves=[SucceedMove(done[0], 1.5), SucceedMove(done[1], None)], now=at(2)
    )
    await put("dead", E)
    [dead] = await claim("dead", 1)
    await backend.jobs_finalize(
        moves=[FailMove(dead, FailureReason.TRANSIENT, "boom\n  at line 2")], now=at(3)
    )
    await put("dead", F)
    await backend.jobs_cancel(ids=[F], actor="ops", now=at(4))
    await put("q", A, tags=("x",), priority=5)
    await put("q", B, idempotency_key="k1")
    await backend.worker_beat(_worker("w1"), now=at(5))
    await _dead_letter_families(backend)
    return Seeded(running=running, fetched=fetched)


def _batch_jobs(backend: Backend) -> Awaitable[Any]:
    """Three jobs of the batch type ``bt`` in queue ``bq``: tenants a, b, a, in one enqueue, due
    a second apart from at(20) (so that the fetch order is the same on both backends)."""
    jobs = [
        NewJob("bt", json.dumps({"tenant": tenant}), queue="bq", id=job_id, run_at=at(20 + i))
        for i, (job_id, tenant) in enumerate(((Y1, "a"), (Y2, "b"), (Y3, "a")))
    ]
    return backend.jobs_enqueue(jobs, now=at(20))


def _batch(backend: Backend, when: float, **options: Any) -> Awaitable[Any]:
    """A batch claim of ``bt`` at ``at(when)`` (limit 3, wait 60 s, keyed by tenant unless
    ``options`` say otherwise)."""
    call = {"worker_id": "w2", "type": "bt", "limit": 3, "wait_seconds": 60.0, "key": "tenant"}
    return backend.jobs_claim_batch(**{**call, **options}, now=at(when))


def _unique(job_id: str, seconds: float | None, key: str = "u1") -> NewJob:
    """A job of queue ``u`` keyed ``key``, unique for ``seconds``."""
    return NewJob("t", queue="u", id=job_id, idempotency_key=key, unique_for_seconds=seconds)


def _conflict(key: str | None, mode: str, payload: str = '{"v": 2}', **fields: Any) -> NewJob:
    """A job of queue ``q`` keyed ``key`` enqueued with ``on_conflict=mode``."""
    return NewJob("t", queue="q", payload=payload, idempotency_key=key, on_conflict=mode, **fields)


def scenario(call: Call) -> Call:
    """Marks a case that makes several storage calls (a setup, then the call compared): the
    observation test runs it without counting one observation for it."""
    call.scenario = True  # type: ignore[attr-defined]
    return call


async def _supersede(backend: Backend, mode: str) -> list[Any]:
    """Enqueue a keyed job, start it, enqueue the key again with ``mode``: the outcomes, and
    what became of the running job."""
    queue, key = f"oc-{mode}", f"run-{mode}"
    jobs = [NewJob("t", queue=queue, idempotency_key=key, on_conflict=mode) for _ in range(2)]
    [first] = await backend.jobs_enqueue(jobs[:1], now=at(10))
    await backend.jobs_fetch(worker_id="w9", limit=1, queues=[queue], start=True, now=at(10))
    [second] = await backend.jobs_enqueue(jobs[1:], now=at(11))
    running, new = await backend.job_get(first.id), await backend.job_get(second.id)
    return [
        first,
        second,
        (running.status, running.idempotency_key, running.cancel_requested_at),
        running.cancelled_by == f"superseded by {second.id}",
        (new.status, new.idempotency_key, new.scheduled_at),
    ]


async def _supersession_both_ways(backend: Backend) -> list[Any]:
    """A running job superseded with cancel_running: what each of the two jobs says."""
    queue = "oc-both"
    jobs = [NewJob("t", queue=queue, idempotency_key="both", on_conflict="cancel_running")] * 2
    [first] = await backend.jobs_enqueue(jobs[:1], now=at(10))
    await backend.jobs_fetch(worker_id="w9", limit=1, queues=[queue], start=True, now=at(10))
    [second] = await backend.jobs_enqueue(jobs[1:], now=at(11))
    old = await backend.job_supersession(id=first.id)
    new = await backend.job_supersession(id=second.id)
    return [old, new, old.superseded_by == second.id, new.supersedes == first.id]


def _expiring(
    job_id: str,
    expires_at: datetime | None,
    after: float | None = None,
    *,
    queue: str = "x",
    run_at: datetime | None = None,
    delay: float | None = None,
) -> NewJob:
    return NewJob(
        "t",
        queue=queue,
        id=job_id,
        expires_at=expires_at,
        expires_after_seconds=after,
        run_at=run_at,
        delay_seconds=delay,
    )


def _worker(worker_id: str, **changes: Any) -> WorkerInfo:
    info = WorkerInfo(
        id=worker_id,
        hostname="h",
        pid=1,
        queues=("q",),
        concurrency=4,
        desired_concurrency=None,
        running=0,
        state="running",
        started_at=T0,
        heartbeat_at=T0,
    )
    return dataclasses.replace(info, **changes)


Call = Callable[[Backend, Seeded], Awaitable[Any]]


def _every_sort() -> list[tuple[str, Call]]:
    keys = sorted({key for columns in SORT_COLUMNS.values() for key in columns} | {"bogus"})
    calls: list[tuple[str, Call]] = []
    for pillar in Pillar:
        for key in keys:
            for descending in (True, False):

                def call(b: Backend, s: Seeded, p=pillar, k=key, d=descending) -> Any:
                    return b.jobs_page(pillar=p, sort=k, descending=d)

                calls.append((f"{pillar.value} by {key} {'desc' if descending else 'asc'}", call))
    return calls


def _f(**fields: Any) -> JobFilter:
    return JobFilter(**fields)


# Errors whose families (chokaq.storage.families in Python on SQLite, the SQL function of
# migration 008 on PostgreSQL) must come out the same on both backends.
FAMILY_ERRORS = (
    "card 4242 declined",
    "card 1111 declined\n  Traceback (most recent call last):",
    "  \n\tjob 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77 lost ",
    "ptr 0xdeadBEEF obj 507f1f77bcf86cd799439011 n 12345678 deadbeefcafe",
    "can't reach \"db-1\" at 10.0.0.1:5432 for 'bob' and 'unclosed",
    "Error404 v2 30s 1.2.3 -5 abcdef12 ABCDEF1234",
    "\u00e9t\u00e9 12 \u00fcn\u00efcode \u00bd \u0663 a\u00a0b 7 \x0bvt",
    "x" * 150 + " 12345 tail",
    "\r\nline\r\nsecond",
    "",
)


async def _dead_letter_families(b: Backend) -> None:
    """Dead-letter one job per ``FAMILY_ERRORS`` entry, in queue "fam" (part of ``_seed``, so
    that each case of a table stays one storage call)."""
    ids = [_id(200 + i) for i in range(len(FAMILY_ERRORS))]
    await b.jobs_enqueue([NewJob("t", queue="fam", id=job_id) for job_id in ids], now=T0)
    claimed = await b.jobs_fetch(worker_id="w9", limit=len(ids), queues=["fam"], now=at(6))
    leases = {job.id: job.lease for job in claimed}
    moves = [
        FailMove(leases[job_id], FailureReason.TRANSIENT, error)
        for job_id, error in zip(ids, FAMILY_ERRORS, strict=True)
    ]
    await b.jobs_finalize(moves=moves, now=at(7))


def _term(holder: str = "a", epoch: int = 1, name: str = "maintenance") -> LeaderTerm:
    """A term as a caller names it (only name, holder and epoch are compared by a store)."""
    return LeaderTerm(name, holder, epoch, T0)


def _claim(b: Backend, holder: str = "a", term: LeaderTerm | None = None, **kw: Any) -> Any:
    kw.setdefault("lease_seconds", 60)
    kw.setdefault("name", "maintenance")
    return b.leadership_claim(holder=holder, term=term, **kw)


def _decl(name: str = "s", **fields: Any) -> ScheduleDeclaration:
    return schedule_declaration(name, **{"type": "t", "queue": "q1", "kwargs": '{"n": 1}'} | fields)


def _declared(b: Backend, *declarations: ScheduleDeclaration, when: float = 0) -> Any:
    return b.schedules_declare(list(declarations) or [_decl()], now=at(when))


# The schedule each store last read (``_read``), for ``schedule_fire``: one call per case.
_READ: dict[int, Any] = {}


async def _read(b: Backend, name: str = "s", when: float = 61) -> Any:
    _READ[id(b)] = schedule = await b.schedule_get(name, now=at(when))
    return schedule


_FIRED: dict[int, Any] = {}  # the reading each store last fired from (stale afterwards)


def _fired(b: Backend, when: float = 61) -> Any:
    _FIRED[id(b)] = schedule = _READ.pop(id(b))
    return b.schedule_fire(schedule, now=at(when))


def _read_stale(b: Backend) -> Any:
    return _FIRED[id(b)]


def _job(job_id: str, *after: str, **fields: Any) -> NewJob:
    return NewJob(type="t", queue="wf", id=job_id, after=after, **fields)


def _diamond(b: Backend, when: float = 10) -> Any:
    """W1 -> (W2, W3) -> W4, enqueued in one call."""
    jobs = [_job(W1), _job(W2, W1), _job(W3, W1), _job(W4, W2, W3)]
    return b.jobs_enqueue(jobs, now=at(when))


_CLAIMED: dict[int, Any] = {}  # the jobs each store's last ``_take`` claimed


async def _take(b: Backend, queue: str, when: float) -> Any:
    """Claim every job of ``queue`` due at ``when`` (moved by the next ``_move``)."""
    claimed = await b.jobs_fetch(worker_id="w3", limit=50, queues=[queue], start=True, now=at(when))
    _CLAIMED[id(b)] = sorted(claimed, key=lambda j: j.id)
    return claimed


def _move(b: Backend, when: float, *, fail: bool = False) -> Any:
    """Move the jobs ``_take`` claimed: succeed with a result (the job's id), or fail."""
    moves: list[Any] = [
        FailMove(job.lease, FailureReason.FATAL_ERROR, "no")
        if fail
        else SucceedMove(job.lease, 0.5, result=json.dumps({"id": job.id}))
        for job in _CLAIMED.pop(id(b))
    ]
    return b.jobs_finalize(moves=moves, now=at(when))


# For every storage operation: (label, call) run in order against both stores.
CASES: dict[str, list[tuple[str, Call]]] = {
    "schema_version": [("current", lambda b, s: b.schema_version())],
    "migrate": [
        ("again", lambda b, s: b.migrate()),
        ("walk", lambda b, s: b.migrate(via_migrations=True)),
    ],
    "job_supersession": [
        ("unknown", lambda b, s: b.job_supersession(id=UNKNOWN)),
        ("bad id", lambda b, s: b.job_supersession(id="nope")),
        ("both ways", scenario(lambda b, s: _supersession_both_ways(b))),
    ],
    "jobs_enqueue": [
        ("empty", lambda b, s: b.jobs_enqueue([], now=at(10))),
        ("one", lambda b, s: b.jobs_enqueue([NewJob(type="t", queue="q", id=H)], now=at(10))),
        ("duplicate key", lambda b, s: b.jobs_enqueue([NewJob(type="t", idempotency_key="k1")])),
        ("duplicate id", lambda b, s: b.jobs_enqueue([NewJob(type="t", id=A)], now=at(10))),
        ("blank queue", lambda b, s: b.jobs_enqueue([NewJob(type="t", queue="")])),
        ("long type", lambda b, s: b.jobs_enqueue([NewJob(type="t" * 300)])),
        # A name only the bidi override U+202E is an invisible queue; refused at the seam.
        ("bidi queue", lambda b, s: b.jobs_enqueue([NewJob(type="t", queue="\u202e")])),
        ("zero-width type", lambda b, s: b.jobs_enqueue([NewJob(type="a\u200bb")])),
        ("bidi tag", lambda b, s: b.jobs_enqueue([NewJob(type="t", tags=("\u2066x",))])),
        ("naive run_at", lambda b, s: b.jobs_enqueue([NewJob(type="t", run_at=NAIVE)])),
        (
            "year 1 at +14:00",
            lambda b, s: b.jobs_enqueue(
                [NewJob(type="t", run_at=datetime(1, 1, 1, tzinfo=PLUS_14))]
            ),
        ),
        (
            "year 9999",
            lambda b, s: b.jobs_enqueue(
                [NewJob(type="t", run_at=datetime(9999, 12, 31, tzinfo=UTC))]
            ),
        ),
        ("negative delay", lambda b, s: b.jobs_enqueue([NewJob(type="t", delay_seconds=-1)])),
        ("bad payload", lambda b, s: b.jobs_enqueue([NewJob(type="t", payload="{bad")])),
        ("deep payload", lambda b, s: b.jobs_enqueue([NewJob(type="t", payload="[" * 10**5)])),
        ("NaN payload", lambda b, s: b.jobs_enqueue([NewJob(type="t", payload="[NaN]")])),
        ("repeated key", lambda b, s: b.jobs_enqueue([NewJob(type="t", payload='{"a":1,"a":1}')])),
        ("surrogate escape", lambda b, s: b.jobs_enqueue([NewJob(type="t", payload='"\\udc00"')])),
        # Issue 32: an empty key meant no key, " k1 " was trimmed into the seeded "k1" (a
        # duplicate), and an expiry before the job was due was taken (EXPIRED at its claim).
        ("empty key", lambda b, s: b.jobs_enqueue([NewJob(type="t", idempotency_key="")])),
        ("padded key", lambda b, s: b.jobs_enqueue([NewJob(type="t", idempotency_key=" k1 ")])),
        # Issue 36: enqueue conflicts, the bad ones refused naming on_conflict, the good ones
        # deciding alike (the seeded "k1" is held by B, Pending).
        ("unknown on_conflict", lambda b, s: b.jobs_enqueue([_conflict("k1", "merge")])),
        ("on_conflict no key", lambda b, s: b.jobs_enqueue([_conflict(None, "replace")])),
        (
            "on_conflict unique",
            lambda b, s: b.jobs_enqueue([_conflict("k1", "replace", unique_for_seconds=5.0)]),
        ),
        ("keep k1", lambda b, s: b.jobs_enqueue([_conflict("k1", "keep")], now=at(10))),
        ("replace k1", lambda b, s: b.jobs_enqueue([_conflict("k1", "replace")], now=at(10))),
        ("k1 replaced", lambda b, s: b.job_get(B)),
        (
            "replace_payload k1",
            lambda b, s: b.jobs_enqueue(
                [_conflict("k1", "replace_payload", delay_seconds=60.0)], now=at(11)
            ),
        ),
        ("k1 throttled", lambda b, s: b.job_get(B)),
        (
            "replace new key in a batch",
            lambda b, s: b.jobs_enqueue(
                [_conflict("k2", "cancel_running"), _conflict("k2", "replace", '{"v": 3}')],
                now=at(12),
            ),
        ),
        ("supersede", scenario(lambda b, s: _supersede(b, "replace"))),
        ("latest wins", scenario(lambda b, s: _supersede(b, "cancel_running"))),
        ("conflict counters", lambda b, s: b.stats_queues(now=at(20))),
        ("expiry past", lambda b, s: b.jobs_enqueue([_expiring(UNKNOWN, at(5))], now=at(10))),
        ("expiry due", lambda b, s: b.jobs_enqueue([_expiring(UNKNOWN, at(10))], now=at(10))),
        (
            "expiry inside delay",
            lambda b, s: b.jobs_enqueue([_expiring(UNKNOWN, at(12), delay=5)], now=at(10)),
        ),
        (
            "expiry short of run_at",
            lambda b, s: b.jobs_enqueue([_expiring(UNKNOWN, None, 5, run_at=at(20))], now=at(10)),
        ),
        ("none of them written", lambda b, s: b.job_get(UNKNOWN)),
        ("naive now", lambda b, s: b.jobs_enqueue([NewJob(type="t")], now=NAIVE)),
        ("tags as text", lambda b, s: b.jobs_enqueue([NewJob(type="t", tags="abc")])),  # type: ignore[arg-type]
        ("too many", lambda b, s: b.jobs_enqueue([NewJob(type="t")] * 100_001)),
        ("connection not psycopg", lambda b, s: b.jobs_enqueue([NewJob(type="t")], connection="x")),
        ("after unknown", lambda b, s: b.jobs_enqueue([_job(W1, UNKNOWN)], now=at(10))),
        ("after itself", lambda b, s: b.jobs_enqueue([_job(W1, W1)], now=at(10))),
        ("after not an id", lambda b, s: b.jobs_enqueue([_job(W1, "nope")], now=at(10))),
        ("after as text", lambda b, s: b.jobs_enqueue([NewJob(type="t", after=A)], now=at(10))),  # type: ignore[arg-type]
        (
            "cycle",
            lambda b, s: b.jobs_enqueue([_job(W1, W2), _job(W2, W3), _job(W3, W1)], now=at(10)),
        ),
        (
            "key with after",
            lambda b, s: b.jobs_enqueue([_job(W1, A, idempotency_key="k9")], now=at(10)),
        ),
        (
            "key on a parent",
            lambda b, s: b.jobs_enqueue([_job(W1, idempotency_key="k9"), _job(W2, W1)], now=at(10)),
        ),
        ("repeated id", lambda b, s: b.jobs_enqueue([_job(W1), _job(W1), _job(W2, W1)])),
        ("nothing written", lambda b, s: b.job_get(W1)),
        ("diamond", lambda b, s: _diamond(b)),
        ("after stored", lambda b, s: b.jobs_enqueue([_job(W5, D, E, A)], now=at(11))),
        ("waiting", lambda b, s: b.job_get(W5)),
        ("after archived only", lambda b, s: b.jobs_enqueue([_job(W6, D)], now=at(11))),
        ("released at once", lambda b, s: b.job_get(W6)),
        ("stats", lambda b, s: b.stats_queues(now=at(12))),
        ("summary", lambda b, s: b.stats_summary()),
        ("fetch skips waiting", lambda b, s: b.jobs_fetch(worker_id="w2", limit=9, queues=["wf"])),
        # Uniqueness windows: the key names the job that opened its window until it ends.
        ("unique without key", lambda b, s: b.jobs_enqueue([NewJob("t", unique_for_seconds=9)])),
        ("unique 0 s", lambda b, s: b.jobs_enqueue([_unique(H, 0)], now=at(10))),
        ("unique opens", lambda b, s: b.jobs_enqueue([_unique(W1, 100)], now=at(10))),
        ("unique run", lambda b, s: _take(b, "u", 20)),
        ("unique done", lambda b, s: _move(b, 21)),
        ("inside the window", lambda b, s: b.jobs_enqueue([_unique(W2, 100)], now=at(50))),
        ("hot key, no window", lambda b, s: b.jobs_enqueue([_unique(W3, None)], now=at(60))),
        ("window over, key hot", lambda b, s: b.jobs_enqueue([_unique(W4, 100)], now=at(200))),
        ("window of the hot job", lambda b, s: b.jobs_enqueue([_unique(W5, 100)], now=at(250))),
        ("one batch", lambda b, s: b.jobs_enqueue([_unique(W5, 9), _unique(W6, 9)], now=at(260))),
        ("not written", lambda b, s: b.job_get(W2)),
        # after_outcome and pass_results: checked before anything is written.
        ("outcome unknown", lambda b, s: b.jobs_enqueue([_job(X1, A, after_outcome="all")])),
        ("outcome None", lambda b, s: b.jobs_enqueue([_job(X1, A, after_outcome=None)])),
        ("pass without after", lambda b, s: b.jobs_enqueue([_job(X1, pass_results=True)])),
        ("pass not a bool", lambda b, s: b.jobs_enqueue([_job(X1, A, pass_results=1)])),
        ("in a batch", lambda b, s: b.jobs_enqueue([_job(X2), _job(X1, X2, after_outcome="")])),
        ("none written", lambda b, s: b.job_get(X2)),
        # A parent already in the DLQ (E) has finished for a child on any outcome, not for one
        # waiting on success; cancelling a hot parent (A) releases the last.
        ("any after the DLQ", lambda b, s: b.jobs_enqueue([_job(X1, E, D, after_outcome="any")])),
        ("runs at once", lambda b, s: b.job_get_related(id=X1)),
        ("success after the DLQ", lambda b, s: b.jobs_enqueue([_job(X2, E, D)], now=at(300))),
        ("blocked", lambda b, s: b.job_get_related(id=X2)),
        (
            "any after hot",
            lambda b, s: b.jobs_enqueue(
                [_job(X3, A, E, after_outcome="any", pass_results=True)], now=at(300)
            ),
        ),
        ("waits, not blocked", lambda b, s: b.job_outcome(id=X3)),
        ("parent cancelled", lambda b, s: b.jobs_cancel(ids=[A], actor="ops", now=at(301))),
        ("released", lambda b, s: b.job_get_related(id=X3)),
        ("outcomes", lambda b, s: b.job_parent_outcomes(id=X3)),
    ],
    "jobs_fetch": [
        ("limit 0", lambda b, s: b.jobs_fetch(worker_id="w2", limit=0, now=at(10))),
        ("limit -1", lambda b, s: b.jobs_fetch(worker_id="w2", limit=-1)),
        ("limit huge", lambda b, s: b.jobs_fetch(worker_id="w2", limit=10**6)),
        ("limit True", lambda b, s: b.jobs_fetch(worker_id="w2", limit=True)),  # type: ignore[arg-type]
        ("no queues", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=[])),
        ("queues as text", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues="q")),
        ("blank queue", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=[""])),
        ("long worker", lambda b, s: b.jobs_fetch(worker_id="x" * 300, limit=5)),
        ("blank worker", lambda b, s: b.jobs_fetch(worker_id="", limit=5)),
        ("naive now", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, now=NAIVE)),
        (
            "excluded",
            lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, exclude_types=["t"], now=at(10)),
        ),
        ("one", lambda b, s: b.jobs_fetch(worker_id="w2", limit=1, queues=["q"], now=at(10))),
        (
            "started",
            lambda b, s: b.jobs_fetch(
                worker_id="w2", limit=5, queues=["q"], start=True, now=at(11)
            ),
        ),
    ],
    "jobs_claim_batch": [
        ("limit 0", lambda b, s: _batch(b, 30, limit=0)),
        ("limit above 10,000", lambda b, s: _batch(b, 30, limit=10_001)),
        ("wait NaN", lambda b, s: _batch(b, 30, wait_seconds=math.nan)),
        ("wait negative", lambda b, s: _batch(b, 30, wait_seconds=-1)),
        ("wait over an hour", lambda b, s: _batch(b, 30, wait_seconds=3601)),
        ("key not a name", lambda b, s: _batch(b, 30, key="a-b")),
        ("key not text", lambda b, s: _batch(b, 30, key=5)),
        ("blank type", lambda b, s: _batch(b, 30, type="")),
        ("blank worker", lambda b, s: _batch(b, 30, worker_id="")),
        (
            "naive now",
            lambda b, s: b.jobs_claim_batch(
                worker_id="w2", type="bt", limit=1, wait_seconds=0, now=NAIVE
            ),
        ),
        ("no queues", lambda b, s: _batch(b, 30, queues=[])),
        ("nothing pending", lambda b, s: _batch(b, 30)),
        ("seed", lambda b, s: _batch_jobs(b)),
        ("not full, not waited", lambda b, s: _batch(b, 30)),
        ("another queue", lambda b, s: _batch(b, 30, limit=1, queues=["q"])),
        ("full for tenant a", lambda b, s: _batch(b, 30, limit=2)),
        ("b waited", lambda b, s: _batch(b, 90, wait_seconds=5)),
        ("none left", lambda b, s: _batch(b, 100, wait_seconds=0)),
        ("batches of Y1", lambda b, s: b.job_batches(id=Y1)),
    ],
    "job_batches": [
        ("bad id", lambda b, s: b.job_batches(id="x")),
        ("limit 0", lambda b, s: b.job_batches(id=Y1, limit=0)),
        ("limit 101", lambda b, s: b.job_batches(id=Y1, limit=101)),
        ("unknown", lambda b, s: b.job_batches(id=UNKNOWN)),
        ("never batched", lambda b, s: b.job_batches(id=A)),
        ("seed", lambda b, s: _batch_jobs(b)),
        ("claim", lambda b, s: _batch(b, 30, limit=2)),
        ("a batch of two", lambda b, s: b.job_batches(id=Y3)),
        ("not batched yet", lambda b, s: b.job_batches(id=Y2)),
    ],
    "batch_sizes": [
        ("blank type", lambda b, s: b.batch_sizes(type="", since=at(0))),
        ("naive since", lambda b, s: b.batch_sizes(type="bt", since=NAIVE)),
        ("limit 0", lambda b, s: b.batch_sizes(type="bt", since=at(0), limit=0)),
        ("none", lambda b, s: b.batch_sizes(type="bt", since=at(0))),
        ("seed", lambda b, s: _batch_jobs(b)),
        ("claim two", lambda b, s: _batch(b, 30, limit=2)),
        ("claim one", lambda b, s: _batch(b, 90, wait_seconds=5)),
        ("both", lambda b, s: b.batch_sizes(type="bt", since=at(0))),
        ("since the second", lambda b, s: b.batch_sizes(type="bt", since=at(60))),
    ],
    "jobs_start": [
        ("bad id", lambda b, s: b.jobs_start(lease=Lease("nope", "w1", "t"))),
        ("stale", lambda b, s: b.jobs_start(lease=s.stale(s.fetched), now=at(10))),
        ("not a lease", lambda b, s: b.jobs_start(lease="lease")),  # type: ignore[arg-type]
        ("ok", lambda b, s: b.jobs_start(lease=s.fetched, now=at(10))),
        ("again", lambda b, s: b.jobs_start(lease=s.fetched, now=at(11))),
        ("naive now", lambda b, s: b.jobs_start(lease=s.fetched, now=NAIVE)),
    ],
    "jobs_start_many": [
        ("empty", lambda b, s: b.jobs_start_many(leases=[])),
        ("bad id", lambda b, s: b.jobs_start_many(leases=[Lease("nope", "w1", "t")])),
        ("twice", lambda b, s: b.jobs_start_many(leases=[s.fetched, s.fetched], now=at(10))),
    ],
    "jobs_heartbeat": [
        ("empty", lambda b, s: b.jobs_heartbeat(beats=[])),
        ("fraction", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.running, 50.5)], now=at(10))),  # type: ignore[arg-type]
        ("below", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.running, -5)], now=at(10))),
        ("above", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.running, 1000)], now=at(10))),
        ("nan", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.running, math.nan)])),  # type: ignore[arg-type]
        ("stale", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.stale(s.running))], now=at(10))),
        ("fetched", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.fetched)], now=at(10))),
        ("bad id", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(Lease("x", "w1", "t"))])),
        ("read", lambda b, s: b.job_get(C)),
    ],
    "jobs_progress": [
        ("fraction", lambda b, s: b.jobs_progress(lease=s.running, progress=50.5, now=at(10))),
        ("above", lambda b, s: b.jobs_progress(lease=s.running, progress=150, now=at(10))),
        ("below", lambda b, s: b.jobs_progress(lease=s.running, progress=-1, now=at(10))),
        ("bool", lambda b, s: b.jobs_progress(lease=s.running, progress=True)),
        ("nan", lambda b, s: b.jobs_progress(lease=s.running, progress=math.nan)),
        ("text", lambda b, s: b.jobs_progress(lease=s.running, progress="50")),  # type: ignore[arg-type]
        ("stale", lambda b, s: b.jobs_progress(lease=s.stale(s.running), progress=5, now=at(10))),
        ("fetched", lambda b, s: b.jobs_progress(lease=s.fetched, progress=5, now=at(10))),
        ("read", lambda b, s: b.job_get(C)),
    ],
    "jobs_release": [
        ("empty", lambda b, s: b.jobs_release(leases=[])),
        ("processing", lambda b, s: b.jobs_release(leases=[s.running], now=at(10))),
        ("stale", lambda b, s: b.jobs_release(leases=[s.stale(s.fetched)], now=at(10))),
        ("ok", lambda b, s: b.jobs_release(leases=[s.fetched, s.fetched], now=at(10))),
        ("bad id", lambda b, s: b.jobs_release(leases=[Lease("x", "w1", "t")])),
        ("bad token", lambda b, s: b.jobs_release(leases=[Lease(A, "w1", "t")])),
    ],
    "jobs_finalize": [
        ("empty", lambda b, s: b.jobs_finalize(moves=[])),
        ("not a move", lambda b, s: b.jobs_finalize(moves=["x"])),  # type: ignore[list-item]
        (
            "error type not text",
            lambda b, s: b.jobs_finalize(
                moves=[FailMove(s.fetched, FailureReason.TRANSIENT, "e", error_type=5)]  # type: ignore[arg-type]
            ),
        ),
        (
            "error type too long",
            lambda b, s: b.jobs_finalize(
                moves=[FailMove(s.fetched, FailureReason.TRANSIENT, "e", error_type="x" * 501)]
            ),
        ),
        ("bad id", lambda b, s: b.jobs_finalize(moves=[SucceedMove(Lease("x", "w", "t"), 1.0)])),
        (
            "naive run_at",
            lambda b, s: b.jobs_finalize(moves=[RetryMove(s.running, "e", run_at=NAIVE)]),
        ),
        ("stale", lambda b, s: b.jobs_finalize(moves=[SucceedMove(s.stale(s.running), 1.0)])),
        (
            "nan duration, twice",
            lambda b, s: b.jobs_finalize(
                moves=[SucceedMove(s.running, math.nan), SucceedMove(s.running, 2.0)], now=at(10)
            ),
        ),
        (
            "error with NUL",
            lambda b, s: b.jobs_finalize(
                moves=[
                    FailMove(
                        s.fetched, FailureReason.TRANSIENT, "a\x00b", actor="x", error_type="m.Boom"
                    )
                ],
                now=at(11),
            ),
        ),
        ("read failed", lambda b, s: b.job_get(s.fetched.job_id)),
        ("read archive", lambda b, s: b.job_get(C)),
        ("read dlq", lambda b, s: b.job_get(G)),
        ("summary", lambda b, s: b.stats_summary()),
    ],
    "jobs_rescue": [
        (
            "zero",
            lambda b, s: b.jobs_rescue(fetched_timeout_seconds=0, processing_timeout_seconds=1),
        ),
        (
            "negative",
            lambda b, s: b.jobs_rescue(fetched_timeout_seconds=1, processing_timeout_seconds=-1),
        ),
        (
            "nan",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=math.nan, processing_timeout_seconds=1
            ),
        ),
        (
            "huge",
            lambda b, s: b.jobs_rescue(fetched_timeout_seconds=1e12, processing_timeout_seconds=1),
        ),
        (
            "since naive",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=1, processing_timeout_seconds=1, reachable_since=NAIVE
            ),
        ),
        (
            "nothing yet",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60, processing_timeout_seconds=60, now=at(10)
            ),
        ),
        (
            "fence not a term",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60,
                processing_timeout_seconds=60,
                fence="x",  # type: ignore[arg-type]
            ),
        ),
        (
            "fence never granted",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60,
                processing_timeout_seconds=60,
                fence=_term(),
                now=at(1000),
            ),
        ),
        ("still there", lambda b, s: b.job_get(C)),
        ("granted", lambda b, s: _claim(b)),
        (
            "fenced, current",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60, processing_timeout_seconds=60, fence=_term(), now=at(10)
            ),
        ),
        (
            "regained just now",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60,
                processing_timeout_seconds=60,
                now=at(1000),
                reachable_since=at(990),
            ),
        ),
        (
            "both",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=60,
                processing_timeout_seconds=60,
                now=at(1000),
                reachable_since=at(900),
            ),
        ),
        ("summary", lambda b, s: b.stats_summary()),
        # Expiry: a job not started by then goes to the DLQ as EXPIRED, claimed or not.
        ("expiry twice", lambda b, s: b.jobs_enqueue([_expiring(H, at(50), 5)])),
        ("expiry before due", lambda b, s: b.jobs_enqueue([_expiring(H, at(5), run_at=at(6))])),
        ("expiry inside delay", lambda b, s: b.jobs_enqueue([_expiring(H, None, 5, delay=5)])),
        ("expiry naive", lambda b, s: b.jobs_enqueue([_expiring(H, NAIVE)])),
        ("expiry nan", lambda b, s: b.jobs_enqueue([_expiring(H, None, math.nan)])),
        (
            "expiring",
            lambda b, s: b.jobs_enqueue(
                [
                    _expiring(W1, None, 10, queue="x"),
                    _expiring(W2, at(1100), queue="x"),
                    _expiring(W3, None, 5, queue="y"),
                    _expiring(W4, at(1020), queue="y", delay=5),
                    _expiring(W5, None, 5, queue="z"),
                ],
                now=at(1000),
            ),
        ),
        (
            "claim buries",
            lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["x"], now=at(1030)),
        ),
        ("claimed expired", lambda b, s: b.job_get(W1)),
        (
            "a starting claim buries",
            lambda b, s: b.jobs_fetch(
                worker_id="w2", limit=5, queues=["z"], start=True, now=at(1030)
            ),
        ),
        ("never started", lambda b, s: b.job_get(W5)),
        (
            "rescue buries",
            lambda b, s: b.jobs_rescue(
                fetched_timeout_seconds=600, processing_timeout_seconds=600, now=at(1030)
            ),
        ),
        ("rescued expired", lambda b, s: b.job_get(W3)),
        ("expiry buckets", lambda b, s: b.stats_throughput(now=at(1031))),
        ("expiry summary", lambda b, s: b.stats_summary()),
    ],
    "batches_tidy": [
        ("naive", lambda b, s: b.batches_tidy(older_than=NAIVE)),
        ("stale fence", lambda b, s: b.batches_tidy(older_than=at(100), fence=_term())),
        ("seed", lambda b, s: _batch_jobs(b)),
        ("claim two", lambda b, s: _batch(b, 30, limit=2)),
        ("claim one", lambda b, s: _batch(b, 90, wait_seconds=5)),
        ("none before", lambda b, s: b.batches_tidy(older_than=at(30))),
        ("the first", lambda b, s: b.batches_tidy(older_than=at(31))),
        ("left", lambda b, s: b.batch_sizes(type="bt", since=at(0))),
        ("its jobs forget it", lambda b, s: b.job_batches(id=Y1)),
    ],
    "unique_keys_tidy": [
        ("naive", lambda b, s: b.unique_keys_tidy(older_than=NAIVE)),
        ("stale fence", lambda b, s: b.unique_keys_tidy(older_than=at(100), fence=_term())),
        (
            "open",
            lambda b, s: b.jobs_enqueue([_unique(W1, 100), _unique(W2, 50, "u2")], now=at(10)),
        ),
        ("none ended", lambda b, s: b.unique_keys_tidy(older_than=at(59))),
        ("one ended", lambda b, s: b.unique_keys_tidy(older_than=at(60))),
        ("the other", lambda b, s: b.unique_keys_tidy(older_than=at(1000))),
    ],
    "supersessions_tidy": [
        ("naive", lambda b, s: b.supersessions_tidy(older_than=NAIVE)),
        ("stale fence", lambda b, s: b.supersessions_tidy(older_than=at(100), fence=_term())),
        ("recorded", scenario(lambda b, s: _supersede(b, "replace"))),
        ("none before", lambda b, s: b.supersessions_tidy(older_than=at(11))),
        ("one", lambda b, s: b.supersessions_tidy(older_than=at(11.5))),
        ("again", lambda b, s: b.supersessions_tidy(older_than=at(1000))),
    ],
    "archive_purge": [
        ("naive", lambda b, s: b.archive_purge(older_than=NAIVE)),
        ("batch 0", lambda b, s: b.archive_purge(older_than=at(100), batch_size=0)),
        ("batch huge", lambda b, s: b.archive_purge(older_than=at(100), batch_size=10**7)),
        ("limit -1", lambda b, s: b.archive_purge(older_than=at(100), limit=-1)),
        ("limit True", lambda b, s: b.archive_purge(older_than=at(100), limit=True)),  # type: ignore[arg-type]
        ("limit 0", lambda b, s: b.archive_purge(older_than=at(100), limit=0)),
        ("before", lambda b, s: b.archive_purge(older_than=at(1))),
        ("a child waits on D", lambda b, s: b.jobs_enqueue([_job(W1, D, A)], now=at(10))),
        ("one", lambda b, s: b.archive_purge(older_than=at(100), batch_size=1, limit=1)),
        ("rest", lambda b, s: b.archive_purge(older_than=at(100), batch_size=1)),
        ("year 1", lambda b, s: b.archive_purge(older_than=datetime(1, 1, 1, tzinfo=PLUS_14))),
        ("bad fence", lambda b, s: b.archive_purge(older_than=at(100), fence=_term(epoch=0))),
        ("stale fence", lambda b, s: b.archive_purge(older_than=at(100), fence=_term())),
        ("kept", lambda b, s: b.job_get(D)),
        ("the child's parents", lambda b, s: b.job_parent_results(id=W1)),
    ],
    "dlq_purge_older": [
        ("naive", lambda b, s: b.dlq_purge_older(older_than=NAIVE)),
        ("batch 0", lambda b, s: b.dlq_purge_older(older_than=at(100), batch_size=0)),
        ("limit -1", lambda b, s: b.dlq_purge_older(older_than=at(100), limit=-1)),
        ("stale fence", lambda b, s: b.dlq_purge_older(older_than=at(100), fence=_term())),
        ("granted", lambda b, s: _claim(b)),
        ("fenced", lambda b, s: b.dlq_purge_older(older_than=at(100), limit=1, fence=_term())),
        ("a child waits on E", lambda b, s: b.jobs_enqueue([_job(W1, E)], now=at(10))),
        ("one", lambda b, s: b.dlq_purge_older(older_than=at(100), limit=1)),
        ("rest", lambda b, s: b.dlq_purge_older(older_than=at(100))),
        ("kept", lambda b, s: b.job_get(E)),
    ],
    "limits_tidy": [
        ("naive", lambda b, s: b.limits_tidy(older_than=NAIVE)),
        ("stale fence", lambda b, s: b.limits_tidy(older_than=at(100), fence=_term())),
        ("ok", lambda b, s: b.limits_tidy(older_than=at(100))),
    ],
    "metrics_prune": [
        ("width 0", lambda b, s: b.metrics_prune(older_than=at(100), width_seconds=0)),
        ("width huge", lambda b, s: b.metrics_prune(older_than=at(100), width_seconds=86_401)),
        ("naive", lambda b, s: b.metrics_prune(older_than=NAIVE)),
        ("stale fence", lambda b, s: b.metrics_prune(older_than=at(100), fence=_term())),
        ("ok", lambda b, s: b.metrics_prune(older_than=at(100))),
        ("throughput", lambda b, s: b.stats_throughput(now=at(10))),
    ],
    "metrics_rollup": [
        ("naive", lambda b, s: b.metrics_rollup(older_than=NAIVE)),
        ("bad fence", lambda b, s: b.metrics_rollup(older_than=at(1000), fence=_term(holder=""))),
        ("stale fence", lambda b, s: b.metrics_rollup(older_than=at(1000), fence=_term())),
        ("ok", lambda b, s: b.metrics_rollup(older_than=at(1000))),
        ("series", lambda b, s: b.stats_series(since=T0, width_seconds=60)),
    ],
    "leadership_claim": [
        ("lease 0", lambda b, s: _claim(b, lease_seconds=0)),
        ("lease nan", lambda b, s: _claim(b, lease_seconds=math.nan)),
        ("lease huge", lambda b, s: _claim(b, lease_seconds=3601)),
        ("lease text", lambda b, s: _claim(b, lease_seconds="10")),
        ("blank name", lambda b, s: _claim(b, name="")),
        ("blank holder", lambda b, s: _claim(b, holder="")),
        ("not a term", lambda b, s: _claim(b, term="x")),  # type: ignore[arg-type]
        ("another's term", lambda b, s: _claim(b, "b", _term("a"))),
        ("first", lambda b, s: _claim(b)),
        ("rival", lambda b, s: _claim(b, "b")),
        ("forgot its term", lambda b, s: _claim(b)),
        ("stale epoch", lambda b, s: _claim(b, term=_term(epoch=5))),
        ("renew", lambda b, s: _claim(b, term=_term())),
        ("other role", lambda b, s: _claim(b, "b", name="schedules")),
        ("get", lambda b, s: b.leadership_get(name="maintenance")),
    ],
    "leadership_release": [
        ("not a term", lambda b, s: b.leadership_release(term="x")),  # type: ignore[arg-type]
        ("epoch 0", lambda b, s: b.leadership_release(term=_term(epoch=0))),
        ("none held", lambda b, s: b.leadership_release(term=_term())),
        ("first", lambda b, s: _claim(b)),
        ("wrong epoch", lambda b, s: b.leadership_release(term=_term(epoch=2))),
        ("wrong holder", lambda b, s: b.leadership_release(term=_term("b"))),
        ("ok", lambda b, s: b.leadership_release(term=_term())),
        ("again", lambda b, s: b.leadership_release(term=_term())),
        ("get", lambda b, s: b.leadership_get(name="maintenance")),
        ("successor", lambda b, s: _claim(b, "b")),
        ("fenced", lambda b, s: b.metrics_rollup(older_than=at(1000), fence=_term())),
    ],
    "leadership_get": [
        ("blank", lambda b, s: b.leadership_get(name="")),
        ("long", lambda b, s: b.leadership_get(name="x" * 300)),
        ("none", lambda b, s: b.leadership_get(name="maintenance")),
    ],
    "schedules_declare": [
        ("not a declaration", lambda b, s: b.schedules_declare(["x"])),  # type: ignore[list-item]
        ("both timings", lambda b, s: _declared(b, _decl(cron="* * * * *"))),
        ("neither", lambda b, s: _declared(b, _decl(every_seconds=None))),
        ("bad cron", lambda b, s: _declared(b, _decl(cron="* * 32 * *", every_seconds=None))),
        ("six fields", lambda b, s: _declared(b, _decl(cron="0 * * * * *", every_seconds=None))),
        ("every 0.5", lambda b, s: _declared(b, _decl(every_seconds=0.5))),
        ("every nan", lambda b, s: _declared(b, _decl(every_seconds=math.nan))),
        ("bad zone", lambda b, s: _declared(b, _decl(timezone="Europe/Nowhere"))),
        ("kwargs list", lambda b, s: _declared(b, _decl(kwargs="[1]"))),
        ("kwargs bad json", lambda b, s: _declared(b, _decl(kwargs="{"))),
        ("misfire", lambda b, s: _declared(b, _decl(misfire="never"))),
        ("long name", lambda b, s: _declared(b, _decl("x" * 91))),
        ("twice", lambda b, s: _declared(b, _decl(), _decl())),
        ("naive now", lambda b, s: b.schedules_declare([_decl()], now=NAIVE)),
        (
            "ok",
            lambda b, s: _declared(
                b,
                _decl(),
                _decl("c", cron="0 7 * * mon-fri", every_seconds=None, timezone="Europe/Berlin"),
            ),
        ),
        ("same again", lambda b, s: _declared(b, _decl(), when=30)),
        ("new queue", lambda b, s: _declared(b, _decl(queue="q2"), when=40)),
        ("new timing", lambda b, s: _declared(b, _decl(every_seconds=30), when=50)),
        ("expiry 0", lambda b, s: _declared(b, _decl(expires_after_seconds=0), when=55)),
        ("expiry nan", lambda b, s: _declared(b, _decl(expires_after_seconds=math.nan))),
        ("expiry text", lambda b, s: _declared(b, _decl(expires_after_seconds="60"))),
        ("expiry > 366 d", lambda b, s: _declared(b, _decl(expires_after_seconds=4e7))),
        ("new expiry", lambda b, s: _declared(b, _decl(expires_after_seconds=90), when=60)),
        ("read expiry", lambda b, s: b.schedule_get("s", now=at(60))),
    ],
    "schedules_seen": [
        ("text", lambda b, s: b.schedules_seen("s")),  # type: ignore[arg-type]
        ("none", lambda b, s: b.schedules_seen([])),
        ("declared", lambda b, s: _declared(b)),
        ("ok", lambda b, s: b.schedules_seen(["s", "unknown"], now=at(100))),
        ("list", lambda b, s: b.schedules_list(now=at(150))),
    ],
    "schedules_list": [
        ("empty", lambda b, s: b.schedules_list(now=at(0))),
        ("declared", lambda b, s: _declared(b)),
        ("orphaned later", lambda b, s: b.schedules_list(now=at(61))),
        ("naive", lambda b, s: b.schedules_list(now=NAIVE)),
    ],
    "schedule_get": [
        ("blank", lambda b, s: b.schedule_get("")),
        ("none", lambda b, s: b.schedule_get("s", now=at(0))),
        ("declared", lambda b, s: _declared(b)),
        ("one", lambda b, s: b.schedule_get("s", now=at(1))),
    ],
    "schedules_due": [
        ("declared", lambda b, s: _declared(b)),
        ("early", lambda b, s: b.schedules_due(now=at(59))),
        ("due", lambda b, s: b.schedules_due(now=at(60))),
        ("orphaned", lambda b, s: b.schedules_due(now=at(120))),
        ("paused", lambda b, s: b.schedule_pause("s", actor="ops", now=at(10))),
        ("paused due", lambda b, s: b.schedules_due(now=at(60))),
    ],
    "schedule_fire": [
        ("not a schedule", lambda b, s: b.schedule_fire("s")),  # type: ignore[arg-type]
        ("declared", lambda b, s: _declared(b, _decl(), _decl("o", overlap=False))),
        ("read early", lambda b, s: _read(b, when=30)),
        ("early", lambda b, s: _fired(b, when=30)),
        ("read", lambda b, s: _read(b)),
        ("due", lambda b, s: _fired(b)),
        ("stale", lambda b, s: b.schedule_fire(_read_stale(b), now=at(62))),
        ("read again", lambda b, s: _read(b, when=600)),
        ("gap", lambda b, s: _fired(b, when=600)),
        ("read o", lambda b, s: _read(b, "o")),
        ("overlap first", lambda b, s: _fired(b)),
        ("read o later", lambda b, s: _read(b, "o", when=125)),
        ("overlap skipped", lambda b, s: _fired(b, when=125)),
        ("history", lambda b, s: b.schedule_history("o")),
        ("hot", lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=JobFilter(queue="q1"))),
        ("declared x", lambda b, s: _declared(b, _decl("x", expires_after_seconds=300))),
        ("read x", lambda b, s: _read(b, "x")),
        ("expiring run", lambda b, s: _fired(b)),
        ("x hot", lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=JobFilter(search="x"))),
    ],
    "schedule_history": [
        ("blank", lambda b, s: b.schedule_history("")),
        ("limit 0", lambda b, s: b.schedule_history("s", limit=0)),
        ("limit 101", lambda b, s: b.schedule_history("s", limit=101)),
        ("none", lambda b, s: b.schedule_history("s")),
        ("declared", lambda b, s: _declared(b, _decl(every_seconds=1, misfire="all"))),
        ("read", lambda b, s: _read(b, when=200)),
        ("fired", lambda b, s: _fired(b, when=200)),
        ("three", lambda b, s: b.schedule_history("s", limit=3)),
    ],
    "schedule_trigger": [
        ("missing", lambda b, s: b.schedule_trigger("s", actor="ops", now=at(5))),
        ("declared", lambda b, s: _declared(b)),
        ("no actor", lambda b, s: b.schedule_trigger("s", actor=None)),  # type: ignore[arg-type]
        ("ok", lambda b, s: b.schedule_trigger("s", actor="ops", now=at(5))),
        ("history", lambda b, s: b.schedule_history("s")),
    ],
    "schedule_pause": [
        ("missing", lambda b, s: b.schedule_pause("s", actor="ops")),
        ("declared", lambda b, s: _declared(b)),
        ("long actor", lambda b, s: b.schedule_pause("s", actor="x" * 101)),
        ("pause", lambda b, s: b.schedule_pause("s", actor="ops", now=at(5))),
        ("resume", lambda b, s: b.schedule_pause("s", actor="ops", paused=False, now=at(500))),
    ],
    "schedule_edit": [
        ("missing", lambda b, s: b.schedule_edit("s", actor="ops", cron="* * * * *")),
        ("declared", lambda b, s: _declared(b)),
        ("both", lambda b, s: b.schedule_edit("s", actor="ops", cron="* * * * *", every_seconds=5)),
        ("bad cron", lambda b, s: b.schedule_edit("s", actor="ops", cron="a b c d e")),
        ("bad every", lambda b, s: b.schedule_edit("s", actor="ops", every_seconds=-1)),
        ("bad zone", lambda b, s: b.schedule_edit("s", actor="ops", timezone="UTC+1")),
        ("kwargs text", lambda b, s: b.schedule_edit("s", actor="ops", kwargs="nope")),
        (
            "cron",
            lambda b, s: b.schedule_edit(
                "s", actor="ops", cron="30 2 * * *", timezone="America/New_York", now=at(5)
            ),
        ),
        ("kwargs", lambda b, s: b.schedule_edit("s", actor="ops", kwargs={"n": 2}, now=at(6))),
        ("redeclared", lambda b, s: _declared(b, _decl(every_seconds=10), when=7)),
    ],
    "schedule_reset": [
        ("missing", lambda b, s: b.schedule_reset("s", actor="ops")),
        ("declared", lambda b, s: _declared(b)),
        ("edited", lambda b, s: b.schedule_edit("s", actor="ops", every_seconds=5, now=at(5))),
        ("reset", lambda b, s: b.schedule_reset("s", actor="ops", now=at(9))),
    ],
    "schedule_delete": [
        ("missing", lambda b, s: b.schedule_delete("s", actor="ops")),
        ("declared", lambda b, s: _declared(b)),
        ("declared still", lambda b, s: b.schedule_delete("s", actor="ops", now=at(10))),
        ("orphaned", lambda b, s: b.schedule_delete("s", actor="ops", now=at(100))),
        ("gone", lambda b, s: b.schedules_list(now=at(100))),
    ],
    "jobs_release_missed": [
        ("none", lambda b, s: b.jobs_release_missed()),
        ("bad fence", lambda b, s: b.jobs_release_missed(fence="x")),  # type: ignore[arg-type]
        ("diamond", lambda b, s: _diamond(b)),
        ("first", lambda b, s: _take(b, "wf", 11)),
        ("first done", lambda b, s: _move(b, 11)),
        ("nothing left over", lambda b, s: b.jobs_release_missed(fence=_term())),
        ("released", lambda b, s: b.jobs_fetch(worker_id="w3", limit=5, queues=["wf"], now=at(12))),
    ],
    "job_outcome": [
        ("bad id", lambda b, s: b.job_outcome(id="x")),
        ("unknown", lambda b, s: b.job_outcome(id=UNKNOWN)),
        ("pending", lambda b, s: b.job_outcome(id=A)),
        ("archived", lambda b, s: b.job_outcome(id=D)),
        ("dead", lambda b, s: b.job_outcome(id=E)),
        ("watch", lambda b, s: b.job_outcome(id=C, watch=True)),
        ("watch again", lambda b, s: b.job_outcome(id=C, watch=True)),
        (
            "result kept",
            lambda b, s: b.jobs_finalize(
                moves=[SucceedMove(s.running, 1.0, result='{"a": [1, "\u00e9"]}')], now=at(10)
            ),
        ),
        ("read result", lambda b, s: b.job_outcome(id=C)),
        (
            "result not kept",
            lambda b, s: b.jobs_finalize(
                moves=[SucceedMove(s.fetched, 1.0, result_error="not kept: too large")],
                now=at(10),
            ),
        ),
        ("read why", lambda b, s: b.job_outcome(id=G)),
        ("diamond", lambda b, s: _diamond(b)),
        ("waiting", lambda b, s: b.job_outcome(id=W4, watch=True)),
        ("first", lambda b, s: _take(b, "wf", 11)),
        ("first done", lambda b, s: _move(b, 11)),
        ("middle", lambda b, s: _take(b, "wf", 12)),
        ("middle fails", lambda b, s: _move(b, 12, fail=True)),
        ("blocked", lambda b, s: b.job_outcome(id=W4)),
        ("blocked watched", lambda b, s: b.job_outcome(id=W4, watch=True)),
    ],
    "job_parent_results": [
        ("bad id", lambda b, s: b.job_parent_results(id="x")),
        ("no parents", lambda b, s: b.job_parent_results(id=A)),
        ("diamond", lambda b, s: _diamond(b)),
        ("first", lambda b, s: _take(b, "wf", 11)),
        ("first done", lambda b, s: _move(b, 11)),
        ("middle", lambda b, s: _take(b, "wf", 12)),
        ("middle done", lambda b, s: _move(b, 12)),
        ("results", lambda b, s: b.job_parent_results(id=W4)),
        ("released", lambda b, s: b.jobs_fetch(worker_id="w3", limit=5, queues=["wf"], now=at(13))),
    ],
    "job_parent_outcomes": [
        ("bad id", lambda b, s: b.job_parent_outcomes(id="x")),
        ("no parents", lambda b, s: b.job_parent_outcomes(id=A)),
        ("diamond", lambda b, s: _diamond(b)),
        ("all hot", lambda b, s: b.job_parent_outcomes(id=W4)),
        ("first", lambda b, s: _take(b, "wf", 11)),
        ("first done", lambda b, s: _move(b, 11)),
        ("middle", lambda b, s: _take(b, "wf", 12)),
        ("middle fails", lambda b, s: _move(b, 12, fail=True)),
        ("one of each", lambda b, s: b.job_parent_outcomes(id=W4)),
        ("purged", lambda b, s: b.dlq_purge(ids=[W2, W3], actor="ops")),
        ("gone", lambda b, s: b.job_parent_outcomes(id=W4)),
    ],
    "job_get_related": [
        ("bad id", lambda b, s: b.job_get_related(id="x")),
        ("limit 0", lambda b, s: b.job_get_related(id=A, limit=0)),
        ("limit huge", lambda b, s: b.job_get_related(id=A, limit=10**6)),
        ("unknown", lambda b, s: b.job_get_related(id=UNKNOWN)),
        ("alone", lambda b, s: b.job_get_related(id=A)),
        ("diamond", lambda b, s: _diamond(b)),
        ("waiting", lambda b, s: b.job_get_related(id=W4)),
        ("first", lambda b, s: b.job_get_related(id=W1)),
        ("first", lambda b, s: _take(b, "wf", 11)),
        ("first done", lambda b, s: _move(b, 11)),
        ("middle", lambda b, s: _take(b, "wf", 12)),
        ("middle fails", lambda b, s: _move(b, 12, fail=True)),
        ("blocked", lambda b, s: b.job_get_related(id=W4)),
        ("one side", lambda b, s: b.job_get_related(id=W1, limit=1)),
        ("filter blocked", lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=_f(blocked=True))),
        ("filter blocked as text", lambda b, s: b.jobs_page(filter=_f(blocked="yes"))),
        (
            "filter waiting",
            lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=_f(status=JobStatus.WAITING)),
        ),
        ("stats", lambda b, s: b.stats_queues(now=at(13))),
    ],
    "workflow_get": [
        ("bad id", lambda b, s: b.workflow_get(id="x")),
        ("limit 0", lambda b, s: b.workflow_get(id=W1, limit=0)),
        ("unknown", lambda b, s: b.workflow_get(id=W1)),
        ("diamond", lambda b, s: _diamond(b)),
        ("got", lambda b, s: b.workflow_get(id=W1)),
        ("capped", lambda b, s: b.workflow_get(id=W1, limit=2)),
        ("not a workflow id", lambda b, s: b.workflow_get(id=W4)),
        ("joined", lambda b, s: b.jobs_enqueue([_job(W5, W4, E)], now=at(11))),
        ("grown", lambda b, s: b.workflow_get(id=W1)),
    ],
    "workflow_cancel": [
        ("bad id", lambda b, s: b.workflow_cancel(id="x", actor="ops")),
        ("no actor", lambda b, s: b.workflow_cancel(id=W1, actor=None)),  # type: ignore[arg-type]
        ("unknown", lambda b, s: b.workflow_cancel(id=W1, actor="ops", now=at(10))),
        # A workflow is named by its first job: here the stored parent E, in the DLQ.
        ("on a dead parent", lambda b, s: b.jobs_enqueue([_job(W1, E), _job(W2, W1)], now=at(10))),
        ("its workflow", lambda b, s: b.workflow_get(id=E)),
        ("cancelled", lambda b, s: b.workflow_cancel(id=E, actor="ops", now=at(11))),
        ("blocked one", lambda b, s: b.job_get(W1)),
        ("waiting one", lambda b, s: b.job_get(W2)),
        ("again", lambda b, s: b.workflow_cancel(id=E, actor="ops", now=at(12))),
        ("summary", lambda b, s: b.stats_summary()),
        ("counted", lambda b, s: b.stats_throughput(now=at(12))),
    ],
    "jobs_cancel": [
        ("text ids", lambda b, s: b.jobs_cancel(ids="abc", actor="ops")),  # type: ignore[arg-type]
        ("bad id", lambda b, s: b.jobs_cancel(ids=["bad"], actor="ops")),
        ("empty", lambda b, s: b.jobs_cancel(ids=[], actor="ops")),
        ("no actor", lambda b, s: b.jobs_cancel(ids=[A], actor=None)),  # type: ignore[arg-type]
        ("long actor", lambda b, s: b.jobs_cancel(ids=[A], actor="x" * 101)),
        ("naive now", lambda b, s: b.jobs_cancel(ids=[A], actor="ops", now=NAIVE)),
        (
            "mixed",
            lambda b, s: b.jobs_cancel(ids=[A, A, C, G, UNKNOWN, E], actor="ops", now=at(10)),
        ),
        ("read", lambda b, s: b.job_get(A)),
        ("heard", lambda b, s: b.jobs_heartbeat(beats=[Heartbeat(s.running)], now=at(11))),
    ],
    "jobs_advance": [
        ("zero", lambda b, s: b.jobs_advance(seconds=0)),
        ("negative", lambda b, s: b.jobs_advance(seconds=-1)),
        ("nan", lambda b, s: b.jobs_advance(seconds=math.nan)),
        ("huge", lambda b, s: b.jobs_advance(seconds=1e12)),
        ("text", lambda b, s: b.jobs_advance(seconds="1")),  # type: ignore[arg-type]
        ("text queues", lambda b, s: b.jobs_advance(seconds=1, queues="q")),
        ("nothing later", lambda b, s: b.jobs_advance(seconds=60, now=at(10))),
        (
            "delayed",
            lambda b, s: b.jobs_enqueue(
                [NewJob(type="t", queue="later", id=H, delay_seconds=3600)], now=at(10)
            ),
        ),
        ("other queue", lambda b, s: b.jobs_advance(seconds=60, queues=["q"], now=at(10))),
        ("half", lambda b, s: b.jobs_advance(seconds=1800, queues=["later"], now=at(10))),
        ("still later", lambda b, s: b.jobs_pending_groups(queues=["later"], now=at(10))),
        ("the rest", lambda b, s: b.jobs_advance(seconds=1800, now=at(10))),
        ("due", lambda b, s: b.jobs_pending_groups(queues=["later"], now=at(10))),
        ("moved no more", lambda b, s: b.jobs_advance(seconds=60, now=at(10))),
    ],
    "jobs_edit": [
        ("bad id", lambda b, s: b.jobs_edit(id="x", actor="ops", priority=1)),
        ("bad payload", lambda b, s: b.jobs_edit(id=A, actor="ops", payload="{bad")),
        (
            "deep payload",
            lambda b, s: b.jobs_edit(id=A, actor="ops", payload="[" * 101 + "]" * 101),
        ),
        ("text tags", lambda b, s: b.jobs_edit(id=A, actor="ops", tags="abc")),
        ("priority", lambda b, s: b.jobs_edit(id=A, actor="ops", priority=10**7)),
        ("no actor", lambda b, s: b.jobs_edit(id=A, actor=None, priority=1)),  # type: ignore[arg-type]
        ("running", lambda b, s: b.jobs_edit(id=C, actor="ops", priority=1, now=at(10))),
        (
            "ok",
            lambda b, s: b.jobs_edit(
                id=A, actor="ops", payload='{"b": 2}', tags=[" y ", "y", "z"], now=at(10)
            ),
        ),
        ("read", lambda b, s: b.job_get(A)),
    ],
    "dlq_edit": [
        ("bad id", lambda b, s: b.dlq_edit(id="x", actor="ops", priority=1)),
        ("hot job", lambda b, s: b.dlq_edit(id=A, actor="ops", priority=1)),
        ("priority", lambda b, s: b.dlq_edit(id=E, actor="ops", priority=-(10**7))),
        ("ok", lambda b, s: b.dlq_edit(id=E, actor="ops", payload="[1]", tags=[], priority=3)),
        ("read", lambda b, s: b.job_get(E)),
    ],
    "dlq_resurrect": [
        ("empty", lambda b, s: b.dlq_resurrect(ids=[], actor="ops")),
        ("bad payload", lambda b, s: b.dlq_resurrect(ids=[E], actor="ops", payload="{")),
        ("some", lambda b, s: b.dlq_resurrect(ids=[UNKNOWN, E, A, E], actor="ops", now=at(10))),
        ("read", lambda b, s: b.job_get(E)),
        ("summary", lambda b, s: b.stats_summary()),
    ],
    "dlq_preview": [
        ("cap 0", lambda b, s: b.dlq_preview(filter=_f(), cap=0)),
        ("cap huge", lambda b, s: b.dlq_preview(filter=_f(), cap=10**7)),
        ("sample huge", lambda b, s: b.dlq_preview(filter=_f(), cap=10, sample=5000)),
        ("sample -1", lambda b, s: b.dlq_preview(filter=_f(), cap=10, sample=-1)),
        ("blank queue", lambda b, s: b.dlq_preview(filter=_f(queue=""), cap=10)),
        ("naive since", lambda b, s: b.dlq_preview(filter=_f(since=NAIVE), cap=10)),
        ("bad ids", lambda b, s: b.dlq_preview(filter=_f(ids=("x",)), cap=10)),
        ("ok", lambda b, s: b.dlq_preview(filter=_f(), cap=1, sample=5)),
        ("sample 0", lambda b, s: b.dlq_preview(filter=_f(queue="dead"), cap=5, sample=0)),
        (
            "reason",
            lambda b, s: b.dlq_preview(filter=_f(failure_reason=FailureReason.CANCELLED), cap=5),
        ),
        ("search", lambda b, s: b.dlq_preview(filter=_f(search="BOOM%"), cap=5)),
    ],
    "dlq_resurrect_by_filter": [
        ("cap 0", lambda b, s: b.dlq_resurrect_by_filter(filter=_f(), actor="ops", cap=0)),
        ("cap huge", lambda b, s: b.dlq_resurrect_by_filter(filter=_f(), actor="ops", cap=10**7)),
        ("ok", lambda b, s: b.dlq_resurrect_by_filter(filter=_f(), actor="ops", cap=1, now=at(10))),
        ("read", lambda b, s: b.jobs_page(pillar=Pillar.HOT, sort="id")),
    ],
    "dlq_purge": [
        ("bad id", lambda b, s: b.dlq_purge(ids=["x"], actor="ops")),
        ("no actor", lambda b, s: b.dlq_purge(ids=[E], actor=None)),  # type: ignore[arg-type]
        ("child of a dead job", lambda b, s: b.jobs_enqueue([_job(W1, E), _job(W2, W1)])),
        ("some", lambda b, s: b.dlq_purge(ids=[A, E, UNKNOWN], actor="ops")),
        ("summary", lambda b, s: b.stats_summary()),
        ("child failed", lambda b, s: b.job_get(W1)),
        ("grandchild waits", lambda b, s: b.job_get(W2)),
        ("its parent purged", lambda b, s: b.dlq_purge(ids=[W1], actor="ops")),
        ("grandchild failed", lambda b, s: b.job_get(W2)),
    ],
    "dlq_purge_by_filter": [
        ("cap 0", lambda b, s: b.dlq_purge_by_filter(filter=_f(), actor="ops", cap=0)),
        ("cap huge", lambda b, s: b.dlq_purge_by_filter(filter=_f(), actor="ops", cap=10**7)),
        ("cap -1", lambda b, s: b.dlq_purge_by_filter(filter=_f(), actor="ops", cap=-1)),
        ("ok", lambda b, s: b.dlq_purge_by_filter(filter=_f(), actor="ops", cap=1)),
        ("rest", lambda b, s: b.dlq_purge_by_filter(filter=_f(queue="dead"), actor="ops", cap=9)),
    ],
    "jobs_preview": [
        ("cap 0", lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(), cap=0)),
        ("cap over", lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(), cap=10_001)),
        ("bad pillar", lambda b, s: b.jobs_preview(pillar="x", filter=_f(), cap=5)),  # type: ignore[arg-type]
        (
            "sample -1",
            lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(), cap=5, sample=-1),
        ),
        (
            "status on archive",
            lambda b, s: b.jobs_preview(
                pillar=Pillar.ARCHIVE, filter=_f(status=JobStatus.PENDING), cap=5
            ),
        ),
        (
            "reason on hot",
            lambda b, s: b.jobs_preview(
                pillar=Pillar.HOT, filter=_f(failure_reason=FailureReason.CANCELLED), cap=5
            ),
        ),
        ("hot", lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(), cap=3, sample=2)),
        ("hot queue", lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(queue="q"), cap=5)),
        (
            "hot running",
            lambda b, s: b.jobs_preview(
                pillar=Pillar.HOT, filter=_f(status=JobStatus.PROCESSING), cap=5
            ),
        ),
        (
            "hot pinned",
            lambda b, s: b.jobs_preview(pillar=Pillar.HOT, filter=_f(until=at(-1)), cap=5),
        ),
        ("archive", lambda b, s: b.jobs_preview(pillar=Pillar.ARCHIVE, filter=_f(), cap=1)),
        (
            "archive pinned",
            lambda b, s: b.jobs_preview(pillar=Pillar.ARCHIVE, filter=_f(until=at(1)), cap=5),
        ),
        ("dlq", lambda b, s: b.jobs_preview(pillar=Pillar.DLQ, filter=_f(), cap=5)),
    ],
    "jobs_cancel_by_filter": [
        ("cap 0", lambda b, s: b.jobs_cancel_by_filter(filter=_f(), actor="ops", cap=0)),
        ("cap over", lambda b, s: b.jobs_cancel_by_filter(filter=_f(), actor="ops", cap=10_001)),
        ("no actor", lambda b, s: b.jobs_cancel_by_filter(filter=_f(), actor=None, cap=5)),  # type: ignore[arg-type]
        (
            "reason",
            lambda b, s: b.jobs_cancel_by_filter(
                filter=_f(failure_reason=FailureReason.CANCELLED), actor="ops", cap=5
            ),
        ),
        (
            "pinned before",
            lambda b, s: b.jobs_cancel_by_filter(filter=_f(until=at(-1)), actor="ops", cap=5),
        ),
        (
            "running",
            lambda b, s: b.jobs_cancel_by_filter(
                filter=_f(queue="run"), actor="ops", cap=5, now=at(10)
            ),
        ),
        (
            "newest pending",
            lambda b, s: b.jobs_cancel_by_filter(
                filter=_f(queue="q"), actor="ops", cap=1, now=at(10)
            ),
        ),
        ("cancelled", lambda b, s: b.job_get(B)),
        ("requested", lambda b, s: b.job_get(C)),
        ("summary", lambda b, s: b.stats_summary()),
    ],
    "archive_requeue_by_filter": [
        ("cap 0", lambda b, s: b.archive_requeue_by_filter(filter=_f(), actor="ops", cap=0)),
        ("no actor", lambda b, s: b.archive_requeue_by_filter(filter=_f(), actor=None, cap=5)),  # type: ignore[arg-type]
        (
            "status",
            lambda b, s: b.archive_requeue_by_filter(
                filter=_f(status=JobStatus.PENDING), actor="ops", cap=5
            ),
        ),
        (
            "pinned before",
            lambda b, s: b.archive_requeue_by_filter(filter=_f(until=at(1)), actor="ops", cap=5),
        ),
        (
            "newest",
            lambda b, s: b.archive_requeue_by_filter(
                filter=_f(queue="done"), actor="ops", cap=1, now=at(10)
            ),
        ),
        ("new job", lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=_f(queue="done"))),
        ("archived kept", lambda b, s: b.job_get(D2)),
        ("summary", lambda b, s: b.stats_summary()),
    ],
    "archive_delete_by_filter": [
        ("cap 0", lambda b, s: b.archive_delete_by_filter(filter=_f(), actor="ops", cap=0)),
        ("no actor", lambda b, s: b.archive_delete_by_filter(filter=_f(), actor=None, cap=5)),  # type: ignore[arg-type]
        (
            "blocked",
            lambda b, s: b.archive_delete_by_filter(filter=_f(blocked=True), actor="ops", cap=5),
        ),
        ("child of D", lambda b, s: b.jobs_enqueue([_job(W1, D)], now=at(10))),
        ("all", lambda b, s: b.archive_delete_by_filter(filter=_f(), actor="ops", cap=10)),
        ("parent kept", lambda b, s: b.job_get(D)),
        ("gone", lambda b, s: b.job_get(D2)),
        ("summary", lambda b, s: b.stats_summary()),
        ("series", lambda b, s: b.stats_series(since=T0, until=at(100))),
    ],
    "jobs_run_now": [
        ("bad id", lambda b, s: b.jobs_run_now(ids=["x"], actor="ops")),
        ("no actor", lambda b, s: b.jobs_run_now(ids=[A], actor=None)),  # type: ignore[arg-type]
        ("empty", lambda b, s: b.jobs_run_now(ids=[], actor="ops")),
        (
            "delayed",
            lambda b, s: b.jobs_enqueue(
                [NewJob(type="t", queue="later", id=H, delay_seconds=3600)], now=at(10)
            ),
        ),
        (
            "mixed",
            lambda b, s: b.jobs_run_now(ids=[A, H, C, E, D, UNKNOWN], actor="ops", now=at(20)),
        ),
        ("due", lambda b, s: b.job_get(H)),
        ("again", lambda b, s: b.jobs_run_now(ids=[H], actor="ops", now=at(20))),
    ],
    "stats_summary": [("now", lambda b, s: b.stats_summary())],
    "stats_queues": [
        ("naive", lambda b, s: b.stats_queues(now=NAIVE)),
        ("at 100", lambda b, s: b.stats_queues(now=at(100))),
    ],
    "stats_throughput": [
        ("at 10", lambda b, s: b.stats_throughput(now=at(10))),
        ("naive", lambda b, s: b.stats_throughput(now=NAIVE)),
    ],
    "stats_series": [
        ("naive", lambda b, s: b.stats_series(since=NAIVE)),
        ("width 0", lambda b, s: b.stats_series(since=T0, width_seconds=0)),
        ("1969", lambda b, s: b.stats_series(since=datetime(1969, 1, 1, tzinfo=UTC))),
        ("blank queue", lambda b, s: b.stats_series(since=T0, queue="")),
        ("all", lambda b, s: b.stats_series(since=T0, until=at(100))),
        ("one queue", lambda b, s: b.stats_series(since=T0, queue="done")),
        ("width huge", lambda b, s: b.stats_series(since=T0, width_seconds=86_401)),
        ("width 7", lambda b, s: b.stats_series(since=T0, width_seconds=7)),
        ("width 3600", lambda b, s: b.stats_series(since=T0, width_seconds=3600)),
        ("fold the first seconds", lambda b, s: b.metrics_rollup(older_than=at(3))),
        ("minutes and seconds at 1 s", lambda b, s: b.stats_series(since=T0)),
        ("minutes and seconds at 2 s", lambda b, s: b.stats_series(since=T0, width_seconds=2)),
        ("minutes and seconds at 60 s", lambda b, s: b.stats_series(since=T0, width_seconds=60)),
    ],
    "dlq_top_errors": [
        ("limit 0", lambda b, s: b.dlq_top_errors(limit=0)),
        ("scan 0", lambda b, s: b.dlq_top_errors(scan=0)),
        ("limit huge", lambda b, s: b.dlq_top_errors(limit=1001)),
        ("ok", lambda b, s: b.dlq_top_errors()),
        ("families", lambda b, s: b.dlq_top_errors(limit=50)),
        ("scan 3", lambda b, s: b.dlq_top_errors(scan=3, limit=50)),
        (
            "a family's rows",
            lambda b, s: b.jobs_page(
                pillar=Pillar.DLQ, filter=_f(error_family="card <n> declined")
            ),
        ),
        (
            "family too long",
            lambda b, s: b.jobs_page(pillar=Pillar.DLQ, filter=_f(error_family="x" * 161)),
        ),
        ("family not text", lambda b, s: b.jobs_page(pillar=Pillar.DLQ, filter=_f(error_family=5))),
    ],
    "job_attempts": [
        ("bad id", lambda b, s: b.job_attempts(id="x")),
        ("limit 0", lambda b, s: b.job_attempts(id=E, limit=0)),
        ("limit 21", lambda b, s: b.job_attempts(id=E, limit=21)),
        ("unknown", lambda b, s: b.job_attempts(id=UNKNOWN)),
        ("hot, never failed", lambda b, s: b.job_attempts(id=A)),
        ("dead", lambda b, s: b.job_attempts(id=E)),
        ("cancelled while pending", lambda b, s: b.job_attempts(id=F)),
        (
            "retry",
            lambda b, s: b.jobs_finalize(
                moves=[RetryMove(s.running, "ValueError: 7", duration_seconds=0.5)], now=at(10)
            ),
        ),
        ("retried", lambda b, s: b.job_attempts(id=C)),
        ("inspector", lambda b, s: b.job_get_related(id=C)),
        ("purge", lambda b, s: b.dlq_purge(ids=[E], actor="ops")),
        ("purged", lambda b, s: b.job_attempts(id=E)),
    ],
    "jobs_page": [
        *_every_sort(),
        ("page 0", lambda b, s: b.jobs_page(pillar=Pillar.HOT, page=0)),
        ("page huge", lambda b, s: b.jobs_page(pillar=Pillar.DLQ, page=10**18)),
        ("page max", lambda b, s: b.jobs_page(pillar=Pillar.DLQ, page=10_000_000)),
        ("size 0", lambda b, s: b.jobs_page(pillar=Pillar.HOT, page_size=0)),
        ("size huge", lambda b, s: b.jobs_page(pillar=Pillar.HOT, page_size=1001)),
        ("bad pillar", lambda b, s: b.jobs_page(pillar="nope")),  # type: ignore[arg-type]
        ("naive until", lambda b, s: b.jobs_page(pillar=Pillar.ARCHIVE, filter=_f(until=NAIVE))),
        ("bad status", lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=_f(status=7))),
        (
            "status",
            lambda b, s: b.jobs_page(pillar=Pillar.HOT, filter=_f(status=JobStatus.PROCESSING)),
        ),
        ("page 2", lambda b, s: b.jobs_page(pillar=Pillar.HOT, sort="id", page=2, page_size=1)),
        # Keyset pages: a key is a position, whether a row holds it or not.
        ("after", lambda b, s: b.jobs_page(pillar=Pillar.HOT, after=PageKey(at(0), B))),
        (
            "before, ascending",
            lambda b, s: b.jobs_page(pillar=Pillar.HOT, descending=False, before=PageKey(at(1), C)),
        ),
        ("last", lambda b, s: b.jobs_page(pillar=Pillar.DLQ, sort="id", page_size=1, last=True)),
        (
            "after a null worker",
            lambda b, s: b.jobs_page(pillar=Pillar.HOT, sort="worker", after=PageKey(None, A)),
        ),
        (
            "before a worker",
            lambda b, s: b.jobs_page(pillar=Pillar.HOT, sort="worker", before=PageKey("w", H)),
        ),
        ("after by id", lambda b, s: b.jobs_page(pillar=Pillar.ARCHIVE, after=PageKey(D, D))),
        (
            "after and before",
            lambda b, s: b.jobs_page(after=PageKey(at(0), A), before=PageKey(at(0), A)),
        ),
        ("after on page 2", lambda b, s: b.jobs_page(page=2, after=PageKey(at(0), A))),
        ("after, text for a time", lambda b, s: b.jobs_page(after=PageKey("x", A))),
        ("after, null for a time", lambda b, s: b.jobs_page(after=PageKey(None, A))),
        ("after, bad id", lambda b, s: b.jobs_page(after=PageKey(at(0), "x"))),
        ("after, not a key", lambda b, s: b.jobs_page(after=(at(0), A))),  # type: ignore[arg-type]
        ("after, bool priority", lambda b, s: b.jobs_page(sort="priority", after=PageKey(True, A))),
        (
            "after, NaN duration",
            lambda b, s: b.jobs_page(
                pillar=Pillar.DLQ, sort="duration", after=PageKey(math.nan, A)
            ),
        ),
        (
            "since",
            lambda b, s: b.jobs_page(pillar=Pillar.ARCHIVE, filter=_f(since=at(2), type="t")),
        ),
    ],
    "job_get": [
        ("bad id", lambda b, s: b.job_get("x")),
        ("unknown", lambda b, s: b.job_get(UNKNOWN)),
        ("hot", lambda b, s: b.job_get(A)),
        ("archive", lambda b, s: b.job_get(D)),
        ("dlq", lambda b, s: b.job_get(F)),
    ],
    "jobs_pending_groups": [
        ("bad queues", lambda b, s: b.jobs_pending_groups(queues="q")),
        ("blank queue", lambda b, s: b.jobs_pending_groups(queues=[""])),
        ("all", lambda b, s: b.jobs_pending_groups(now=at(5))),
        ("one", lambda b, s: b.jobs_pending_groups(queues=["q"], now=at(5))),
        ("later", lambda b, s: b.jobs_pending_groups(queues=["q", "r"], now=at(-5))),
    ],
    "jobs_lag": [
        ("limit 0", lambda b, s: b.jobs_lag(limit=0)),
        ("limit huge", lambda b, s: b.jobs_lag(limit=1001)),
        ("limit text", lambda b, s: b.jobs_lag(limit="5")),  # type: ignore[arg-type]
        ("naive", lambda b, s: b.jobs_lag(now=NAIVE)),
        ("seeded", lambda b, s: b.jobs_lag(now=at(5))),
        ("before due", lambda b, s: b.jobs_lag(now=at(-5))),
        (
            "retry later",
            lambda b, s: b.jobs_finalize(
                moves=[RetryMove(s.running, "boom", delay_seconds=60)], now=at(10)
            ),
        ),
        (
            "delayed",
            lambda b, s: b.jobs_enqueue(
                [NewJob(type="u", queue="later", id=H, delay_seconds=3600)], now=at(10)
            ),
        ),
        ("on a dead parent", lambda b, s: b.jobs_enqueue([_job(W1, E), _job(W2, W1)], now=at(10))),
        ("more due", lambda b, s: b.jobs_enqueue([NewJob("t", queue="z", id=W3)], now=at(8))),
        ("every reason", lambda b, s: b.jobs_lag(now=at(11))),
        ("limit 2", lambda b, s: b.jobs_lag(limit=2, now=at(11))),
        ("all due", lambda b, s: b.jobs_lag(now=at(4000))),
    ],
    "queues_unserved": [
        ("window 0", lambda b, s: b.queues_unserved(alive_within_seconds=0)),
        ("window nan", lambda b, s: b.queues_unserved(alive_within_seconds=math.nan)),
        ("cap 0", lambda b, s: b.queues_unserved(cap=0)),
        ("cap huge", lambda b, s: b.queues_unserved(cap=10**7)),
        ("naive", lambda b, s: b.queues_unserved(now=NAIVE)),
        ("served", lambda b, s: b.queues_unserved(now=at(6))),
        (
            "lonely",
            lambda b, s: b.jobs_enqueue(
                [NewJob("t", queue="lonely", id=i) for i in (W1, W2, W3)], now=at(6)
            ),
        ),
        (
            "delayed",
            lambda b, s: b.jobs_enqueue(
                [NewJob("t", queue="soon", id=W4, delay_seconds=60)], now=at(6)
            ),
        ),
        (
            "partitioned",
            lambda b, s: b.jobs_enqueue(
                [NewJob("t", queue="lonely", id=W5, partition="p")], now=at(6)
            ),
        ),
        ("unserved", lambda b, s: b.queues_unserved(now=at(7))),
        ("capped", lambda b, s: b.queues_unserved(cap=2, now=at(7))),
        ("worker died", lambda b, s: b.queues_unserved(alive_within_seconds=1, now=at(7))),
        ("serves all", lambda b, s: b.worker_beat(_worker("w2", queues=()), now=at(7))),
        ("none unserved", lambda b, s: b.queues_unserved(now=at(8))),
        ("both gone", lambda b, s: b.queues_unserved(alive_within_seconds=30, now=at(100))),
        ("paused", lambda b, s: b.queue_pause(name="lonely", paused=True, actor="ops")),
        ("not while paused", lambda b, s: b.queues_unserved(alive_within_seconds=30, now=at(100))),
    ],
    "queue_list": [("all", lambda b, s: b.queue_list())],
    "queue_get": [
        ("blank", lambda b, s: b.queue_get("")),
        ("unknown", lambda b, s: b.queue_get("nope")),
        ("known", lambda b, s: b.queue_get("q")),
    ],
    "queue_ensure": [
        ("blank", lambda b, s: b.queue_ensure("")),
        ("long", lambda b, s: b.queue_ensure("x" * 300)),
        ("new", lambda b, s: b.queue_ensure("new")),
        ("again", lambda b, s: b.queue_ensure("new")),
    ],
    "queue_pause": [
        ("blank", lambda b, s: b.queue_pause(name="", paused=True)),
        ("bidi", lambda b, s: b.queue_pause(name="q\u202e", paused=True)),
        ("long actor", lambda b, s: b.queue_pause(name="q", paused=True, actor="x" * 101)),
        ("unknown", lambda b, s: b.queue_pause(name="nope", paused=True, create=False)),
        ("ok", lambda b, s: b.queue_pause(name="q", paused=True, actor="ops")),
        ("fetch", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["q"], now=at(10))),
    ],
    "queue_activate": [
        ("blank", lambda b, s: b.queue_activate(name=" q", active=False)),
        ("unknown", lambda b, s: b.queue_activate(name="nope", active=False, create=False)),
        ("ok", lambda b, s: b.queue_activate(name="q", active=False)),
        ("fetch", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["q"], now=at(10))),
    ],
    "queue_hide": [
        ("blank", lambda b, s: b.queue_hide(name=" q", hidden=True)),
        ("unknown", lambda b, s: b.queue_hide(name="nope", hidden=True, create=False)),
        ("ok", lambda b, s: b.queue_hide(name="q", hidden=True)),
        ("listed", lambda b, s: b.queue_list()),
        ("stats", lambda b, s: b.stats_queues(now=at(10))),
        (
            "still claimed",
            lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["q"], now=at(10)),
        ),
        ("shown", lambda b, s: b.queue_hide(name="q", hidden=False)),
    ],
    "limits_declare": [
        ("bad rate", lambda b, s: b.limits_declare(limits=[TypeLimit("t", "10/d")])),
        ("zero cap", lambda b, s: b.limits_declare(limits=[TypeLimit("t", None, 0)])),
        ("ok", lambda b, s: b.limits_declare(limits=[TypeLimit("t", "2/s", 1)])),
        ("list", lambda b, s: b.limits_list(now=at(10))),
    ],
    "limit_set": [
        ("bad scope", lambda b, s: b.limit_set(scope="job", name="q", rate_limit="1/s")),
        ("queue cap", lambda b, s: b.limit_set(scope="queue", name="q", partition_concurrency=1)),
        ("ok", lambda b, s: b.limit_set(scope="queue", name="q", rate_limit="1/s", actor="ops")),
        ("claim", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["q"], now=at(10))),
        ("held", lambda b, s: b.jobs_fetch(worker_id="w2", limit=5, queues=["q"], now=at(10.5))),
    ],
    "limit_reset": [
        ("missing", lambda b, s: b.limit_reset(scope="type", name="nothing")),
        ("blank", lambda b, s: b.limit_reset(scope="type", name="")),
    ],
    "limits_list": [("empty", lambda b, s: b.limits_list(now=at(10)))],
    "jobs_claim": [
        ("zero", lambda b, s: b.jobs_claim(worker_id="w2", limit=0)),
        ("some", lambda b, s: b.jobs_claim(worker_id="w2", limit=2, queues=["q"], now=at(10))),
    ],
    "queue_configure": [
        ("workers 0", lambda b, s: b.queue_configure(name="q", max_workers=0)),
        ("workers huge", lambda b, s: b.queue_configure(name="q", max_workers=10**5)),
        ("zombie short", lambda b, s: b.queue_configure(name="q", zombie_timeout_seconds=0.5)),
        ("zombie under floor", lambda b, s: b.queue_configure(name="q", zombie_timeout_seconds=5)),
        ("unknown", lambda b, s: b.queue_configure(name="nope", max_workers=1, create=False)),
        ("execution 0", lambda b, s: b.queue_configure(name="q", execution_timeout_seconds=0)),
        ("blank", lambda b, s: b.queue_configure(name="", max_workers=1)),
        ("ok", lambda b, s: b.queue_configure(name="q", max_workers=1, zombie_timeout_seconds=30)),
        (
            "clear",
            lambda b, s: b.queue_configure(
                name="q", max_workers=None, execution_timeout_seconds=UNSET
            ),
        ),
        ("stats", lambda b, s: b.stats_queues(now=at(100))),
    ],
    "worker_beat": [
        ("blank id", lambda b, s: b.worker_beat(_worker(""))),
        ("naive start", lambda b, s: b.worker_beat(_worker("w2", started_at=NAIVE))),
        ("zero concurrency", lambda b, s: b.worker_beat(_worker("w2", concurrency=0))),
        ("ok", lambda b, s: b.worker_beat(_worker("w2", running=2), now=at(10))),
        ("list", lambda b, s: b.workers_list(now=at(11))),
    ],
    "worker_remove": [
        ("blank", lambda b, s: b.worker_remove(worker_id="")),
        ("long", lambda b, s: b.worker_remove(worker_id="x" * 300)),
        ("unknown", lambda b, s: b.worker_remove(worker_id="w9")),
        ("ok", lambda b, s: b.worker_remove(worker_id="w1")),
        ("list", lambda b, s: b.workers_list(now=at(11))),
    ],
    "workers_list": [
        ("zero", lambda b, s: b.workers_list(alive_within_seconds=0)),
        ("nan", lambda b, s: b.workers_list(alive_within_seconds=math.nan)),
        ("naive", lambda b, s: b.workers_list(now=NAIVE)),
        ("gone", lambda b, s: b.workers_list(alive_within_seconds=1, now=at(100))),
        ("alive", lambda b, s: b.workers_list(now=at(6))),
    ],
    "worker_request": [
        ("long id", lambda b, s: b.worker_request(worker_id="x" * 300, concurrency=2)),
        ("concurrency 0", lambda b, s: b.worker_request(worker_id=None, concurrency=0)),
        ("concurrency huge", lambda b, s: b.worker_request(worker_id=None, concurrency=1001)),
        ("blank circuit", lambda b, s: b.worker_request(worker_id=None, close_circuit="")),
        ("unknown", lambda b, s: b.worker_request(worker_id="w9", concurrency=2)),
        ("all", lambda b, s: b.worker_request(worker_id=None, concurrency=2, close_circuit="t")),
        ("heard", lambda b, s: b.worker_beat(_worker("w1"), now=at(10))),
        ("once", lambda b, s: b.worker_beat(_worker("w1"), now=at(11))),
    ],
    # Durable jobs (issue 34): steps under the lease, sleeps and waits that suspend the job,
    # events kept or delivered, the wake pass, durable zombies resumed, and their bad inputs.
    "steps_record": [
        ("ok", lambda b, s: b.steps_record(lease=s.running, name="a", value='{"x":1}', now=at(10))),
        (
            "done stays",
            lambda b, s: b.steps_record(lease=s.running, name="a", value="2", now=at(11)),
        ),
        (
            "failed",
            lambda b, s: b.steps_record(lease=s.running, name="b", error="boom", now=at(12)),
        ),
        (
            "again",
            lambda b, s: b.steps_record(
                lease=s.running, name="b", value="null", elapsed_seconds=0.5, now=at(13)
            ),
        ),
        ("stale", lambda b, s: b.steps_record(lease=s.stale(s.running), name="c", value="1")),
        ("fetched", lambda b, s: b.steps_record(lease=s.fetched, name="c", value="1")),
        ("blank name", lambda b, s: b.steps_record(lease=s.running, name="", value="1")),
        ("long name", lambda b, s: b.steps_record(lease=s.running, name="n" * 201, value="1")),
        ("control name", lambda b, s: b.steps_record(lease=s.running, name="a\x00", value="1")),
        ("bad json", lambda b, s: b.steps_record(lease=s.running, name="c", value="{x")),
        ("both", lambda b, s: b.steps_record(lease=s.running, name="c", value="1", error="e")),
        (
            "nan elapsed",
            lambda b, s: b.steps_record(lease=s.running, name="c", elapsed_seconds=math.nan),
        ),
        ("list", lambda b, s: b.steps_list(job_id=C)),
    ],
    "steps_record_many": [
        (
            "each its own lease",
            lambda b, s: b.steps_record_many(
                records=[
                    StepWrite(s.running, "a", '{"x":1}'),
                    StepWrite(s.running, "b", error="boom", elapsed_seconds=0.25),
                    StepWrite(s.stale(s.running), "c", "1"),
                    StepWrite(s.fetched, "d", "1"),
                ],
                now=at(10),
            ),
        ),
        (
            "done stays, failed again",
            lambda b, s: b.steps_record_many(
                records=[StepWrite(s.running, "a", "2"), StepWrite(s.running, "b", "null")],
                now=at(11),
            ),
        ),
        ("empty", lambda b, s: b.steps_record_many(records=[])),
        (
            "one step twice",
            lambda b, s: b.steps_record_many(
                records=[StepWrite(s.running, "e", "1"), StepWrite(s.running, "e", "2")]
            ),
        ),
        (
            "bad second",
            lambda b, s: b.steps_record_many(
                records=[StepWrite(s.running, "f", "1"), StepWrite(s.running, "", "1")]
            ),
        ),
        (
            "bad json",
            lambda b, s: b.steps_record_many(records=[StepWrite(s.running, "f", "{x")]),
        ),
        ("not a write", lambda b, s: b.steps_record_many(records=[("f", "1")])),
        ("a string", lambda b, s: b.steps_record_many(records="ab")),
        (
            "too many",
            lambda b, s: b.steps_record_many(
                records=[StepWrite(s.running, f"n{i}") for i in range(1001)]
            ),
        ),
        ("nothing of the refused written", lambda b, s: b.steps_list(job_id=C)),
    ],
    "steps_list_many": [
        ("none", lambda b, s: b.steps_list_many(job_ids=[A, C])),
        (
            "record",
            lambda b, s: b.steps_record_many(
                records=[StepWrite(s.running, "x", "1"), StepWrite(s.running, "y", "2")],
                now=at(5),
            ),
        ),
        ("some, repeats once", lambda b, s: b.steps_list_many(job_ids=[C, A, C])),
        ("empty", lambda b, s: b.steps_list_many(job_ids=[])),
        ("not an id", lambda b, s: b.steps_list_many(job_ids=[A, "x"])),
        ("a string", lambda b, s: b.steps_list_many(job_ids=A)),
        ("too many", lambda b, s: b.steps_list_many(job_ids=[A] * 1001)),
    ],
    "steps_list": [
        ("none", lambda b, s: b.steps_list(job_id=A)),
        ("not an id", lambda b, s: b.steps_list(job_id="x")),
    ],
    "durable_sleep": [
        ("negative", lambda b, s: b.durable_sleep(lease=s.running, name="s", seconds=-1)),
        ("nan", lambda b, s: b.durable_sleep(lease=s.running, name="s", seconds=math.nan)),
        ("too long", lambda b, s: b.durable_sleep(lease=s.running, name="s", seconds=3.2e7)),
        ("stale", lambda b, s: b.durable_sleep(lease=s.stale(s.running), name="s", seconds=1)),
        ("zero", lambda b, s: b.durable_sleep(lease=s.running, name="z", seconds=0, now=at(10))),
        ("again", lambda b, s: b.durable_sleep(lease=s.running, name="z", seconds=9, now=at(11))),
        (
            "suspend",
            lambda b, s: b.durable_sleep(lease=s.running, name="s", seconds=30, now=at(12)),
        ),
        # On the store's own clock: a zero sleep ends at once on both (SQLite's float clock
        # once rounded its end past now and suspended the job about one time in three).
        *(
            (
                f"zero, store clock {n}",
                lambda b, s, n=n: b.durable_sleep(lease=s.running, name=f"z{n}", seconds=0),
            )
            for n in range(6)
        ),
        ("row", lambda b, s: b.job_get(C)),
        ("not yet", lambda b, s: b.durable_wake(now=at(41))),
        ("woken", lambda b, s: b.durable_wake(now=at(42))),
        ("steps", lambda b, s: b.steps_list(job_id=C)),
    ],
    "durable_wait": [
        ("blank key", lambda b, s: b.durable_wait(lease=s.running, name="w", key="")),
        ("long key", lambda b, s: b.durable_wait(lease=s.running, name="w", key="k" * 201)),
        (
            "negative timeout",
            lambda b, s: b.durable_wait(lease=s.running, name="w", key="k", timeout_seconds=-1),
        ),
        # A zero timeout on the store's own clock times out at once on both.
        *(
            (
                f"zero, store clock {n}",
                lambda b, s, n=n: b.durable_wait(
                    lease=s.running, name=f"z{n}", key="none", timeout_seconds=0
                ),
            )
            for n in range(6)
        ),
        ("kept", lambda b, s: b.events_send(key="k", data='{"n":1}', now=at(10))),
        ("taken", lambda b, s: b.durable_wait(lease=s.running, name="w1", key="k", now=at(11))),
        (
            "suspend",
            lambda b, s: b.durable_wait(
                lease=s.running, name="w2", key="k", timeout_seconds=60, now=at(12)
            ),
        ),
        ("delivered", lambda b, s: b.events_send(key="k", data='"two"', now=at(13))),
        ("row", lambda b, s: b.job_get(C)),
        ("steps", lambda b, s: b.steps_list(job_id=C)),
    ],
    "events_send": [
        ("blank key", lambda b, s: b.events_send(key="", data="1")),
        ("long key", lambda b, s: b.events_send(key="k" * 201, data="1")),
        ("not json", lambda b, s: b.events_send(key="k", data="{x")),
        ("nan", lambda b, s: b.events_send(key="k", data="NaN")),
        ("not text", lambda b, s: b.events_send(key="k", data=1)),  # type: ignore[arg-type]
        ("kept", lambda b, s: b.events_send(key="k", data="[1]", now=at(10))),
    ],
    "durable_wake": [
        ("limit 0", lambda b, s: b.durable_wake(limit=0)),
        ("limit huge", lambda b, s: b.durable_wake(limit=10**6)),
        ("none", lambda b, s: b.durable_wake(now=at(10))),
    ],
    "durable_resume": [
        ("not a mapping", lambda b, s: b.durable_resume(types=["t"], zombie_timeout_seconds=5)),  # type: ignore[arg-type]
        ("zero attempts", lambda b, s: b.durable_resume(types={"t": 0}, zombie_timeout_seconds=5)),
        ("zero timeout", lambda b, s: b.durable_resume(types={"t": 3}, zombie_timeout_seconds=0)),
        (
            "fresh",
            lambda b, s: b.durable_resume(types={"t": 3}, zombie_timeout_seconds=30, now=at(10)),
        ),
        (
            "other type",
            lambda b, s: b.durable_resume(types={"u": 3}, zombie_timeout_seconds=5, now=at(60)),
        ),
        (
            "resumed",
            lambda b, s: b.durable_resume(types={"t": 3}, zombie_timeout_seconds=5, now=at(60)),
        ),
        ("row", lambda b, s: b.job_get(C)),
        ("history", lambda b, s: b.job_attempts(id=C)),
        ("stats", lambda b, s: b.stats_summary()),
    ],
    "durable_spawn": [
        ("no jobs", lambda b, s: b.durable_spawn(lease=s.running, name="s", jobs=[])),
        ("bad child", lambda b, s: b.durable_spawn(lease=s.running, name="s", jobs=[NewJob("")])),
        (
            "after",
            lambda b, s: b.durable_spawn(lease=s.running, name="s", jobs=[_job(W1, A)]),
        ),
        (
            "stale",
            lambda b, s: b.durable_spawn(
                lease=s.stale(s.running), name="s", jobs=[NewJob("k", id=W2)]
            ),
        ),
        (
            "ok",
            lambda b, s: b.durable_spawn(
                lease=s.running, name="s", jobs=[NewJob("k", queue="kids", id=W2)], now=at(10)
            ),
        ),
        (
            "again",
            lambda b, s: b.durable_spawn(
                lease=s.running, name="s", jobs=[NewJob("k", queue="kids", id=W3)], now=at(11)
            ),
        ),
        ("not again", lambda b, s: b.job_get(W3)),
        ("child", lambda b, s: b.job_get_related(id=W2)),
    ],
    "durable_gather": [
        ("empty", lambda b, s: b.durable_gather(lease=s.running, name="g", ids=[])),
        ("not ids", lambda b, s: b.durable_gather(lease=s.running, name="g", ids=["x"])),
        ("stale", lambda b, s: b.durable_gather(lease=s.stale(s.running), name="g", ids=[D])),
        (
            "done",
            lambda b, s: b.durable_gather(lease=s.running, name="g1", ids=[D, E, UNKNOWN]),
        ),
        ("waits", lambda b, s: b.durable_gather(lease=s.running, name="g2", ids=[A], now=at(10))),
        ("row", lambda b, s: b.job_get(C)),
        ("cancel a", lambda b, s: b.jobs_cancel(ids=[A], actor="ops", now=at(11))),
        ("woken", lambda b, s: b.durable_wake(now=at(12))),
        ("steps", lambda b, s: b.steps_list(job_id=C)),
    ],
    "durable_counts": [
        ("naive", lambda b, s: b.durable_counts(now=NAIVE)),
        ("none", lambda b, s: b.durable_counts(now=at(10))),
        ("kept", lambda b, s: b.events_send(key="k", data="1", now=at(10))),
        ("sleep", lambda b, s: b.durable_sleep(lease=s.running, name="s", seconds=9, now=at(10))),
        ("some", lambda b, s: b.durable_counts(now=at(11))),
        ("expired", lambda b, s: b.durable_counts(now=at(10 + 7 * 86_400))),
    ],
    "durable_tidy": [
        ("limit 0", lambda b, s: b.durable_tidy(limit=0)),
        ("kept", lambda b, s: b.events_send(key="k", data="1", now=at(10))),
        ("not yet", lambda b, s: b.durable_tidy(now=at(10))),
        ("expired", lambda b, s: b.durable_tidy(now=at(10 + 7 * 86_400))),
    ],
    "streams_emit": [
        (
            "first",
            lambda b, s: b.streams_emit(lease=s.running, index=0, item='{"a":1}', now=at(10)),
        ),
        ("again", lambda b, s: b.streams_emit(lease=s.running, index=0, item="2", now=at(11))),
        ("gap", lambda b, s: b.streams_emit(lease=s.running, index=2, item="3", now=at(11))),
        ("second", lambda b, s: b.streams_emit(lease=s.running, index=1, item="[]", now=at(12))),
        ("stale", lambda b, s: b.streams_emit(lease=s.stale(s.running), index=2, item="1")),
        ("fetched", lambda b, s: b.streams_emit(lease=s.fetched, index=0, item="1")),
        ("negative", lambda b, s: b.streams_emit(lease=s.running, index=-1, item="1")),
        ("past max", lambda b, s: b.streams_emit(lease=s.running, index=100_000, item="1")),
        ("bool index", lambda b, s: b.streams_emit(lease=s.running, index=True, item="1")),
        ("not json", lambda b, s: b.streams_emit(lease=s.running, index=2, item="{x")),
        ("not text", lambda b, s: b.streams_emit(lease=s.running, index=2, item=5)),
        ("nan", lambda b, s: b.streams_emit(lease=s.running, index=2, item="NaN")),
        (
            "too big",
            lambda b, s: b.streams_emit(lease=s.running, index=2, item='"' + "x" * 65_535 + '"'),
        ),
        (
            "at the limit",
            lambda b, s: b.streams_emit(
                lease=s.running, index=2, item='"' + "x" * 65_534 + '"', now=at(13)
            ),
        ),
        ("naive", lambda b, s: b.streams_emit(lease=s.running, index=3, item="1", now=NAIVE)),
        ("items", lambda b, s: b.streams_read(job_id=C)),
    ],
    "streams_read": [
        ("none", lambda b, s: b.streams_read(job_id=C)),
        ("unknown", lambda b, s: b.streams_read(job_id=UNKNOWN)),
        ("a", lambda b, s: b.streams_emit(lease=s.running, index=0, item='"a"', now=at(10))),
        ("b", lambda b, s: b.streams_emit(lease=s.running, index=1, item='"b"', now=at(11))),
        ("c", lambda b, s: b.streams_emit(lease=s.running, index=2, item='"c"', now=at(12))),
        ("all", lambda b, s: b.streams_read(job_id=C)),
        ("from 1", lambda b, s: b.streams_read(job_id=C, from_index=1)),
        ("limit 1", lambda b, s: b.streams_read(job_id=C, from_index=1, limit=1)),
        ("past the end", lambda b, s: b.streams_read(job_id=C, from_index=3)),
        ("negative", lambda b, s: b.streams_read(job_id=C, from_index=-1)),
        ("limit 0", lambda b, s: b.streams_read(job_id=C, limit=0)),
        ("limit over", lambda b, s: b.streams_read(job_id=C, limit=1001)),
        ("bad id", lambda b, s: b.streams_read(job_id="x")),
    ],
    "streams_length": [
        ("none", lambda b, s: b.streams_length(job_id=C)),
        ("a", lambda b, s: b.streams_emit(lease=s.running, index=0, item='"a"', now=at(10))),
        ("one", lambda b, s: b.streams_length(job_id=C)),
        ("bad id", lambda b, s: b.streams_length(job_id="")),
    ],
    "streams_tidy": [
        ("limit 0", lambda b, s: b.streams_tidy(limit=0)),
        ("a", lambda b, s: b.streams_emit(lease=s.running, index=0, item='"a"', now=at(10))),
        ("kept while hot", lambda b, s: b.streams_tidy()),
        ("done", lambda b, s: b.jobs_finalize(moves=[SucceedMove(s.running, 1.0)], now=at(11))),
        ("kept in the archive", lambda b, s: b.streams_tidy()),
        ("purged", lambda b, s: b.archive_purge(older_than=at(12))),
        ("gone with the job", lambda b, s: b.streams_tidy()),
        ("none left", lambda b, s: b.streams_read(job_id=C)),
    ],
}

# Operations whose answer depends on what the database can do, by design: each is checked by a
# test of its own that reads ``capabilities`` (test_hot_tidy.py), and the lifecycle ones by
# every other test.
NOT_DIFFERENTIAL = {"open", "close", "jobs_hot_tidy"}


def test_every_operation_has_a_table() -> None:
    missing = set(Backend.operations()) - set(CASES) - NOT_DIFFERENTIAL
    assert not missing, f"storage operations without a differential table: {sorted(missing)}"
    assert not set(CASES) - set(Backend.operations()), "a table names no operation"


# Times a database stamps from its own clock (queue and worker rows it touches without an
# injected ``now``) are the only times left out of the comparison.
_THEIR_CLOCK = timedelta(days=1)


def _shape(value: Any) -> Any:
    if isinstance(value, Lease):
        return {"job_id": value.job_id, "worker_id": value.worker_id}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _shape(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in {"token", "lease_token"}
        } | {"<type>": type(value).__name__}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        if abs(value - datetime.now(UTC)) < _THEIR_CLOCK:
            return "<their clock>"
        return value.astimezone(UTC).isoformat()
    if isinstance(value, dict):
        return {_shape(k): _shape(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shape(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str) and is_job_id(value) and value not in FIXED:
        return "<new id>"  # made by the store (enqueue without an id)
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return {"<json>": json.loads(value)}
        except ValueError:
            return value
    return value


async def _outcome(call: Awaitable[Any]) -> Any:
    try:
        return ("value", _shape(await call))
    except ValidationError as exc:
        return ("ValidationError", exc.field, exc.limit)
    except ChokaqError as exc:
        return (type(exc).__name__,)


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[tuple[Backend, Seeded], ...]]:
    """A seeded SQLite store and a seeded PostgreSQL store, alike in every row."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    backends = [
        create_backend(f"sqlite:///{tmp_path / 'jobs.db'}", schema="chokaq"),
        create_backend(PG_URL, schema=schema),
    ]
    try:
        seeded = []
        for backend in backends:
            await backend.open()
            await backend.migrate()
            seeded.append((backend, await _seed(backend)))
        yield tuple(seeded)
    finally:
        for backend in backends:
            await backend.close()
        drop_schema(schema)


@pytest.mark.parametrize("operation", sorted(CASES))
async def test_both_backends_answer_alike(
    pair: tuple[tuple[Backend, Seeded], ...], operation: str
) -> None:
    (sqlite, s_state), (postgres, p_state) = pair
    assert sqlite.capabilities.name != postgres.capabilities.name
    differences = []
    for label, call in CASES[operation]:
        left = await _outcome(call(sqlite, s_state))
        right = await _outcome(call(postgres, p_state))
        if left != right:
            differences.append(f"{operation}: {label}\n  sqlite:   {left}\n  postgres: {right}")
    assert not differences, "\n".join(differences)

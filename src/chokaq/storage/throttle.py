"""The claim under rate limits and partitions: one plan for every database.

A limited claim runs in one transaction that holds the limits it may spend (row locks on
PostgreSQL, the write lock on SQLite), in three steps; the driver does the reading and writing,
this module every decision, so that both databases decide alike:

1. ``plan``: from the limits in force, the jobs running per (type, partition) and the rate state
   of each key, the quota of every key: how many jobs each queue's rate, each limited type's
   unpartitioned jobs and each partition may start now.
2. The driver reads candidates: each serving queue's unpartitioned head (as the plain claim, with
   the limited types left out), each limited type's own unpartitioned head in each serving queue
   (up to its quota: a limited type never hides the work behind it), and, for each type that
   has partitioned jobs, a walk
   over its partitions in key order from the one after its cursor (wrapping), each partition's
   head up to its quota. ``pick`` orders them (priority first, then round by round across
   partitions, so that one hot partition cannot starve the others) and keeps what the quotas, the
   bulkheads and the limit allow.
3. The driver claims the picked rows and writes ``spend``: each rate key's new ``tat`` and each
   walked type's new cursor (the last partition served).

A key is (scope, name, partition): ("queue", name, "") or ("type", name, partition or "").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..models import LimitInfo, PartitionLoad
from ..rates import check_rate, next_start, take

__all__ = [
    "Candidate",
    "LimitRow",
    "Plan",
    "Spend",
    "Walk",
    "describe",
    "in_force",
    "pick",
    "plan",
    "spend",
]

Key = tuple[str, str, str]
TOP_PARTITIONS = 5  # the busiest partitions a limit's row lists


@dataclass(frozen=True, slots=True)
class LimitRow:
    """A limit in force, as the claim reads it under its lock."""

    scope: str  # "queue" or "type"
    name: str
    interval: float | None  # seconds between starts; None: no rate
    burst: int | None
    concurrency: int | None  # types: running jobs per partition; None: no cap
    cursor: str | None = None  # types: the partition the last walk served


@dataclass(frozen=True, slots=True)
class Walk:
    """The partitions of one type to walk: after ``cursor`` (wrapping), ``steps`` at most,
    each partition's head up to ``quotas`` (``default`` for a partition not listed)."""

    type: str
    cursor: str
    steps: int
    default: int
    quotas: dict[str, int]


@dataclass(frozen=True, slots=True)
class Plan:
    exclude: list[str]  # types the queue scan leaves out (the limited ones are read per type)
    queue_quota: dict[str, int]  # rate-limited queues: jobs they may start now
    plain_quota: dict[str, int]  # limited types: unpartitioned jobs they may start now
    walks: list[Walk]
    retry_at: float | None  # the soonest a rate now spent allows another start (epoch)


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    queue: str
    type: str
    partition: str | None  # None: an unpartitioned job (the queue's scan)
    priority: int
    due: float
    created: float
    ord: int = 0  # walked: the partition's place in the walk (1, 2, ...)


@dataclass(frozen=True, slots=True)
class Spend:
    tats: list[tuple[str, str, str, float]] = field(default_factory=list)
    cursors: dict[str, str] = field(default_factory=dict)
    retry_at: float | None = None  # the soonest a key just spent allows another start


def plan(
    limits: Sequence[LimitRow],
    partitioned: Iterable[str],
    running: dict[tuple[str, str | None], int],
    tats: dict[Key, float],
    now: float,
    room: int,
    exclude: Sequence[str],
) -> Plan:
    """The quotas at ``now`` (epoch seconds) for a claim of up to ``room`` jobs. ``running``:
    Fetched or Processing rows by (type, partition or None); ``tats``: the rate state of the keys
    that have one; ``partitioned``: the types with partitioned pending jobs."""
    excluded = set(exclude)
    retry: list[float] = []

    def tokens(key: Key, row: LimitRow) -> int:
        if row.interval is None or row.burst is None:
            return room
        tat = tats.get(key)
        granted, _ = take(tat, now, row.interval, row.burst, room)
        if granted == 0 and tat is not None:
            retry.append(next_start(tat, row.interval, row.burst))
        return granted

    queue_quota = {
        row.name: tokens(("queue", row.name, ""), row) for row in limits if row.scope == "queue"
    }
    types = {row.name: row for row in limits if row.scope == "type"}
    plain_quota: dict[str, int] = {}
    for name, row in types.items():
        if row.interval is None and row.concurrency is None:
            continue
        quota = tokens(("type", name, ""), row)
        if row.concurrency is not None:
            quota = min(quota, max(0, row.concurrency - running.get((name, None), 0)))
        plain_quota[name] = quota
    walks = []
    for name in sorted(set(partitioned) - excluded):
        row = types.get(name) or LimitRow("type", name, None, None, None)
        default = room
        if row.concurrency is not None:
            default = min(default, row.concurrency)
        if row.interval is not None and row.burst is not None:
            default = min(default, row.burst)
        quotas: dict[str, int] = {}
        for (kind, type_name, part), _ in tats.items():
            if kind == "type" and type_name == name and part:
                quotas[part] = tokens((kind, type_name, part), row)
        if row.concurrency is not None:
            for (running_type, running_part), count in running.items():
                if running_type == name and running_part is not None:
                    free = max(0, row.concurrency - count)
                    quotas[running_part] = min(quotas.get(running_part, default), free)
        blocked = sum(1 for quota in quotas.values() if quota == 0)
        walks.append(Walk(name, row.cursor or "", room + blocked, default, quotas))
    return Plan(
        exclude=sorted(excluded | set(plain_quota)),
        queue_quota=queue_quota,
        plain_quota=plain_quota,
        walks=walks,
        retry_at=min(retry, default=None),
    )


def pick(
    candidates: Sequence[Candidate], plan: Plan, rooms: dict[str, int], limit: int
) -> list[Candidate]:
    """The candidates to claim, in claim order: by priority, then round by round (a
    partition's first job, then its second...), unpartitioned jobs first within a round, then
    partitions in walk order, then due time and creation. ``rooms``: what each serving queue's
    bulkhead leaves (a queue not listed does not serve)."""
    rounds: Counter[tuple[str, str]] = Counter()
    ranked = []
    for c in sorted(
        candidates, key=lambda c: (c.partition is not None, c.type, c.partition, -c.priority)
    ):
        if c.partition is None:
            ranked.append((1, c))
        else:
            rounds[(c.type, c.partition)] += 1
            ranked.append((rounds[(c.type, c.partition)], c))
    ranked.sort(key=lambda rc: (-rc[1].priority, rc[0], rc[1].ord, rc[1].due, rc[1].created))
    taken: list[Candidate] = []
    per_queue: Counter[str] = Counter()
    per_plain: Counter[str] = Counter()
    for _, c in ranked:
        if len(taken) >= limit:
            break
        if per_queue[c.queue] >= min(rooms.get(c.queue, 0), plan.queue_quota.get(c.queue, limit)):
            continue
        if c.partition is None and c.type in plan.plain_quota:
            if per_plain[c.type] >= plan.plain_quota[c.type]:
                continue
            per_plain[c.type] += 1
        per_queue[c.queue] += 1
        taken.append(c)
    return taken


def spend(
    picked: Sequence[Candidate], limits: Sequence[LimitRow], tats: dict[Key, float], now: float
) -> Spend:
    """The new rate state of every key the picked jobs spend, and each walked type's cursor."""
    rows = {(row.scope, row.name): row for row in limits}
    used: Counter[Key] = Counter()
    cursors: dict[str, tuple[int, str]] = {}
    for c in picked:
        used[("queue", c.queue, "")] += 1
        used[("type", c.type, c.partition or "")] += 1
        if c.partition is not None and (c.ord, c.partition) > cursors.get(c.type, (-1, "")):
            cursors[c.type] = (c.ord, c.partition)
    out = Spend(cursors={name: part for name, (_, part) in cursors.items()})
    soonest: list[float] = []
    for key, count in used.items():
        row = rows.get((key[0], key[1]))
        if row is None or row.interval is None or row.burst is None:
            continue
        granted, tat = take(tats.get(key), now, row.interval, row.burst, count)
        if granted < count:  # the plan never allows more than the tokens: a bug if reached
            raise AssertionError(f"limit {key} spent {count} of {granted} allowed")
        out.tats.append((key[0], key[1], key[2], tat))
        soonest.append(next_start(tat, row.interval, row.burst))
    return replace(out, retry_at=min(soonest, default=None))


def in_force(rate: str | None) -> tuple[float | None, int | None]:
    """The interval and burst a rate in force is enforced with (``None``: no rate)."""
    if rate is None:
        return None, None
    parsed = check_rate("rate_limit", rate)
    return parsed.interval_seconds, parsed.burst


def describe(
    r: Any,
    updated_at: datetime,
    current_rate: float,
    loads: list[tuple[str, int, int]],
    tats: dict[tuple[str, str, str], float],
    now: float,
) -> LimitInfo:
    """A limit's row (scope, name, rate, concurrency, declared rate, declared concurrency,
    rate_set, concurrency_set, updated_at, last_modified_by) with its load: ``loads`` holds
    (partition or "", due pending, running) rows."""
    scope, name, rate, concurrency = r[0], r[1], r[2], r[3]
    interval, burst = in_force(rate)
    held = 0
    for part, due, busy in loads:
        key = (scope, name, part if scope == "type" else "")
        capped = concurrency is not None and busy >= concurrency
        spent = (
            interval is not None
            and burst is not None
            and key in tats
            and (tats[key] - (burst - 1) * interval > now)
        )
        if capped or spent:
            held += due
    partitions = [PartitionLoad(p, due, busy) for p, due, busy in loads if p]
    partitions.sort(key=lambda load: (-load.waiting, -load.running, load.partition))
    return LimitInfo(
        scope=scope,
        name=name,
        rate_limit=rate,
        partition_concurrency=concurrency,
        declared_rate_limit=r[4],
        declared_partition_concurrency=r[5],
        rate_set=bool(r[6]),
        concurrency_set=bool(r[7]),
        updated_at=updated_at,
        last_modified_by=r[9],
        current_rate=round(current_rate, 3),
        pending=sum(due for _, due, _ in loads),
        held=held,
        running=sum(busy for _, _, busy in loads),
        partitions=len(partitions),
        top_partitions=tuple(partitions[:TOP_PARTITIONS]),
    )


def rooms(
    serving: Iterable[Sequence[Any]], queues: Sequence[str] | None, limit: int
) -> dict[str, int]:
    """What each serving queue's bulkhead leaves for a claim of ``limit``, from its rows
    (name, paused, active, max_workers, Fetched + Processing). A queue asked for without a row
    counts as active and unpaused."""
    wanted = None if queues is None else set(queues)
    out: dict[str, int] = {}
    known = set()
    for name, paused, active, max_workers, busy in serving:
        known.add(name)
        if (wanted is not None and name not in wanted) or paused or not active:
            continue
        out[name] = limit if max_workers is None else max(0, min(limit, max_workers - busy))
    for name in wanted or ():
        if name not in known:
            out[name] = limit
    return out


def limit_rows(rows: Iterable[Sequence[Any]], rooms: dict[str, int]) -> list[LimitRow]:
    """The ``limits`` rows (scope, name, interval, burst, concurrency, cursor) a claim over
    ``rooms`` reads: every type's (for its cursor too), and the rates of the serving queues."""
    return [
        LimitRow(r[0], r[1], r[2], r[3], r[4], r[5])
        for r in rows
        if r[0] == "type" or (r[2] is not None and r[1] in rooms)
    ]


def active(rows: Iterable[Sequence[Any]]) -> tuple[list[str], list[str]]:
    """Queues with a rate in force and types with a limit in force, from ``limits`` rows."""
    rows = list(rows)
    queues = [r[1] for r in rows if r[0] == "queue" and r[2] is not None]
    types = [r[1] for r in rows if r[0] == "type" and (r[2] is not None or r[4] is not None)]
    return queues, types


@dataclass(frozen=True, slots=True)
class Settled:
    """A ``limits`` row to write: what the code declares, whether an operator set each limit,
    and what is in force."""

    declared_rate: str | None
    declared_concurrency: int | None
    rate_set: bool
    rate: str | None
    concurrency_set: bool
    concurrency: int | None


def settle(
    row: Sequence[Any] | None,
    *,
    declared: tuple[str | None, int | None] | None = None,
    rate: object = None,
    concurrency: object = None,
    reset: bool = False,
    unset: object = None,
) -> Settled:
    """The row after a declaration (``declared``), an operator's setting (``rate`` /
    ``concurrency``, ``unset`` where left alone) or a reset, from the stored ``row`` (rate,
    concurrency, declared rate, declared concurrency, rate_set, concurrency_set at 2..7)."""
    stored = (None, None, None, None, False, False) if row is None else tuple(row[2:8])
    old_rate, old_conc, dec_rate, dec_conc, rate_set, conc_set = stored
    if declared is not None:
        dec_rate, dec_conc = declared
    if reset:
        rate_set = conc_set = False
    if rate is not unset:
        rate_set, old_rate = True, rate
    if concurrency is not unset:
        conc_set, old_conc = True, concurrency
    return Settled(
        dec_rate,
        dec_conc,
        bool(rate_set),
        old_rate if rate_set else dec_rate,
        bool(conc_set),
        old_conc if conc_set else dec_conc,
    )


def put_params(scope: str, name: str, row: Settled, actor: str | None) -> dict[str, Any]:
    """The parameters of ``limits_put`` for ``row`` (both databases' statement take these)."""
    interval, burst = in_force(row.rate)
    return {
        "scope": scope,
        "name": name,
        "declared_rate": row.declared_rate,
        "declared_concurrency": row.declared_concurrency,
        "rate_set": row.rate_set,
        "concurrency_set": row.concurrency_set,
        "rate": row.rate,
        "interval": interval,
        "burst": burst,
        "concurrency": row.concurrency,
        "actor": actor,
    }

"""The torture run: worker processes under faults, then a full account of every job.

Starts several ``chokaq worker`` processes on one store running the mixed workload of
``scripts/torture_app.py`` while a producer keeps enqueueing, and for a bounded time: SIGKILLs
workers at random and restarts them, SIGTERMs others, restarts PostgreSQL once (PostgreSQL only),
and pauses and resumes queues. Then it lets everything drain and checks that every accepted job
is in exactly one pillar, that no execution ran twice under one claim, that every final row was
written by the owner of the last claim, that the lifetime counters and metric buckets equal the
moves that happened, that no row stayed Fetched or Processing past its timeouts, and that the
workers rode out the restart. ``torture_faults.py`` adds poison rows (both backends) and a
killed LISTEN backend (PostgreSQL) mid-run. The partition scenario (PostgreSQL, root,
``ip netns``) cuts one worker off the database while it runs jobs and checks that it never
records their outcomes.

    python scripts/torture.py                       # short form on PostgreSQL, then SQLite
    python scripts/torture.py --long                # the long form (minutes; rare)
    python scripts/torture.py --backend sqlite      # one backend only
    python scripts/torture.py --partition-only      # only the partition (torture_partition.py)

The pieces both scripts use (config, report, the store, worker processes, PostgreSQL control)
are in ``torture_rig.py``.

The short forms also run from the test suite (``tests/reliability``). Exit status 1 means a
check failed; the JSON report (``--report``) lists every figure and violation.

This script restarts the shared PostgreSQL server once per PostgreSQL run and always leaves it
running (the restart is wrapped in a ``finally`` that starts it again if needed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.torture_faults import StorageFaults  # noqa: E402
from scripts.torture_leader import StoppedLeader  # noqa: E402
from scripts.torture_rig import (  # noqa: E402
    FINALIZE_RETRYING,
    LEASE_LOST,
    LOOP_CRASHED,
    NOT_APPLIED,
    SHUTDOWN_REQUEUED,
    SIDE_TASK_DIED,
    STORAGE_RECOVERED,
    STORAGE_UNAVAILABLE,
    Config,
    Report,
    Store,
    WorkerProc,
    ensure_postgres_running,
    kill_all,
    prepare,
    reap,
    release,
    restart_postgres,
    setup_store,
    spawn_worker,
    stop_worker,
)

from chokaq import App, FailureReason, NewJob, StorageError  # noqa: E402
from chokaq.ids import new_job_id  # noqa: E402

# -- the workload -------------------------------------------------------------------------


def workload_batch(rng: random.Random, tick: int) -> tuple[list[NewJob], list[str]]:
    """One producer tick: many fast jobs and a few of every other kind; plus the idempotency
    keys to enqueue twice (racing) this tick."""
    from scripts import torture_app as t

    jobs: list[NewJob] = [t.fast.prepare(n=tick * 100 + i) for i in range(8)]
    jobs.append(t.slow.prepare(seconds=round(rng.uniform(0.3, 2.0), 2)))
    jobs.append(t.flaky.prepare(fail_until=rng.choice([1, 2, 3, 4])))
    if tick % 3 == 0:
        jobs.append(t.throttled.prepare(n=tick))
    if tick % 5 == 0:
        jobs.append(t.fatal.prepare(n=tick))
    if tick % 7 == 0:
        jobs.append(t.overrun.prepare(n=tick))
    if tick % 20 == 0:  # scheduled far ahead: must still be hot (Pending) at the end
        jobs.append(t.fast.prepare(n=-tick, delay=3600.0))
    # Unknown type at execution time: rejected into the DLQ with a reason.
    if tick % 11 == 0:
        jobs.append(NewJob(type="no_such_handler", payload="{}", queue="fast"))
    keys = [f"key-{tick}"] if tick % 2 == 0 else []
    # Client-side ids make an enqueue that failed mid-commit (during the restart) traceable.
    return [dataclasses.replace(j, id=new_job_id()) for j in jobs], keys


@dataclass
class Ledgerbook:
    """What the producer knows it enqueued."""

    accepted: dict[str, str] = field(default_factory=dict)  # id -> type
    ambiguous: dict[str, str] = field(default_factory=dict)  # enqueue raised: may or may not exist
    delayed: set[str] = field(default_factory=set)
    duplicate_pairs: list[tuple[str, str, bool]] = field(default_factory=list)
    enqueue_failures: int = 0


async def produce(
    client: App, rng: random.Random, tick: int, book: Ledgerbook, report: Report
) -> None:
    from scripts import torture_app as t

    jobs, keys = workload_batch(rng, tick)
    try:
        results = await client.enqueue_many(jobs)
    except StorageError:
        book.enqueue_failures += 1
        for job in jobs:
            assert job.id is not None
            book.ambiguous[job.id] = job.type
            if job.delay_seconds:
                book.delayed.add(job.id)
        return
    for job, result in zip(jobs, results, strict=True):
        report.check(result == job.id, f"enqueue returned {result} for client id {job.id}")
        book.accepted[str(result)] = job.type
        if job.delay_seconds:
            book.delayed.add(str(result))
    for key in keys:
        pair = [
            dataclasses.replace(t.unique.prepare(key=key, idempotency_key=key), id=new_job_id())
            for _ in range(2)
        ]
        try:
            first, second = await asyncio.gather(
                client.enqueue_many([pair[0]]), client.enqueue_many([pair[1]])
            )
        except StorageError:
            book.enqueue_failures += 1
            for job in pair:
                assert job.id is not None
                book.ambiguous[job.id] = job.type
            continue
        a, b = first[0], second[0]
        for job_id in (a, b):
            if not job_id.duplicate:
                book.accepted[str(job_id)] = "unique"
        if a.duplicate or b.duplicate:
            book.duplicate_pairs.append((str(a), str(b), True))
            report.check(str(a) == str(b), f"duplicate enqueue of {key} returned another id")
        else:
            book.duplicate_pairs.append((str(a), str(b), False))


# -- the run ------------------------------------------------------------------------------


async def sample_stuck(store: Store, samples: list[tuple[float, float, float]]) -> None:
    """Record (monotonic time, oldest Processing heartbeat age, oldest Fetched age)."""
    hot = store.table("jobs_hot")
    now = store.now_expr()
    query = (
        f"SELECT max(CASE WHEN status = 2 THEN {now} - {store.epoch('heartbeat_at')} END),"
        f" max(CASE WHEN status = 1 THEN {now} - {store.epoch('updated_at')} END) FROM {hot}"
    )
    with contextlib.suppress(Exception):
        [(processing, fetched)] = await asyncio.to_thread(store.rows, query)
        samples.append((time.monotonic(), float(processing or 0), float(fetched or 0)))


async def torture(config: Config) -> Report:
    """One torture run on ``config.backend``; returns its report (never raises on a failed
    check, only on set-up errors). PostgreSQL is always left running."""
    rng = random.Random(config.seed or None)
    config.workdir.mkdir(parents=True, exist_ok=True)
    store = setup_store(config)
    report = Report(f"torture-{config.backend}")
    book = Ledgerbook()
    workers: list[WorkerProc] = []
    samples: list[tuple[float, float, float]] = []
    restart_window: tuple[float, float] | None = None
    restart_task: asyncio.Task[float] | None = None
    kills = terms = 0
    paused: set[str] = set()
    client = await prepare(config, store)
    stopped_leader = StoppedLeader(at=float("inf"), longest=20.0)
    try:
        for i in range(config.workers):
            workers.append(spawn_worker(config, i))
        t0 = time.monotonic()
        deadline = t0 + config.seconds
        next_kill = t0 + config.kill_every_seconds * rng.uniform(0.5, 1.0)
        next_term = t0 + config.term_every_seconds * rng.uniform(0.6, 1.0)
        restart_at = (
            t0 + config.seconds * 0.45
            if config.backend == "postgres" and config.restart_postgres
            else None
        )
        pauses = (
            [(0.25, "slow", 2.0), (0.7, "fast", 1.5), (0.85, "flaky", 1.0)]
            if config.pause_queues
            else []
        )
        pause_plan = [(t0 + f * config.seconds, q, d) for f, q, d in pauses]
        # Before the PostgreSQL restart (at 0.45), so the two faults do not overlap.
        stopped_leader.at = t0 + config.seconds * 0.1
        resume_plan: list[tuple[float, str]] = []
        tick = 0
        faults = StorageFaults.plan(config.backend, config.schema)
        # The run goes on past its deadline while PostgreSQL restarts, and for a while after it
        # is back, so that workers live across the restart however long its checkpoint takes
        # on a busy machine (seen: 63 s, which ended a 30 s run before the server was back).
        while time.monotonic() < deadline or (
            restart_window is not None and restart_window[1] == float("inf")
        ):
            now = time.monotonic()
            await produce(client, rng, tick, book, report)
            tick += 1
            # While PostgreSQL restarts, the rig's own connections (planting poison, killing
            # LISTEN backends) would be refused: what falls due then waits for its end.
            restarting = restart_window is not None and restart_window[1] == float("inf")
            await faults.tick((now - t0) / config.seconds, store, book.accepted, hold=restarting)
            await sample_stuck(store, samples)
            # Worker 0 is the witness: never signalled, it lives across the restart.
            if config.stop_leader and not restarting:
                await stopped_leader.step(client, store, workers)
            frozen = stopped_leader.frozen()
            alive = [
                w for w in workers if w.fate == "running" and w.index != 0 and w.index not in frozen
            ]
            if now >= next_kill and alive:
                victim = rng.choice(alive)
                stop_worker(victim, signal.SIGKILL, "killed")
                kills += 1
                workers.append(spawn_worker(config, len(workers)))
                next_kill = now + config.kill_every_seconds * rng.uniform(0.5, 1.5)
            alive = [w for w in alive if w.fate == "running" and w.ready()]
            if now >= next_term and alive:
                victim = rng.choice(alive)
                stop_worker(victim, signal.SIGTERM, "terminated")
                terms += 1
                workers.append(spawn_worker(config, len(workers)))
                next_term = now + config.term_every_seconds * rng.uniform(0.5, 1.5)
            if restart_at is not None and now >= restart_at and restart_task is None:
                restart_window = (now, float("inf"))
                faults.postgres_down_at = time.time()
                restart_task = asyncio.create_task(asyncio.to_thread(restart_postgres))
            if (
                restart_task is not None
                and restart_task.done()
                and restart_window is not None
                and restart_window[1] == float("inf")
            ):
                restart_window = (restart_window[0], time.monotonic())
                report.figures["postgres_restart_seconds"] = round(restart_task.result(), 2)
                faults.postgres_back_at = time.time()
                deadline = max(deadline, time.monotonic() + AFTER_RESTART_SECONDS)
            for at, queue, duration in list(pause_plan):
                if now >= at:
                    pause_plan.remove((at, queue, duration))
                    with contextlib.suppress(StorageError):
                        await client.backend.queue_pause(name=queue, paused=True, actor="torture")
                        paused.add(queue)
                        resume_plan.append((now + duration, queue))
            for at, queue in list(resume_plan):
                if now >= at:
                    with contextlib.suppress(StorageError):
                        await client.backend.queue_pause(name=queue, paused=False, actor="torture")
                        resume_plan.remove((at, queue))
                        paused.discard(queue)
            await asyncio.sleep(config.batch_every_seconds)
        if restart_task is not None:
            await restart_task
            if restart_window is not None and restart_window[1] == float("inf"):
                restart_window = (restart_window[0], time.monotonic())
                report.figures["postgres_restart_seconds"] = round(restart_task.result(), 2)
                faults.postgres_back_at = time.time()
        for queue in list(paused):
            await client.backend.queue_pause(name=queue, paused=False, actor="torture")
        # Drain: keep sampling until only the far-future jobs are left in hot.
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < config.drain_timeout_seconds:
            await sample_stuck(store, samples)
            [(left,)] = await asyncio.to_thread(
                store.rows,
                f"SELECT count(*) FROM {store.table('jobs_hot')}"
                f" WHERE NOT (status = 0 AND {store.epoch('scheduled_at')} > {store.now_expr()}"
                " + 600)",
            )
            if left == 0:
                break
            for w in workers:  # a worker that exited on its own is a finding, but keep going
                if w.fate == "running" and w.proc.poll() is not None:
                    w.fate = "exited"
            await asyncio.sleep(0.5)
        report.figures["drain_seconds"] = round(time.monotonic() - drain_started, 1)
        for w in workers:
            if w.fate == "running":
                # A replacement spawned just now may still be starting (slow on a busy
                # machine): a SIGTERM before its handler is installed kills it outright, which
                # says nothing about shutdown. Wait for it to be ready first.
                ready_by = time.monotonic() + 30.0
                while not w.ready() and w.proc.poll() is None and time.monotonic() < ready_by:
                    await asyncio.sleep(0.1)
                stop_worker(w, signal.SIGTERM, "stopped")
        for w in workers:
            reap(w)
        report.figures.update(
            workers_started=len(workers),
            sigkills=kills,
            sigterms=terms,
            postgres_restarts=1 if restart_task is not None else 0,
            enqueue_failures_during_faults=book.enqueue_failures,
            run_seconds=config.seconds,
        )
        report.context = dict(
            config=config,
            store=store,
            book=book,
            workers=workers,
            samples=samples,
            restart_window=restart_window,
        )
        await asyncio.to_thread(
            verify,
            config,
            store,
            book,
            workers,
            samples,
            restart_window,
            report,
            stopped_leader.excused,
        )
        await asyncio.to_thread(faults.verify, store, workers, report)
        if config.stop_leader:
            stopped_leader.check(config, report)
    finally:
        stopped_leader.resume()
        kill_all(workers)
        if restart_task is not None and not restart_task.done():
            with contextlib.suppress(Exception):
                await restart_task
        if config.backend == "postgres":
            ensure_postgres_running()
        await release(client, store, config)
    return report


# -- the checks ---------------------------------------------------------------------------


def _refused_at_start(w: WorkerProc, restart_window: tuple[float, float] | None) -> bool:
    """Whether ``w`` exited 1, before it ever started, because PostgreSQL was unavailable while
    the server restarted."""
    if w.exit_code != 1 or restart_window is None or w.ready():
        return False
    if not restart_window[0] - 1.0 <= w.started_at <= restart_window[1]:
        return False
    return "is unavailable" in w.log_path.read_text(errors="replace")


def verify(
    config: Config,
    store: Store,
    book: Ledgerbook,
    workers: list[WorkerProc],
    samples: list[tuple[float, float, float]],
    restart_window: tuple[float, float] | None,
    report: Report,
    excused: Callable[[str, int], bool] = lambda job_id, pid: False,
) -> None:
    hot_t, arc_t, dlq_t = (store.table(n) for n in ("jobs_hot", "jobs_archive", "jobs_dlq"))
    ledger_t = store.table("torture_ledger")
    hot = {
        str(r[0]): r
        for r in store.rows(
            f"SELECT id, status, {store.epoch('scheduled_at')} - {store.now_expr()},"
            f" attempt_count FROM {hot_t}"
        )
    }
    archive = {
        str(r[0]): r for r in store.rows(f"SELECT id, worker_id, attempt_count FROM {arc_t}")
    }
    dlq = {
        str(r[0]): r
        for r in store.rows(
            f"SELECT id, worker_id, attempt_count, failure_reason, substr(error, 1, 200),"
            f" {store.epoch('failed_at')} FROM {dlq_t}"
        )
    }
    known = dict(book.accepted)
    for job_id, job_type in book.ambiguous.items():
        if job_id in hot or job_id in archive or job_id in dlq:
            known[job_id] = job_type  # committed although the client saw an error
    report.figures.update(
        jobs=len(known),
        ambiguous_enqueues=len(book.ambiguous),
        ambiguous_committed=len(set(book.ambiguous) & set(known)),
        archived=len(archive),
        dead_lettered=len(dlq),
        still_scheduled=len(hot),
        idempotent_pairs=len(book.duplicate_pairs),
        idempotent_duplicates=sum(1 for *_, d in book.duplicate_pairs if d),
    )

    # 1. Every job in exactly one pillar; nothing unknown; hot only if still scheduled.
    lost = [j for j in known if j not in hot and j not in archive and j not in dlq]
    everywhere = set(hot) | set(archive) | set(dlq)
    twice = [j for j in everywhere if (j in hot) + (j in archive) + (j in dlq) > 1]
    unknown = [j for j in set(hot) | set(archive) | set(dlq) if j not in known]
    report.figures.update(lost=len(lost), in_two_places=len(twice))
    report.check(not lost, f"lost jobs: {lost[:10]}")
    report.check(not twice, f"jobs in two places: {twice[:10]}")
    report.check(not unknown, f"rows nobody enqueued: {unknown[:10]}")
    for job_id, (_, status, due_in, _) in hot.items():
        report.check(
            status == 0 and float(due_in) > 600 and job_id in book.delayed,
            f"job {job_id} still hot without being scheduled ahead (status {status})",
        )
    missing_delayed = [j for j in book.delayed if j in known and j not in hot]
    report.check(not missing_delayed, f"delayed jobs that ran early: {missing_delayed[:5]}")

    # 2. No claim executed twice; every final row written by the owner of the last claim.
    ledger = store.rows(
        f"SELECT job_id, type, attempt, worker_id, pid, lease_token, seq, started FROM {ledger_t}"
        " ORDER BY seq"
    )
    report.figures["executions"] = len(ledger)
    claims = Counter((str(r[0]), r[2]) for r in ledger)
    tokens = Counter(str(r[5]) for r in ledger if r[5] is not None)
    doubled = [c for c, n in claims.items() if n > 1]
    reused = [t for t, n in tokens.items() if n > 1]
    report.figures["duplicate_executions"] = len(doubled) + len(reused)
    report.check(not doubled, f"a claim (job, attempt) executed twice: {doubled[:5]}")
    report.check(not reused, f"a lease token executed twice: {reused[:5]}")
    # A frozen worker's handler may take its first step after its job was rescued (at least
    # once, as documented): the stopped leader's own jobs are excused from this check.
    # Otherwise a handler starts only while its worker can prove the claim is held, so the
    # row's lease token is there when the ledger row is written, unless the row lost its lease
    # between the handler's start and that write (a starved worker: its heartbeats came too
    # late and rescue dead-lettered the row as a zombie). The ledger records when the handler
    # started (wall clock, same host as the rescue's clock); such a row is fine only if the
    # handler started before the rescue moved its row.
    unleased = [r for r in ledger if r[5] is None]
    late = []
    for r in unleased:
        final = dlq.get(str(r[0]))
        rescued_after_start = (
            final is not None
            and final[3] == FailureReason.ZOMBIE
            and final[2] == r[2]
            and r[7] is not None
            and float(r[7]) < float(final[5])
        )
        if not rescued_after_start and not excused(str(r[0]), r[4]):
            late.append(str(r[0]))
    report.figures["executions_that_lost_their_lease_before_the_ledger_write"] = len(unleased)
    report.check(not late, f"an execution started without a lease on its row: {late[:5]}")
    # The last claim is the one with the highest attempt, not the last ledger row written: a
    # handler whose ledger write waited out a PostgreSQL restart (it retries for a while), or
    # a frozen leader's, may write its row after a later attempt's.
    last: dict[str, tuple[Any, ...]] = {}
    for row in ledger:
        before = last.get(str(row[0]))
        if before is None or row[2] >= before[2]:
            last[str(row[0])] = row
        report.check(str(row[0]) in known, f"ledger row of unknown job {row[0]}")
    stale = []
    for job_id, (_, worker_id, attempts) in archive.items():
        run = last.get(job_id)
        if run is None or run[3] != worker_id or run[2] != attempts:
            stale.append(job_id)
    for job_id, (_, worker_id, attempts, reason, _, _) in dlq.items():
        run = last.get(job_id)
        if reason == FailureReason.ZOMBIE:
            # Rescue wrote it; the claim it ended may have died before its ledger row.
            if run is not None and attempts < run[2]:
                stale.append(job_id)
        elif reason == FailureReason.REJECTED:
            if run is not None:
                stale.append(job_id)  # a rejected job never reaches its handler
        elif run is None or run[3] != worker_id or run[2] != attempts:
            stale.append(job_id)
    report.figures["finalized_by_stale_owner"] = len(stale)
    report.check(not stale, f"final rows not written by the last claim's owner: {stale[:5]}")

    # 3. Outcomes fit the handlers.
    reasons = Counter(FailureReason(r[3]).name for r in dlq.values())
    report.figures["dlq_reasons"] = dict(sorted(reasons.items()))
    allowed = {
        "fast": {"ZOMBIE"},
        "unique": {"ZOMBIE"},
        "slow": {"ZOMBIE"},
        "flaky": {"TRANSIENT", "ZOMBIE"},
        "fatal": {"FATAL_ERROR", "ZOMBIE"},
        "overrun": {"TIMEOUT", "ZOMBIE"},
        "throttled": {"THROTTLED", "ZOMBIE"},
        # Rejected at once, but a worker killed between the claim and the batched finalize
        # leaves it to the rescue, like every other type.
        "no_such_handler": {"REJECTED", "ZOMBIE"},
        # Undecodable rows planted by torture_faults (which checks them closely).
        "poison": {"REJECTED", "ZOMBIE"},
    }
    for job_id, row in dlq.items():
        job_type = known.get(job_id, "?")
        name = FailureReason(row[3]).name
        # Any job may be interrupted by a SIGTERM on its last attempt: that is attempts
        # exhausted, not a requeue beyond max_attempts.
        shutdown_exhausted = name == "MAX_RETRIES_EXCEEDED" and "): Shutdown:" in (row[4] or "")
        report.check(
            name in allowed.get(job_type, set()) or shutdown_exhausted,
            f"{job_type} job {job_id} in DLQ {name}",
        )
    for job_id in archive:
        job_type = known.get(job_id, "?")
        report.check(
            job_type not in {"fatal", "overrun", "no_such_handler", "poison"},
            f"{job_type} job {job_id} succeeded",
        )

    # 4. Counters and buckets equal the moves that happened.
    [(succeeded, failed, retried)] = store.rows(
        f"SELECT coalesce(sum(succeeded_total), 0), coalesce(sum(failed_total), 0),"
        f" coalesce(sum(retried_total), 0) FROM {store.table('stats_summary')}"
    )
    buckets = {
        (int(o), int(r)): int(n)
        for o, r, n in store.rows(
            f"SELECT outcome, failure_reason, sum(completed_count) FROM"
            f" {store.table('metric_buckets')} GROUP BY outcome, failure_reason"
        )
    }
    events = {w.index: w.events() for w in workers}
    requeues = sum(
        1 for evs in events.values() for e in evs if e.get("event_id") == SHUTDOWN_REQUEUED
    )
    expected_retries = (
        sum(max(0, r[2] - 1) for r in archive.values())
        + sum(max(0, r[2] - 1) for r in dlq.values())
        - requeues
    )
    report.figures.update(
        succeeded_total=int(succeeded),
        failed_total=int(failed),
        retried_total=int(retried),
        expected_retries=expected_retries,
        shutdown_requeues=requeues,
    )
    report.check(int(succeeded) == len(archive), f"succeeded_total {succeeded} != {len(archive)}")
    report.check(int(failed) == len(dlq), f"failed_total {failed} != {len(dlq)}")
    report.check(int(retried) == expected_retries, f"retried_total {retried} != {expected_retries}")
    bucket_ok = sum(n for (o, _), n in buckets.items() if o == 0)
    report.check(bucket_ok == len(archive), f"succeeded buckets {bucket_ok} != {len(archive)}")
    for reason in FailureReason:
        got = buckets.get((1, int(reason)), 0)
        want = reasons.get(reason.name, 0)
        report.check(got == want, f"failed buckets for {reason.name}: {got} != {want}")

    # 5. Nothing stuck past its timeout (samples right after the restart get the outage added).
    outage = 0.0 if restart_window is None else restart_window[1] - restart_window[0]
    # A leader that stopped (SIGKILL, SIGSTOP) holds the role until its lease runs out, and its
    # successor claims it within one renewal interval (a third of the lease).
    takeover = config.leadership_lease_seconds * 4 / 3
    bound_processing = (
        config.zombie_timeout_seconds + takeover + 2 * config.rescue_interval_seconds + 3.0
    )
    bound_fetched = (
        config.fetched_timeout_seconds + takeover + 2 * config.rescue_interval_seconds + 3.0
    )
    worst_p = worst_f = 0.0
    for at, processing, fetched in samples:
        grace = outage + 5.0 if restart_window and at >= restart_window[0] else 0.0
        if restart_window and at > restart_window[1] + bound_processing + 5.0:
            grace = 0.0
        worst_p, worst_f = max(worst_p, processing - grace), max(worst_f, fetched - grace)
    report.figures.update(
        oldest_processing_heartbeat_seconds=round(worst_p, 2),
        oldest_fetched_seconds=round(worst_f, 2),
        stuck_samples=len(samples),
    )
    report.check(worst_p <= bound_processing, f"a Processing row stuck {worst_p:.1f} s")
    report.check(worst_f <= bound_fetched, f"a Fetched row stuck {worst_f:.1f} s")

    # 6. Workers: no crashed loops or dead side tasks; clean exits after SIGTERM.
    refused_at_start = 0
    for w in workers:
        evs = events[w.index]
        crashed = [e for e in evs if e.get("event_id") in (LOOP_CRASHED, SIDE_TASK_DIED)]
        report.check(not crashed, f"worker {w.index}: {crashed[:2]}")
        if w.fate in ("terminated", "stopped"):
            report.check(w.exit_code == 0, f"worker {w.index} exited {w.exit_code} after SIGTERM")
        if w.fate == "exited":
            # A worker that cannot reach its database at start exits 1 at once with the cause
            # (its supervisor, here the driver, starts another); that is expected only for one
            # started while PostgreSQL was restarting, before it ever ran.
            refused = _refused_at_start(w, restart_window)
            refused_at_start += refused
            report.check(refused, f"worker {w.index} exited by itself ({w.exit_code})")
    report.figures["workers_refused_at_start"] = refused_at_start
    counts = Counter(e.get("event_id") for evs in events.values() for e in evs)
    report.figures["log_events"] = {
        str(k): counts[k]
        for k in (
            STORAGE_UNAVAILABLE,
            STORAGE_RECOVERED,
            FINALIZE_RETRYING,
            LEASE_LOST,
            NOT_APPLIED,
        )
    }

    # 7. The restart: every worker alive across it logged the outage and the recovery, and a
    # finalize that failed during it was retried (all its jobs are accounted for above).
    if restart_window is not None:
        survivors = [
            w
            for w in workers
            if w.started_at < restart_window[0] - 3.0 and w.fate in ("stopped", "terminated")
        ]
        survivors = [w for w in survivors if _alive_after(w, restart_window)]
        report.figures["workers_across_restart"] = len(survivors)
        report.check(bool(survivors), "no worker lived across the PostgreSQL restart")
        for w in survivors:
            ids = [e.get("event_id") for e in events[w.index]]
            report.check(
                STORAGE_UNAVAILABLE in ids and STORAGE_RECOVERED in ids,
                f"worker {w.index} did not log 1006/1007 across the restart",
            )
            # They alternate; a worker that outlived the outage must end on "recovered" (else
            # its health check still says storage is down, and it would miss the next 1006).
            trail = [i for i in ids if i in (STORAGE_UNAVAILABLE, STORAGE_RECOVERED)]
            report.check(
                trail[-1:] == [STORAGE_RECOVERED],
                f"worker {w.index} never logged 1007 after its last 1006",
            )
        report.check(counts[FINALIZE_RETRYING] > 0, "no finalize was retried across the restart")


def _alive_after(worker: WorkerProc, window: tuple[float, float]) -> bool:
    """Still running 5 s after the restart ended (it was SIGTERMed or stopped after that)."""
    started = [
        e
        for e in worker.events()
        if e.get("event_id") == 1012  # shutdown drain started
    ]
    if not started:
        return False
    from datetime import datetime

    # Log times are wall-clock; the window is monotonic: compare through the offset now.
    offset = time.time() - time.monotonic()
    stopped_at = datetime.fromisoformat(started[0]["time"]).timestamp() - offset
    return stopped_at > window[1] + 5.0


# -- command line -------------------------------------------------------------------------


# How long the run goes on at least once PostgreSQL is back (the survivors' check needs 5 s).
AFTER_RESTART_SECONDS = 8.0

SHORT = {"postgres": dict(seconds=30.0, workers=4), "sqlite": dict(seconds=15.0, workers=3)}
LONG = {"postgres": dict(seconds=300.0, workers=6), "sqlite": dict(seconds=120.0, workers=4)}


def _print(report: Report) -> None:
    status = "PASS" if report.passed else "FAIL"
    print(f"== {report.name}: {status}")
    for key, value in report.figures.items():
        print(f"   {key}: {value}")
    for violation in report.violations:
        print(f"   VIOLATION: {violation}")


async def main_async(args: argparse.Namespace) -> int:
    reports: list[Report] = []
    forms = LONG if args.long else SHORT
    backends = ["postgres", "sqlite"] if args.backend == "both" else [args.backend]
    if not args.partition_only:
        for backend in backends:
            config = Config(backend=backend, seed=args.seed, **forms[backend])  # type: ignore[arg-type]
            if args.seconds:
                config.seconds = args.seconds
            print(f"-- torture on {backend}: {config.seconds:g} s, logs in {config.workdir}")
            reports.append(await torture(config))
            _print(reports[-1])
    if "postgres" in backends and not args.no_partition:
        from scripts.torture_partition import partition, partition_available

        why = partition_available()
        if why is None:
            print("-- partition on postgres")
            reports.append(await partition(Config()))
            _print(reports[-1])
        else:
            print(f"-- partition skipped: {why}")
    if args.report:
        text = json.dumps([r.as_json() for r in reports], indent=2)
        await asyncio.to_thread(Path(args.report).write_text, text)
    return 0 if all(r.passed for r in reports) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--long", action="store_true", help="the long form (minutes)")
    parser.add_argument("--seconds", type=float, help="override the fault phase's length")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-partition", action="store_true")
    parser.add_argument("--partition-only", action="store_true")
    parser.add_argument("--report", help="write the JSON report here")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())

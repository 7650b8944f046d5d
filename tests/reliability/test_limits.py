"""Rate limits and partition caps through real worker processes, on both backends.

Three ``chokaq worker`` processes of ``tests/apps/limited.py`` share the test's store; the
test process enqueues, changes limits and reads what happened: the archive's ``started_at``
(the claim's own clock, the one the rate is spent on) and, for the partition cap, a ledger
the handler appends its start and end to, so that an execution killed mid-run counts too.

Upper bounds are the guarantee and hold exactly: a rate of N/s with a burst of b (a tenth of a
second's worth, at least 1) starts at most ``N * W + b`` jobs in any window of W seconds,
whatever the machine does, since each start moves the key's ``tat`` on by one interval and no
start is allowed while ``tat`` is more than ``(b - 1)`` intervals ahead of its clock. Lower
bounds depend on how promptly the workers get to run, so each one is chosen far below what
an idle machine does and says how much stalling it tolerates.
"""

from __future__ import annotations

import bisect
import itertools
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.apps import limited
from tests.reliability.conftest import Proc
from tests.runtime.conftest import until

from chokaq import App, FailureReason
from chokaq.models import JobFilter, JobView, Pillar

APP = "tests.apps.limited:app"
PLAIN = "tests.apps.limited:plain"


async def workers(
    spawn: Callable[..., Proc], client: App, n: int, *args: str, app: str = APP, **env: str
) -> list[Proc]:
    """``n`` worker processes, once each has registered (and so recorded its limits). Their
    zombie timeout is 10 s unless given: only the kill test needs a rescue, and a healthy job
    taken for a zombie on a busy machine would be missing from the archive."""
    env = {"CHOKAQ_ZOMBIE_TIMEOUT": "10", **env}
    procs = [spawn(*args, app=app, **env) for _ in range(n)]

    async def registered() -> bool:
        return len(await client.backend.workers_list()) >= n

    await until(registered, timeout=60)
    return procs


def job(name: str, **kwargs: Any) -> Any:
    handlers = limited.plain.handlers if name == "unlimited" else limited.app.handlers
    return handlers[name].prepare(**kwargs)


async def jobs_in(client: App, pillar: Pillar, type_: str) -> list[JobView]:
    found: list[JobView] = []
    page = 1
    while True:
        batch = await client.backend.jobs_page(
            pillar=pillar, filter=JobFilter(type=type_), page=page, page_size=1000
        )
        found.extend(batch.items)
        if page * 1000 >= batch.total:
            return found
        page += 1


async def count_in(client: App, pillar: Pillar, type_: str, since: float | None = None) -> int:
    at = None if since is None else datetime.fromtimestamp(since, UTC)
    page = await client.backend.jobs_page(
        pillar=pillar, filter=JobFilter(type=type_, since=at), page_size=1
    )
    return page.total


def starts(views: Sequence[JobView]) -> list[float]:
    times = []
    for view in views:
        assert view.started_at is not None
        times.append(view.started_at.timestamp())
    return sorted(times)


def count(times: Sequence[float], start: float, end: float) -> int:
    """Starts in [start, end)."""
    return bisect.bisect_left(times, end) - bisect.bisect_left(times, start)


def busiest(times: Sequence[float], width: float, lo: float = -1e18, hi: float = 1e18) -> int:
    """The most starts in any window [a, a + width) with lo <= a and a + width <= hi: the
    maximum is reached by a window opening on a start, so those are the ones tried (and the
    one opening at ``lo``)."""
    opens = [lo] + [t for t in times if lo <= t <= hi - width]
    return max(count(times, a, min(a + width, hi)) for a in opens)


def fewest(times: Sequence[float], width: float, lo: float, hi: float, step: float = 0.1) -> int:
    """The fewest starts in the windows [a, a + width) opening every ``step`` from ``lo`` up to
    the last that ends by ``hi``."""
    steps = int((hi - width - lo) / step)
    assert steps >= 0, "the run is shorter than one window"
    return min(count(times, lo + k * step, lo + k * step + width) for k in range(steps + 1))


# -- 1. a type's rate across processes -------------------------------------------------------

RATE = 20.0  # paced's declared rate
BURST = 2  # a tenth of a second's worth of 20/s
WINDOW = 10.0
PACED = 262  # the burst, then 13 s at 20/s


async def test_a_type_rate_holds_across_three_processes(
    spawn: Callable[..., Proc], client: App
) -> None:
    await workers(spawn, client, 3)
    await client.enqueue_many([job("paced", n=i) for i in range(PACED)])

    async def done() -> bool:
        return await count_in(client, Pillar.ARCHIVE, "paced") == PACED

    await until(done, timeout=90)
    views = await jobs_in(client, Pillar.ARCHIVE, "paced")
    times = starts(views)
    first, last = times[0], times[-1]
    span = last - first
    most = busiest(times, WINDOW)
    least = fewest(times, WINDOW, first + 1.0, last)
    by_worker = Counter(view.worker_id for view in views)
    print(
        f"\n{len(times)} starts over {span:.2f} s ({(len(times) - 1) / span:.2f}/s); "
        f"10 s windows: at most {most}, after the first second at least {least}; "
        f"per worker {sorted(by_worker.values())}"
    )
    # The guarantee, in every window of the run (the first second included): 200 + 2; and
    # over the whole run (a thousandth of a start of slack for the stored times' rounding).
    assert most <= RATE * WINDOW + BURST
    assert len(times) <= RATE * span + BURST + 1e-3
    # The three processes shared the work: the rate held across them, not within one.
    assert len(by_worker) >= 2, by_worker
    # Work was waiting throughout, so a window falls short only by the time every worker was
    # late to its next start, which on a busy machine is seconds (CI saw 137 of 200 with the
    # load at 13 on 2 cores): how close the run comes to the rate is a figure to print, not a
    # guarantee to assert. What is asserted is that the limiter did not starve the type: a
    # limiter off by a unit, or one that let one start through per refill, starts far fewer
    # than a quarter of the rate in every window.
    assert least >= 0.25 * RATE * WINDOW


# -- 2. a partition cap of 1 across processes, and a kill ------------------------------------

PARTITIONS = [f"account:{i}" for i in range(5)]
PER_PARTITION = 6
RUN = 0.2  # each serial job's run time
# The workers' own zombie timeout, which rescue applies to a queue without a stored one (a
# stored one is 15 s at least, too slow here): short, yet 13 heartbeats long, so that no
# healthy job of a busy machine is taken for a zombie (its rerun would overlap it).
ZOMBIE = 4.0


@dataclass
class Execution:
    job_id: str
    attempt: int
    partition: str
    pid: int
    start: float
    end: float | None = None


def ledger(path: Path) -> list[Execution]:
    """The executions the handlers recorded; a last line still being written is left out."""
    runs: dict[tuple[str, int], Execution] = {}
    for line in path.read_text().split("\n")[:-1]:
        kind, job_id, attempt, partition, pid, at = line.split(" ")
        key = (job_id, int(attempt))
        if kind == "start":
            assert key not in runs, f"started twice: {line}"
            runs[key] = Execution(job_id, int(attempt), partition, int(pid), float(at))
        else:
            assert runs[key].end is None and runs[key].pid == int(pid), line
            runs[key].end = float(at)
    return list(runs.values())


async def test_a_partition_cap_of_one_holds_across_processes_and_a_kill(
    spawn: Callable[..., Proc], client: App, tmp_path: Path
) -> None:
    procs = await workers(spawn, client, 3, "--concurrency", "3", CHOKAQ_ZOMBIE_TIMEOUT=str(ZOMBIE))
    victim_partition = PARTITIONS[0]
    # The victim goes first in its partition (priority), and hangs until its process dies.
    victim = job(
        "serial",
        account=victim_partition,
        seconds=0,
        hang=True,
        partition=victim_partition,
        priority=100,
    )
    rest = [
        job("serial", account=p, seconds=RUN, partition=p)
        for _ in range(PER_PARTITION)
        for p in PARTITIONS
    ]
    # 9 slots for 5 partitions: without the cap, jobs of one partition would run side by side.
    await client.enqueue_many([victim, *rest])
    path = tmp_path / "ledger"

    async def victim_started() -> bool:
        return path.exists() and any(r.job_id == victim.id for r in ledger(path))

    await until(victim_started, timeout=30)
    [held] = [r for r in ledger(path) if r.job_id == victim.id]
    [killed] = [p for p in procs if p.pid == held.pid]
    [killed_id] = [w.id for w in await client.backend.workers_list() if w.pid == killed.pid]
    killed.popen.send_signal(signal.SIGKILL)
    killed.popen.wait(timeout=10)
    killed_at = time.time()  # every execution of that process ended by now

    async def all_out_of_hot() -> bool:
        return await count_in(client, Pillar.HOT, "serial") == 0

    await until(all_out_of_hot, timeout=60)
    runs = ledger(path)
    for run in runs:
        if run.end is None:
            assert run.pid == killed.pid, f"an execution of a live worker never ended: {run}"
            run.end = killed_at
    by_partition: dict[str, list[Execution]] = defaultdict(list)
    for run in runs:
        by_partition[run.partition].append(run)
    for partition, executions in by_partition.items():
        executions.sort(key=lambda r: r.start)
        for before, after in itertools.pairwise(executions):
            assert before.end is not None
            assert after.start >= before.end, f"{partition}: {before} overlaps {after}"
    assert len({run.pid for run in runs}) >= 2  # the cap held across processes

    # The victim was rescued as a zombie; only then did its partition go on, to the end.
    dead = {view.id: view for view in await jobs_in(client, Pillar.DLQ, "serial")}
    assert dead[victim.id].failure_reason is FailureReason.ZOMBIE
    for view in dead.values():  # and the killed process's other running jobs, if it had any
        assert view.failure_reason is FailureReason.ZOMBIE and view.worker_id == killed_id
    archived = {view.id: view for view in await jobs_in(client, Pillar.ARCHIVE, "serial")}
    assert set(archived) | set(dead) == {victim.id, *(j.id for j in rest)}
    successors = [
        archived[j.id] for j in rest if j.partition == victim_partition and j.id in archived
    ]
    # Its partition's slot was the victim's, so none of the rest ran when the process died.
    assert len(successors) == PER_PARTITION
    victim_claimed = dead[victim.id].started_at
    assert victim_claimed is not None
    # Rescue takes the victim's heartbeat (at the latest the claim's clock) older than the
    # zombie timeout, and a successor's claim reads its clock once it could see the slot free
    # (after the rescue committed; on SQLite under the write lock the rescue held).
    first_successor = min(starts(successors))
    assert first_successor >= victim_claimed.timestamp() + ZOMBIE
    print(
        f"\nkilled pid {killed.pid} {killed_at - held.start:.2f} s into the victim; its "
        f"partition went on {first_successor - killed_at:.2f} s after the kill; "
        f"{len(runs)} executions in {len({r.pid for r in runs})} processes"
    )


# -- 3. one hot partition does not starve the others -----------------------------------------

HOT = 180
QUIET = [f"tenant:{i}" for i in range(1, 10)]
PER_QUIET = 2
HOT_RUN = 0.2


async def test_a_hot_partition_does_not_starve_nine_quiet_ones(
    spawn: Callable[..., Proc], client: App
) -> None:
    await workers(spawn, client, 3, "--concurrency", "2")
    # The hot partition's jobs came due a minute earlier: served oldest first, they would fill
    # every slot (6, under its cap of 10) until all 180 were done.
    early = datetime.now(UTC) - timedelta(seconds=60)
    hot = [
        job("report", tenant="tenant:0", seconds=HOT_RUN, partition="tenant:0", run_at=early)
        for _ in range(HOT)
    ]
    quiet = [
        job("report", tenant=p, seconds=HOT_RUN, partition=p)
        for p in QUIET
        for _ in range(PER_QUIET)
    ]
    await client.enqueue_many([*hot, *quiet])  # one transaction: the claims see them all

    async def done() -> bool:
        return await count_in(client, Pillar.ARCHIVE, "report") == HOT + len(quiet)

    await until(done, timeout=60)
    views = {view.id: view for view in await jobs_in(client, Pillar.ARCHIVE, "report")}
    hot_starts = starts([views[j.id] for j in hot])
    quiet_views = [views[j.id] for j in quiet]
    last_quiet_start = max(starts(quiet_views))
    ends = [v.finished_at for v in quiet_views]
    assert None not in ends
    last_quiet_end = max(end.timestamp() for end in ends if end is not None)
    hot_before = bisect.bisect_left(hot_starts, last_quiet_start)
    first = min(hot_starts[0], min(starts(quiet_views)))
    print(
        f"\nhot starts before the last quiet start: {hot_before} of {HOT}; the quiet "
        f"partitions were done {last_quiet_end - first:.2f} s in, the hot one had started "
        f"half its jobs {hot_starts[HOT // 2] - first:.2f} s in and the last "
        f"{hot_starts[-1] - first:.2f} s in"
    )
    # Partition by partition in turn: each claim serves the partitions after the last one
    # served, one job each before any gets a second, so the hot partition gets about one
    # start in ten until the quiet ones are done (each needs two turns): 2 to 4 starts, a few
    # more once fewer partitions than a claim's room are left. 15 leaves room for that tail
    # and for claims whose clocks were read out of order, and is far from the 180 that
    # oldest-first would give (or the ~170 of a pick at random).
    assert hot_before <= 15
    # So they finished long before it: before it had started half its jobs (~0.8 s against
    # ~3.7 s here; a worker would have to stall for three seconds holding a quiet job while
    # the others went on).
    assert last_quiet_end < hot_starts[HOT // 2]


# -- 4. a limit changed at runtime -----------------------------------------------------------


def spaced(times: Sequence[float]) -> float:
    """The shortest gap between consecutive starts (inf for fewer than two)."""
    return min((b - a for a, b in itertools.pairwise(times)), default=float("inf"))


@pytest.mark.parametrize("declared", [True, False], ids=["declared-50s", "undeclared"])
async def test_a_limit_set_at_runtime_holds_within_a_second_and_clearing_it_lifts_it(
    spawn: Callable[..., Proc], client: App, declared: bool
) -> None:
    """Declared: ``tunable`` at its declared 50/s, set to 5/s, reset to 50/s. Undeclared:
    ``unlimited`` (an app that declares no limit at all, so its workers take the plain claim
    until they see a limit) as fast as 3 x 2 slots of 0.1 s jobs go (~60/s), set to 5/s, then
    cleared."""
    name = "tunable" if declared else "unlimited"
    if declared:
        await workers(spawn, client, 3)
        batch = [job(name, n=i) for i in range(700)]
    else:
        await workers(spawn, client, 3, "--concurrency", "2", app=PLAIN)
        batch = [job(name, n=i, seconds=0.1) for i in range(700)]
    await client.enqueue_many(batch)

    async def archived(at_least: int, since: float | None = None) -> bool:
        return await count_in(client, Pillar.ARCHIVE, name, since) >= at_least

    await until(lambda: archived(80), timeout=30)
    await client.backend.limit_set(scope="type", name=name, rate_limit="5/s", actor="test")
    slowed = time.time()  # the change is committed by now
    await until(lambda: archived(16, slowed + 1.0), timeout=30)
    lifting = time.time()  # the change is not committed before this
    if declared:
        await client.backend.limit_reset(scope="type", name=name, actor="test")
    else:
        await client.backend.limit_set(scope="type", name=name, rate_limit=None, actor="test")
    lifted = time.time()
    await until(lambda: archived(80, lifted + 1.0), timeout=30)

    times = starts(await jobs_in(client, Pillar.ARCHIVE, name))
    held = [t for t in times if slowed + 1.0 <= t < lifting]
    after = [t for t in times if t >= lifted + 1.0]
    # How soon the change held: the last start, before the lift, that came less than an
    # interval after the one before it.
    pairs = itertools.pairwise(times)
    quick = [b for a, b in pairs if slowed - 1.0 < b < lifting and b - a < 0.2 - 1e-5]
    print(
        f"\n5/s: {len(held)} starts in the {lifting - slowed - 1:.2f} s from a second after the"
        f" change, shortest gap {spaced(held):.4f} s; the last start closer than 0.2 s to the"
        f" one before it came {max(quick, default=slowed) - slowed:+.3f} s after the change;"
        f" lifted: {len(after) / (after[-1] - after[0]):.1f}/s"
    )
    # 5/s has a burst of 1: starts more than a second after the change are at least one
    # interval apart (a hair less for the stored times' rounding), in any number of processes.
    assert len(held) >= 10
    assert spaced(held) >= 0.2 - 1e-5
    assert len(held) <= 5 * (held[-1] - held[0]) + 1 + 1e-6
    if declared:  # back to 50/s: at most 50 W + 5 in any window of W seconds
        assert busiest(after, 1.0) <= 50 + 5
    # Lifted: starts come closer together than 5/s ever lets them (one interval, 0.2 s), and
    # often: how much faster is the machine's business (CI saw 14.5/s at a load of 17 on 2
    # cores, ~60/s idle), not the limiter's, so it is printed above, not asserted.
    closer = [b - a for a, b in itertools.pairwise(after) if b - a < 0.2 - 1e-5]
    assert len(closer) >= 10, f"only {len(closer)} starts closer than 5/s allows after the lift"


async def test_raising_a_limit_wakes_workers_held_by_it_within_a_second(
    spawn: Callable[..., Proc], client: App
) -> None:
    """``trickle`` at 1/m: after its first start each worker's next claim finds nothing and
    waits for its poll or a wake-up (a start is a minute away). Clearing the limit must start
    the next jobs within a second. The workers poll every 5 s here, so only the wake-up the
    change sends (PostgreSQL's NOTIFY, SQLite's signal file) can start them in time."""
    await workers(spawn, client, 3, CHOKAQ_POLL="5")
    await client.enqueue_many([job("trickle", n=i) for i in range(20)])

    async def archived(at_least: int) -> bool:
        return await count_in(client, Pillar.ARCHIVE, "trickle") >= at_least

    await until(lambda: archived(1), timeout=30)
    raised = time.time()
    await client.backend.limit_set(scope="type", name="trickle", rate_limit=None, actor="test")
    returned = time.time()
    await until(lambda: archived(20), timeout=30)
    times = starts(await jobs_in(client, Pillar.ARCHIVE, "trickle"))
    print(
        f"\nfirst start after the limit was cleared: {times[1] - raised:.3f} s"
        f" (the call took {returned - raised:.3f} s)"
    )
    assert times[0] < raised <= times[1]
    assert times[1] - raised < 1.0

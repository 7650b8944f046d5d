"""The apps and scripts bench/durable.py runs in its subprocesses: chokaq's durable app (the
CLI worker imports it), DBOS Transact's app and worker, and the seeding, event-sending and
launching snippets. Text only: this module imports neither engine, so the harness stays free
of both and every figure comes from a fresh interpreter running what a user runs.
"""

from __future__ import annotations

CHOKAQ_APP_NAME = "chokaq_durable_app"
DBOS_APP_NAME = "dbos_durable_app"

# chokaq: every handler the benchmark uses. MARK_FILE collects one line per event the harness
# times ("<what> <job id> <unix time> <pid>"). The harness counts what ran from the store and
# measures memory from outside, so the handlers do no bookkeeping of their own.
CHOKAQ_APP = '''"""The app of bench/durable.py (written there; edits here are lost)."""
import asyncio, os, time
from chokaq import App, JobContext, WorkerSettings

MARK = os.environ.get("MARK_FILE")
RELEASE = os.environ.get("RELEASE_FILE")
VICTIM = os.environ.get("VICTIM") == "1"
settings = WorkerSettings()
if os.environ.get("ZOMBIE_SECONDS"):
    # The crash measurement: a short zombie timeout and rescue interval, stated in its figures.
    settings = WorkerSettings(
        zombie_timeout_seconds=float(os.environ["ZOMBIE_SECONDS"]),
        rescue_interval_seconds=float(os.environ["RESCUE_SECONDS"]),
        heartbeat_min_seconds=1.0,
        heartbeat_max_seconds=2.0,
    )
app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ["CHOKAQ_SCHEMA"],
          auto_migrate=False, worker=settings)


def mark(what: str, job_id: str) -> None:
    if MARK:
        with open(MARK, "a") as f:
            f.write(f"{what} {job_id} {time.time()} {os.getpid()}\\n")


async def nothing() -> None:
    return None


@app.job(name="plain")
async def plain(i: int = 0) -> None:
    return None


@app.job(name="plain_ctx")
async def plain_ctx(ctx: JobContext, i: int = 0) -> None:
    return None


@app.job(name="bare", durable=True)
async def bare(ctx: JobContext, i: int = 0) -> None:
    return None


@app.job(name="three", durable=True)
async def three(ctx: JobContext, i: int = 0) -> None:
    for name in ("one", "two", "three"):
        await ctx.step(name, nothing)


@app.job(name="many", durable=True)
async def many(ctx: JobContext, i: int = 0) -> None:
    for k in range(int(os.environ.get("STEPS", "50"))):
        await ctx.step(f"s{k}", nothing)


@app.job(name="crashy", durable=True, max_attempts=5)
async def crashy(ctx: JobContext, i: int = 0) -> None:
    async def marked(name: str) -> str:
        mark(f"step-{name}", ctx.job_id)
        if name == "two" and VICTIM:
            await asyncio.sleep(3600)  # the victim dies here, inside step 2
        return name

    for name in ("one", "two", "three"):
        await ctx.step(name, marked, name)


@app.job(name="blocker")
async def blocker(i: int = 0) -> None:
    mark("blocker", "-")
    # Holds the survivor's one slot, so that the victim claims the crash job.
    while RELEASE and not os.path.exists(RELEASE):
        await asyncio.sleep(0.02)


@app.job(name="sleeper", durable=True)
async def sleeper(ctx: JobContext, i: int = 0) -> None:
    await ctx.sleep(1.0 + (i % 50) * 0.02)  # the ends spread over a second
    mark("woke", ctx.job_id)


@app.job(name="waiter", durable=True)
async def waiter(ctx: JobContext, i: int = 0) -> None:
    await ctx.wait_for_event(f"key-{i}")
    mark("woke", ctx.job_id)


@app.job(name="child")
async def child() -> int:
    return 1


@app.job(name="gatherer", durable=True)
async def gatherer(ctx: JobContext, i: int = 0) -> None:
    ids = await ctx.spawn([child.prepare()])
    await ctx.gather(ids)
    mark("woke", ctx.job_id)

'''

# Seeds a chokaq store (migrations first): KIND jobs, SIZE of them, in enqueue_many batches of
# 10,000, the k-th with i=k. Prints enqueue jobs/s and the file.
CHOKAQ_SEED = r"""
import asyncio, os, time
import chokaq
import chokaq_durable_app as m

async def main():
    kind, size = os.environ["KIND"], int(os.environ["SIZE"])
    handle = getattr(m, kind)
    m.app.auto_migrate = True
    await m.app.open()
    started = time.perf_counter()
    for first in range(0, size, 10_000):
        await m.app.enqueue_many(
            [handle.prepare(i=k) for k in range(first, min(size, first + 10_000))]
        )
    elapsed = time.perf_counter() - started
    await m.app.close()
    print(size / elapsed if size else 0.0, chokaq.__file__)

asyncio.run(main())
"""

# Sends COUNT events ("key-0" ...) one at a time, about every 20 ms, to waiting jobs; marks
# the time just before each send.
CHOKAQ_SEND = r"""
import asyncio, os, time
import chokaq_durable_app as m

async def main():
    await m.app.open()
    out = []
    for k in range(int(os.environ["COUNT"])):
        sent = time.time()
        job_id = await m.app.send_event(f"key-{k}", {"k": k})
        out.append(f"sent {job_id} {sent} {os.getpid()}")
        await asyncio.sleep(0.02)
    await m.app.close()
    with open(os.environ["MARK_FILE"], "a") as f:
        f.write("\n".join(out) + "\n")
    print(len(out))

asyncio.run(main())
"""

# DBOS Transact: the same three no-op steps in a workflow, and the crash workflow. Its queue is
# declared by the worker with the configuration under test (DBOS_WORKER_CONCURRENCY, "" for
# none; DBOS_POLL seconds); DBOS_THREADS caps its executor's threads ("" for its default,
# unbounded).
DBOS_APP = '''"""The DBOS app of bench/durable.py (written there; edits here are lost)."""
import os, time
from dbos import DBOS, DBOSConfig

VICTIM = os.environ.get("VICTIM") == "1"
MARK = os.environ.get("MARK_FILE")
config: DBOSConfig = {
    "name": "bench",
    "system_database_url": os.environ["DBOS_URL"],
    "application_version": "bench",
    "log_level": "WARNING",
}
if os.environ.get("DBOS_THREADS"):
    config["max_executor_threads"] = int(os.environ["DBOS_THREADS"])
DBOS(config=config)


def mark(what: str) -> None:
    if MARK:
        with open(MARK, "a") as f:
            f.write(f"{what} {DBOS.workflow_id} {time.time()} {os.getpid()}\\n")


@DBOS.step()
def nothing() -> None:
    return None


@DBOS.workflow()
def three(i: int) -> None:
    nothing()
    nothing()
    nothing()


@DBOS.step()
def marked(name: str) -> str:
    mark(f"step-{name}")
    if name == "two" and VICTIM:
        time.sleep(3600)  # the victim dies here, inside step 2
    return name


@DBOS.workflow()
def crashy(i: int) -> None:
    for name in ("one", "two", "three"):
        marked(name)


def register_queue():
    wc = os.environ.get("DBOS_WORKER_CONCURRENCY", "")
    return DBOS.register_queue(
        "bench",
        worker_concurrency=int(wc) if wc else None,
        polling_interval_sec=float(os.environ.get("DBOS_POLL", "1.0")),
    )
'''

# A DBOS worker as a user runs one: launch (which recovers this executor's pending workflows),
# declare the queue, serve until SIGTERM.
DBOS_WORKER = r"""
import signal
import dbos_durable_app as m
m.DBOS.launch()
m.register_queue()
signal.sigwait([signal.SIGTERM, signal.SIGINT])
m.DBOS.destroy(workflow_completion_timeout_sec=0)
"""

# Seeds DBOS's queue: SIZE workflows of KIND, from a launched DBOS that dequeues nothing
# (listen_queues([])), over 32 threads (one enqueue is one commit; 152/s from one thread here).
DBOS_SEED = r"""
import os, time
from concurrent.futures import ThreadPoolExecutor
import dbos_durable_app as m
m.DBOS.listen_queues([])
m.DBOS.launch()
queue = m.register_queue()
kind, size = os.environ["KIND"], int(os.environ["SIZE"])
fn = getattr(m, kind)
started = time.perf_counter()
with ThreadPoolExecutor(32) as pool:
    list(pool.map(lambda i: queue.enqueue(fn, i), range(size)))
elapsed = time.perf_counter() - started
m.DBOS.destroy()
print(size / elapsed)
"""

# Starts PROCESSES copies of a worker command, each with its own DBOS executor id, and stops
# them on SIGTERM: several DBOS processes as a user starts them (one command each).
LAUNCHER = r"""
import json, os, signal, subprocess, sys
argv = json.loads(os.environ["LAUNCH_ARGV"])
procs = [subprocess.Popen(argv, env={**os.environ, "DBOS__VMID": f"bench-{k}"})
         for k in range(int(os.environ["PROCESSES"]))]
signal.sigwait([signal.SIGTERM, signal.SIGINT])
for p in procs:
    p.terminate()
for p in procs:
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
"""

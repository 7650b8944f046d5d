"""The queues a Python team would pick instead of a database, behind the same small surface as
bench/systems.py: Celery on RabbitMQ and on Redis (threads x10 in one process, and the default
prefork pool x2), and RQ on Redis (its forking ``Worker`` and ``SimpleWorker``). Each runs its
own documented worker command on an app module written into a temporary folder, with the same
handler work as every other system (systems.WORK_SOURCE), and is timed from outside.

A broker is not a database, so a "fresh store" is a fresh queue name on RabbitMQ (deleted
afterwards) or a Redis database number of the system's own, flushed before and after (never
FLUSHALL; the numbers are in bench/outside.py). The store string the other methods take is
``<broker URL>|<queue name>``. Celery runs with ``acks_late`` and ``task_reject_on_worker_lost``
(at-least-once, like every other system here) and no result backend; its cluster chatter (mingle,
gossip, event heartbeats) is off, as production guides advise, so that its start is not a second
of waiting for replies. Celery has no burst mode, and RQ's burst exit lags its last job by up to
a minute: for both, the harness sees the end by the Redis counter the handlers INCR, also with
the no-op handler (labelled so).
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.measure import child_env
from bench.outside import AMQP_URL, CELERY_DB, RQ_DB, WORK_DB, reachable, redis_url
from bench.systems import WORK_SOURCE

CELERY_APP = (
    WORK_SOURCE
    + r"""
from celery import Celery

app = Celery("bench", broker=os.environ["BROKER"])
app.conf.update(
    task_default_queue=os.environ["QUEUE"],
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)

@app.task(name="noop")
def noop(i=0, sent=0.0):
    work_sync(sent)
"""
)

RQ_APP = (
    WORK_SOURCE
    + r"""

def noop(i=0, sent=0.0):
    work_sync(sent)
"""
)

RQ_QUEUE = "bench"
RQ_NOOP = "bench_rq_app.noop"  # by name: the parent never imports the app module


def _split(store: str) -> tuple[str, str]:
    broker, _, queue = store.partition("|")
    return broker, queue


@dataclass
class CelerySystem:
    """Celery on ``broker`` ("rabbitmq" or "redis") with ``pool`` x ``concurrency``."""

    key: str
    label: str
    broker: str
    pool: str
    concurrency: int
    # No burst mode: a no-op handler INCRs the counter too, so that the harness sees the end.
    worker_env: dict[str, str] = field(default_factory=lambda: {"COUNT": "1"})
    client: Any = None
    ends_by_exit: bool = False
    database: bool = False
    hurry_after: float | None = None
    max_jobs: int | None = None
    burn_down_only: bool = False

    def broker_url(self) -> str:
        return AMQP_URL if self.broker == "rabbitmq" else redis_url(CELERY_DB)

    @contextlib.contextmanager
    def store(self) -> Iterator[str]:
        queue = f"bench-{uuid.uuid4().hex[:12]}"
        self._clear(queue)
        try:
            yield f"{self.broker_url()}|{queue}"
        finally:
            self._clear(queue)

    def _clear(self, queue: str) -> None:
        if self.broker == "redis":
            import redis

            with redis.Redis.from_url(redis_url(CELERY_DB)) as client:
                client.flushdb()
            return
        from kombu import Connection

        with Connection(AMQP_URL) as conn:
            channel = conn.default_channel
            # Celery declares a direct exchange named after the default queue, and the queue.
            channel.queue_delete(queue)
            channel.exchange_delete(queue)

    def launch(
        self, store: str, mode: str, folder: Path, **extra: str
    ) -> tuple[list[str], dict[str, str]]:
        broker, queue = _split(store)
        (folder / "bench_celery_app.py").write_text(CELERY_APP)
        env = child_env(BROKER=broker, QUEUE=queue, WORK_REDIS=redis_url(WORK_DB))
        env.update(self.worker_env, **extra)
        env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
        argv = [sys.executable, "-m", "celery", "-A", "bench_celery_app", "worker"]
        argv += ["--pool", self.pool, "--concurrency", str(self.concurrency)]
        argv += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
        return [*argv, "--loglevel", "WARNING"], env

    def unfinished(self, store: str) -> int:
        """Messages still in the queue (ready, or delivered and not yet acknowledged)."""
        broker, queue = _split(store)
        if self.broker == "redis":
            import redis

            with redis.Redis.from_url(broker) as client:
                return int(client.llen(queue)) + int(client.hlen("unacked"))
        from kombu import Connection

        with Connection(broker) as conn:
            # A passive declare counts only ready messages; the worker has stopped by now,
            # which returns what it held unacknowledged to the queue.
            _, ready, _ = conn.default_channel.queue_declare(queue, passive=True)
        return int(ready)

    async def open(self, store: str, install: bool) -> None:
        from celery import Celery

        broker, queue = _split(store)
        app = Celery("bench", broker=broker)
        app.conf.update(task_default_queue=queue, task_ignore_result=True)
        # One connection of our own: kombu's pools are process-wide, keyed by the URL, and
        # would outlive (or be closed under) one system's run.
        conn = app.connection_for_write()
        # What send_task(connection=conn) builds for each message, made once and kept.
        self.client = (app, conn, app.amqp.Producer(conn, auto_declare=False))

    async def close(self) -> None:
        if self.client is not None:
            app, conn, _ = self.client
            conn.release()
            app.close()
            self.client = None

    async def enqueue_bulk(self, count: int, batch: int = 10_000) -> float:
        """Celery has no bulk send: one publish per job over one kept producer."""
        import time

        app, _, producer = self.client
        started = time.perf_counter()
        for i in range(count):
            app.send_task("noop", kwargs={"i": i}, producer=producer)
        return count / (time.perf_counter() - started)

    async def enqueue_one(self, sent: float) -> None:
        app, _, producer = self.client
        app.send_task("noop", kwargs={"sent": sent}, producer=producer)


@dataclass
class RQSystem:
    """RQ on Redis with ``worker_class`` (rq.worker.Worker forks a process per job)."""

    key: str
    label: str
    worker_class: str
    # RQ has a burst mode (used), but its exit is no end signal: it then joins its pubsub
    # thread, which sits in a 60 s read (rq/worker/base.py, run_in_thread(sleep_time=60)), so
    # the exit comes up to a minute after the last job. The harness counts in Redis instead.
    worker_env: dict[str, str] = field(default_factory=lambda: {"COUNT": "1"})
    client: Any = None
    ends_by_exit: bool = False
    database: bool = False
    # The same wait holds up a warm shutdown; a second SIGTERM (RQ's cold shutdown) ends it.
    # Only sent once every job is done, so that it cuts nothing short.
    hurry_after: float | None = 2.0
    # SimpleWorker runs some 170 jobs/s here and the forking Worker 55: 20,000 jobs would take
    # them two and six minutes a burn-down, every round. Their rate settles well within 2,000.
    max_jobs: int | None = 2_000
    burn_down_only: bool = False

    @contextlib.contextmanager
    def store(self) -> Iterator[str]:
        import redis

        url = redis_url(RQ_DB)
        with redis.Redis.from_url(url) as client:
            client.flushdb()
            try:
                yield f"{url}|{RQ_QUEUE}"
            finally:
                client.flushdb()

    def launch(
        self, store: str, mode: str, folder: Path, **extra: str
    ) -> tuple[list[str], dict[str, str]]:
        url, queue = _split(store)
        (folder / "bench_rq_app.py").write_text(RQ_APP)
        env = child_env(WORK_REDIS=redis_url(WORK_DB), **self.worker_env, **extra)
        env["PYTHONPATH"] = f"{folder}:{env['PYTHONPATH']}"
        argv = [sys.executable, "-c", "from rq.cli import main; main()", "worker"]
        argv += ["--url", url, "--worker-class", self.worker_class]
        return argv + (["--burst"] if mode == "burst" else []) + [queue], env

    def unfinished(self, store: str) -> int:
        queue = self.client_queue(store)
        with contextlib.closing(queue.connection):
            return len(queue) + queue.started_job_registry.count  # type: ignore[no-any-return]

    def client_queue(self, store: str) -> Any:
        import redis
        from rq import Queue

        url, name = _split(store)
        return Queue(name, connection=redis.Redis.from_url(url))

    async def open(self, store: str, install: bool) -> None:
        self.client = self.client_queue(store)

    async def close(self) -> None:
        if self.client is not None:
            self.client.connection.close()
            self.client = None

    async def enqueue_bulk(self, count: int, batch: int = 10_000) -> float:
        """RQ's ``enqueue_many``: one Redis pipeline per batch."""
        import time

        from rq import Queue

        started = time.perf_counter()
        for first in range(0, count, batch):
            size = min(batch, count - first)
            data = [Queue.prepare_data(RQ_NOOP, kwargs={"i": first + k}) for k in range(size)]
            self.client.enqueue_many(data)
        return count / (time.perf_counter() - started)

    async def enqueue_one(self, sent: float) -> None:
        self.client.enqueue(RQ_NOOP, kwargs={"sent": sent})


def broker_systems() -> list[CelerySystem | RQSystem]:
    """Every Celery and RQ configuration compared (those whose broker answers)."""
    systems: list[CelerySystem | RQSystem] = []
    for broker, name in (("rabbitmq", "RabbitMQ"), ("redis", "Redis")):
        systems += [
            CelerySystem(
                f"celery-{broker}-threads",
                f"Celery + {name} (threads x10, acks_late)",
                broker,
                "threads",
                10,
                # About 600 jobs/s on Redis here: 10,000 jobs keep a round within reason.
                max_jobs=10_000 if broker == "redis" else None,
            ),
            CelerySystem(
                f"celery-{broker}-prefork",
                f"Celery + {name} (prefork x2, acks_late)",
                broker,
                "prefork",
                2,
                max_jobs=10_000 if broker == "redis" else None,
            ),
        ]
    systems += [
        RQSystem("rq-simple", "RQ SimpleWorker (Redis)", "rq.worker.SimpleWorker"),
        RQSystem("rq-fork", "RQ Worker (a fork per job, Redis)", "rq.worker.Worker"),
    ]
    return systems


def brokers_available() -> dict[str, bool]:
    """Whether each family's packages import and its brokers answer."""
    found = {}
    for name in ("celery", "rq", "redis"):
        try:
            __import__(name)
            found[name] = True
        except ImportError:
            found[name] = False
    redis_up = found["redis"] and reachable(redis_url(0))
    return {
        "celery-rabbitmq": found["celery"] and redis_up and reachable(AMQP_URL),
        "celery-redis": found["celery"] and redis_up,
        "rq": found["rq"] and redis_up,
    }

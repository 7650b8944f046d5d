"""What each system compared in the peers part promises about durability, as the report prints it
(bench/report.py puts it in RESULTS.md beside the figures), so that a reader compares like with
like: when a job counts as done, what a worker crash in the middle of a job does, and what a
restart of the store loses. Written from each system's documentation and source at the versions
the bench extra installs, and from this machine's settings; it measures nothing.
"""

from __future__ import annotations

LINES = [
    "### What each system promises (durability)",
    "",
    "Throughput means little without what the system promises for it. Each is run in its "
    "at-least-once setting where it has one (Celery: `acks_late=True` with "
    "`task_reject_on_worker_lost=True`, no result backend); none was made less safe to run "
    "faster. On this machine PostgreSQL runs with `fsync=on` and `synchronous_commit=on`; "
    '**Redis runs with persistence off** (`save ""`, `appendonly no`), as it does here for '
    "every Redis figure.",
    "",
    "| System | A job is acknowledged (done for good) | A worker crash mid-job | A store or "
    "broker restart |",
    "|---|---|---|---|",
    "| chokaq (PostgreSQL) | when the transaction that moves it from hot to the archive "
    "commits, after the handler returns | its Processing jobs go to the DLQ as `ZOMBIE` once "
    "their heartbeat is older than the zombie timeout (60 s by default), and are not retried "
    "by themselves (an operator requeues them); jobs it had fetched but not started go back to "
    "Pending after the fetched timeout (120 s) | loses nothing committed: an enqueue is durable "
    "when its transaction commits |",
    "| PgQueuer | when its row is deleted from the queue table (and logged) after the handler "
    "returns | the picked row is picked again by another worker once its heartbeat is older "
    "than `heartbeat_timeout` (30 s by default): at-least-once | loses nothing committed |",
    "| procrastinate | when its row is set to `succeeded` after the task returns | the row stays "
    "`doing`; workers prune a stalled worker's registration (30 s), but its jobs are retried "
    "only by the application's own periodic call (`get_stalled_jobs` then retry) | loses "
    "nothing committed |",
    "| Celery + RabbitMQ | with `acks_late`, the message is acknowledged after the task returns "
    "(prefetched messages stay unacknowledged too) | the broker redelivers every "
    "unacknowledged message as soon as the worker's connection closes: at-least-once | "
    "Celery declares durable queues and persistent messages, so what the broker has written "
    "survives; publishes are not confirmed by default, so a message in flight when the broker "
    "dies can be lost without the producer knowing |",
    "| Celery + Redis | the same, against kombu's `unacked` hash in Redis | an unacknowledged "
    "message is restored to its queue only after `visibility_timeout` (1 h by default) | "
    "**everything queued or unacknowledged is lost** with persistence off (with AOF "
    "`everysec`, up to a second of it) |",
    "| RQ (Worker, SimpleWorker) | when the job finishes and its status is written; the job "
    "left the queue list when the worker popped it (at-most-once) | the job stays in the "
    "StartedJobRegistry until its time runs out, then is retried only if it was enqueued with "
    "`Retry` (not by default), else moved to the FailedJobRegistry | **everything is lost** "
    "with persistence off |",
    "",
    "So chokaq, PgQueuer and procrastinate keep every enqueued job across any restart; "
    "Celery on RabbitMQ keeps what its broker wrote; Celery and RQ on this Redis keep nothing "
    "across a Redis restart. After a worker crash, PgQueuer and Celery run the job again by "
    "themselves; chokaq, procrastinate and RQ leave it for a person (or the application) to "
    "decide, since its side effects may have happened.",
]

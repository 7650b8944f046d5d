"""The values that cross the storage seam: states, reasons, jobs as stored, requests and results.

Every backend returns these frozen dataclasses and never a driver row. This module holds data and
the tiny pure helpers that belong to it; it must not do I/O or import a driver.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Generic, Literal, TypeVar

__all__ = [
    "NO_HANDLER_ERROR",
    "ON_CONFLICT_MODES",
    "BatchRequest",
    "BatchSize",
    "CancelResult",
    "Capabilities",
    "Claim",
    "ClaimedJob",
    "DurableCounts",
    "EnqueueOutcome",
    "EnqueueResult",
    "ErrorGroup",
    "FailMove",
    "FailureReason",
    "Heartbeat",
    "HeartbeatAck",
    "JobAttempt",
    "JobBatch",
    "JobFilter",
    "JobLink",
    "JobOutcome",
    "JobStatus",
    "JobView",
    "LagGroup",
    "LeaderTerm",
    "Lease",
    "LimitInfo",
    "Move",
    "NewJob",
    "OnConflict",
    "Outcome",
    "Page",
    "PageKey",
    "ParentOutcome",
    "PartitionLoad",
    "PendingGroup",
    "Pillar",
    "Preview",
    "QueueInfo",
    "QueueStats",
    "RequeuedJob",
    "RescueResult",
    "RetryMove",
    "Schedule",
    "ScheduleChange",
    "ScheduleDeclaration",
    "SeriesPoint",
    "SlotOutcome",
    "SlotRecord",
    "Started",
    "StepKind",
    "StepRecord",
    "StepState",
    "StepWrite",
    "StreamItem",
    "SucceedMove",
    "Summary",
    "Supersession",
    "Throughput",
    "TypeLimit",
    "UnservedQueue",
    "WaitOutcome",
    "WorkerControl",
    "WorkerInfo",
    "Workflow",
    "WorkflowMember",
    "job_state",
    "located_state",
]


class JobStatus(enum.IntEnum):
    """The states a row of ``jobs_hot`` can be in."""

    PENDING = 0  # waiting (also delayed and retry-waiting rows: scheduled_at in the future)
    FETCHED = 1  # claimed into one worker's prefetch; user code not started
    PROCESSING = 2  # user code running; heartbeat ticking
    WAITING = 3  # waiting on parents (``after=``): outside the fetch index until released
    # A durable job that suspended itself (``ctx.sleep``, ``ctx.wait_for_event``): outside the
    # fetch index, holding no slot, until its time or its event comes (docs/durable.md).
    SUSPENDED = 4


class Pillar(enum.StrEnum):
    """Where a job physically lives."""

    HOT = "hot"
    ARCHIVE = "archive"
    DLQ = "dlq"


class Outcome(enum.IntEnum):
    """The outcome recorded in ``metric_buckets``."""

    SUCCEEDED = 0
    FAILED = 1


class FailureReason(enum.IntEnum):
    """Why a job is in the DLQ. Persisted as an int; every value has a real, tested producer.

    ``3`` (CircuitBreakerOpen in the reference) is deliberately absent: an open circuit defers
    jobs, it never dead-letters them.
    """

    MAX_RETRIES_EXCEEDED = 0  # the handler asked for Retry(...) once too often
    CANCELLED = 1  # an operator cancelled it (pending, fetched or running)
    ZOMBIE = 2  # processing, and its worker's heartbeat expired
    REJECTED = 4  # could not be dispatched: unknown type, undecodable payload, bad arguments
    THROTTLED = 5  # attempts ran out while the downstream kept throttling
    FATAL_ERROR = 6  # FatalError or a configured fatal exception type: never retried
    TIMEOUT = 7  # the handler ran past its execution timeout
    TRANSIENT = 8  # attempts ran out on ordinary exceptions
    HEARTBEAT_FAILURE = 9  # heartbeats kept failing and cancel_on_heartbeat_failure is on
    RETRY_LIFETIME_EXPIRED = 10  # the next retry would land past the job's max age
    DEPENDENCY_FAILED = 11  # a parent it waited on was purged, or its workflow was cancelled
    EXPIRED = 12  # not started by its expiry (``expires_at`` / ``expires_after_seconds``)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a database can do, declared by its driver and read in one place each.

    ``name`` is for people (health checks, logs). ``caller_transactions``: enqueue can join the
    caller's own connection and transaction (``Backend.jobs_enqueue`` refuses ``connection=``
    otherwise). ``migrates_on_open``: the store is embedded (one file, one owner), so
    ``App.open`` brings its schema up to date; a shared server is migrated by ``chokaq migrate``.
    ``row_versions``: updates leave dead row versions behind, which ``jobs_hot_tidy`` reclaims
    (it is a no-op elsewhere). ``in_process``: the store lives in this process's memory only
    (SQLite ``:memory:``): a second connection would open another, empty database, so the sync
    client shares the App's own backend instead of opening its own.
    """

    name: str
    caller_transactions: bool
    migrates_on_open: bool
    row_versions: bool
    in_process: bool = False


# What an enqueue does to the hot job holding its idempotency key (docs/concepts.md, "Debounce,
# throttle, latest wins"): "keep" it (and return its id), "replace" its payload and due time,
# "replace_payload" only (its due time kept: a throttle), or "cancel_running": replace it, and
# when it is already running ask it to stop and enqueue the new job after it.
OnConflict = Literal["keep", "replace", "replace_payload", "cancel_running"]
ON_CONFLICT_MODES: Final = ("keep", "replace", "replace_payload", "cancel_running")
# What an enqueue did: wrote a new job ("inserted"), returned the key's holder untouched
# ("kept"), gave the pending holder the new payload ("replaced", same id), or released the key
# of a holder already running and wrote a new job after it ("superseded", the new id).
EnqueueOutcome = Literal["inserted", "kept", "replaced", "superseded"]


@dataclass(slots=True)
class NewJob:
    """One job to enqueue. ``payload`` is JSON text; the backend checks every limit first.

    ``run_at`` (aware UTC) and ``delay_seconds`` are mutually exclusive; neither means "now".
    ``max_attempts`` and ``timeout_seconds`` left ``None`` fall back to the handler's and then the
    worker's defaults at execution time.

    Unlike the other models it is not frozen: a bulk enqueue builds one per job, and a frozen
    dataclass pays an ``object.__setattr__`` call per field, which made up more than a tenth of
    a bulk enqueue's time. It is an input only: enqueue checks it when called and keeps nothing.
    """

    type: str
    payload: str = "{}"
    queue: str = "default"
    priority: int = 10
    delay_seconds: float | None = None
    run_at: datetime | None = None
    idempotency_key: str | None = None
    tags: tuple[str, ...] = ()
    created_by: str | None = None
    max_attempts: int | None = None
    timeout_seconds: float | None = None
    trace_context: str | None = None
    id: str | None = None  # a UUIDv7 is generated when None
    after: tuple[str, ...] = ()  # ids of the parents it waits on (all must succeed first)
    partition: str | None = None  # its type's limits apply per partition value
    # Not started by then (one or the other, from the enqueue's clock): the DLQ, as EXPIRED.
    expires_at: datetime | None = None
    expires_after_seconds: float | None = None
    # With an idempotency key: another enqueue with that key within this many seconds of this
    # one gets this job's id, even after it has finished (see ``Backend.jobs_enqueue``).
    unique_for_seconds: float | None = None
    # With ``after``: "success" (wait until every parent has succeeded) or "any" (until every
    # parent has finished, in the archive or the DLQ). See docs/workflows.md.
    after_outcome: str = "success"
    # With ``after``: the parents' return values come first among the handler's positional
    # arguments, in the order of ``after``.
    pass_results: bool = False
    # With an idempotency key held by a hot job: what this enqueue does to it (ON_CONFLICT_MODES).
    on_conflict: OnConflict = "keep"


@dataclass(frozen=True, slots=True)
class Supersession:
    """Which jobs an enqueue with ``on_conflict`` put one after another: the job that
    ``superseded_by`` took this one's idempotency key while it was past Pending (at
    ``superseded_at``; ``cancel_requested``: it was also asked to stop, ``cancel_running``), and
    the job this one ``supersedes``. None where there is none."""

    superseded_by: str | None = None
    superseded_at: datetime | None = None
    cancel_requested: bool = False
    supersedes: str | None = None


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """The id a job has, and whether it already existed (same idempotency key still in hot).

    ``duplicate`` is true when the id is the key's holder's (``kept`` or ``replaced``);
    ``outcome`` says which of the four things happened (``EnqueueOutcome``)."""

    id: str
    duplicate: bool
    # Set only by an enqueue with on_conflict other than "keep" that changed the holder: the
    # common results are built without it (a bulk enqueue makes one per job).
    changed: EnqueueOutcome | None = None

    @property
    def outcome(self) -> EnqueueOutcome:
        if self.changed is not None:
            return self.changed
        return "kept" if self.duplicate else "inserted"


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof of ownership of one claim: the worker and a token minted for this claim only."""

    job_id: str
    worker_id: str
    token: str


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job a worker claimed (Fetched, or Processing when fetched with ``start=True``)."""

    id: str
    queue: str
    type: str
    payload: str
    tags: tuple[str, ...]
    priority: int
    status: JobStatus
    attempt_count: int  # executions that crossed into Processing, this one included if started
    max_attempts: int | None
    timeout_seconds: float | None
    idempotency_key: str | None
    created_at: datetime
    scheduled_at: datetime | None
    started_at: datetime | None
    created_by: str | None
    last_error: str | None
    trace_context: str | None
    lease: Lease
    has_parents: bool = False  # enqueued with ``after=``: its parents' results are there to read
    partition: str | None = None
    expires_at: datetime | None = None  # not started by then: dead-lettered as EXPIRED
    requeues: int = 0  # times an operator requeued it from the DLQ (attempts start over)


@dataclass(frozen=True, slots=True)
class Started:
    """The result of an applied start: the attempt now running and when it started."""

    attempt_count: int
    started_at: datetime


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One job's heartbeat; ``progress`` (0-100) is stored when given."""

    lease: Lease
    progress: int | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatAck:
    """What a heartbeat learned: still ours? has anyone asked to cancel it, and who?"""

    job_id: str
    owned: bool
    cancel_requested: bool = False
    cancel_requested_by: str | None = None


@dataclass(frozen=True, slots=True)
class SucceedMove:
    """Hot -> archive, guarded by the lease; releases the dependents it was the last parent of.

    ``result`` is the handler's return value as JSON text (None when it returned None);
    ``result_error`` says why a value was not kept (too large, not JSON), with ``result`` None.

    ``elapsed_seconds`` (every move whose handler ran has one): the seconds from the moment the
    claim (or start) that began the attempt came back to the worker until the handler returned,
    on the worker's monotonic clock. Storage records the attempt's end (the archive's
    ``finished_at``, the DLQ's and the attempt history's ``failed_at``) as the attempt's
    ``started_at`` plus this: on the database's clock like the start, at most about one round
    trip early, instead of when the move is written (which batching delays, and an outage by as
    long as it lasts). None (a handler that never ran, a move made by hand): the end is when the
    move is recorded.
    """

    lease: Lease
    duration_seconds: float | None
    result: str | None = None
    result_error: str | None = None
    elapsed_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class FailMove:
    """Hot -> DLQ with a reason and the error text, guarded by the lease.

    ``actor`` names who cancelled, for reason CANCELLED; it is stored in ``cancelled_by``.
    ``duration_seconds`` is how long the last execution ran, when it ran; ``elapsed_seconds``:
    as ``SucceedMove``'s. ``error_type`` is the qualified class name (``module.Class``) of the
    exception that sent the job to the DLQ, when one did (None: a timeout, ``Fail``, a cancel).
    """

    lease: Lease
    reason: FailureReason
    error: str
    actor: str | None = None
    duration_seconds: float | None = None
    elapsed_seconds: float | None = None
    error_type: str | None = None


@dataclass(frozen=True, slots=True)
class RetryMove:
    """Back to pending, due at ``run_at`` (or now + ``delay_seconds``), keeping the last error.

    ``refund_attempt`` gives back the attempt counted at start (a circuit deferral or a job that
    never ran); ``count_retry`` adds one to the queue's lifetime ``retried_total``.
    ``duration_seconds`` is how long the failed execution ran (kept in the attempt history);
    ``elapsed_seconds``: as ``SucceedMove``'s.
    """

    lease: Lease
    error: str | None
    delay_seconds: float = 0.0
    run_at: datetime | None = None
    refund_attempt: bool = False
    count_retry: bool = True
    duration_seconds: float | None = None
    elapsed_seconds: float | None = None


Move = SucceedMove | FailMove | RetryMove


@dataclass(frozen=True, slots=True)
class RescueResult:
    """What one rescue pass did: fetched rows put back to pending, processing rows dead-lettered
    as zombies, pending rows past their expiry dead-lettered as expired."""

    requeued: tuple[str, ...]
    zombies: tuple[str, ...]
    expired: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LeaderTerm:
    """One holder's term of a leadership role, as the database granted it.

    ``epoch`` is the fencing token: it grows by one each time the role changes hands or lapses,
    so a write that names a term applies only while that very term is current. ``expires_at``
    is the database's clock at which the term lapses unless renewed.
    """

    name: str
    holder: str
    epoch: int
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class ScheduleDeclaration:
    """A periodic schedule as the code declares it (``@app.periodic``), upserted when a worker
    starts. ``kwargs`` is the JSON object text every run's job gets as its payload; ``misfire``
    is ``skip``, ``latest`` or ``all``; exactly one of ``cron`` and ``every_seconds`` is set.
    ``expires_after_seconds``: every run expires that long after its enqueue (None: never)."""

    name: str
    type: str
    queue: str
    priority: int
    cron: str | None
    every_seconds: float | None
    timezone: str
    kwargs: str
    misfire: str
    overlap: bool
    expires_after_seconds: float | None = None


class SlotOutcome(enum.StrEnum):
    """What became of one slot of a schedule (its history)."""

    ENQUEUED = "enqueued"  # its job was enqueued
    TRIGGERED = "triggered"  # an operator's "run now", outside the slots
    SKIPPED = "skipped"  # overlap=False and the previous run was still unfinished
    MISSED = "missed"  # due while nothing enqueued it; the misfire rule left it out


@dataclass(frozen=True, slots=True)
class SlotRecord:
    """One line of a schedule's history: the slot's due time, its outcome, its job (the one
    enqueued; for SKIPPED, the unfinished run it yielded to) and a detail ("3 slots missed
    (...)", who triggered it)."""

    slot: datetime
    outcome: SlotOutcome
    job_id: str | None = None
    detail: str | None = None
    recorded_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Schedule:
    """A stored schedule: its timing and kwargs in force (the code's, or an operator's edit
    while ``edited_by`` is set), what the code declared, and where its slots stand.

    ``last_slot`` is the compare-and-set target: every slot at or before it has been handled
    (enqueued, skipped or recorded as missed), or it is the moment the timing was set.
    ``next_slot`` is the first slot after it. ``last_outcome`` is where the last run's job is
    now (``pending``, ``fetched``, ``processing``, ``succeeded``, a failure reason in lower
    case, or ``gone`` once retention removed it). ``orphaned``: no running worker has declared
    it lately (its code is gone, or every worker of its service is down); it does not fire."""

    # The timing and kwargs in force, under the names of ``ScheduleDeclaration`` (which they
    # may differ from after an operator's edit): the same fields, but not a subclass, as a
    # stored schedule is not a declaration.
    name: str
    type: str
    queue: str
    priority: int
    cron: str | None
    every_seconds: float | None
    timezone: str
    kwargs: str
    misfire: str
    overlap: bool
    paused: bool
    declared_cron: str | None
    declared_every_seconds: float | None
    declared_timezone: str
    declared_kwargs: str
    edited_by: str | None
    edited_at: datetime | None
    revision: int
    last_slot: datetime
    next_slot: datetime | None
    last_job_id: str | None
    last_run_at: datetime | None
    last_outcome: str | None
    seen_at: datetime
    created_at: datetime
    updated_at: datetime
    last_modified_by: str | None
    orphaned: bool = False
    # Every run expires this long after its enqueue (not started by then: the DLQ as EXPIRED);
    # the code's, like queue and priority. None: never.
    expires_after_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class ScheduleChange:
    """An operator's change to one schedule (``Backend.schedule_pause``, ``schedule_edit``,
    ``schedule_reset`` build it): the full row values in force afterwards. ``restart_at`` set:
    slots count afresh from that moment (new timing, or resumed), with ``next_slot``."""

    paused: bool
    cron: str | None
    every_seconds: float | None
    timezone: str
    kwargs: str
    edited: bool
    restart_at: datetime | None
    next_slot: datetime | None


@dataclass(frozen=True, slots=True)
class CancelResult:
    """Cancel outcome per id: moved to DLQ now, flagged for the running worker, or not in hot."""

    cancelled: tuple[str, ...]
    requested: tuple[str, ...]
    not_found: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class JobFilter:
    """Server-side filters shared by the Deck, the CLI and bulk operations.

    ``since``/``until`` bound the pillar's date column (hot: created_at, archive: finished_at,
    dlq: failed_at), inclusive. ``search`` matches type, tags and error text as a plain
    substring, case-insensitive, and an id by its end: a whole id or its tail (wildcards in it
    are literal). ``ids`` restricts to those ids.
    """

    queue: str | None = None
    type: str | None = None
    status: JobStatus | None = None
    failure_reason: FailureReason | None = None
    since: datetime | None = None
    until: datetime | None = None
    search: str | None = None
    ids: tuple[str, ...] | None = None
    blocked: bool | None = None  # hot only: waiting on a parent that is in the DLQ
    partition: str | None = None
    error_family: str | None = None  # dlq only: exactly this family (``ErrorGroup.family``)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageKey:
    """Where a keyset page starts: the sort column's value and the id of the row it follows
    (``after``) or precedes (``before``). ``value`` is the column's type: an aware time for
    the date columns, an int, a float, a string, or None (a row with no value there)."""

    value: str | int | float | datetime | None
    id: str


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing with the number of matching rows.

    ``total`` is exact unless ``total_estimated`` (then it is the database's estimate, which
    may be off either way). ``previous`` and ``next`` are the keys of the pages before and
    after this one (None: there is none), for keyset paging (``jobs_page(after=...)``)."""

    items: tuple[T, ...]
    total: int
    page: int
    page_size: int
    total_estimated: bool = False
    previous: PageKey | None = None
    next: PageKey | None = None

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


@dataclass(frozen=True, slots=True)
class Preview:
    """What a bulk-by-filter operation would touch: all matches, how many it will act on (capped),
    and a sample of the ids it would act on first. ``will_affect`` is counted exactly;
    ``matched`` is exact up to ``cap`` and then counted as a listing counts (exactly up to
    10,000; past that, or where the planner expects more, PostgreSQL's estimate, with
    ``matched_estimated`` set)."""

    matched: int
    will_affect: int
    cap: int
    sample_ids: tuple[str, ...]
    matched_estimated: bool = False


@dataclass(frozen=True, slots=True)
class RequeuedJob:
    """An archived job requeued as new: the archived row (kept) and the new hot job made from it
    (whose ``created_by`` is ``"requeue:<archived_id>"``)."""

    archived_id: str
    new_id: str


@dataclass(frozen=True, slots=True)
class JobAttempt:
    """One failed attempt of a job: a retry, or the final failure that sent it to the DLQ.

    ``seq`` orders a job's attempts (``attempt`` restarts at 1 after a resurrection);
    ``failure_reason`` is None for a retried attempt, else the reason of the final failure;
    ``error`` is the error as the worker recorded it (type, message and traceback, at most
    16,000 characters)."""

    seq: int
    attempt: int
    failed_at: datetime
    started_at: datetime | None
    worker_id: str | None
    duration_seconds: float | None
    failure_reason: FailureReason | None
    error: str | None


@dataclass(frozen=True, slots=True)
class JobView:
    """A job wherever it lives, for inspectors and listings; fields a pillar lacks are ``None``."""

    pillar: Pillar
    id: str
    queue: str
    type: str
    payload: str | None
    tags: tuple[str, ...]
    priority: int | None
    attempt_count: int
    created_at: datetime
    status: JobStatus | None = None
    max_attempts: int | None = None
    timeout_seconds: float | None = None
    idempotency_key: str | None = None
    worker_id: str | None = None
    created_by: str | None = None
    last_modified_by: str | None = None
    scheduled_at: datetime | None = None
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    failed_at: datetime | None = None
    duration_seconds: float | None = None
    failure_reason: FailureReason | None = None
    error: str | None = None
    # dlq: the qualified class name of the exception that dead-lettered it (``module.Class``);
    # None when no exception did (timeout, Fail, cancel) or it failed before chokaq kept it.
    error_type: str | None = None
    last_error: str | None = None
    progress: int | None = None
    cancel_requested_at: datetime | None = None
    cancelled_by: str | None = None
    result: str | None = None  # archive: the return value as JSON text (None: returned None)
    result_error: str | None = None  # archive: why the return value was not kept
    parents_left: int | None = None  # hot, WAITING: parents that have not succeeded yet
    workflow_id: str | None = None  # with ``relatives``: the workflow it belongs to
    parents: tuple[JobLink, ...] = ()  # with ``relatives``: the jobs it waits on, and where
    # With ``relatives``, for a job with parents: "success" (it runs once they all succeeded)
    # or "any" (once they all finished, succeeded or not).
    after_outcome: str | None = None
    children: tuple[JobLink, ...] = ()  # with ``relatives``: the jobs that wait on it
    partition: str | None = None
    expires_at: datetime | None = None  # hot: not started by then, it goes to the DLQ (EXPIRED)
    # A listing's row: the text fields cut to their first characters (see jobs_page).
    truncated: tuple[str, ...] = ()
    attempts: tuple[JobAttempt, ...] = ()  # with ``relatives``: failed attempts, newest first

    @property
    def state(self) -> str:
        """Where it is, in one word: pending, fetched, processing, waiting, blocked (waiting
        on a parent in the DLQ that it needed to succeed; known with ``relatives``),
        succeeded or failed."""
        blocked = any(p.state == "failed" and not p.any_outcome for p in self.parents)
        return job_state(self.pillar, self.status, blocked=blocked)


@dataclass(frozen=True, slots=True)
class JobLink:
    """A job at the other end of a dependency: its id, type and state (``JobView.state``'s
    words; ``"purged"`` when it is in no pillar any more); ``failure_reason`` when failed."""

    id: str
    type: str | None
    state: str
    failure_reason: FailureReason | None = None
    # The edge's: the child runs once this parent has finished, whether or not it succeeded
    # (``after_outcome="any"``).
    any_outcome: bool = False


def job_state(pillar: Pillar | None, status: JobStatus | None, *, blocked: bool = False) -> str:
    """``JobView.state`` from a pillar and a hot status; ``"purged"`` for no pillar."""
    if pillar is None:
        return "purged"
    if pillar is Pillar.ARCHIVE:
        return "succeeded"
    if pillar is Pillar.DLQ:
        return "failed"
    if status is JobStatus.WAITING and blocked:
        return "blocked"
    return status.name.lower() if status is not None else "pending"


def located_state(status: int | None, archived: bool, reason: int | None) -> str:
    """A related job's state from its hot status, its presence in the archive and its DLQ
    reason (at most one of them is set: a job is in one pillar at a time)."""
    if status is not None:
        return job_state(Pillar.HOT, JobStatus(status))
    if archived:
        return job_state(Pillar.ARCHIVE, None)
    if reason is not None:
        return job_state(Pillar.DLQ, None)
    return job_state(None, None)


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """Where a job is, as ``App.result`` needs it: its pillar and hot status, its DLQ reason
    and error (and the class of the exception behind it, ``error_type``), its result (JSON
    text) and why a result was not kept. A Waiting job that cannot run until an operator acts
    is ``blocked_by`` a job in the DLQ (a parent, or an ancestor through parents that wait
    themselves), dead-lettered for ``blocked_reason``."""

    pillar: Pillar
    status: JobStatus | None = None
    failure_reason: FailureReason | None = None
    error: str | None = None
    error_type: str | None = None
    result: str | None = None
    result_error: str | None = None
    blocked_by: str | None = None
    blocked_reason: FailureReason | None = None


@dataclass(frozen=True, slots=True)
class ParentOutcome:
    """How one parent of a job ended, as its child reads it when it starts: the parent's id,
    where it is (``outcome``: the archive with its result, the DLQ with its reason and error,
    or hot again after a requeue) and, for a child enqueued with ``pass_results``, the place
    of its result among the child's leading positional arguments (None otherwise)."""

    id: str
    outcome: JobOutcome | None  # None: purged since (in no pillar)
    argument: int | None = None


@dataclass(frozen=True, slots=True)
class WorkflowMember:
    """One job of a workflow: where it is, and the ids of its parents within the store."""

    id: str
    type: str | None
    queue: str | None
    state: str
    parents: tuple[str, ...]
    failure_reason: FailureReason | None = None
    error: str | None = None
    any_outcome: bool = False  # waits for its parents to finish, not to succeed


@dataclass(frozen=True, slots=True)
class Workflow:
    """Every job linked by ``after=`` to a workflow's first job (``id``), parents first."""

    id: str
    jobs: tuple[WorkflowMember, ...]

    def counts(self) -> dict[str, int]:
        """How many of its jobs are in each state."""
        out: dict[str, int] = {}
        for job in self.jobs:
            out[job.state] = out.get(job.state, 0) + 1
        return out

    @property
    def finished(self) -> bool:
        """No job of it is still to run (every one succeeded, failed or was purged)."""
        return all(job.state in ("succeeded", "failed", "purged") for job in self.jobs)


@dataclass(frozen=True, slots=True)
class Summary:
    """The overview: live hot counts plus lifetime counters from ``stats_summary``."""

    pending: int
    fetched: int
    processing: int
    succeeded_total: int
    failed_total: int
    retried_total: int
    last_activity_at: datetime | None
    waiting: int = 0  # WAITING on parents (``after=``)


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A queue's control-plane row.

    ``paused``: workers claim none of its jobs (running ones finish). ``active`` False has the
    same effect on workers (kept for compatibility; see ``queue_activate``). ``hidden``: The
    Deck leaves it out of its queue list unless asked; it changes nothing else."""

    name: str
    paused: bool
    active: bool
    max_workers: int | None
    zombie_timeout_seconds: float | None
    execution_timeout_seconds: float | None
    updated_at: datetime
    hidden: bool = False  # left out of The Deck's queue list only; workers ignore it


# The first word of the last error of a job a worker released because it has no handler for
# its type (and its queue no pipe): The Deck and ``jobs_pending_groups`` find such jobs by it.
NO_HANDLER_ERROR = "NoHandler"


@dataclass(frozen=True, slots=True)
class PendingGroup:
    """The Pending jobs of one (queue, type), as a burst worker and The Deck's notices see them.

    ``due``: due now. ``waiting``: not due yet, and run or released before (a retry, a
    deferral). ``later``: not due yet and never tried (delayed by design). ``next_due_at``: the
    earliest due time of the rows not yet due. ``no_handler``: rows a worker released because
    it had no handler for the type (their last error starts with ``NO_HANDLER_ERROR``).
    """

    queue: str
    type: str
    due: int
    waiting: int
    later: int
    next_due_at: datetime | None
    no_handler: int

    @property
    def pending(self) -> int:
        return self.due + self.waiting + self.later


@dataclass(frozen=True, slots=True)
class LagGroup:
    """The jobs of one (queue, type) that wait, as "Why the wait" shows them.

    ``due``: Pending and due now (they wait for a worker). ``retrying``: Pending, not due yet,
    run or released before (a retry's backoff, a circuit's deferral). ``delayed``: Pending, not
    due yet and never tried (enqueued for later). ``on_parents``: waiting on parents (after=).
    ``oldest_due_at``: the earliest due time among the due rows (their lag is now minus it).
    ``next_due_at``: the earliest due time among the Pending rows not due yet.
    """

    queue: str
    type: str
    due: int
    retrying: int
    delayed: int
    on_parents: int
    oldest_due_at: datetime | None
    next_due_at: datetime | None

    @property
    def pending(self) -> int:
        return self.due + self.retrying + self.delayed


@dataclass(frozen=True, slots=True)
class UnservedQueue:
    """An active, unpaused queue with due Pending jobs and no live worker serving it. ``due``
    is counted up to the read's cap; ``more`` says that the count stopped there."""

    queue: str
    due: int
    more: bool


@dataclass(frozen=True, slots=True)
class QueueStats:
    """A queue's control plane, live hot counts, lifetime counters and eligible-pending lag."""

    queue: QueueInfo
    # ``Summary``'s counts for this queue alone, under the same names (one queue, not the total).
    pending: int
    fetched: int
    processing: int
    succeeded_total: int
    failed_total: int
    retried_total: int
    last_activity_at: datetime | None
    lag_count: int  # eligible (due) pending jobs
    lag_avg_seconds: float
    lag_max_seconds: float
    waiting: int = 0  # WAITING on parents (``after=``), blocked ones included
    blocked: int = 0  # WAITING on a parent that is in the DLQ
    # Lifetime counts of enqueues with on_conflict that replaced a Pending job's payload, or
    # superseded a job already past Pending (its key given up to a new job).
    replaced_total: int = 0
    superseded_total: int = 0


@dataclass(frozen=True, slots=True)
class Throughput:
    """Outcomes over the last 1 and 5 minutes, read from ``metric_buckets`` only."""

    processed_1m: int
    failed_1m: int
    processed_5m: int
    failed_5m: int

    @property
    def jobs_per_second_1m(self) -> float:
        return self.processed_1m / 60.0

    @property
    def jobs_per_second_5m(self) -> float:
        return self.processed_5m / 300.0

    @property
    def failure_rate_1m(self) -> float:
        """Percent of processed jobs that failed over the last minute (0 when none)."""
        return self.failed_1m * 100.0 / self.processed_1m if self.processed_1m else 0.0

    @property
    def failure_rate_5m(self) -> float:
        return self.failed_5m * 100.0 / self.processed_5m if self.processed_5m else 0.0


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One bucket of the throughput chart: outcomes that finished in it, and the durations of
    those that recorded one (``duration_count`` of them, summed and the longest)."""

    bucket_start: datetime
    succeeded: int
    failed: int
    total_duration_seconds: float = 0.0
    max_duration_seconds: float | None = None
    duration_count: int = 0


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    """One family of DLQ errors: its reason and its family, the error's first line with numbers,
    ids and quoted values folded (``chokaq.storage.families``), at most 160 characters."""

    failure_reason: FailureReason
    family: str
    count: int
    latest_at: datetime


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A live (or recently live) worker process as it registered itself.

    ``circuits`` is the JSON text of the worker's circuit-breaker snapshot.
    """

    id: str
    hostname: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    desired_concurrency: int | None
    running: int
    state: str
    started_at: datetime
    heartbeat_at: datetime
    circuits: str = "[]"


@dataclass(frozen=True, slots=True)
class WorkerControl:
    """What operators asked of a worker since it last looked: new concurrency, circuits to close."""

    desired_concurrency: int | None = None
    close_circuits: tuple[str, ...] = field(default_factory=tuple)


def run_outcome(hot_status: int | None, archived: bool, dlq_reason: int | None) -> str | None:
    """Where a schedule's last job is now (``Schedule.last_outcome``), from its hot status, its
    presence in the archive, or its DLQ reason; None when none of them holds it."""
    if hot_status is not None:
        return JobStatus(hot_status).name.lower()
    if archived:
        return "succeeded"
    if dlq_reason is not None:
        return FailureReason(dlq_reason).name.lower()
    return None


def ordered_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """Ids de-duplicated in first-seen order (bulk operations act on each id once)."""
    return tuple(dict.fromkeys(ids))


@dataclass(frozen=True, slots=True)
class TypeLimit:
    """What a job type's code declares (``@app.job(rate_limit=, partition_concurrency=)``):
    a rate (text, "10/s") and a cap on running jobs, each per partition value when a job has
    one. ``None``: no such limit."""

    type: str
    rate_limit: str | None = None
    partition_concurrency: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    """One partition of a limited type: its due pending jobs and its running ones."""

    partition: str
    waiting: int
    running: int


@dataclass(frozen=True, slots=True)
class LimitInfo:
    """A limited queue or job type: the limits in force, where they come from, and its load.

    ``scope``: "queue" or "type". ``rate_limit`` and ``partition_concurrency`` are in force (an
    operator's setting when ``rate_set`` / ``concurrency_set``, else what the code declared).
    ``current_rate``: jobs started per second over the last ``chokaq.rates.RATE_WINDOW_SECONDS``.
    ``pending``: due pending jobs; ``held``: those of them the limit holds back now (the rate
    has no start left, or their partition is at its cap); ``running``: Fetched or Processing.
    ``partitions``: partitions with pending jobs; ``top_partitions``: the busiest, by waiting.
    """

    scope: str
    name: str
    rate_limit: str | None
    partition_concurrency: int | None
    declared_rate_limit: str | None
    declared_partition_concurrency: int | None
    rate_set: bool
    concurrency_set: bool
    updated_at: datetime
    last_modified_by: str | None
    current_rate: float = 0.0
    pending: int = 0
    held: int = 0
    running: int = 0
    partitions: int = 0
    top_partitions: tuple[PartitionLoad, ...] = ()

    @property
    def limited(self) -> bool:
        return self.rate_limit is not None or self.partition_concurrency is not None


@dataclass(frozen=True, slots=True)
class Claim:
    """What a fetch claimed, and when a limit that held jobs back allows the next start
    (``retry_at``; ``None``: nothing held back by a rate). ``expired``: the jobs it took past
    their expiry and buried as EXPIRED instead of handing them out."""

    jobs: list[ClaimedJob]
    retry_at: datetime | None = None
    expired: tuple[ClaimedJob, ...] = ()
    # The batch the jobs were claimed as (``jobs_claim_batch``; None for a plain claim).
    batch_id: str | None = None


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One batch claim, checked (``Backend.jobs_claim_batch``): up to ``limit`` due jobs of
    ``type`` for ``worker_id``, once that many are due or the oldest has been due
    ``wait_seconds``, sharing the value of the argument ``key`` (None: any), in ``queues``
    (None: every queue), recorded under ``batch_id``."""

    batch_id: str
    worker_id: str
    type: str
    limit: int
    wait_seconds: float
    key: str | None
    queues: list[str] | None


@dataclass(frozen=True, slots=True)
class JobBatch:
    """A batch a job ran in: when and by whom it was claimed, which attempt of the job it
    was, and every job claimed with it (``job_ids``, the job itself included)."""

    batch_id: str
    type: str
    queue: str
    attempt: int
    worker_id: str
    claimed_at: datetime
    job_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BatchSize:
    """One batch of a type: when it was claimed and how many jobs it took."""

    batch_id: str
    claimed_at: datetime
    size: int


class StepKind(enum.IntEnum):
    """What a durable job recorded under a step name (``job_steps.kind``)."""

    STEP = 0  # ctx.step(name, fn): the function's return value, or its error
    SLEEP = 1  # ctx.sleep(seconds): done when its wake time has passed
    WAIT = 2  # ctx.wait_for_event(key): the event's data, or a timeout
    SPAWN = 3  # ctx.spawn(jobs): the ids of the children it enqueued
    GATHER = 4  # ctx.gather(ids): where each ended (pending: the ids it waits for)


class StepState(enum.IntEnum):
    """Where a recorded step stands (``job_steps.state``)."""

    DONE = 0  # completed: replay returns its outcome without running it again
    FAILED = 1  # the step raised: replay runs it again
    PENDING = 2  # a sleep, a wait or a gather the job is suspended on


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One recorded step of a durable job (a row of ``job_steps``).

    ``value`` is JSON text: a step's return value, a wait's event data. ``error`` is a failed
    step's error text, or ``"timeout"`` for a wait that timed out. ``wake_at`` is a sleep's
    end or a wait's deadline (None: a wait without timeout)."""

    job_id: str
    name: str
    seq: int
    kind: StepKind
    state: StepState
    value: str | None = None
    error: str | None = None
    event_key: str | None = None
    wake_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StepWrite:
    """One step outcome to record (``Backend.steps_record_many``): step ``name`` of the job
    leased by ``lease``, done with ``value`` (JSON text; None: the step returned None) or
    failed with ``error``, after ``elapsed_seconds`` on the worker."""

    lease: Lease
    name: str
    value: str | None = None
    error: str | None = None
    elapsed_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class WaitOutcome:
    """What a durable sleep or wait found (``Backend.durable_sleep`` / ``durable_wait``):
    ``suspended`` (the job left Processing; the worker must stop running it), else the
    completed step (``step``: a sleep that is over, an event received, a timeout), or neither
    when the lease was lost (``lost``)."""

    suspended: bool = False
    step: StepRecord | None = None

    @property
    def lost(self) -> bool:
        return not self.suspended and self.step is None


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One item of a job's stream (``ctx.emit``; a row of ``job_stream``): its place in the
    stream (``index``: 0, 1, 2, ... with no gap), the item as JSON text, and when it was
    written."""

    job_id: str
    index: int
    item: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class DurableCounts:
    """What durable jobs hold in the store now: suspended jobs by (queue, what they wait for:
    "sleep", "event" or "children"), and the events kept for a job that has not waited yet."""

    suspended: tuple[tuple[str, str, int], ...] = ()
    events_kept: int = 0

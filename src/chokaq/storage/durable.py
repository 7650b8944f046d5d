"""The storage seam's durable-job operations, checked once and observed once: the steps a
durable job records under its lease, the sleeps and event waits that suspend it (status
``SUSPENDED``, outside the fetch index, no slot, no attempt), the events sent to it, the pass
that wakes suspended jobs whose time came, and the resumption of durable jobs whose worker died.

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). The replay model these operations serve is in docs/durable.md.
This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from ..errors import ValidationError
from ..limits import (
    MAX_ATTEMPTS,
    check_count,
    check_event_key,
    check_job_id,
    check_name,
    check_payload,
    check_seconds,
    check_step_name,
    storable,
    validate_new_jobs,
)
from ..models import (
    DurableCounts,
    LeaderTerm,
    Lease,
    NewJob,
    StepRecord,
    StepWrite,
    WaitOutcome,
)
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["EVENT_RETENTION_SECONDS", "MAX_STEP_BATCH", "DurableOperations"]

# How long an event sent while no job waits on its key is kept for the first job that waits.
EVENT_RETENTION_SECONDS = 7 * 86_400.0
# Rows a wake or tidy pass moves or removes at most; children a spawn enqueues or a gather
# waits for at most.
MAX_PASS = 10_000
MAX_CHILDREN = 10_000
# Jobs a step read, or step outcomes a step write, covers at most (one worker's batch).
MAX_STEP_BATCH = 1000


class DurableOperations(OperationGroup):
    """The storage seam's durable-job operations."""

    @operation
    async def steps_list(self, *, job_id: str) -> list[StepRecord]:
        """The steps a job recorded, in the order it first recorded them (empty: none)."""
        return await self.driver.steps_list(check_job_id("job_id", job_id))

    @operation
    async def steps_list_many(self, *, job_ids: Sequence[str]) -> dict[str, list[StepRecord]]:
        """The steps each of ``job_ids`` (at most ``MAX_STEP_BATCH``, 1,000) recorded, in one
        statement: every id asked maps to its steps in the order it first recorded them
        (empty: none). The worker's step batcher reads many jobs' replays with it."""
        if isinstance(job_ids, str | bytes) or not isinstance(job_ids, Sequence):
            raise ValidationError("job_ids", "must be a list of job ids")
        if len(job_ids) > MAX_STEP_BATCH:
            raise ValidationError("job_ids", f"must hold at most {MAX_STEP_BATCH} job ids")
        ids = list(dict.fromkeys(check_job_id(f"job_ids[{i}]", j) for i, j in enumerate(job_ids)))
        if not ids:
            return {}
        return await self.driver.steps_list_many(ids)

    @operation
    async def steps_record(
        self,
        *,
        lease: Lease,
        name: str,
        value: str | None = None,
        error: str | None = None,
        elapsed_seconds: float = 0.0,
        now: datetime | None = None,
    ) -> StepRecord | None:
        """Record the outcome of step ``name`` of the leased Processing job, in one statement:
        done with ``value`` (JSON text; None: the step returned None), or failed with ``error``
        (the step runs again on the job's next run). A step already done is never changed.
        None when the lease is stale (nothing is written) or the step was already done."""
        write = self._step_write("", StepWrite(lease, name, value, error, elapsed_seconds))
        [done] = await self.driver.steps_record_many([write], checks.now(now))
        return done

    @operation
    async def steps_record_many(
        self, *, records: Sequence[StepWrite], now: datetime | None = None
    ) -> list[StepRecord | None]:
        """Record many step outcomes (at most ``MAX_STEP_BATCH``, 1,000; each as
        ``steps_record`` records one) in one statement: each row is written only while its own
        lease holds, so one stale worker's record changes nothing of the others'. The outcome
        of each, in input order: the step as recorded, or None (stale lease, or already done).
        One step of a job twice in a call is refused: the second would overwrite the first."""
        if isinstance(records, str | bytes) or not isinstance(records, Sequence):
            raise ValidationError("records", "must be a list of StepWrite")
        if len(records) > MAX_STEP_BATCH:
            raise ValidationError("records", f"must hold at most {MAX_STEP_BATCH} records")
        writes = [self._step_write(f"records[{i}].", r) for i, r in enumerate(records)]
        if len({(w.lease.job_id, w.name) for w in writes}) < len(writes):
            raise ValidationError("records", "must name each step of a job at most once")
        if not writes:
            return []
        return await self.driver.steps_record_many(writes, checks.now(now))

    def _step_write(self, at: str, write: StepWrite) -> StepWrite:
        """``write`` checked and normalised; errors name ``at`` + the field."""
        if not isinstance(write, StepWrite):
            raise ValidationError(at.rstrip(".") or "record", "must be a StepWrite")
        [lease] = checks.leases(f"{at}lease", [write.lease], 1)
        name = check_step_name(f"{at}name", write.name)
        value = write.value
        if value is not None:
            value = check_payload(f"{at}value", value, self._limits)
        if write.error is not None and value is not None:
            raise ValidationError(f"{at}error", "must be None when value is given")
        elapsed = check_seconds(f"{at}elapsed_seconds", write.elapsed_seconds, allow_none=False)
        assert elapsed is not None
        return StepWrite(lease, name, value, storable(write.error), elapsed)

    @operation
    async def durable_sleep(
        self, *, lease: Lease, name: str, seconds: float, now: datetime | None = None
    ) -> WaitOutcome:
        """Sleep ``name`` of the leased Processing job, ``seconds`` (0 to 366 days) from its
        first call: recorded pending with its end on the first call; while the end is ahead the
        job is suspended until then (status SUSPENDED, worker and lease cleared, the attempt
        of this run given back) and ``suspended`` is True; once it has passed the sleep is
        recorded done and returned as ``step``. Neither when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        step = check_step_name("name", name)
        delay = check_seconds("seconds", seconds, allow_none=False)
        assert delay is not None
        return await self.driver.durable_sleep(checked, step, delay, checks.now(now))

    @operation
    async def durable_wait(
        self,
        *,
        lease: Lease,
        name: str,
        key: str,
        timeout_seconds: float | None = None,
        now: datetime | None = None,
    ) -> WaitOutcome:
        """Wait ``name`` of the leased Processing job for an event under ``key``, at most
        ``timeout_seconds`` (0 to 366 days; None: no timeout) from its first call. An event
        kept for the key is consumed (the oldest) and recorded as the wait's outcome; past the
        deadline the wait is recorded timed out (``error == "timeout"``); either is returned
        as ``step``. Otherwise the job is suspended until the event or the deadline comes
        (``suspended``). Neither when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        step = check_step_name("name", name)
        event = check_event_key("key", key)
        timeout = check_seconds("timeout_seconds", timeout_seconds)
        return await self.driver.durable_wait(checked, step, event, timeout, checks.now(now))

    @operation
    async def events_send(self, *, key: str, data: str, now: datetime | None = None) -> str | None:
        """Send an event: ``data`` (JSON text) under ``key``. The job suspended on the key the
        longest gets it as its wait's outcome and goes back to Pending (its id is returned);
        with none waiting the event is kept ``EVENT_RETENTION_SECONDS`` (7 days) for the first
        job that waits on the key (None is returned). Events for one key are taken oldest
        first, each by one wait."""
        event = check_event_key("key", key)
        text = check_payload("data", data, self._limits)
        return await self.driver.events_send(event, text, EVENT_RETENTION_SECONDS, checks.now(now))

    @operation
    async def durable_wake(self, *, now: datetime | None = None, limit: int = 1000) -> list[str]:
        """Suspended jobs whose time came (a sleep's end, a wait's deadline) go back to Pending,
        due at that time, at most ``limit`` (1..10,000) a call, the earliest first; their ids."""
        count = check_count("limit", limit, maximum=MAX_PASS)
        assert count is not None
        return await self.driver.durable_wake(checks.now(now), count)

    @operation
    async def durable_resume(
        self,
        *,
        types: Mapping[str, int],
        zombie_timeout_seconds: float,
        now: datetime | None = None,
        reachable_since: datetime | None = None,
        fence: LeaderTerm | None = None,
    ) -> list[str]:
        """Processing jobs of the durable ``types`` (type name -> its max attempts, 1..1000,
        used for a job enqueued without its own) whose heartbeat expired, judged as
        ``jobs_rescue`` judges zombies, go back to Pending while they have attempts left (the
        dead worker's attempt recorded in their history, a retry counted); their replay
        returns every recorded step. The others are left for ``jobs_rescue`` (ZOMBIE)."""
        if not isinstance(types, Mapping):
            raise ValidationError("types", "must be a mapping of job type to max attempts")
        names = [check_name(f"types[{i}]", name) for i, name in enumerate(types)]
        attempts = [
            check_count(f"types[{name!r}]", types[name], maximum=MAX_ATTEMPTS) for name in names
        ]
        _, timeout = checks.rescue_timeouts(zombie_timeout_seconds, zombie_timeout_seconds)
        clock = checks.now(now)
        since = checks.now(reachable_since, "reachable_since")
        term = None if fence is None else checks.term("fence", fence)
        if not names:
            return []
        return await self.driver.durable_resume(
            names, [int(a or 1) for a in attempts], timeout, clock, since, term
        )

    @operation
    async def durable_tidy(self, *, now: datetime | None = None, limit: int = 1000) -> int:
        """Remove up to ``limit`` (1..10,000) expired events and the steps of up to ``limit``
        jobs that are in no pillar any more; how many rows went."""
        count = check_count("limit", limit, maximum=MAX_PASS)
        assert count is not None
        return await self.driver.durable_tidy(checks.now(now), count)

    @operation
    async def durable_spawn(
        self,
        *,
        lease: Lease,
        name: str,
        jobs: Sequence[NewJob],
        now: datetime | None = None,
    ) -> StepRecord | None:
        """Spawn ``name`` of the leased Processing job: enqueue ``jobs`` (1..10,000, checked as
        an enqueue checks them; ``after`` is refused: a child waits on nothing) and record the
        step done with their ids (JSON, input order), in one transaction; the children join
        the job's workflow. Already recorded: the record, and nothing is enqueued again.
        None when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        step = check_step_name("name", name)
        if isinstance(jobs, str | bytes) or not isinstance(jobs, Sequence) or not jobs:
            raise ValidationError("jobs", "must be a non-empty list of prepared jobs")
        if len(jobs) > MAX_CHILDREN:
            raise ValidationError("jobs", f"must hold at most {MAX_CHILDREN} jobs")
        clock = checks.now(now)
        try:
            children = validate_new_jobs(jobs, self._limits, clock)
        except ValidationError as exc:
            if len(jobs) == 1:  # one job's error names its field alone: say which job
                raise exc.at("jobs[0]") from None
            raise
        for i, child in enumerate(children):
            if child.after:
                raise ValidationError(f"jobs[{i}].after", "must be empty: a child waits on nothing")
        return await self.driver.durable_spawn(checked, step, list(children), clock)

    @operation
    async def durable_gather(
        self,
        *,
        lease: Lease,
        name: str,
        ids: Sequence[str],
        now: datetime | None = None,
    ) -> WaitOutcome:
        """Gather ``name`` of the leased Processing job: while any of ``ids`` (1..10,000 job
        ids, kept in order, repeats included) is in hot, the job is suspended (``suspended``)
        until the wake pass finds none left; then the step is recorded done with where each
        ended, in order (JSON ``[id, "archive" | "dlq" | "gone", result, result_error,
        reason, error]``) and returned as ``step``. Neither when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        step = check_step_name("name", name)
        if isinstance(ids, str | bytes) or not isinstance(ids, Sequence) or not ids:
            raise ValidationError("ids", "must be a non-empty list of job ids")
        if len(ids) > MAX_CHILDREN:
            raise ValidationError("ids", f"must hold at most {MAX_CHILDREN} job ids")
        wanted = [check_job_id(f"ids[{i}]", job_id) for i, job_id in enumerate(ids)]
        return await self.driver.durable_gather(checked, step, wanted, checks.now(now))

    @operation
    async def durable_counts(self, *, now: datetime | None = None) -> DurableCounts:
        """Suspended jobs by queue and what they wait for ("sleep", "event", "children"), and
        the events kept (unexpired as of ``now``) for a job that has not waited yet."""
        return await self.driver.durable_counts(checks.now(now))

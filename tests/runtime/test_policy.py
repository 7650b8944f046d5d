"""The retry formula, outcome classification and circuit breaker, with injected clocks."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from chokaq.errors import ConfigurationError, FatalError, ThrottledError, ValidationError
from chokaq.limits import MAX_DELAY_SECONDS
from chokaq.models import (
    ClaimedJob,
    FailMove,
    FailureReason,
    JobStatus,
    Lease,
    RetryMove,
    SucceedMove,
)
from chokaq.outcomes import Retry
from chokaq.policies import CircuitPolicy, RetryPolicy, explicit_delay
from chokaq.runtime.circuit import CircuitBreakers, CircuitState
from chokaq.runtime.executor import Result, StopReason, decide
from chokaq.settings import WorkerSettings

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def claimed(attempt: int = 1, created: datetime = NOW) -> ClaimedJob:
    return ClaimedJob(
        id="0190a0a0-0000-7000-8000-000000000001",
        queue="q",
        type="t",
        payload="{}",
        tags=(),
        priority=10,
        status=JobStatus.PROCESSING,
        attempt_count=attempt,
        max_attempts=None,
        timeout_seconds=None,
        idempotency_key=None,
        created_at=created,
        scheduled_at=None,
        started_at=NOW,
        created_by=None,
        last_error=None,
        trace_context=None,
        lease=Lease("0190a0a0-0000-7000-8000-000000000001", "w", "token"),
    )


def test_first_retry_waits_the_base_delay_then_doubles() -> None:
    policy = RetryPolicy(base_delay_seconds=3, multiplier=2, jitter_seconds=0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [3, 6, 12, 24]


def test_jitter_stays_in_range_and_never_passes_the_cap() -> None:
    policy = RetryPolicy(base_delay_seconds=3, multiplier=2, max_delay_seconds=10, jitter_seconds=1)
    rng = random.Random(7)
    for _ in range(200):
        assert 3 <= policy.backoff(1, rng) <= 4
        assert 6 <= policy.backoff(2, rng) <= 7
        assert policy.backoff(3, rng) == 10  # capped: no room left for jitter
        assert policy.backoff(30, rng) == 10


def test_a_named_delay_is_exact_up_to_366_days_and_refused_past_it() -> None:
    assert explicit_delay("Retry.after_seconds", 17.5) == 17.5
    assert explicit_delay("Retry.after_seconds", 0) == 0
    assert explicit_delay("Retry.after_seconds", -3) == 0  # a reset time already past: at once
    assert explicit_delay("Retry.after_seconds", MAX_DELAY_SECONDS) == MAX_DELAY_SECONDS
    for bad, limit in [
        (MAX_DELAY_SECONDS + 1, "must be at most 31622400 seconds"),
        (math.nan, "must be a finite number of seconds"),
        (math.inf, "must be a finite number of seconds"),
        (-math.inf, "must be a finite number of seconds"),
        ("30", "must be a number of seconds, not str"),
        (True, "must be a number of seconds, not bool"),
    ]:
        with pytest.raises(ValidationError) as info:
            explicit_delay("ThrottledError.retry_after_seconds", bad)
        assert (info.value.field, info.value.limit) == ("ThrottledError.retry_after_seconds", limit)


@pytest.mark.parametrize("seconds", [7200, 86_399.5])
def test_a_named_delay_is_not_capped_by_the_policys_max_delay(seconds: float) -> None:
    # Issue 32: both were scheduled max_delay_seconds (3600) ahead, the docs said "exactly".
    policy = RetryPolicy(jitter_seconds=0)  # max_delay_seconds 3600, max job age one day
    for kw in (
        {"result": Result.RETURNED_RETRY, "value": Retry(after_seconds=seconds)},
        {"result": Result.RAISED, "error": ThrottledError("429", retry_after_seconds=seconds)},
    ):
        move = decide_for(policy=policy, **kw)  # type: ignore[arg-type]
        assert isinstance(move, RetryMove) and move.run_at == NOW + timedelta(seconds=seconds)
    # The computed backoff is still capped: 60 * 2 is 120, the cap 90.
    capped = RetryPolicy(base_delay_seconds=60, max_delay_seconds=90, jitter_seconds=0)
    move = decide_for(Result.RAISED, attempt=2, error=ValueError("x"), policy=capped)
    assert isinstance(move, RetryMove) and move.run_at == NOW + timedelta(seconds=90)
    retry = decide_for(Result.RETURNED_RETRY, attempt=2, value=Retry(), policy=capped)
    assert isinstance(retry, RetryMove) and retry.run_at == NOW + timedelta(seconds=90)


def test_a_named_delay_of_366_days_is_honoured_when_the_job_may_live_that_long() -> None:
    policy = RetryPolicy(jitter_seconds=0, max_job_age_seconds=None)
    move = decide_for(
        Result.RETURNED_RETRY, value=Retry(after_seconds=MAX_DELAY_SECONDS), policy=policy
    )
    assert isinstance(move, RetryMove)
    assert move.run_at == NOW + timedelta(days=366)
    # The policy's max job age still applies to it, as to any retry.
    aged = decide_for(Result.RETURNED_RETRY, value=Retry(after_seconds=2 * 86400))
    assert isinstance(aged, FailMove) and aged.reason is FailureReason.RETRY_LIFETIME_EXPIRED


@pytest.mark.parametrize(
    ("kw", "field", "limit"),
    [
        (
            {"result": Result.RETURNED_RETRY, "value": Retry(after_seconds=MAX_DELAY_SECONDS + 1)},
            "Retry.after_seconds",
            "must be at most 31622400 seconds",
        ),
        (
            {"result": Result.RETURNED_RETRY, "value": Retry(after_seconds=math.nan)},
            "Retry.after_seconds",
            "must be a finite number of seconds",
        ),
        (
            {"result": Result.RAISED, "error": ThrottledError("429", retry_after_seconds=1e12)},
            "ThrottledError.retry_after_seconds",
            "must be at most 31622400 seconds",
        ),
        (
            {"result": Result.RAISED, "error": ThrottledError("429", retry_after_seconds="60")},  # type: ignore[arg-type]
            "ThrottledError.retry_after_seconds",
            "must be a number of seconds, not str",
        ),
    ],
    ids=["retry-too-far", "retry-nan", "throttled-too-far", "throttled-text"],
)
def test_a_named_delay_past_the_maximum_is_refused_naming_the_field(
    kw: dict[str, object], field: str, limit: str
) -> None:
    # Refused, not shortened to fit: the job goes to the DLQ saying which value and which rule,
    # on any attempt (a delay that can never be honoured is a bug, not bad luck).
    for attempt in (1, 3):
        move = decide_for(attempt=attempt, policy=RetryPolicy(max_job_age_seconds=None), **kw)  # type: ignore[arg-type]
        assert isinstance(move, FailMove) and move.reason is FailureReason.FATAL_ERROR
        assert f"Not retried: {field}: {limit}" in move.error
        first = move.error.splitlines()[0]
        assert first.startswith(("Retry: ", "chokaq.errors.ThrottledError: 429")), first


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"base_delay_seconds": -1}, "base_delay_seconds: must not be negative"),
        ({"base_delay_seconds": "3"}, "base_delay_seconds: must be a number of seconds, not str"),
        ({"max_delay_seconds": None}, "max_delay_seconds: is required"),
        ({"max_job_age_seconds": "1"}, "max_job_age_seconds: must be a number of seconds"),
        ({"max_job_age_seconds": float("nan")}, "max_job_age_seconds: must be a finite number"),
        ({"multiplier": 0.5}, "multiplier"),
        ({"max_delay_seconds": 1, "base_delay_seconds": 2}, "max_delay_seconds"),
        ({"jitter_seconds": -1}, "jitter_seconds"),
        ({"max_job_age_seconds": 0}, "max_job_age_seconds"),
        ({"max_attempts": 1001}, "max_attempts: must be an integer between 1 and 1000"),
        ({"max_attempts": 10**9}, "max_attempts: must be an integer between 1 and 1000"),
        ({"max_delay_seconds": 1e12}, "max_delay_seconds: must be at most 31622400 seconds"),
        ({"max_job_age_seconds": 1e12}, "max_job_age_seconds: must be at most 316224000 seconds"),
        ({"multiplier": float("nan")}, "multiplier: must be a finite number"),
        ({"jitter_seconds": float("inf")}, "jitter_seconds: must be a finite number"),
    ],
)
def test_bad_retry_settings_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_a_zero_base_delay_retries_at_once_still_with_jitter_under_the_cap() -> None:
    # Refused before: Celery's countdown=0 and tests both want an immediate retry.
    now = RetryPolicy(base_delay_seconds=0, jitter_seconds=0)
    assert [now.backoff(n) for n in (1, 2, 3, 10**6)] == [0, 0, 0, 0]
    jittered = RetryPolicy(base_delay_seconds=0, jitter_seconds=2, max_delay_seconds=1)
    rng = random.Random(3)
    delays = [jittered.backoff(n, rng) for n in range(1, 200)]
    assert all(0 <= d <= 1 for d in delays) and max(delays) > 0
    assert RetryPolicy(base_delay_seconds=0, max_delay_seconds=0).backoff(5) == 0
    move = decide_for(Result.RAISED, error=ValueError("x"), policy=now)
    assert isinstance(move, RetryMove) and move.run_at == NOW


def test_a_types_retry_on_and_fatal_on_decide_what_is_retried() -> None:
    rules = {"retry_on": (OSError,), "fatal_on": (FileNotFoundError,)}
    retried = decide_for(Result.RAISED, error=ConnectionResetError("x"), **rules)
    assert isinstance(retried, RetryMove)
    outside = decide_for(Result.RAISED, error=KeyError("k"), **rules)
    assert isinstance(outside, FailMove) and outside.reason is FailureReason.FATAL_ERROR
    assert outside.error.splitlines()[:3] == [
        "KeyError: 'k'",
        "",
        "Not retried: KeyError is not in the retry_on of job type 't'",
    ]
    both = decide_for(Result.RAISED, error=FileNotFoundError("f"), **rules)
    assert isinstance(both, FailMove) and both.reason is FailureReason.FATAL_ERROR
    assert "is in the fatal_on of job type 't'" in both.error
    # A throttle asks for a retry, as Retry() does: retry_on does not turn it fatal.
    throttled = decide_for(Result.RAISED, error=ThrottledError("429"), retry_on=(OSError,))
    assert isinstance(throttled, RetryMove)
    assert isinstance(decide_for(Result.RETURNED_RETRY, retry_on=()), RetryMove)
    # The worker's fatal types stay fatal, whatever retry_on lists; no note is added.
    worker = decide_for(
        Result.RAISED, error=PermissionError("p"), fatal_types=(PermissionError,), **rules
    )
    assert isinstance(worker, FailMove) and "Not retried" not in worker.error


@pytest.mark.parametrize("multiplier", [1.0, 1.5, 2.0, 3.0, 1000.0, 1e300])
def test_backoff_is_capped_before_it_is_computed_for_any_attempt(multiplier: float) -> None:
    # multiplier=3 and retry 700 used to raise OverflowError (3.0 ** 699), which the worker
    # did not survive: the job was left a zombie.
    policy = RetryPolicy(multiplier=multiplier, jitter_seconds=0)
    cap = 3.0 if multiplier == 1 else policy.max_delay_seconds
    for n in (700, 1000, 10**6, 10**400):
        assert policy.backoff(n) == cap
    assert policy.backoff(1) == 3.0
    steps = [policy.backoff(n) for n in range(1, 2000)]
    assert steps == sorted(steps) and max(steps) <= policy.max_delay_seconds


def test_a_late_attempt_retries_at_the_cap_instead_of_crashing() -> None:
    policy = RetryPolicy(multiplier=3, jitter_seconds=0)
    move = decide_for(
        Result.RAISED, attempt=700, max_attempts=1000, error=ValueError("x"), policy=policy
    )
    assert isinstance(move, RetryMove)
    assert move.run_at == NOW + timedelta(seconds=policy.max_delay_seconds)


def decide_for(result: Result, *, attempt: int = 1, max_attempts: int = 3, **kw: object):
    policy = kw.pop("policy", RetryPolicy(jitter_seconds=0))
    return decide(
        job=claimed(attempt, kw.pop("created", NOW)),  # type: ignore[arg-type]
        result=result,
        policy=policy,  # type: ignore[arg-type]
        max_attempts=max_attempts,
        duration=0.5,
        now=NOW,
        **kw,  # type: ignore[arg-type]
    )


def test_transient_error_retries_on_the_formula_then_dead_letters() -> None:
    first = decide_for(Result.RAISED, attempt=1, error=ValueError("boom"))
    assert isinstance(first, RetryMove) and first.run_at == NOW + timedelta(seconds=3)
    assert "ValueError: boom" in (first.error or "")
    second = decide_for(Result.RAISED, attempt=2, error=ValueError("boom"))
    assert isinstance(second, RetryMove) and second.run_at == NOW + timedelta(seconds=6)
    last = decide_for(Result.RAISED, attempt=3, error=ValueError("boom"))
    assert isinstance(last, FailMove) and last.reason is FailureReason.TRANSIENT


def test_fatal_errors_skip_retries() -> None:
    move = decide_for(Result.RAISED, error=FatalError("poison"))
    assert isinstance(move, FailMove) and move.reason is FailureReason.FATAL_ERROR
    configured = decide_for(Result.RAISED, error=KeyError("x"), fatal_types=(KeyError,))
    assert isinstance(configured, FailMove) and configured.reason is FailureReason.FATAL_ERROR


def test_throttled_retry_after_is_honoured_and_exhaustion_says_throttled() -> None:
    move = decide_for(Result.RAISED, error=ThrottledError("429", retry_after_seconds=42))
    assert isinstance(move, RetryMove) and move.run_at == NOW + timedelta(seconds=42)
    last = decide_for(Result.RAISED, attempt=3, error=ThrottledError("429", retry_after_seconds=1))
    assert isinstance(last, FailMove) and last.reason is FailureReason.THROTTLED


def test_returned_retry_uses_its_delay_and_exhausts_as_max_retries() -> None:
    move = decide_for(Result.RETURNED_RETRY, value=Retry(after_seconds=9))
    assert isinstance(move, RetryMove) and move.run_at == NOW + timedelta(seconds=9)
    last = decide_for(Result.RETURNED_RETRY, attempt=3, value=Retry())
    assert isinstance(last, FailMove) and last.reason is FailureReason.MAX_RETRIES_EXCEEDED


def test_a_retry_past_the_max_job_age_expires_the_job() -> None:
    policy = RetryPolicy(jitter_seconds=0, max_job_age_seconds=3600)
    old = NOW - timedelta(seconds=3599)
    move = decide_for(Result.RAISED, error=ValueError("x"), policy=policy, created=old)
    assert isinstance(move, FailMove) and move.reason is FailureReason.RETRY_LIFETIME_EXPIRED
    fresh = decide_for(Result.RAISED, error=ValueError("x"), policy=policy)
    assert isinstance(fresh, RetryMove)


def test_stops_map_to_their_outcomes() -> None:
    cancel = decide_for(Result.STOPPED, stop_reason=StopReason.CANCELLED, actor="alice")
    assert isinstance(cancel, FailMove) and cancel.reason is FailureReason.CANCELLED
    assert cancel.actor == "alice"
    assert decide_for(Result.STOPPED, stop_reason=StopReason.LEASE_LOST) is None
    shutdown = decide_for(Result.STOPPED, stop_reason=StopReason.SHUTDOWN)
    assert isinstance(shutdown, RetryMove) and not shutdown.refund_attempt
    last = decide_for(Result.STOPPED, attempt=3, stop_reason=StopReason.SHUTDOWN)
    assert isinstance(last, FailMove) and last.reason is FailureReason.MAX_RETRIES_EXCEEDED
    assert last.error.startswith("Attempts exhausted (3 of 3): Shutdown")
    beat = decide_for(Result.STOPPED, stop_reason=StopReason.HEARTBEAT_FAILURE)
    assert isinstance(beat, FailMove) and beat.reason is FailureReason.HEARTBEAT_FAILURE
    timeout = decide_for(Result.TIMED_OUT)
    assert isinstance(timeout, FailMove) and timeout.reason is FailureReason.TIMEOUT
    assert isinstance(decide_for(Result.SUCCEEDED), SucceedMove)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_circuit_opens_at_threshold_and_recovers_through_a_probe() -> None:
    clock = Clock()
    events: list[str] = []
    breakers = CircuitBreakers(
        CircuitPolicy(threshold=3, window_seconds=60, break_seconds=30),
        clock=clock,
        on_event=lambda key, state, event: events.append(event),
    )
    for _ in range(3):
        permit = breakers.acquire("t")
        assert permit == 0
        breakers.failure("t", permit)
    assert breakers.blocked() == ["t"]
    assert breakers.acquire("t") is None
    clock.t += 30
    probe = breakers.acquire("t")
    assert probe  # half-open: one probe
    assert breakers.acquire("t") is None
    breakers.success("t", probe)
    assert breakers.snapshot()[0].state is CircuitState.CLOSED
    assert events[:1] == ["opened"] and "half_opened" in events and events[-1] == "closed"


def test_failures_outside_the_window_do_not_add_up() -> None:
    clock = Clock()
    breakers = CircuitBreakers(CircuitPolicy(threshold=2, window_seconds=10), clock=clock)
    breakers.failure("t", 0)
    clock.t += 11
    breakers.failure("t", 0)
    assert breakers.blocked() == []


def test_half_open_failure_reopens_and_force_close_closes() -> None:
    clock = Clock()
    breakers = CircuitBreakers(CircuitPolicy(threshold=1, break_seconds=5), clock=clock)
    breakers.failure("t", 0)
    clock.t += 5
    probe = breakers.acquire("t")
    assert probe is not None
    breakers.failure("t", probe)
    assert breakers.snapshot()[0].state is CircuitState.OPEN
    assert breakers.force_close("t")
    assert breakers.acquire("t") == 0


def test_a_probe_that_never_reports_frees_its_slot() -> None:
    clock = Clock()
    breakers = CircuitBreakers(
        CircuitPolicy(threshold=1, break_seconds=5, probe_timeout_seconds=10), clock=clock
    )
    breakers.failure("t", 0)
    clock.t += 5
    assert breakers.acquire("t")
    assert breakers.acquire("t") is None
    clock.t += 11
    assert breakers.acquire("t")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"leadership_lease_seconds": 0.5}, "leadership_lease_seconds"),
        ({"leadership_lease_seconds": 3601}, "leadership_lease_seconds"),
        ({"leadership_renew_seconds": 0}, "leadership_renew_seconds"),
        ({"leadership_renew_seconds": 6}, "leadership_renew_seconds"),  # over half of 10 s
        (
            {"leadership_lease_seconds": 2, "leadership_renew_seconds": 1.5},
            "leadership_renew_seconds",
        ),
    ],
)
def test_bad_leadership_settings_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        WorkerSettings(**kwargs)  # type: ignore[arg-type]


def test_leadership_renews_every_third_of_the_lease_by_default() -> None:
    assert WorkerSettings().leadership_lease_seconds == 10.0
    assert WorkerSettings().leadership_renew_interval == pytest.approx(10 / 3)
    assert WorkerSettings(leadership_renew_seconds=1).leadership_renew_interval == 1


def test_a_type_that_fails_now_and_then_keeps_its_circuit_closed() -> None:
    # One failure in three, for ever: no dependency is down, so nothing is held back (five
    # failures in a row, the old rule, came up many times an hour at this rate).
    clock = Clock()
    breakers = CircuitBreakers(CircuitPolicy(), clock=clock)
    for n in range(3000):
        clock.t += 0.05
        if n % 3 == 0 or n % 97 < 6:  # runs of up to seven failures in a row, too
            breakers.failure("t", 0)
        else:
            breakers.success("t", 0)
    assert breakers.blocked() == []
    assert breakers.snapshot()[0].failures > 20  # many failures in the window, a low rate


def test_the_circuit_opens_at_threshold_failures_when_they_are_the_failure_rate() -> None:
    clock = Clock()
    policy = CircuitPolicy(threshold=20, failure_rate=0.5, window_seconds=60)
    breakers = CircuitBreakers(policy, clock=clock)
    for _ in range(19):
        breakers.failure("t", 0)
    assert breakers.blocked() == []  # 19 failures, all of the outcomes: not yet the minimum
    for _ in range(21):
        breakers.success("t", 0)
    breakers.failure("t", 0)
    assert breakers.blocked() == []  # 20 failures of 41 outcomes: under half
    breakers.failure("t", 0)
    assert breakers.blocked() == ["t"]  # 21 of 42: half


def test_outcomes_leave_the_window_and_a_probe_that_closes_starts_a_fresh_one() -> None:
    clock = Clock()
    breakers = CircuitBreakers(
        CircuitPolicy(threshold=3, window_seconds=10, break_seconds=5), clock=clock
    )
    for _ in range(30):
        breakers.success("t", 0)  # no circuit yet: nothing has failed
    breakers.failure("t", 0)
    for _ in range(10):
        breakers.success("t", 0)
    clock.t += 11  # the successes left the window: failures only from here
    breakers.failure("t", 0)
    breakers.failure("t", 0)
    assert breakers.snapshot()[0].failures == 2 and breakers.blocked() == []
    breakers.failure("t", 0)
    assert breakers.blocked() == ["t"]
    clock.t += 5
    probe = breakers.acquire("t")
    assert probe
    breakers.success("t", probe)
    assert breakers.snapshot()[0].failures == 0
    breakers.failure("t", 0)
    breakers.failure("t", 0)
    assert breakers.blocked() == []


def test_circuit_failure_rate_must_be_a_share() -> None:
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ConfigurationError, match=r"circuit\.failure_rate"):
            CircuitPolicy(failure_rate=bad)
    assert CircuitPolicy(failure_rate=1.0).failure_rate == 1.0

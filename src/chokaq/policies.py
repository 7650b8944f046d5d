"""The policies a worker applies to a job type, as values: ``RetryPolicy`` (how many executions
a job gets and how long it waits between them) and ``CircuitPolicy`` (when a type's circuit
breaker opens and how it probes).

Owns the backoff arithmetic, the checks of every policy field and of a job type's retry options
(``retry=``, ``retry_on=``, ``fatal_on=``). It is a value module: the client, the worker runtime
and both faces import it, and it imports nothing above ``chokaq.limits``. Deciding *whether* an
error is retryable is the executor's job; the breakers' state machine is
``chokaq.runtime.circuit``.

The formula (seconds), for the n-th retry (n = 1 after the first failed execution)::

    capped = min(base_delay * multiplier ** (n - 1), max_delay)
    delay  = capped + uniform(0, min(jitter, max_delay - capped))

so the first retry waits the base delay (plus jitter), the next twice that, and so on; jitter
never pushes a delay past ``max_delay``. A base delay of 0 retries at once (plus jitter) every
time. The cap is applied before the power is computed, so no retry number can overflow a float.

``max_delay`` caps the computed backoff only. A delay the handler names itself
(``Retry(after_seconds=...)``, ``ThrottledError(retry_after_seconds=...)``) is honoured exactly,
without jitter, up to the engine's maximum delay (``MAX_DELAY_SECONDS``, 366 days: an enqueue's
delay limit, since a retry is a delayed job); ``explicit_delay`` checks it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .errors import ConfigurationError, ValidationError
from .limits import (
    MAX_DELAY_SECONDS,
    check_count,
    check_delay,
    check_max_attempts,
    check_number,
    check_seconds,
)

__all__ = [
    "MAX_JOB_AGE_SECONDS",
    "CircuitPolicy",
    "ExceptionTypes",
    "RetryPolicy",
    "check_exception_types",
    "check_retry_policy",
    "explicit_delay",
]

ExceptionTypes = tuple[type[BaseException], ...]

# Ten years: far past any retry, and a deadline every stored time can still hold.
MAX_JOB_AGE_SECONDS = 10 * MAX_DELAY_SECONDS


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry settings. ``max_attempts`` counts executions, the first included (default 3).

    The worker's policy (``WorkerSettings.retry``) is the default; ``@app.job(retry=...)`` gives
    one job type its own, which replaces the worker's as a whole. ``base_delay_seconds=0``
    retries at once (plus up to ``jitter_seconds``). Raises ``ConfigurationError`` naming the
    field for a value out of range.

    ``max_job_age_seconds`` (default one day; ``None`` disables) dead-letters a job as
    RETRY_LIFETIME_EXPIRED when its next retry would land past ``created_at`` + that age.
    """

    max_attempts: int = 3
    base_delay_seconds: float = 3.0
    multiplier: float = 2.0
    max_delay_seconds: float = 3600.0
    jitter_seconds: float = 1.0
    max_job_age_seconds: float | None = 86400.0

    def __post_init__(self) -> None:
        try:  # the shared rules; a policy is a setting, hence the error's type
            _check_retry(self)
        except ValidationError as exc:
            raise ConfigurationError(str(exc)) from None

    def backoff(self, retry_number: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before the ``retry_number``-th retry (1-based); any retry number,
        however large, gives at most ``max_delay_seconds``."""
        n = max(1, retry_number)
        base, cap = self.base_delay_seconds, self.max_delay_seconds
        capped = cap
        if self.multiplier == 1 or base == 0:
            capped = base  # no growth: every retry waits the base delay (0: at once)
        elif n - 1 < math.log(cap / base) / math.log(self.multiplier):
            # Below the exponent where the cap is reached, so the power stays under cap / base.
            capped = min(base * self.multiplier ** (n - 1), cap)
        room = min(self.jitter_seconds, self.max_delay_seconds - capped)
        jitter = (rng or random).uniform(0.0, room) if room > 0 else 0.0
        return capped + jitter


def explicit_delay(field: str, value: object) -> float:
    """The seconds to wait before a retry whose delay the handler named (``field`` names where:
    ``Retry.after_seconds``, ``ThrottledError.retry_after_seconds``), honoured exactly: not
    capped by a policy's ``max_delay_seconds``, which bounds computed backoff only. A negative
    delay (a downstream's reset time already past) is 0, at once.

    Raises ``ValidationError`` naming ``field`` for what is not a finite number of seconds or
    is beyond ``MAX_DELAY_SECONDS`` (366 days), the rule of an enqueue's delay: a retry is a
    delayed job, and a delay the engine would not take at enqueue is refused here too rather
    than shortened to fit (the executor dead-letters the job saying so)."""
    if isinstance(value, int | float) and _finite(value) and value < 0:
        return 0.0
    return check_delay(field, value) or 0.0  # None is not given here: the caller backs off


def _finite(value: object) -> bool:
    """A real number (not a bool, not text) that is neither infinite nor NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_retry(policy: RetryPolicy) -> None:
    check_max_attempts("retry.max_attempts", policy.max_attempts)
    check_seconds("retry.base_delay_seconds", policy.base_delay_seconds, allow_none=False)
    # Any finite growth is safe: backoff() caps before it computes the power.
    check_number(
        "retry.multiplier", policy.multiplier, minimum=1.0, maximum=math.inf, allow_none=False
    )
    # The same bound as an enqueue's delay: a retry is a delayed job.
    check_seconds("retry.max_delay_seconds", policy.max_delay_seconds, allow_none=False)
    if policy.max_delay_seconds < policy.base_delay_seconds:
        raise ValidationError("retry.max_delay_seconds", "must be >= base_delay_seconds")
    check_seconds("retry.jitter_seconds", policy.jitter_seconds, allow_none=False)
    check_seconds(
        "retry.max_job_age_seconds",
        policy.max_job_age_seconds,
        positive=True,
        maximum=MAX_JOB_AGE_SECONDS,
    )


def check_retry_policy(field: str, value: object) -> RetryPolicy | None:
    """``value`` when it is a ``RetryPolicy`` or None; else ``ValidationError`` naming ``field``."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    raise ValidationError(field, f"must be a chokaq.RetryPolicy, not {type(value).__name__}")


def check_exception_types(field: str, value: object) -> ExceptionTypes | None:
    """``value`` (a tuple or list of exception classes, or None) as a tuple; anything else
    raises ``ValidationError`` naming ``field`` (or the offending item, ``field[i]``)."""
    if value is None:
        return None
    if isinstance(value, type):
        # The commonest slip, ``retry_on=ConnectionError``: say what to write instead.
        raise ValidationError(
            field, f"must be a tuple of exception classes, such as ({value.__name__},)"
        )
    if not isinstance(value, tuple | list):
        raise ValidationError(
            field, f"must be a tuple of exception classes, not {type(value).__name__}"
        )
    for i, item in enumerate(value):
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise ValidationError(f"{field}[{i}]", f"must be an exception class, not {item!r}")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class CircuitPolicy:
    """Breaker settings: at least 20 failures in 60 s that are at least half of the outcomes
    open it for 30 s; then one probe at a time.

    The reference opened at 5 failures in a row (each within 60 s of the last): a type that
    fails now and then (a 20 % flaky partner, a first attempt that always fails) opened its
    circuit many times a day and held its backlog back with no dependency down. Like
    resilience4j (50 % of at least 100 calls) and Polly (a ratio over at least 100 actions),
    it now judges the failure rate; it asks for 20 failures rather than 100 calls because a
    job type runs far fewer calls than an RPC client, and each failed job has spent an attempt
    (with ``max_attempts=1``, it is in the DLQ). See docs/concepts.md for the comparison.

    Attributes:
        threshold: failures within the window needed before the circuit may open (a type with
            fewer failures than this in a window never opens).
        failure_rate: the share of the window's counted outcomes (successes and failures)
            that failures must reach for the circuit to open, greater than 0 and at most 1.
        window_seconds: how far back outcomes are counted (to a sixtieth of it).
        break_seconds: how long the circuit stays open before a probe may run.
        half_open_max_calls: probe jobs allowed at once while half-open; that many successes
            close the circuit.
        probe_timeout_seconds: a probe that has not reported by then frees its slot.
        enabled: False disables circuit breaking.
    """

    threshold: int = 20
    failure_rate: float = 0.5
    window_seconds: float = 60.0
    break_seconds: float = 30.0
    half_open_max_calls: int = 1
    probe_timeout_seconds: float = 30.0
    enabled: bool = True

    def __post_init__(self) -> None:
        try:
            check_count("circuit.threshold", self.threshold)
            check_count("circuit.half_open_max_calls", self.half_open_max_calls)
            for name in ("window_seconds", "break_seconds", "probe_timeout_seconds"):
                check_seconds(
                    f"circuit.{name}", getattr(self, name), positive=True, allow_none=False
                )
            check_number(
                "circuit.failure_rate", self.failure_rate, maximum=1.0, above=True, allow_none=False
            )
        except ValidationError as exc:
            raise ConfigurationError(
                f"{exc} (a share of the outcomes, 0.5 for half)"
                if exc.field == "circuit.failure_rate"
                else str(exc)
            ) from None

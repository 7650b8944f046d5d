"""The retry policy: how many executions a job gets and how long it waits between them.

Owns the backoff arithmetic only; deciding *whether* an error is retryable is the executor's job.

The formula (seconds), for the n-th retry (n = 1 after the first failed execution)::

    capped = min(base_delay * multiplier ** (n - 1), max_delay)
    delay  = capped + uniform(0, min(jitter, max_delay - capped))

so the first retry waits the base delay (plus jitter), the next twice that, and so on; jitter
never pushes a delay past ``max_delay``. A throttled error's retry-after is honoured exactly,
capped at ``max_delay``, without jitter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry settings. ``max_attempts`` counts executions, the first included (default 3).

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
        if self.max_attempts < 1:
            raise ConfigurationError("retry.max_attempts: must be at least 1")
        if self.base_delay_seconds <= 0:
            raise ConfigurationError("retry.base_delay_seconds: must be greater than 0")
        if self.multiplier < 1:
            raise ConfigurationError("retry.multiplier: must be at least 1")
        if self.max_delay_seconds < self.base_delay_seconds:
            raise ConfigurationError("retry.max_delay_seconds: must be >= base_delay_seconds")
        if self.jitter_seconds < 0:
            raise ConfigurationError("retry.jitter_seconds: must not be negative")
        if self.max_job_age_seconds is not None and self.max_job_age_seconds <= 0:
            raise ConfigurationError("retry.max_job_age_seconds: must be greater than 0 or None")

    def backoff(self, retry_number: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before the ``retry_number``-th retry (1-based)."""
        n = max(1, retry_number)
        capped = min(self.base_delay_seconds * self.multiplier ** (n - 1), self.max_delay_seconds)
        room = min(self.jitter_seconds, self.max_delay_seconds - capped)
        jitter = (rng or random).uniform(0.0, room) if room > 0 else 0.0
        return capped + jitter

    def throttled(self, retry_after_seconds: float) -> float:
        """A downstream's retry-after, honoured exactly but capped at ``max_delay_seconds``."""
        return max(0.0, min(retry_after_seconds, self.max_delay_seconds))

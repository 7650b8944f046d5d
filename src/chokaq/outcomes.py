"""Outcomes a handler may return to steer its own job, as values rather than exceptions.

``return Retry(after_seconds=30)`` reschedules (consuming the attempt); ``return Fail("why")``
dead-letters at once. The executor maps them to storage moves in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fail", "Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Run this job again after ``after_seconds`` (``None``: the normal backoff).

    The delay is honoured exactly, up to 366 days (an enqueue's delay limit), whatever the retry
    policy's ``max_delay_seconds`` (which caps computed backoff only); a negative one retries at
    once. More than 366 days, or not a finite number, is refused: the job goes to the DLQ as
    FATAL_ERROR with an error naming ``Retry.after_seconds`` and the limit. The policy's
    ``max_job_age_seconds`` still applies. The execution counts as an attempt; when attempts
    are exhausted the job goes to the DLQ with reason MAX_RETRIES_EXCEEDED. ``reason`` is
    stored as the job's last error.
    """

    after_seconds: float | None = None
    reason: str = "retry requested by the handler"


@dataclass(frozen=True, slots=True)
class Fail:
    """Dead-letter this job now (reason FATAL_ERROR) with ``message`` as its error."""

    message: str = "failed by the handler"

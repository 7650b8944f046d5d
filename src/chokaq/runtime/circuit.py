"""Circuit breakers, one per job type, in this worker process.

Closed: everything runs; the outcomes of the last ``window_seconds`` are counted (in 60 slices
of the window), and the circuit opens when at least ``threshold`` of them are failures and
failures are at least ``failure_rate`` of them. Open: jobs of that type are not fetched (and any
already claimed are deferred without consuming an attempt) until ``break_seconds`` after it
opened. Half-open: up to ``half_open_max_calls`` probe jobs run; that many successes close it
(with a fresh window), a failure re-opens it. A probe that never reports within
``probe_timeout_seconds`` frees its slot for another probe.

Only failures that may be the dependency's count: exceptions (retried or not), throttling and
timeouts. Failures about the job's own data (``FatalError``, ``Fail``, a configured fatal type,
a rejected payload), cancels and heartbeat failures do not: poison jobs must not hold back the
good jobs of their type. Nor does a ``Retry`` the handler returns (a deferral it chose, not a
failure of the dependency), nor a job the worker stopped (shutdown). Owns the state machine and
which outcomes count (``report``); the worker reports outcomes and asks permission.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..models import FailMove, FailureReason, Move, RetryMove, SucceedMove
from ..policies import CircuitPolicy

__all__ = ["CircuitBreakers", "CircuitSnapshot", "CircuitState"]

# Dead-letter reasons that say nothing about the dependency: the job's own data was refused
# (FatalError, Fail, a configured fatal type, a rejected payload), an operator cancelled it, or
# this worker's heartbeats failed. They give the permit back instead of counting.
_NOT_A_DEPENDENCY_FAILURE = frozenset(
    (
        FailureReason.CANCELLED,
        FailureReason.FATAL_ERROR,
        FailureReason.HEARTBEAT_FAILURE,
        FailureReason.REJECTED,
    )
)


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class CircuitSnapshot:
    """One breaker as The Deck shows it."""

    key: str
    state: CircuitState
    failures: int  # counted failures in the window (while closed; when open, at opening)
    reset_in_seconds: float | None  # when open: seconds until a probe may run

    def as_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "state": self.state.value,
            "failures": self.failures,
            "reset_in_seconds": self.reset_in_seconds,
        }


# The window is counted in this many slices (resilience4j's time-based window does the same
# with one-second buckets): adding an outcome is a few integer operations, memory is bounded
# whatever the job rate, and an outcome leaves the count at most one slice late.
_SLICES = 60


@dataclass
class _Circuit:
    state: CircuitState = CircuitState.CLOSED
    failures: int = 0  # in the window
    calls: int = 0  # counted outcomes in the window, failures included
    slices: deque[list[int]] = field(default_factory=deque)  # [slice number, calls, failures]
    opened_at: float = 0.0  # when it opened (break_seconds count from here)
    probes: dict[int, float] = field(default_factory=dict)  # probe id -> started
    probe_successes: int = 0

    def count(self, policy: CircuitPolicy, now: float, failed: bool) -> None:
        """Add one outcome at ``now`` to the window, after dropping slices past it."""
        width = policy.window_seconds / _SLICES
        current = int(now // width)
        self.trim(current - _SLICES)
        slices = self.slices
        if slices and slices[-1][0] == current:
            bucket = slices[-1]
        else:
            bucket = [current, 0, 0]
            slices.append(bucket)
        bucket[1] += 1
        self.calls += 1
        if failed:
            bucket[2] += 1
            self.failures += 1

    def trim(self, oldest: int) -> None:
        """Drop the slices numbered ``oldest`` or lower (wholly before the window)."""
        slices = self.slices
        while slices and slices[0][0] <= oldest:
            _, calls, failures = slices.popleft()
            self.calls -= calls
            self.failures -= failures

    def reset(self) -> None:
        self.slices.clear()
        self.calls = self.failures = 0


class CircuitBreakers:
    """Every job type's breaker in this process. ``clock`` is injectable for tests."""

    def __init__(
        self,
        policy: CircuitPolicy | None = None,
        *,
        policies: dict[str, CircuitPolicy] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[[str, CircuitState, str], None] | None = None,
    ) -> None:
        self.policy = policy or CircuitPolicy()
        self.policies = dict(policies or {})
        self._clock = clock
        self._circuits: dict[str, _Circuit] = {}
        self._next_probe = 0
        self._on_event = on_event

    def _policy(self, key: str) -> CircuitPolicy:
        return self.policies.get(key, self.policy)

    def _emit(self, key: str, circuit: _Circuit, event: str) -> None:
        if self._on_event is not None:
            self._on_event(key, circuit.state, event)

    def _refresh(self, key: str, circuit: _Circuit) -> None:
        policy = self._policy(key)
        now = self._clock()
        if circuit.state is CircuitState.OPEN and now >= circuit.opened_at + policy.break_seconds:
            circuit.state = CircuitState.HALF_OPEN
            circuit.probes.clear()
            circuit.probe_successes = 0
            self._emit(key, circuit, "half_opened")
        if circuit.state is CircuitState.HALF_OPEN:
            expired = [
                p for p, t in circuit.probes.items() if now - t > policy.probe_timeout_seconds
            ]
            for probe in expired:
                del circuit.probes[probe]
                self._emit(key, circuit, "probe_expired")

    def blocked(self) -> list[str]:
        """Types whose jobs must not be fetched now (open, or half-open with no probe slot)."""
        out = []
        for key, circuit in self._circuits.items():
            self._refresh(key, circuit)
            if circuit.state is CircuitState.OPEN or (
                circuit.state is CircuitState.HALF_OPEN
                and len(circuit.probes) >= self._policy(key).half_open_max_calls
            ):
                out.append(key)
        return out

    def acquire(self, key: str) -> int | None:
        """Permission to run one job of ``key``: a permit id (0 when closed), None if refused."""
        if not self._policy(key).enabled:
            return 0
        circuit = self._circuits.get(key)
        if circuit is None:
            return 0
        self._refresh(key, circuit)
        if circuit.state is CircuitState.CLOSED:
            return 0
        if circuit.state is CircuitState.OPEN:
            self._emit(key, circuit, "rejected")
            return None
        if len(circuit.probes) >= self._policy(key).half_open_max_calls:
            self._emit(key, circuit, "rejected")
            return None
        self._next_probe += 1
        circuit.probes[self._next_probe] = self._clock()
        self._emit(key, circuit, "probe_acquired")
        return self._next_probe

    def release(self, key: str, permit: int) -> None:
        """Give a permit back unused (the job never ran: lost lease, shutdown, cancel)."""
        circuit = self._circuits.get(key)
        if circuit is not None and permit and circuit.probes.pop(permit, None) is not None:
            self._emit(key, circuit, "permit_released")

    def success(self, key: str, permit: int) -> None:
        circuit = self._circuits.get(key)
        if circuit is None:
            return
        if circuit.state is CircuitState.HALF_OPEN:
            if circuit.probes.pop(permit, None) is None:
                return  # a report from an older generation
            circuit.probe_successes += 1
            if circuit.probe_successes >= self._policy(key).half_open_max_calls:
                circuit.state = CircuitState.CLOSED
                circuit.reset()  # a fresh window: the failures before it are answered
                self._emit(key, circuit, "closed")
        elif circuit.state is CircuitState.CLOSED:
            circuit.count(self._policy(key), self._clock(), failed=False)

    def failure(self, key: str, permit: int) -> None:
        if not self._policy(key).enabled:
            return
        policy = self._policy(key)
        now = self._clock()
        circuit = self._circuits.setdefault(key, _Circuit())
        if circuit.state is CircuitState.HALF_OPEN:
            if circuit.probes.pop(permit, None) is None:
                return
            circuit.state = CircuitState.OPEN
            circuit.opened_at = now
            self._emit(key, circuit, "opened")
            return
        if circuit.state is CircuitState.OPEN:
            return  # a job that started before the circuit opened
        circuit.count(policy, now, failed=True)
        if (
            circuit.failures >= policy.threshold
            and circuit.failures >= policy.failure_rate * circuit.calls
        ):
            circuit.state = CircuitState.OPEN
            circuit.opened_at = now
            self._emit(key, circuit, "opened")

    def report(self, key: str, move: Move | None, permit: int, *, judged: bool = True) -> None:
        """Count the outcome of a job of ``key`` that ran under ``permit``: a success, a
        dependency failure (an exception retried or exhausted, throttling, a timeout), or
        neither (the permit goes back: see ``_NOT_A_DEPENDENCY_FAILURE``, shutdown requeues
        and lost leases). ``judged=False``: the outcome says nothing about the dependency
        whatever its move (the handler returned ``Retry``, or the worker stopped the job)."""
        if type(move) is SucceedMove:
            self.success(key, permit)
        elif not judged or (
            isinstance(move, FailMove) and move.reason in _NOT_A_DEPENDENCY_FAILURE
        ):
            self.release(key, permit)
        elif isinstance(move, FailMove) or (isinstance(move, RetryMove) and move.count_retry):
            self.failure(key, permit)
        else:
            self.release(key, permit)

    def force_close(self, key: str) -> bool:
        """Close a circuit by operator request; False when it was not open or half-open."""
        circuit = self._circuits.get(key)
        if circuit is None or circuit.state is CircuitState.CLOSED:
            return False
        circuit.state = CircuitState.CLOSED
        circuit.reset()
        circuit.probes.clear()
        self._emit(key, circuit, "closed")
        return True

    def snapshot(self) -> list[CircuitSnapshot]:
        out = []
        now = self._clock()
        for key in sorted(self._circuits):
            circuit = self._circuits[key]
            self._refresh(key, circuit)
            if circuit.state is CircuitState.CLOSED:
                # Failures that left the window no longer count, whether or not jobs ran since.
                circuit.trim(int(now // (self._policy(key).window_seconds / _SLICES)) - _SLICES)
            reset = None
            if circuit.state is CircuitState.OPEN:
                reset = max(0.0, circuit.opened_at + self._policy(key).break_seconds - now)
            out.append(CircuitSnapshot(key, circuit.state, circuit.failures, reset))
        return out

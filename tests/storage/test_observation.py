"""One public storage call is one observation, on every backend.

The seam's instrumentation point (``Backend.add_observer``) feeds the storage histogram in
Prometheus and the health check; a call observed twice (a public operation calling another one)
or not at all would make both wrong. Every call of the differential tables is counted here.
"""

from __future__ import annotations

import pytest
from test_differential import CASES, _seed

from chokaq.errors import ChokaqError
from chokaq.storage import Backend


@pytest.mark.parametrize("operation", sorted(CASES))
async def test_each_call_is_observed_once(backend: Backend, operation: str) -> None:
    seeded = await _seed(backend)
    seen: list[tuple[str, BaseException | None]] = []
    backend.add_observer(lambda name, seconds, error: seen.append((name, error)))
    names = set()
    for label, call in CASES[operation]:
        before = len(seen)
        try:
            await call(backend, seeded)
        except ChokaqError as exc:
            assert seen[-1][1] is exc, f"{label}: the error raised is not the one observed"
        if getattr(call, "scenario", False):
            continue  # several calls by design (a setup, then the one compared)
        assert len(seen) == before + 1, f"{operation}: {label} observed {seen[before:]}"
        names.add(seen[-1][0])
    assert operation in names


async def test_observation_carries_the_operation_and_the_error(backend: Backend) -> None:
    seen: list[tuple[str, float, BaseException | None]] = []
    backend.add_observer(lambda name, seconds, error: seen.append((name, seconds, error)))
    await backend.stats_summary()
    with pytest.raises(ChokaqError) as caught:
        await backend.job_get("not-an-id")
    [(first, took, none), (second, _, error)] = seen
    assert (first, none) == ("stats_summary", None) and took >= 0
    assert (second, error) == ("job_get", caught.value)


async def test_a_failing_observer_never_breaks_storage(backend: Backend) -> None:
    def broken(name: str, seconds: float, error: BaseException | None) -> None:
        raise RuntimeError("observer bug")

    backend.add_observer(broken)
    assert (await backend.stats_summary()).pending == 0

"""Every numeric option is checked by the one checks module (``chokaq.limits``): NaN, infinity,
a negative number, zero where it means nothing and a value over the documented maximum are each
refused with an error naming the field, for ``@app.job``, ``.options()``, ``RetryPolicy``,
``CircuitPolicy``, ``Limits``, ``@app.periodic`` and ``WorkerSettings``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from chokaq import (
    App,
    CircuitPolicy,
    ConfigurationError,
    Limits,
    RetryPolicy,
    ValidationError,
    WorkerSettings,
)
from chokaq.limits import (
    MAX_ATTEMPTS,
    MAX_DELAY_SECONDS,
    MAX_PRIORITY,
    MAX_RETENTION_DAYS,
    MAX_TIMEOUT_SECONDS,
    MAX_WORKER_SLOTS,
    validate_new_job,
)
from chokaq.policies import MAX_JOB_AGE_SECONDS
from chokaq.settings import MAX_PORT, MAX_REST_RATIO, MAX_SCHEDULE_TICK_SECONDS
from chokaq.storage.ratelimits import MAX_PARTITION_CONCURRENCY

NAN, INF = math.nan, math.inf


def _app() -> App:
    return App(database="sqlite:///:memory:")


def _job(**options: Any) -> None:
    _app().job(**options)(lambda: None)


def _enqueue(**options: Any) -> None:
    app = _app()
    handle = app.job(lambda: None)
    validate_new_job(handle.options(**options).prepare())


def _periodic(**options: Any) -> None:
    app = _app()
    app.periodic(**options)(app.job(lambda: None))


# (where, build, field, the bad values: each must be refused naming the field)
Case = tuple[str, Callable[..., object], str, tuple[object, ...]]
_SECONDS = (NAN, INF, -1.0)
CASES: list[Case] = [
    ("@app.job", _job, "priority", (NAN, INF, MAX_PRIORITY + 1)),
    ("@app.job", _job, "max_attempts", (NAN, INF, -1, 0, MAX_ATTEMPTS + 1)),
    ("@app.job", _job, "timeout_seconds", (*_SECONDS, 0, MAX_TIMEOUT_SECONDS + 1)),
    ("@app.job", _job, "partition_concurrency", (NAN, INF, -1, 0, MAX_PARTITION_CONCURRENCY + 1)),
    (".options()", _enqueue, "priority", (NAN, INF, MAX_PRIORITY + 1)),
    (".options()", _enqueue, "delay_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    (".options()", _enqueue, "max_attempts", (NAN, INF, -1, 0, MAX_ATTEMPTS + 1)),
    (".options()", _enqueue, "timeout_seconds", (*_SECONDS, 0, MAX_TIMEOUT_SECONDS + 1)),
    (".options()", _enqueue, "expires_after_seconds", (*_SECONDS, 0, MAX_DELAY_SECONDS + 1)),
    ("@app.periodic", _periodic, "every_seconds", (*_SECONDS, 0, MAX_DELAY_SECONDS + 1)),
    ("RetryPolicy", RetryPolicy, "max_attempts", (NAN, INF, -1, 0, MAX_ATTEMPTS + 1)),
    ("RetryPolicy", RetryPolicy, "base_delay_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    ("RetryPolicy", RetryPolicy, "multiplier", (NAN, INF, -1, 0)),
    ("RetryPolicy", RetryPolicy, "max_delay_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    ("RetryPolicy", RetryPolicy, "jitter_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    ("RetryPolicy", RetryPolicy, "max_job_age_seconds", (*_SECONDS, 0, MAX_JOB_AGE_SECONDS + 1)),
    ("CircuitPolicy", CircuitPolicy, "threshold", (NAN, INF, -1, 0)),
    ("CircuitPolicy", CircuitPolicy, "failure_rate", (NAN, INF, -1, 0, 1.5)),
    ("CircuitPolicy", CircuitPolicy, "window_seconds", (*_SECONDS, 0, MAX_DELAY_SECONDS + 1)),
    ("CircuitPolicy", CircuitPolicy, "break_seconds", (*_SECONDS, 0, MAX_DELAY_SECONDS + 1)),
    ("CircuitPolicy", CircuitPolicy, "half_open_max_calls", (NAN, INF, -1, 0)),
    ("CircuitPolicy", CircuitPolicy, "probe_timeout_seconds", (*_SECONDS, 0)),
    ("Limits", Limits, "max_payload_bytes", (NAN, INF, -1, 0)),
    ("Limits", Limits, "max_batch", (NAN, INF, -1, 0)),
    ("Limits", Limits, "max_result_bytes", (NAN, INF, -1, 0)),
]
_SLOTS = (NAN, INF, -1, MAX_WORKER_SLOTS + 1)
_WORKER: list[tuple[str, tuple[object, ...]]] = [
    ("concurrency", (*_SLOTS, 0)),
    ("prefetch", _SLOTS),
    ("sync_threads", (*_SLOTS, 0)),
    ("sync_overrun_threads", _SLOTS),
    ("heartbeat_failure_threshold", (NAN, INF, -1, 0)),
    ("finalize_batch_max", (NAN, INF, -1, 0)),
    ("max_jobs", (NAN, INF, -1, 0)),
    ("max_memory_mib", (NAN, INF, -1, 0)),
    ("metrics_port", (NAN, INF, -1, MAX_PORT + 1)),
    ("poll_interval_seconds", (*_SECONDS, 0, MAX_DELAY_SECONDS + 1)),
    ("heartbeat_min_seconds", (*_SECONDS, 0)),
    ("heartbeat_max_seconds", (*_SECONDS, 0)),
    ("default_timeout_seconds", (*_SECONDS, 0, MAX_TIMEOUT_SECONDS + 1)),
    ("shutdown_grace_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    ("unknown_type_grace_seconds", (*_SECONDS, MAX_DELAY_SECONDS + 1)),
    ("leadership_lease_seconds", (*_SECONDS, 0, 3601)),
    ("leadership_renew_seconds", (*_SECONDS, 0, 6)),
    ("schedule_tick_seconds", (*_SECONDS, 0, MAX_SCHEDULE_TICK_SECONDS + 1)),
    ("retention_archive_days", (NAN, INF, -1, 0, MAX_RETENTION_DAYS + 1)),
    ("retention_dlq_days", (NAN, INF, -1, 0, MAX_RETENTION_DAYS + 1)),
    ("metrics_minute_buckets_days", (NAN, INF, -1, 0, MAX_RETENTION_DAYS + 1)),
    ("retention_rest_ratio", (NAN, INF, -1, MAX_REST_RATIO + 1)),
    *(
        (name, (*_SECONDS, 0, MAX_DELAY_SECONDS + 1))
        for name in (
            "burst_horizon_seconds",
            "fetched_timeout_seconds",
            "zombie_timeout_seconds",
            "rescue_interval_seconds",
            "worker_beat_interval_seconds",
            "circuit_delay_seconds",
            "retention_interval_seconds",
            "metrics_second_buckets_seconds",
        )
    ),
]
CASES += [("WorkerSettings", WorkerSettings, name, values) for name, values in _WORKER]


@pytest.mark.parametrize(
    ("build", "field", "value"),
    [
        pytest.param(build, field, value, id=f"{where}-{field}={value!r}")
        for where, build, field, values in CASES
        for value in values
    ],
)
def test_a_bad_number_is_refused_naming_the_field(
    build: Callable[..., object], field: str, value: object
) -> None:
    with pytest.raises((ValidationError, ConfigurationError)) as caught:
        build(**{field: value})
    assert field in str(caught.value), str(caught.value)


def test_every_numeric_worker_setting_is_covered() -> None:
    import dataclasses

    numeric = {
        f.name
        for f in dataclasses.fields(WorkerSettings)
        if any(kind in str(f.type) for kind in ("int", "float")) and "Exception" not in str(f.type)
    }
    assert numeric == {name for name, _ in _WORKER}


@pytest.mark.parametrize("queues", [("",), (" q",), ("ok", "\u202e"), "default"])
def test_worker_queues_are_names(queues: object) -> None:
    with pytest.raises(ConfigurationError, match="queues"):
        WorkerSettings(queues=queues)  # type: ignore[arg-type]


def test_the_defaults_and_the_edges_still_pass() -> None:
    WorkerSettings(queues=("*",), prefetch=0, shutdown_grace_seconds=0, metrics_port=0)
    RetryPolicy(base_delay_seconds=0, jitter_seconds=0, max_job_age_seconds=None)
    CircuitPolicy(failure_rate=1.0)
    Limits(max_payload_bytes=2, max_result_bytes=4, max_batch=1)

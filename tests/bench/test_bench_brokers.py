"""The short form of the queues compared beside chokaq on brokers (bench/brokers.py): each Celery
and RQ configuration, and chokaq's plain-def handler, burns down a few jobs for real against the
local RabbitMQ and Redis, and every job must have run exactly once (the handlers' Redis counter
equals the jobs enqueued, and the system holds none after); an idle worker on each broker picks up
single jobs. Without a broker (or the bench extra)
these skip, except under CI=true, where the machine runs both and they must run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.conftest import IN_CI, PG_URL, require_postgres

# One xdist worker runs this module and its neighbour one test at a time (tests/conftest.py:
# XDIST_GROUPS): Redis databases 10-12 and the broker queues are fixed names they flush.
pytestmark = pytest.mark.postgres

JOBS = 20
BROKER_KEYS = [
    "celery-rabbitmq-threads",
    "celery-rabbitmq-prefork",
    "celery-redis-threads",
    "celery-redis-prefork",
    "rq-simple",
    "rq-fork",
]


def _require(key: str, work: str) -> None:
    try:
        from bench.lineup import redis_reachable, unavailable
    except ImportError as exc:  # celery, rq or redis not installed
        why = f"the bench extra is not installed ({exc})"
    else:
        why = unavailable(key)
        if not why and work == "incr" and not redis_reachable():
            why = "the INCR handler needs Redis, which does not answer"
    if why:
        if IN_CI:
            pytest.fail(f"CI=true but {key} cannot run: {why}")
        pytest.skip(f"{key}: {why}")


@pytest.mark.parametrize("work", ["incr", "noop"])
@pytest.mark.parametrize("key", [*BROKER_KEYS, "chokaq-def"])
def test_short_form_burn_down_runs_every_job_once(
    key: str, work: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if key == "chokaq-def":
        require_postgres()
        monkeypatch.setenv("CHOKAQ_BENCH_PG_URL", PG_URL)
    _require(key, work)
    from bench.lineup import select
    from bench.peers import burn_down

    [system] = select([key], [work])
    figures = burn_down(system, JOBS)

    assert figures["process_jobs_s"] > 0 and figures["enqueue_jobs_s"] > 0
    assert figures["peak_rss_mib"] > 10  # a Python process at least, seen from outside
    if work == "incr" or not system.ends_by_exit:
        # Counted in Redis by the handlers themselves: each job ran, and none twice.
        assert figures["handler_runs"] == JOBS


@pytest.mark.parametrize("key", ["celery-rabbitmq-threads", "celery-redis-prefork", "rq-fork"])
def test_short_form_pickup_on_a_broker(key: str) -> None:
    # Serve mode and single enqueues, on each broker and on both forking pools.
    _require(key, "noop")
    from bench.lineup import select
    from bench.peers import pickup

    [system] = select([key], ["noop"])
    figures = pickup(system, 3)

    assert 0 < figures["p50_ms"] <= figures["p99_ms"]


def test_chokaq_runs_as_users_run_it(tmp_path: Path) -> None:
    from bench.systems import postgres_systems

    system = postgres_systems(include_peers=False)[0]
    argv, env = system.launch("sqlite:///x.db", "burst", tmp_path)

    assert argv == [
        sys.executable,
        "-m",
        "chokaq",
        "worker",
        "--app",
        "bench_chokaq_app:app",
        "--concurrency",
        "10",
        "--burst",
    ]
    assert (tmp_path / "bench_chokaq_app.py").exists()
    assert env["PYTHONPATH"].split(":")[0] == str(tmp_path)


def test_lineup_refuses_unknown_names() -> None:
    from bench.lineup import select

    with pytest.raises(SystemExit, match="names no configuration"):
        select(["kafka"], ["noop"])
    with pytest.raises(SystemExit, match="not one of"):
        select(["chokaq"], ["sleep"])

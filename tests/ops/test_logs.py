"""Structured logs: event ids are a contract (unique, in their area's range, frozen)."""

from __future__ import annotations

import enum
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import Store

import chokaq
from chokaq import App
from chokaq.logs import Event, JsonFormatter, PlainFormatter, log_event, logger

# The frozen catalogue. Adding an event means adding its pair here; renumbering or renaming one
# breaks every dashboard and alert that filters on it, so this test refuses it.
FROZEN = [
    (1000, "WORKER_STARTED"),
    (1001, "WORKER_STOPPED"),
    (1002, "WORKER_LOOP_CRASHED"),
    (1003, "WORKER_SIDE_TASK_DIED"),
    (1004, "WORKER_CAPACITY_CHANGED"),
    (1005, "WORKER_LISTEN_FAILED"),
    (1006, "WORKER_STORAGE_UNAVAILABLE"),
    (1007, "WORKER_STORAGE_RECOVERED"),
    (1008, "OPS_SERVER_STARTED"),
    (1010, "PREFETCHED_JOB_RELEASED"),
    (1011, "PREFETCHED_JOB_RELEASE_FAILED"),
    (1012, "SHUTDOWN_DRAIN_STARTED"),
    (1013, "SHUTDOWN_GRACE_EXPIRED"),
    (1014, "FINALIZE_RETRYING"),
    (1020, "WORKER_QUEUE_TIMEOUT_UNSAFE"),
    (1021, "WORKER_BURST_WORK_LEFT"),
    (1022, "WORKER_SERVES_NOTHING"),
    (1023, "WORKER_RECYCLING"),
    (1030, "WORKER_SUPERVISOR_STARTED"),
    (1031, "WORKER_CHILD_STARTED"),
    (1032, "WORKER_CHILD_CRASHED"),
    (1033, "WORKER_CHILD_RECYCLED"),
    (1034, "WORKER_SUPERVISOR_STOPPING"),
    (1035, "WORKER_SUPERVISOR_STOPPED"),
    (2000, "JOB_CANCEL_REQUESTED"),
    (2001, "JOB_CIRCUIT_DEFERRED"),
    (2002, "JOB_LEASE_REJECTED"),
    (2003, "JOB_SUCCEEDED"),
    (2004, "JOB_SHUTDOWN_REQUEUED"),
    (2005, "JOB_TIMED_OUT"),
    (2006, "JOB_HEARTBEAT_FAILED"),
    (2007, "JOB_HEARTBEAT_THRESHOLD"),
    (2008, "JOB_LEASE_LOST"),
    (2009, "JOB_CANCELLED"),
    (2010, "JOB_REJECTED"),
    (2011, "JOB_SYNC_OVERRAN"),
    (2020, "JOB_FATAL"),
    (2021, "JOB_THROTTLED_RETRY"),
    (2022, "JOB_RETRY_SCHEDULED"),
    (2023, "JOB_RETRIES_EXHAUSTED"),
    (2024, "JOB_LIFETIME_EXPIRED"),
    (2025, "JOB_EXPIRED"),
    (2030, "JOB_NO_HANDLER_RELEASED"),
    (2031, "JOB_NOT_STARTED"),
    (2032, "JOB_SYNC_OVERRUN_LIMIT"),
    (2040, "JOB_RESULT_NOT_KEPT"),
    (2100, "TRANSITION_NOT_APPLIED"),
    (3000, "ENQUEUE_DUPLICATE"),
    (4000, "RESCUE_STARTED"),
    (4001, "FETCHED_JOBS_RECOVERED"),
    (4002, "ZOMBIES_DEAD_LETTERED"),
    (4003, "MAINTENANCE_FAILED"),
    (4004, "RETENTION_PURGED"),
    (4005, "METRICS_ROLLED_UP"),
    (4006, "LEADERSHIP_ACQUIRED"),
    (4007, "LEADERSHIP_LOST"),
    (4008, "RESCUE_RESUMING"),
    (4009, "ZOMBIES_RESUMED"),
    (4010, "SCHEDULES_DECLARED"),
    (4011, "SCHEDULE_ENQUEUED"),
    (4012, "SCHEDULE_MISSED"),
    (4013, "SCHEDULE_SKIPPED"),
    (4014, "SCHEDULE_FAILED"),
    (5000, "MIGRATION_STARTED"),
    (5001, "MIGRATION_COMPLETED"),
    (5002, "MIGRATION_FAILED"),
    (5010, "NOTIFY_LISTEN_LOST"),
    (5011, "NOTIFY_LISTEN_RESTORED"),
    (5012, "JOB_ROW_UNDECODABLE"),
    (6000, "ADMIN_REJECTED"),
    (6001, "ADMIN_COMPLETED"),
    (7000, "DECK_STARTED"),
    (7001, "DECK_REQUEST_FAILED"),
    (7002, "DECK_UNGUARDED"),
    (7003, "DECK_PLAIN_PASSWORDS"),
    (7004, "DECK_HOST_REFUSED"),
    (7005, "DECK_LOGIN_THROTTLED"),
]

AREAS = {
    1: "WORKER_|PREFETCHED_|SHUTDOWN_|FINALIZE_|OPS_",
    2: "JOB_|TRANSITION_",
    3: "ENQUEUE_",
    4: "RESCUE_|FETCHED_|ZOMBIES_|MAINTENANCE_|RETENTION_|METRICS_|LEADERSHIP_|SCHEDULE",
    5: "MIGRATION_|NOTIFY_|JOB_ROW_",
    6: "ADMIN_",
    7: "DECK_",
}


def test_event_ids_are_unique() -> None:
    values = [e.value for e in Event]
    assert len(values) == len(set(values))
    # An IntEnum alias (two names, one value) would hide a duplicate from the list above.
    assert len(Event.__members__) == len(values)
    assert isinstance(Event, enum.EnumMeta)


def test_event_ids_match_the_frozen_snapshot() -> None:
    assert [(e.value, e.name) for e in Event] == FROZEN


def test_each_event_sits_in_its_area_range() -> None:
    import re

    for event in Event:
        area = event.value // 1000
        assert re.match(AREAS[area], event.name), event


def test_json_and_plain_lines_carry_the_id_and_fields() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        log_event(Event.RETENTION_PURGED, "retention pass", archive=3, dlq=1)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    [record] = records
    data = json.loads(JsonFormatter().format(record))
    assert data["event_id"] == 4004 and data["event"] == "retention_purged"
    assert (data["archive"], data["dlq"], data["message"]) == (3, 1, "retention pass")
    plain = PlainFormatter().format(record)
    assert "[4004 retention_purged] retention pass archive=3 dlq=1" in plain


# -- what the lines say (issue 13 item 23) ------------------------------------------------------

ISO_MS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@contextmanager
def records(level: int = logging.INFO) -> Iterator[list[logging.LogRecord]]:
    kept: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record)

    handler = Keep()
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield kept
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def _of(kept: list[logging.LogRecord], event: Event) -> list[logging.LogRecord]:
    return [r for r in kept if getattr(r, "chokaq", {}).get("event_id") == event]


async def test_retry_and_dlq_lines_carry_the_error_and_the_attempt(store: Store) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)

    @app.job(max_attempts=3)
    async def flaky(n: int = 0) -> None:
        raise ValueError(f"flaky boom {n}")

    @app.job(max_attempts=1)
    async def doomed(n: int = 0) -> None:
        raise KeyError("doomed boom")

    try:
        retry_id = str(await flaky.enqueue(n=7))
        dead_id = str(await doomed.enqueue())
        with records() as kept:
            # The retry is not due within the half-second horizon: burst ends with it left.
            await app.create_worker(burst=True, burst_horizon_seconds=0.5).run()
    finally:
        await app.close()
    [retry] = _of(kept, Event.JOB_RETRY_SCHEDULED)
    fields = retry.chokaq  # type: ignore[attr-defined]
    assert (fields["job_id"], fields["attempt"], fields["max_attempts"]) == (retry_id, 1, 3)
    assert fields["error"] == "ValueError: flaky boom 7"
    assert retry_id in retry.getMessage() and "flaky boom 7" in retry.getMessage()
    assert "attempt 1 of 3" in retry.getMessage()
    [dead] = _of(kept, Event.JOB_RETRIES_EXHAUSTED)
    fields = dead.chokaq  # type: ignore[attr-defined]
    assert (fields["job_id"], fields["attempt"], fields["max_attempts"]) == (dead_id, 1, 1)
    assert "KeyError: 'doomed boom'" in fields["error"] and "\n" not in fields["error"]
    assert dead_id in dead.getMessage() and "doomed boom" in dead.getMessage()


async def test_a_burst_logs_worker_stopped_once(store: Store) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)

    @app.job()
    async def ok(n: int = 0) -> None:
        return None

    try:
        await ok.enqueue()
        with records() as kept:
            await app.create_worker(burst=True).run()
    finally:
        await app.close()
    stopped = _of(kept, Event.WORKER_STOPPED)
    assert len(stopped) == 1, [r.getMessage() for r in stopped]
    assert stopped[0].chokaq["reason"].startswith("burst finished")  # type: ignore[attr-defined]
    assert "burst finished" in stopped[0].getMessage()


def test_every_line_about_a_job_names_it_in_the_message() -> None:
    with records() as kept:
        log_event(Event.JOB_REJECTED, "unknown type", level=logging.WARNING, job_id="j-123")
        log_event(Event.JOB_LEASE_LOST, "job j-456 lost its lease", job_id="j-456")
    assert [r.getMessage() for r in kept] == [
        "unknown type (job j-123)",
        "job j-456 lost its lease",
    ]


def test_library_use_without_logging_configured_names_the_job(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio
        from chokaq import App
        app = App({f"sqlite:///{tmp_path / 'jobs.db'}"!r})

        @app.job(max_attempts=1)
        async def doomed() -> None:
            raise RuntimeError("no config here")

        async def main() -> None:
            print(await doomed.enqueue(), flush=True)
            await app.run_worker(burst=True)
            await app.close()

        asyncio.run(main())
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.split()[0]
    dead = [line for line in result.stderr.splitlines() if "dead-lettered" in line]
    assert len(dead) == 1 and job_id in dead[0] and "no config here" in dead[0], result.stderr


def test_json_logs_route_every_logger_as_json_with_iso_times() -> None:
    script = textwrap.dedent(
        """
        import logging
        from datetime import UTC, datetime
        from chokaq.logs import Event, configure_logging, log_event
        configure_logging(json_lines=True)
        log_event(Event.JOB_RETRY_SCHEDULED, "job will retry", job_id="j-1",
                  run_at=datetime(2026, 12, 1, 12, 0, 5, 250000, tzinfo=UTC))
        logging.getLogger("psycopg.pool").warning("error connecting in 'chokaq-x': refused")
        logging.getLogger("asyncio").error("Task was destroyed but it is pending!")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=_env()
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    assert [line["logger"] for line in lines] == ["chokaq", "psycopg.pool", "asyncio"]
    assert all(ISO_MS_UTC.match(line["time"]) for line in lines), lines
    assert lines[0]["run_at"] == "2026-12-01T12:00:05.250Z"
    assert lines[1]["level"] == "warning" and "refused" in lines[1]["message"]


def test_json_time_is_iso_8601_utc_with_milliseconds() -> None:
    record = logging.LogRecord("chokaq", logging.INFO, __file__, 1, "m", None, None)
    record.created = 1_764_590_630.0427
    assert json.loads(JsonFormatter().format(record))["time"] == "2025-12-01T12:03:50.042Z"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(chokaq.__file__).resolve().parents[1])}

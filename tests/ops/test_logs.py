"""Structured logs: event ids are a contract (unique, in their area's range, frozen)."""

from __future__ import annotations

import enum
import json
import logging

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
    (2030, "JOB_NO_HANDLER_RELEASED"),
    (2031, "JOB_NOT_STARTED"),
    (2032, "JOB_SYNC_OVERRUN_LIMIT"),
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
]

AREAS = {
    1: "WORKER_|PREFETCHED_|SHUTDOWN_|FINALIZE_|OPS_",
    2: "JOB_|TRANSITION_",
    3: "ENQUEUE_",
    4: "RESCUE_|FETCHED_|ZOMBIES_|MAINTENANCE_|RETENTION_|METRICS_|LEADERSHIP_",
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

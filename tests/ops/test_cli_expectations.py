"""CLI behaviour users did not expect, through the real CLI on both backends: relative times,
unknown queue names and unsafe zombie timeouts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .conftest import Cli, on_store


def test_a_relative_run_at_is_from_now(cli: Cli, store: Any) -> None:
    cli("migrate")
    before = datetime.now(UTC)
    job_id = cli("enqueue", "report", "{}", "--run-at", "2h").output.strip()
    after = datetime.now(UTC)
    view = on_store(store, lambda b: b.job_get(job_id))
    assert view.scheduled_at is not None
    assert before + timedelta(hours=2) - timedelta(seconds=1) <= view.scheduled_at
    assert view.scheduled_at <= after + timedelta(hours=2) + timedelta(seconds=1)
    # "in 2h" and "+2h" say the same; an ISO time is taken as it is.
    for spelling in ("in 2h", "+2h"):
        other = cli("enqueue", "report", "{}", "--run-at", spelling).output.strip()
        at = on_store(store, lambda b, other=other: b.job_get(other)).scheduled_at
        assert abs((at - view.scheduled_at).total_seconds()) < 60
    assert "from now" in cli("enqueue", "--help", store=False).output


def test_ages_in_filters_still_mean_ago(cli: Cli) -> None:
    help_text = cli("dlq", "list", "--help", store=False).output
    assert "ago" in help_text


def test_a_zombie_timeout_below_the_heartbeat_floor_is_refused(cli: Cli, store: Any) -> None:
    cli("migrate")
    cli("queue", "limit", "default", "--zombie-timeout", "120")
    refused = cli("queue", "limit", "default", "--zombie-timeout", "1", expect=1)
    assert "zombie_timeout_seconds" in refused.output and "heartbeat" in refused.output
    [queue] = [q for q in on_store(store, lambda b: b.queue_list()) if q.name == "default"]
    assert queue.zombie_timeout_seconds == 120
    assert "at least 15" in cli("queue", "limit", "--help", store=False).output


def test_an_unknown_queue_is_refused_unless_asked_to_create_it(cli: Cli, store: Any) -> None:
    cli("migrate")
    for argv in (
        ["queue", "pause", "emials"],
        ["queue", "resume", "emials"],
        ["queue", "limit", "emials", "--max-workers", "2"],
    ):
        refused = cli(*argv, expect=1)
        assert "emials" in refused.output and "--create" in refused.output
        assert "emials" not in [q.name for q in on_store(store, lambda b: b.queue_list())]
    assert "queue emials paused" in cli("queue", "pause", "emials", "--create").output
    assert "queue emials resumed" in cli("queue", "resume", "emials").output
    assert "max_workers=2" in cli("queue", "limit", "emials", "--max-workers", "2").output
    assert "--create" in cli("queue", "pause", "--help", store=False).output

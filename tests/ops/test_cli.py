"""Every CLI command against both backends (click's CliRunner, in-process)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq.cli import main
from chokaq.models import FailureReason, JobFilter, Pillar
from chokaq.storage import create_backend

from .conftest import Cli, on_store, seed

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def dlq_ids(store: Any, **filters: Any) -> list[str]:
    page = on_store(
        store,
        lambda b: b.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(**filters), page_size=1000),
    )
    return [v.id for v in page.items]


def test_migrate_then_enqueue_a_raw_job_with_options(cli: Cli, store: Any) -> None:
    out = cli("migrate").output
    assert "applied migrations" in out or "already current" in out
    assert "already current" in cli("migrate").output
    result = cli(
        "enqueue",
        "send_receipt",
        '{"order_id": 42}',
        "--queue",
        "emails",
        "--priority",
        "50",
        "--delay",
        "60",
        "--tag",
        "a",
        "--tag",
        "b",
        "--idempotency-key",
        "order-42",
        "--max-attempts",
        "5",
        "--timeout",
        "30",
    )
    job_id = result.output.strip()
    assert re.fullmatch(UUID, job_id)
    view = on_store(store, lambda b: b.job_get(job_id))
    assert (view.queue, view.type, view.priority, view.tags) == (
        "emails",
        "send_receipt",
        50,
        ("a", "b"),
    )
    assert json.loads(view.payload) == {"order_id": 42}
    assert (view.max_attempts, view.timeout_seconds, view.created_by) == (5, 30.0, "cli")
    assert view.scheduled_at is not None and view.scheduled_at > view.created_at
    again = cli("enqueue", "send_receipt", "{}", "--idempotency-key", "order-42").output
    assert again.startswith(job_id) and "duplicate" in again
    child = cli("enqueue", "report", "{}", "--after", job_id).output.strip()
    waiting = on_store(store, lambda b: b.job_get_related(id=child))
    assert waiting.state == "waiting" and [p.id for p in waiting.parents] == [job_id]
    unknown = cli("enqueue", "report", "{}", "--after", str(uuid.UUID(int=5)), expect=1).output
    assert unknown.startswith("error: after: names jobs that are not stored")


def test_enqueue_with_an_expiry_and_a_uniqueness_window(cli: Cli, store: Any) -> None:
    cli("migrate")
    args = ["enqueue", "digest", '{"user": 7}', "--idempotency-key", "digest:7"]
    first = cli(*args, "--unique-for", "3600", "--expires-after", "600").output.strip()
    view = on_store(store, lambda b: b.job_get(first))
    assert view.expires_at is not None
    assert (view.expires_at - view.created_at).total_seconds() == pytest.approx(600)
    again = cli(*args, "--unique-for", "3600").output
    assert again.startswith(first) and "its window is open" in again
    past = cli("enqueue", "digest", "{}", "--expires-at", "2001-01-01", expect=1).output
    assert past.startswith("error: expires_at: must be after the job is due (now; it is 2001")
    late = cli("enqueue", "digest", "{}", "--queue", "stale", "--expires-after", "1").output
    later = datetime.now(UTC) + timedelta(minutes=1)  # a claim on a clock past its expiry
    on_store(store, lambda b: b.jobs_fetch(worker_id="w", limit=5, queues=["stale"], now=later))
    listed = cli("dlq", "list", "--reason", "expired").output
    assert late.strip() in listed
    both = cli("enqueue", "d", "{}", "--expires-after", "5", "--expires-at", "1h", expect=2)
    assert "give --expires-after or --expires-at, not both" in both.output
    keyless = cli("enqueue", "d", "{}", "--unique-for", "60", expect=1).output
    assert keyless.startswith("error: unique_for_seconds: needs an idempotency_key")


def test_migrate_reads_the_schema_from_the_environment(cli: Cli, store: Any) -> None:
    # As every other store command does: CHOKAQ_SCHEMA, not the default schema.
    env = {"CHOKAQ_SCHEMA": store.schema, "CHOKAQ_DATABASE_URL": store.url}
    result = cli.runner.invoke(main, ["migrate"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "applied migrations" in result.output
    backend = create_backend(store.url, schema=store.schema)
    assert on_store(store, lambda b: b.schema_version()) == backend.latest_version()


def test_enqueue_rejects_bad_input_with_one_line_and_an_exit_code(cli: Cli) -> None:
    cli("migrate")
    bad_json = cli("enqueue", "x", "{nope", expect=2)
    assert "must be valid JSON" in bad_json.output
    too_long = cli("enqueue", "x" * 300, "{}", expect=1)
    assert too_long.output.startswith("error: ") and len(too_long.output.strip().splitlines()) == 1


def test_stats_and_queue_commands(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=3, poison=2, flaky=1))
    out = cli("stats").output
    assert "Overview" in out and "Queues" in out
    row = next(line for line in out.splitlines() if re.search(r"^\W*0\W+0\W+0\W+3\W+3\W+1\b", line))
    assert row  # pending 0, fetched 0, processing 0, succeeded 3, failed 3, retried 1
    assert "mail" in cli("queue", "list").output
    assert "queue mail paused" in cli("queue", "pause", "mail").output
    queues = {q.name: q for q in on_store(store, lambda b: b.queue_list())}
    assert queues["mail"].paused
    assert "paused" in cli("queue", "list").output
    assert "queue mail resumed" in cli("queue", "resume", "mail").output
    out = cli("queue", "limit", "mail", "--max-workers", "3", "--execution-timeout", "20").output
    assert "max_workers=3" in out
    info = {q.name: q for q in on_store(store, lambda b: b.queue_list())}["mail"]
    assert (info.paused, info.max_workers, info.execution_timeout_seconds) == (False, 3, 20.0)
    cli("queue", "limit", "mail", "--max-workers", "none")
    info = {q.name: q for q in on_store(store, lambda b: b.queue_list())}["mail"]
    assert info.max_workers is None and info.execution_timeout_seconds == 20.0
    assert "nothing to change" in cli("queue", "limit", "mail", expect=2).output


def test_stats_watch_is_a_live_table(cli: Cli, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    asyncio.run(seed(store, ok=1, poison=0, flaky=0))
    import chokaq.cli.stats as stats_module

    calls = {"n": 0}
    real = stats_module._snapshot

    async def counting(app: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= 3:
            raise KeyboardInterrupt  # the operator's Ctrl-C after two refreshes
        return await real(app)

    monkeypatch.setattr(stats_module, "_snapshot", counting)
    result = cli("stats", "--watch", "--interval", "0.1")
    assert "Overview" in result.output and calls["n"] == 3


def test_dlq_list_show_and_filters(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=1, poison=2, flaky=1))
    out = cli("dlq", "list").output
    assert "DLQ: 3 job(s)" in out and "fatal_error" in out and "transient" in out
    out = cli("dlq", "list", "--reason", "fatal-error").output
    assert "DLQ: 2 job(s)" in out and "transient" not in out
    assert "DLQ: 1 job(s)" in cli("dlq", "list", "--queue", "mail").output
    assert "DLQ: 1 job(s)" in cli("dlq", "list", "--search", "flaky 0").output
    assert "DLQ: 3 job(s)" in cli("dlq", "list", "--since", "1h").output
    assert "DLQ: 0 job(s)" in cli("dlq", "list", "--until", "1h").output
    bad = cli("dlq", "list", "--reason", "bogus", expect=2)
    assert "unknown failure reason" in bad.output
    [job_id] = dlq_ids(store, queue="mail")
    shown = cli("dlq", "show", job_id).output
    assert "flaky" in shown and "transient" in shown and "ConnectionError: flaky 0" in shown
    # The exception's class beside its text: in the listing, the job and their JSON.
    assert "builtins.ConnectionError" in cli("dlq", "list", "--queue", "mail").output
    assert re.search(r"error_type[\s│]+builtins\.ConnectionError", shown)
    assert re.search(r"exception[\s│]+builtins\.ConnectionError", cli("job", "show", job_id).output)
    listed = json.loads(cli("dlq", "list", "--json").output)
    assert sorted(str(j["error_type"]) for j in listed) == [
        "builtins.ConnectionError",
        *["chokaq.errors.FatalError"] * 2,
    ]
    missing = cli("dlq", "show", "01890000-0000-7000-8000-000000000000", expect=1)
    assert missing.output.startswith("error: no job")


def test_dlq_requeue_by_filter_previews_and_asks(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=0, poison=3, flaky=1))
    declined = cli("dlq", "requeue", "--reason", "fatal_error", input="n\n", expect=1)
    assert (
        "matching" in declined.output
        and "3" in declined.output
        and "nothing done" in declined.output
    )
    assert len(dlq_ids(store)) == 4
    cli("dlq", "requeue", expect=2)  # no filter, no ids, no --all: refused
    accepted = cli("dlq", "requeue", "--reason", "fatal_error", "--cap", "2", input="y\n")
    assert "requeued 2 job(s)" in accepted.output
    assert len(dlq_ids(store, failure_reason=FailureReason.FATAL_ERROR)) == 1
    [flaky] = dlq_ids(store, failure_reason=FailureReason.TRANSIENT)
    assert "requeued 1 of 1" in cli("dlq", "requeue", flaky).output
    hot = on_store(store, lambda b: b.job_get(flaky))
    assert hot.pillar is Pillar.HOT and hot.attempt_count == 0


def test_dlq_purge_by_ids_and_by_filter_keeps_lifetime_counters(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=1, poison=3, flaky=1))
    before = on_store(store, lambda b: b.stats_summary())
    [flaky] = dlq_ids(store, failure_reason=FailureReason.TRANSIENT)
    assert "purged 1 of 1" in cli("dlq", "purge", flaky).output
    out = cli("dlq", "purge", "--type", "poison", "--yes").output
    assert "purged 3 job(s)" in out
    assert dlq_ids(store) == []
    after = on_store(store, lambda b: b.stats_summary())
    assert (after.succeeded_total, after.failed_total, after.retried_total) == (
        before.succeeded_total,
        before.failed_total,
        before.retried_total,
    )
    assert "will purge" in cli("dlq", "purge", "--all", "--yes").output


def test_purge_command_shows_progress_and_reports_counts(cli: Cli, store: Any) -> None:
    asyncio.run(seed(store, ok=2, poison=1, flaky=0))
    out = cli("purge", "--archive-days", "1e-9", "--dlq-days", "1e-9").output
    assert "archive rows" in out and "dlq rows" in out and "metric buckets" in out
    assert "archive: 2" in out and "dlq: 1" in out


def test_app_option_loads_the_app_and_errors_are_one_line(
    cli: Cli, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHOKAQ_DATABASE_URL", store.url)
    monkeypatch.setenv("CHOKAQ_SCHEMA", store.schema)
    cli("migrate", "--app", "tests.ops.ops_app:app", store=False)
    out = cli("queue", "list", "--app", "tests.ops.ops_app:app", store=False).output
    assert "Queues" in out
    bad = cli("stats", "--app", "tests.ops.nope:app", store=False, expect=2)
    assert "cannot import" in bad.output


def test_unmigrated_postgres_is_a_clear_error(cli: Cli, store: Any) -> None:
    if store.capabilities.migrates_on_open:
        pytest.skip("this store migrates on open")
    result = cli("stats", expect=None)
    assert result.exit_code != 0 and result.output.startswith("error: ")
    assert len(result.output.strip().splitlines()) == 1


COMMANDS = [
    ["worker"],
    ["migrate"],
    ["deck"],
    ["demo"],
    ["enqueue"],
    ["stats"],
    ["purge"],
    ["config-reference"],
    ["job"],
    ["job", "show"],
    ["job", "wait"],
    ["job", "cancel"],
    ["job", "run-now"],
    ["archive"],
    ["archive", "requeue"],
    ["archive", "delete"],
    ["workflow"],
    ["workflow", "show"],
    ["workflow", "cancel"],
    ["dlq"],
    ["dlq", "list"],
    ["dlq", "show"],
    ["dlq", "requeue"],
    ["dlq", "purge"],
    ["queue"],
    ["queue", "list"],
    ["queue", "pause"],
    ["queue", "resume"],
    ["queue", "limit"],
    ["limits"],
    ["limits", "list"],
    ["limits", "set"],
    ["limits", "reset"],
    ["schedule"],
    ["schedule", "list"],
    ["schedule", "show"],
    ["schedule", "pause"],
    ["schedule", "resume"],
    ["schedule", "trigger"],
    ["schedule", "set"],
    ["schedule", "reset"],
    ["schedule", "delete"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output and "chokaq " in result.output.split("Example:")[1]


def test_every_store_command_takes_app_database_and_schema() -> None:
    from click.testing import CliRunner

    for command in COMMANDS:
        if command[0] in ("config-reference", "demo") or command in (
            ["job"],
            ["workflow"],
            ["dlq"],
            ["archive"],
            ["queue"],
            ["limits"],
            ["schedule"],
        ):
            continue
        out = CliRunner().invoke(main, [*command, "--help"]).output
        assert all(opt in out for opt in ("--app", "--database", "--schema")), command

"""``chokaq limits ...`` and ``chokaq queue limit --rate`` through the real CLI, on both
backends: what is stored, what is shown, and what is refused before anything is written."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime
from typing import Any

import pytest
from click.testing import CliRunner

from chokaq.cli import main
from chokaq.models import LimitInfo, NewJob, TypeLimit

from .conftest import Cli, on_store


def limits(store: Any) -> dict[tuple[str, str], LimitInfo]:
    return {(i.scope, i.name): i for i in on_store(store, lambda b: b.limits_list())}


def queue_row(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if f" {name} " in line)


def test_a_queue_rate_is_set_shown_and_cleared(cli: Cli, store: Any) -> None:
    cli("migrate")
    cli("enqueue", "send", "{}", "--queue", "mail")
    out = cli("queue", "limit", "mail", "--rate", "100/s").output
    assert "queue mail:" in out and "rate=100/s" in out
    info = limits(store)[("queue", "mail")]
    assert (info.rate_limit, info.rate_set) == ("100/s", True)
    assert info.last_modified_by is not None and info.last_modified_by.startswith("cli:")
    assert "100/s" in queue_row(cli("queue", "list").output, "mail")
    # The rate goes beside the other limits in one command; each lands where it belongs.
    out = cli("queue", "limit", "mail", "--max-workers", "2", "--rate", "5/m", "--actor", "ops")
    assert "max_workers=2" in out.output and "rate=5/m" in out.output
    [queue] = [q for q in on_store(store, lambda b: b.queue_list()) if q.name == "mail"]
    info = limits(store)[("queue", "mail")]
    assert (queue.max_workers, info.rate_limit, info.last_modified_by) == (2, "5/m", "ops")
    # Left out, the rate is unchanged and still reported.
    assert "rate=5/m" in cli("queue", "limit", "mail", "--execution-timeout", "30").output
    assert "rate=None" in cli("queue", "limit", "mail", "--rate", "none").output
    assert limits(store)[("queue", "mail")].rate_limit is None
    assert "5/m" not in queue_row(cli("queue", "list").output, "mail")
    nothing = cli("queue", "limit", "mail", expect=2).output
    assert "nothing to change" in nothing and "--rate" in nothing


def test_a_bad_rate_is_refused_naming_the_option_and_nothing_changes(cli: Cli, store: Any) -> None:
    cli("migrate")
    cli("enqueue", "send", "{}", "--queue", "mail")
    cli("queue", "limit", "mail", "--max-workers", "3", "--rate", "1/s")
    before = limits(store)
    for rate in ("fast", "10", "10/d", "-1/s", ""):
        refused = cli("queue", "limit", "mail", "--max-workers", "7", "--rate", rate, expect=2)
        assert "'--rate'" in refused.output and "N/s, N/m or N/h" in refused.output, rate
        refused = cli("limits", "set", "partner.call", "--rate", rate, expect=2)
        assert "'--rate'" in refused.output and "N/s, N/m or N/h" in refused.output, rate
    for rate in ("0/s", "1000000/s"):
        out_of_range = cli("limits", "set", "partner.call", "--rate", rate, expect=2).output
        assert "'--rate'" in out_of_range and "between 1/week and 100,000/s" in out_of_range
    bad_cap = cli("limits", "set", "partner.call", "--partition-concurrency", "0", expect=2)
    assert "'--partition-concurrency'" in bad_cap.output
    on_a_queue = cli(
        "limits", "set", "mail", "--scope", "queue", "--partition-concurrency", "2", expect=2
    )
    assert "job types only" in on_a_queue.output
    [queue] = [q for q in on_store(store, lambda b: b.queue_list()) if q.name == "mail"]
    assert queue.max_workers == 3
    assert limits(store) == before


def test_an_unknown_queue_is_refused_unless_asked_to_create_it(cli: Cli, store: Any) -> None:
    cli("migrate")
    for argv in (
        ["queue", "limit", "emials", "--rate", "1/s"],
        ["limits", "set", "emials", "--scope", "queue", "--rate", "1/s"],
    ):
        refused = cli(*argv, expect=1).output
        assert (
            refused.lower().startswith("error: ") and "emials" in refused and "--create" in refused
        )
    assert "emials" not in [q.name for q in on_store(store, lambda b: b.queue_list())]
    assert limits(store) == {}
    assert "rate=1/s" in cli("queue", "limit", "emials", "--rate", "1/s", "--create").output
    assert limits(store)[("queue", "emials")].rate_limit == "1/s"
    out = cli("limits", "set", "emials", "--scope", "queue", "--rate", "2/s").stdout
    assert out.strip() == "queue emials: rate=2/s"


def test_a_type_limit_is_set_over_the_code_and_reset_to_it(cli: Cli, store: Any) -> None:
    cli("migrate")
    on_store(store, lambda b: b.limits_declare(limits=[TypeLimit("partner.call", "10/s", 2)]))
    row = queue_row(cli("limits", "list").output, "partner.call")
    assert "10/s (code)" in row and "2 (code)" in row
    result = cli(
        "limits",
        "set",
        "partner.call",
        "--rate",
        "5/m",
        "--partition-concurrency",
        "1",
        "--actor",
        "alice",
        "--json",
    )
    shown = json.loads(result.stdout)
    assert (shown["scope"], shown["name"], shown["rate_limit"]) == ("type", "partner.call", "5/m")
    assert (shown["partition_concurrency"], shown["declared_rate_limit"]) == (1, "10/s")
    assert (shown["rate_set"], shown["concurrency_set"], shown["last_modified_by"]) == (
        True,
        True,
        "alice",
    )
    assert "[6001 admin_completed] cli: limits.set" in result.stderr
    assert "actor=alice" in result.stderr and "rate_limit=5/m" in result.stderr
    row = queue_row(cli("limits", "list").output, "partner.call")
    assert "5/m (set)" in row and "1 (set)" in row
    # 'none' lifts the code's rate (an operator's choice, kept until reset).
    out = cli("limits", "set", "partner.call", "--rate", "none").stdout
    assert out.strip() == "type partner.call: rate=none (set), partition_concurrency=1 (set)"
    assert limits(store)[("type", "partner.call")].rate_limit is None
    result = cli("limits", "reset", "partner.call", "--actor", "bob")
    assert result.stdout.strip() == (
        "type partner.call: rate=10/s (code), partition_concurrency=2 (code)"
    )
    assert "cli: limits.reset" in result.stderr and "actor=bob" in result.stderr
    info = limits(store)[("type", "partner.call")]
    assert (info.rate_limit, info.rate_set, info.partition_concurrency) == ("10/s", False, 2)
    missing = cli("limits", "reset", "nothing.here", expect=1).output
    assert missing.startswith("error: no limit for type 'nothing.here'")
    assert "chokaq limits list" in missing
    nothing = cli("limits", "set", "partner.call", expect=2).output
    assert "nothing to change" in nothing and "--rate" in nothing


def test_the_list_shows_the_load_and_its_json_holds_every_field(cli: Cli, store: Any) -> None:
    cli("migrate")
    assert "no limits" in cli("limits", "list").output
    assert json.loads(cli("limits", "list", "--json").stdout) == []

    async def load(backend: Any) -> None:
        await backend.limits_declare(limits=[TypeLimit("sync", None, 1)])
        jobs = [NewJob(type="sync", partition="big") for _ in range(4)]
        await backend.jobs_enqueue([*jobs, NewJob(type="sync", partition="small")])
        await backend.jobs_fetch(worker_id="w1", limit=10, start=True)

    on_store(store, load)
    cli("enqueue", "send", "{}", "--queue", "mail")
    cli("queue", "limit", "mail", "--rate", "20/s")
    table = cli("limits", "list").output
    sync = queue_row(table, "sync")
    assert "1 (code)" in sync and "big 3/1, small 0/1" in sync
    assert "20/s" in queue_row(table, "mail")
    listed = json.loads(cli("limits", "list", "--json").stdout)
    by_name = {item["name"]: item for item in listed}
    assert set(by_name) == {"sync", "mail"}
    names = {f.name for f in fields(LimitInfo)}
    assert all(set(item) == names for item in listed)
    item = by_name["sync"]
    assert (item["running"], item["pending"], item["held"], item["partitions"]) == (2, 3, 3, 2)
    assert item["top_partitions"] == [
        {"partition": "big", "waiting": 3, "running": 1},
        {"partition": "small", "waiting": 0, "running": 1},
    ]
    assert item["rate_limit"] is None and item["declared_partition_concurrency"] == 1
    assert datetime.fromisoformat(item["updated_at"]).utcoffset() is not None
    assert (by_name["mail"]["scope"], by_name["mail"]["rate_limit"]) == ("queue", "20/s")


@pytest.mark.parametrize(
    "command",
    [["limits"], ["limits", "list"], ["limits", "set"], ["limits", "reset"], ["queue", "limit"]],
    ids=" ".join,
)
def test_every_limits_command_has_help_with_an_example(command: list[str]) -> None:
    out = CliRunner().invoke(main, [*command, "--help"]).output
    assert "Example:" in out and "chokaq " in out.split("Example:")[1]
    if command != ["limits"]:
        assert all(opt in out for opt in ("--app", "--database", "--schema")), command
    if command[-1] in ("set", "limit"):
        assert "--rate" in out and "N/s|N/m|N/h" in out

"""Bad input through the CLI, on both backends: each case exits non-zero with one line naming
the field, and the store is unchanged; hostile but valid filter text is matched literally."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from chokaq.cli import main

from .conftest import Seeded

CASES: list[tuple[str, list[str], str]] = [
    ("payload not JSON", ["enqueue", "t", "{bad"], "PAYLOAD"),
    ("payload over 1 MB", ["enqueue", "t", '"' + "x" * 1_000_001 + '"'], "payload"),
    ("queue blank", ["enqueue", "t", "{}", "--queue", ""], "queue"),
    ("queue control char", ["enqueue", "t", "{}", "--queue", "a\x07b"], "queue"),
    ("type with newline", ["enqueue", "a\nb", "{}"], "type"),
    ("priority out of range", ["enqueue", "t", "{}", "--priority", "99999999"], "priority"),
    ("delay negative", ["enqueue", "t", "{}", "--delay", "-5"], "delay_seconds"),
    ("delay NaN", ["enqueue", "t", "{}", "--delay", "nan"], "delay_seconds"),
    ("delay absurd", ["enqueue", "t", "{}", "--delay", "1e12"], "delay_seconds"),
    ("run-at garbage", ["enqueue", "t", "{}", "--run-at", "yesterday-ish"], "--run-at"),
    ("tag with comma", ["enqueue", "t", "{}", "--tag", "a,b"], "tags[0]"),
    ("too many tags", ["enqueue", "t", "{}", *[f"--tag=t{i}" for i in range(51)]], "tags"),
    ("max attempts zero", ["enqueue", "t", "{}", "--max-attempts", "0"], "max_attempts"),
    ("timeout negative", ["enqueue", "t", "{}", "--timeout", "-1"], "timeout_seconds"),
    ("key too long", ["enqueue", "t", "{}", "--idempotency-key", "k" * 300], "idempotency_key"),
    ("key empty", ["enqueue", "t", "{}", "--idempotency-key", ""], "idempotency_key: must not"),
    ("key padded", ["enqueue", "t", "{}", "--idempotency-key", " k"], "idempotency_key: must not"),
    ("expires-at past", ["enqueue", "t", "{}", "--expires-at", "2001-01-01"], "expires_at: must"),
    ("created-by control", ["enqueue", "t", "{}", "--created-by", "a\rb"], "created_by"),
    ("dlq reason unknown", ["dlq", "list", "--reason", "nonsense"], "reason"),
    ("dlq since garbage", ["dlq", "list", "--since", "soon"], "since"),
    ("dlq since overflows", ["dlq", "list", "--since", "99999999d"], "since"),
    ("dlq since before 1970", ["dlq", "list", "--since", "1e400w"], "since"),
    ("payload nested too deep", ["enqueue", "t", "[" * 100_000 + "]" * 100_000], "100 deep"),
    ("payload NaN", ["enqueue", "t", '{"a": NaN}'], "payload"),
    ("payload duplicate key", ["enqueue", "t", '{"a": 1, "a": 1}'], "payload"),
    ("dlq search too long", ["dlq", "list", "--search", "s" * 1001], "search"),
    ("dlq show bad id", ["dlq", "show", "1 OR 1=1"], "id"),
    ("queue pause blank", ["queue", "pause", " "], "name"),
    ("queue limit zero", ["queue", "limit", "q", "--max-workers", "0"], "max_workers"),
]


def run(seeded: Seeded, argv: list[str]) -> tuple[int, str]:
    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
    store = seeded.store
    result = runner.invoke(main, [*argv, "--database", store.url, "--schema", store.schema])
    return result.exit_code, result.output


@pytest.mark.parametrize(("argv", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_cli_input_fails_naming_the_field_and_writes_nothing(
    seeded: Seeded, argv: list[str], field: str
) -> None:
    before = seeded.snapshot()
    code, output = run(seeded, argv)
    assert code != 0, output
    assert field.lower() in output.lower(), output
    assert "Traceback" not in output
    assert seeded.snapshot() == before


@pytest.mark.parametrize(
    "text", ["' OR 1=1 --", "%", "_", "<script>alert(1)</script>", "x'; DROP TABLE t; --"]
)
def test_hostile_filter_text_is_matched_literally(seeded: Seeded, text: str) -> None:
    before = seeded.snapshot()
    code, output = run(seeded, ["dlq", "list", "--search", text])
    assert code == 0, output
    assert seeded.dead not in output  # the seeded DLQ job does not match
    code, output = run(seeded, ["dlq", "list", "--queue", text])
    assert code == 0, output
    assert seeded.snapshot() == before

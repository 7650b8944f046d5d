"""The docs cannot drift: the configuration reference equals the generated text (environment
variables included), every doc link resolves, every FailureReason is documented, and defaults
the prose states are the code's."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from chokaq.cli import main
from chokaq.cli.config import (
    CLI_ENVIRONMENT,
    FALLBACK,
    _attribute_docs,
    _classes,
    _describe,
    cli_environment,
    render_reference,
)
from chokaq.models import FailureReason
from chokaq.runtime.maintenance import REST_RATIO

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_committed_configuration_reference_equals_the_generated_text() -> None:
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert committed == render_reference(main), (
        "docs/configuration.md is stale: run chokaq config-reference --output docs/configuration.md"
    )
    result = CliRunner().invoke(
        main, ["config-reference", "--output", str(DOCS / "configuration.md"), "--check"]
    )
    assert result.exit_code == 0, result.output


def test_every_setting_has_a_description() -> None:
    import dataclasses
    import inspect

    for title, _, cls in _classes():
        entries = _attribute_docs(inspect.getdoc(cls) or "")
        for field in dataclasses.fields(cls):
            described = _describe(field.name, entries) or FALLBACK.get(title, {}).get(field.name)
            assert described, f"{title}.{field.name} has no description"


def test_every_failure_reason_is_documented_with_its_value() -> None:
    concepts = (DOCS / "concepts.md").read_text(encoding="utf-8")
    for reason in FailureReason:
        assert re.search(rf"\| {reason.value} \| `{reason.name}` \|", concepts), reason


def test_relative_links_between_docs_resolve() -> None:
    for doc in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", doc.read_text("utf-8")):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_every_environment_variable_a_command_reads_is_described() -> None:
    found = cli_environment(main)
    assert {"CHOKAQ_DATABASE_URL", "CHOKAQ_SCHEMA"} <= set(found)
    assert set(found) == set(CLI_ENVIRONMENT), "describe it in chokaq.cli.config.CLI_ENVIRONMENT"
    assert found["CHOKAQ_SCHEMA"] == ["--schema"]


def test_the_runbook_states_the_purge_rest_default_of_the_code() -> None:
    runbook = (DOCS / "operations.md").read_text(encoding="utf-8")
    [stated] = re.findall(
        r"`--rest R` rests R times as long as each batch took \(default (\S+)\)", runbook
    )
    assert float(stated) == REST_RATIO


def test_getting_started_names_the_commands_without_schema_truthfully() -> None:
    # Every command but these takes --app, --database and --schema (test_cli checks the
    # commands); the prose says so and names these.
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert "Every command that works on a store" in text
    assert "`chokaq demo`" in text.split("Every command that works on a store", 1)[1][:400]

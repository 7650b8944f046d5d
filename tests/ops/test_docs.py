"""The docs cannot drift: the configuration reference equals the generated text, every doc
link resolves, and every FailureReason is documented."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from chokaq.cli import main
from chokaq.cli.config import FALLBACK, _attribute_docs, _classes, _describe, render_reference
from chokaq.models import FailureReason

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_committed_configuration_reference_equals_the_generated_text() -> None:
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert committed == render_reference(), (
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

"""docs/testing.md runs as written: each Python block is run in a fresh namespace in a temporary
directory (top-level ``await`` allowed), and a block that opens with ``# test_<name>.py`` is a
user's test file, run by pytest in a subprocess on SQLite and PostgreSQL."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import PG_URL, require_postgres
from tests.testing.test_plugin import run_pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
SCRIPTS = [b for b in BLOCKS if not re.match(r"# test_\w+\.py\n", b)]
TEST_FILES = [b for b in BLOCKS if re.match(r"# test_\w+\.py\n", b)]


def test_the_doc_has_scripts_and_a_test_file() -> None:
    assert len(SCRIPTS) >= 4 and len(TEST_FILES) == 1


@pytest.mark.parametrize("block", SCRIPTS, ids=[f"block{i}" for i in range(len(SCRIPTS))])
async def test_each_example_runs_as_written(
    block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the examples' sqlite:///jobs.db lands here
    code = compile(block, str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": "doc_example"}
    run = eval(code, namespace)  # a block that awaits compiles to a coroutine
    if run is not None:
        await run
    app = namespace.get("app")
    if app is not None:
        await app.close()


@pytest.mark.postgres
def test_the_example_test_file_passes_on_both_backends(tmp_path: Path) -> None:
    require_postgres()
    [block] = TEST_FILES
    name = block.split("\n", 1)[0].removeprefix("# ").strip()
    (tmp_path / name).write_text(textwrap.dedent(block), encoding="utf-8")
    result = run_pytest(tmp_path, env={"CHOKAQ_TEST_DATABASE_URL": PG_URL})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout

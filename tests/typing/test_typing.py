"""Typed handles, proved with mypy and pyright: every file under ``pass/`` type-checks clean
under both, in strict mode, and every file under ``fail/`` reports, on each line marked
``# E: <code>``, an error (of that code, for mypy, whose codes the marks name), and no error
anywhere else. mypy is the checker of the house; pyright (a dev dependency, through its PyPI
wrapper) is what editors run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
MARK = re.compile(r"#\s*E:\s*([\w-]+)\s*$")
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[\w-]+)\]$")


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the session's runs (tests must not write outside tmp dirs): the
    second run reads chokaq and the standard library's stubs from it instead of checking them
    again. Under xdist one worker runs this module (tests/conftest.py: XDIST_GROUPS), so that
    both runs find the one cache."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    # A file at a time, strict.
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(cache),
            "--no-error-summary",
            "--show-error-codes",
            "--hide-error-context",
            "--no-pretty",
            str(path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        timeout=300,
    )


def errors(result: subprocess.CompletedProcess[str]) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for line in result.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            found.setdefault(int(match["line"]), set()).add(match["code"])
    return found


@pytest.mark.parametrize("path", sorted((HERE / "pass").glob("*.py")), ids=lambda p: p.name)
def test_the_pass_files_type_check(path: Path, mypy_cache: Path) -> None:
    result = mypy(path, mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", sorted((HERE / "fail").glob("*.py")), ids=lambda p: p.name)
def test_each_fail_file_reports_the_marked_errors_and_no_other(
    path: Path, mypy_cache: Path
) -> None:
    expected = {
        number: MARK.search(text)[1]  # type: ignore[index]
        for number, text in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if MARK.search(text)
    }
    assert expected, f"{path.name} marks no expected error"
    result = mypy(path, mypy_cache)
    found = errors(result)
    assert result.returncode == 1, result.stdout + result.stderr
    missing = {n: code for n, code in expected.items() if code not in found.get(n, set())}
    unexpected = {n: codes for n, codes in found.items() if n not in expected}
    assert not missing and not unexpected, (missing, unexpected, result.stdout)


def pyright(path: Path, tmp: Path) -> tuple[int, dict[int, list[str]]]:
    """pyright's exit code and its errors by line, strict, with chokaq's source on its path."""
    config = tmp / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "pythonVersion": "3.11",
                "typeCheckingMode": "strict",
                "extraPaths": [str(SRC)],
                "pythonPath": sys.executable,
            }
        )
    )
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("pyright")),
            "-p",
            str(config),
            "--outputjson",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=300,
    )
    report = json.loads(result.stdout)
    found: dict[int, list[str]] = {}
    for d in report["generalDiagnostics"]:
        if d["severity"] == "error":
            found.setdefault(d["range"]["start"]["line"] + 1, []).append(d["message"])
    return result.returncode, found


@pytest.mark.parametrize("path", sorted((HERE / "pass").glob("*.py")), ids=lambda p: p.name)
def test_the_pass_files_type_check_under_pyright(path: Path, tmp_path: Path) -> None:
    code, found = pyright(path, tmp_path)
    assert (code, found) == (0, {})


@pytest.mark.parametrize("path", sorted((HERE / "fail").glob("*.py")), ids=lambda p: p.name)
def test_each_fail_file_fails_under_pyright_on_the_marked_lines_only(
    path: Path, tmp_path: Path
) -> None:
    marked = {
        number
        for number, text in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if MARK.search(text)
    }
    code, found = pyright(path, tmp_path)
    assert code == 1
    assert set(found) == marked, found

"""What a user installs: the version is written once, and the wheel built from this checkout,
installed in a fresh venv with its dependencies from the package index, runs jobs, migrates a
new SQLite file and serves The Deck (so its SQL files, migrations, templates and static files
are in it).

The wheel test builds from a copy of the sources in ``tmp_path`` (a build in the checkout would
leave ``build/`` and ``*.egg-info`` there) and keeps pip's cache and temporary files in
``tmp_path`` too. It needs ``build`` (the dev extra has it) and the package index; it skips
without ``build`` unless ``CI=true``, where it fails instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import IN_CI

import chokaq
from chokaq.cli import main

from .conftest import free_port

REPO = Path(__file__).resolve().parents[2]
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

SMOKE_APP = """
from chokaq import App

app = App()  # on $CHOKAQ_DATABASE_URL


@app.job(queue="default")
async def double(n: int) -> int:
    return 2 * n
"""


def test_the_version_is_written_once_and_the_cli_prints_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "chokaq.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", chokaq.__version__)
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output == f"chokaq, version {chokaq.__version__}\n"


def test_the_install_instructions_name_this_version_and_no_pypi_release() -> None:
    for doc in (REPO / "README.md", REPO / "docs" / "getting-started.md"):
        text = doc.read_text("utf-8")
        install = text.split("## Install", 1)[1].split("\n## ", 1)[0]
        wheels = re.findall(r"chokaq-([^-]+)-py3-none-any\.whl", install)
        assert wheels and set(wheels) == {chokaq.__version__}, doc.name
        assert "pip install chokaq" not in text and "not on PyPI yet" in install, doc.name


def test_the_licence_is_the_one_pyproject_names() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text("utf-8").startswith("MIT License\n")


def _run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done.stdout + done.stderr


def _environment(tmp: Path) -> dict[str, str]:
    """The environment without this checkout on the path (the installed wheel must be what
    runs), with pip's cache off and every temporary file under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHOKAQ_", "PYTHON"))}
    (tmp / "t").mkdir()
    return {**env, "PIP_NO_CACHE_DIR": "1", "TMPDIR": str(tmp / "t"), "NO_COLOR": "1"}


def _deck_serves(chokaq_bin: Path, url: str, cwd: Path, env: dict[str, str]) -> None:
    """``chokaq deck`` from the venv answers its page, its style sheet and every module of its
    script."""
    port = free_port()
    with open(cwd / "deck.log", "wb") as log:
        proc = subprocess.Popen(
            [str(chokaq_bin), "deck", "--database", url, "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (cwd / "deck.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    html = page.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"The Deck did not answer: {(cwd / 'deck.log').read_text()}")
                time.sleep(0.2)
        assert "<html" in html.lower() and "/static/" in html
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/deck.css", timeout=5) as css:
            assert css.status == 200 and css.read()
        # The page's script is a folder of modules (package data needs a glob for it).
        for module in sorted((REPO / "src" / "chokaq" / "deck" / "static" / "js").glob("*.js")):
            served = f"http://127.0.0.1:{port}/static/js/{module.name}"
            with urllib.request.urlopen(served, timeout=5) as js:
                assert js.status == 200 and js.read() == module.read_bytes(), module.name
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_built_wheel_installs_in_a_fresh_venv_and_runs_jobs(tmp_path: Path) -> None:
    if importlib.util.find_spec("build") is None:
        if IN_CI:
            pytest.fail("CI=true but the build package is missing (pip install -e '.[dev]')")
        pytest.skip("the build package is missing (pip install -e '.[dev]')")
    env = _environment(tmp_path)
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"),
    )
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
        cwd=tmp_path,
        env=env,
    )
    [wheel] = dist.glob("*.whl")
    assert wheel.name == f"chokaq-{chokaq.__version__}-py3-none-any.whl"

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
    _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        cwd=tmp_path,
        env=env,
    )
    bin_chokaq = venv / "bin" / "chokaq"

    work = tmp_path / "work"
    work.mkdir()
    (work / "smoke.py").write_text(SMOKE_APP, encoding="utf-8")
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import chokaq; print(chokaq.__file__)"],
        cwd=work,
        env=env,
    )
    assert where.strip().startswith(str(venv)), where
    assert _run([str(bin_chokaq), "--version"], cwd=work, env=env) == (
        f"chokaq, version {chokaq.__version__}\n"
    )

    fresh = f"sqlite:///{work / 'fresh.db'}"
    assert "applied migrations" in _run(
        [str(bin_chokaq), "migrate", "--database", fresh], cwd=work, env=env
    )

    jobs = {**env, "CHOKAQ_DATABASE_URL": f"sqlite:///{work / 'jobs.db'}"}
    enqueued = _run(
        [str(bin_chokaq), "enqueue", "double", '{"n": 21}', "--app", "smoke:app"],
        cwd=work,
        env=jobs,
    )
    [job_id] = re.findall(UUID, enqueued)
    _run([str(bin_chokaq), "worker", "--app", "smoke:app", "--burst"], cwd=work, env=jobs)
    waited = _run(
        [str(bin_chokaq), "job", "wait", job_id, "--app", "smoke:app"], cwd=work, env=jobs
    )
    assert waited.strip() == "42", waited

    _deck_serves(bin_chokaq, fresh, work, env)

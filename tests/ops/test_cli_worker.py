"""``chokaq worker --queues`` as an operator types it, in a real subprocess: a list that names no
queue, or an empty or unusable name in it, is a usage error naming ``--queues`` before anything
is opened (``--queues ''`` ran the app's own queues without a word); names are trimmed around
the commas, and a supervised worker's children get the same list."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import Store

from chokaq.cli.worker import _child_argv

from .test_cli_jobs import APP, REPO, chokaq, enqueue, show


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("", "'' names no queue"),
        (",", "',' names no queue"),
        (" , ", "' , ' names no queue"),
        ("mail,,default", "'mail,,default': name 2 of 3 is empty"),
        ("mail,", "'mail,': name 2 of 2 is empty"),
        ("a\tb", "'a\\tb' must not contain control characters"),
        ("q" * 256, "must be at most 255 characters"),
    ],
    ids=["empty", "comma", "blanks", "empty-item", "trailing-comma", "control", "long"],
)
def test_an_empty_or_bad_queue_list_is_a_usage_error(tmp_path: Path, value: str, said: str) -> None:
    database = tmp_path / "never.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO)))}
    env.pop("CHOKAQ_DATABASE_URL", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chokaq",
            "worker",
            "--app",
            APP,
            "--burst",
            "--queues",
            value,
            "--database",
            f"sqlite:///{database}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "Invalid value for '--queues'" in done.stderr and said in done.stderr, done.stderr
    assert not database.exists()  # refused before a database is opened


def test_the_queues_named_are_served_trimmed_and_only_they(store: Store) -> None:
    mail, other = enqueue(
        store, lambda h: [h["flaky"].prepare(n=1, queue="mail"), h["ok"].prepare(n=2)]
    )
    chokaq(store, "worker", "--app", APP, "--burst", "--queues", " mail , nobody")
    assert show(store, mail)["state"] == "failed"  # flaky: ran twice, then the DLQ
    assert show(store, other)["state"] == "pending"  # queue default: not served


def test_a_supervised_workers_children_get_the_parsed_list() -> None:
    params = {
        "app_spec": APP,
        "schema": None,
        "queues": ("mail", "default"),
        "concurrency": None,
        "prefetch": None,
        "metrics_host": None,
        "max_jobs_per_child": None,
        "max_memory_per_child": None,
        "burst": True,
        "do_migrate": False,
        "json_logs": False,
        "otel": False,
    }
    argv = _child_argv(params, None, 0)
    assert argv[argv.index("--queues") + 1] == "mail,default"

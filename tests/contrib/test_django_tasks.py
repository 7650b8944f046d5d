"""chokaq.contrib.django.tasks: Django's task framework on chokaq, through the example shop
(examples/django_shop) as real processes, on Django 5.2 with the django-tasks backport (this
Python) and on Django 6 (Python 3.12, .venv-django6), each on SQLite and PostgreSQL: a view
enqueues three tasks inside atomic() (rolled back: nothing runs; committed: all three run),
``manage.py chokaq_worker`` runs them, and their results read as Django documents them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.contrib.djangosite import (
    SHOP,
    chokaq_rows,
    django_rows,
    manage,
    pythons,
    runserver,
    site_env,
    wait_for,
    worker,
)

CHECKS = Path(__file__).with_name("django_tasks_checks.py")
STORES = [
    pytest.param("sqlite", marks=pytest.mark.slow),
    pytest.param("postgres", marks=pytest.mark.postgres),
]
DJANGOS = ["5", "6"]
RECEIPT, PRICE, REFUND = (
    f"shop.tasks.{name}" for name in ("send_receipt_task", "price_order", "refund_order")
)


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=DJANGOS)
def python(request: pytest.FixtureRequest) -> str:
    """The interpreter of one Django, checked to be that Django."""
    python = pythons()[request.param]
    major = subprocess.run(
        [python, "-c", "import django; print(django.VERSION[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert major == request.param, f"{python} runs Django {major}, not {request.param}"
    return python


def _results(base: str, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        name: httpx.get(f"{base}/tasks/{name}/{result_id}/").raise_for_status().json()
        for name, result_id in ids.items()
    }


def test_tasks_enqueued_in_a_view_run_on_the_worker_and_read_back_as_django_says(
    store: str, python: str, tmp_path: Path
) -> None:
    with site_env(store, tmp_path) as env:
        manage(env, "migrate", "--noinput", python=python)
        manage(env, "chokaq_migrate", python=python)
        with runserver(env, tmp_path / "runserver.log", python=python) as base:
            book = httpx.post(f"{base}/tasks/orders/", params={"item": "book"})
            assert book.status_code == 200, book.text
            failed = httpx.post(f"{base}/tasks/orders/", params={"item": "fail"})
            assert failed.status_code == 500  # raised inside atomic(): order and tasks roll back
            ids = book.json()["results"]
            before = _results(base, ids)
            manage(env, "chokaq_worker", "--burst", python=python)
            after = _results(base, ids)
        order = book.json()["order"]
        assert {r["status"] for r in before.values()} == {"READY"}
        assert {name: r["worker_ids"] for name, r in before.items()} == {key: [] for key in ids}
        receipt, price, refund = (
            after[name] for name in ("send_receipt_task", "price_order", "refund_order")
        )
        assert receipt["status"] == "SUCCESSFUL"
        assert receipt["return_value"] == {"order": order, "attempt": 1}  # TaskContext.attempt
        assert (receipt["queue"], receipt["priority"]) == ("receipts", 20)
        assert price["status"] == "SUCCESSFUL" and price["return_value"] == 400  # async task
        assert refund["status"] == "FAILED" and refund["attempts"] == 1  # no retries
        [error] = refund["errors"]
        assert error["class"] == "shop.tasks.OutOfStock"
        assert error["traceback"].startswith("Traceback (most recent call last):")
        assert "raise OutOfStock(" in error["traceback"]
        for result in after.values():
            assert len(result["worker_ids"]) == 1 and result["worker_ids"][0]
            enqueued, started, last, finished = result["times"]
            assert enqueued <= started == last <= finished
        # The worker ran the committed request's three tasks, under their dotted names, and
        # the rolled-back request wrote neither its order nor its tasks.
        assert django_rows(env, "SELECT item, receipt_sent FROM shop_order") == [("book", True)]
        assert chokaq_rows(env, "jobs_hot", "type") == []
        assert chokaq_rows(env, "jobs_archive", "type, queue, priority") == [
            (PRICE, "default", 10),
            (RECEIPT, "receipts", 30),
        ]
        assert chokaq_rows(env, "jobs_dlq", "type, queue, priority") == [(REFUND, "default", -40)]
        # The CLI names the failed task by its dotted path, with its exception's class.
        dlq = subprocess.run(
            [python, "-m", "chokaq", "dlq", "list", "--app", "shop.jobs:app", "--json"],
            cwd=SHOP,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        [listed] = json.loads(dlq.stdout)
        assert listed["type"] == REFUND and "shop.tasks.OutOfStock" in listed["error"], listed
        events = django_rows(env, "SELECT signal, status FROM shop_taskevent")
        assert sorted(events) == sorted(
            [("enqueued", "READY")] * 3
            + [("started", "RUNNING")] * 3
            + [("finished", "SUCCESSFUL")] * 2
            + [("finished", "FAILED")]
        )


def _settled(env: dict[str, str]) -> dict[str, Any] | None:
    """The hot jobs' last errors once price_order has run and sneaky.boom was released."""
    hot = dict(chokaq_rows(env, "jobs_hot", "type, last_error"))
    released = (hot.get("sneaky.boom") or "").startswith("NoHandler since ")
    return hot if released and PRICE not in hot else None


def test_bad_input_is_refused_by_field_and_the_worker_runs_only_installed_apps_tasks(
    store: str, python: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "imported"
    # A module no installed app holds: the worker must never import it, whatever a job says.
    (outside / "sneaky.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    with site_env(store, tmp_path) as env:
        env["PYTHONPATH"] += f":{outside}"
        manage(env, "migrate", "--noinput", python=python)
        manage(env, "chokaq_migrate", python=python)
        env["CHECKS_OUTSIDE"] = str(outside)
        done = manage(env, "shell", "-v", "0", "-c", CHECKS.read_text(), python=python)
        checks = json.loads(done.stdout.strip().splitlines()[-1])
        before = chokaq_rows(env, "jobs_hot", "type, priority, scheduled_at")
        processes = manage(env, "chokaq_worker", "--processes", "2", python=python, check=False)
        with worker(env, tmp_path / "worker.log", python=python):
            hot = wait_for(
                lambda: _settled(env), "the worker ran price_order and released sneaky.boom"
            )
        archived = chokaq_rows(env, "jobs_archive", "type")
    assert checks["refused"] == {
        "queue_name": ["queue_name", True, True],
        "queue": ["queue_name", True, True],
        "priority": ["priority", True, True],
        "delay": ["run_after", True, True],
        "run_after": ["run_after", True, True],
        "payload": ["payload", True, True],
        "kwargs": ["kwargs", True, True],
    }
    assert checks["backend"] == {
        "unknown": "TASKS['x']['OPTIONS']: unknown option 'retries' "
        "(known: app, database, max_attempts)",
        "max_attempts": "TASKS['x'][OPTIONS['max_attempts']]: "
        "must be an integer between 1 and 1000",
        "app": "TASKS['x']['OPTIONS']['app']: must name your App as \"module:attribute\" "
        "(for example \"myproject.jobs:app\"), not 'shop.jobs'",
        "database": "TASKS['x']['OPTIONS']['database']: must be an alias of "
        "settings.DATABASES ('default'), not 'replica'",
        "queues": "TASKS['x'][QUEUES]: must not start or end with whitespace",
    }
    assert checks["check"] == [[["chokaq.E001", True]], []]  # manage.py check's
    assert checks["get_result"] == {"malformed": [True, True], "missing": [True, False]}
    assert checks["deferred"] == ["READY", "READY"]  # run_after a datetime, and a timedelta
    assert checks["async"] == ["READY", "READY", True]
    # On PostgreSQL the job is written in the caller's transaction (seen inside it); on SQLite
    # it waits for the commit. Either way a rollback leaves no task.
    seen = 1 if store == "postgres" else None
    assert checks["rolled_back"] == [seen, [True, False]]
    assert checks["served"] == [PRICE, REFUND, RECEIPT]  # not outside.odd_job
    # Nothing refused was written: the deferred task, the async one and the raw job only.
    assert [row[:2] for row in before] == [
        (PRICE, 10),
        (RECEIPT, 30),
        (RECEIPT, 30),
        ("sneaky.boom", 10),
    ]
    assert not marker.exists()
    # --processes would start workers without Django: refused, rather than tasks left unrun.
    assert processes.returncode != 0
    assert "would not run this project's 3 Django tasks" in processes.stderr
    assert archived == [(PRICE,)]
    errors = hot
    assert errors.keys() == {RECEIPT, "sneaky.boom"}
    assert errors[RECEIPT] is None  # deferred: still waiting for its time
    assert errors["sneaky.boom"].startswith("NoHandler since "), errors


ENQUEUE_REFUND = """
from shop.models import Order
from shop.tasks import refund_order
print(refund_order.enqueue(order_id=Order.objects.create(item="mug").pk).id)
"""
READ_REFUND = """
import json
from shop.tasks import refund_order
result = refund_order.get_result({result_id!r})
print(json.dumps([str(result.status), result.attempts, len(set(result.worker_ids)),
                  [e.exception_class_path for e in result.errors]]))
"""


def test_a_task_that_raises_runs_again_only_when_the_options_ask(
    store: str, python: str, tmp_path: Path
) -> None:
    with site_env(store, tmp_path) as env:
        env["TASK_ATTEMPTS"] = "2"
        manage(env, "migrate", "--noinput", python=python)
        manage(env, "chokaq_migrate", python=python)
        shell = ("shell", "-v", "0", "-c")
        result_id = manage(env, *shell, ENQUEUE_REFUND, python=python).stdout.split()[-1]
        manage(env, "chokaq_worker", "--burst", python=python)  # waits for the retry's time
        read = READ_REFUND.format(result_id=result_id)
        status = json.loads(manage(env, *shell, read, python=python).stdout.splitlines()[-1])
        events = django_rows(env, "SELECT signal, status FROM shop_taskevent")
    assert status == ["FAILED", 2, 1, ["shop.tasks.OutOfStock"] * 2]
    assert sorted(events) == sorted(
        [("enqueued", "READY")] + [("started", "RUNNING"), ("finished", "FAILED")] * 2
    )

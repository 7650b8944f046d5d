"""``chokaq job ...`` and ``chokaq workflow ...`` as an operator runs them: the real CLI in a
subprocess against both backends, with jobs finished by real workers (``chokaq worker``
subprocesses). Showing a job in each state with its result, workflow and relatives (and the
``--json`` shapes), waiting for one (a result, a failure, a timeout, a result not kept, and a
wait that a worker ends while it waits), cancelling jobs, and a workflow shown and cancelled."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Raw, Store

from chokaq.models import NewJob

from .conftest import poll
from .ops_app import build

REPO = Path(__file__).resolve().parents[2]
APP = "tests.ops.ops_app:app"
UNKNOWN = "01890000-0000-7000-8000-000000000000"


def environment(store: Store) -> dict[str, str]:
    return {
        **os.environ,
        "CHOKAQ_DATABASE_URL": store.url,
        "CHOKAQ_SCHEMA": store.schema,
        "COLUMNS": "250",
        "NO_COLOR": "1",
        # This checkout's sources first: an installed chokaq must not be what runs.
        "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO))),
    }


def argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "chokaq", *args]


def chokaq(
    store: Store, *args: str, expect: int | None = 0, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``chokaq ARGS`` on the store (from the environment) and check its exit code."""
    done = subprocess.run(
        argv(*args),
        cwd=REPO,
        env=environment(store),
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if expect is not None:
        assert done.returncode == expect, (done.returncode, done.stdout, done.stderr)
    return done


def burst(store: Store) -> None:
    """Run everything due to its end with a burst worker subprocess."""
    chokaq(store, "worker", "--app", APP, "--burst")


def enqueue(store: Store, make: Callable[[dict[str, Any]], list[NewJob]]) -> list[str]:
    """Enqueue ``make(handlers)`` (prepared jobs, ``after=`` between them) in one batch."""

    async def run() -> list[str]:
        app = build(store.url, store.schema)
        jobs = make(app.handlers)
        try:
            await app.enqueue_many(jobs)
        finally:
            await app.close()
        return [str(job.id) for job in jobs]

    return asyncio.run(run())


def show(store: Store, job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(chokaq(store, "job", "show", job_id, "--json").stdout)
    return found


def field(output: str, name: str) -> str:
    """The value of one row of ``job show``'s table."""
    line = next(line for line in output.splitlines() if line.startswith(f"│ {name} "))
    return line.split("│")[2].strip()


@pytest.fixture
def raw_store(store: Store) -> Iterator[Callable[[], Raw]]:
    opened: list[Raw] = []

    def connect() -> Raw:
        opened.append(Raw(store.url, store.schema))
        return opened[-1]

    yield connect
    for conn in opened:
        conn.close()


def test_show_a_pending_job_then_its_result_and_wait_prints_it(store: Store) -> None:
    [job_id] = enqueue(store, lambda h: [h["summary"].prepare(n=3, tags=["nightly"])])
    pending = chokaq(store, "job", "show", job_id).stdout
    assert f"job {job_id}" in pending
    assert (field(pending, "pillar"), field(pending, "state")) == ("hot", "pending")
    assert (field(pending, "type"), field(pending, "queue")) == ("summary", "default")
    assert field(pending, "tags") == "nightly" and field(pending, "attempts") == "0"
    assert '{"n":3}' in pending.replace(" ", "") and "\nresult\n" not in pending
    shape = show(store, job_id)
    assert (shape["id"], shape["pillar"], shape["state"], shape["status"]) == (
        job_id,
        "hot",
        "pending",
        "pending",
    )
    assert shape["payload"] == {"n": 3} and shape["tags"] == ["nightly"]
    assert shape["result"] is None and shape["parents"] == [] and shape["workflow_id"] is None

    burst(store)
    value = {"n": 3, "squares": [0, 1, 4], "label": "summary 3"}
    done = chokaq(store, "job", "show", job_id).stdout
    assert (field(done, "pillar"), field(done, "state")) == ("archive", "succeeded")
    assert field(done, "attempts") == "1" and field(done, "finished").endswith("UTC")
    result = done.split("\nresult\n", 1)[1]
    assert json.loads(result) == value and '\n  "squares": [' in result  # pretty
    shape = show(store, job_id)
    assert (shape["pillar"], shape["state"], shape["result"]) == ("archive", "succeeded", value)
    assert shape["result_error"] is None and shape["finished_at"].startswith("20")

    waited = chokaq(store, "job", "wait", job_id)
    assert json.loads(waited.stdout) == value and waited.stderr == ""
    line = json.loads(chokaq(store, "job", "wait", job_id, "--json").stdout)
    assert line == {
        "id": job_id,
        "outcome": "succeeded",
        "state": "succeeded",
        "result": value,
        "result_error": None,
        "failure_reason": None,
        "error": None,
        "blocked_by": None,
    }


def test_the_worker_takes_schema_as_every_store_command_does(store: Store) -> None:
    # Without CHOKAQ_SCHEMA the ops app is on the default schema; --schema points the worker
    # at the store's own (on PostgreSQL a private schema, so a worker that ignored the option
    # would find nothing to run there).
    [job_id] = enqueue(store, lambda h: [h["summary"].prepare(n=2)])
    env = {k: v for k, v in environment(store).items() if k != "CHOKAQ_SCHEMA"}
    done = subprocess.run(
        argv("worker", "--app", APP, "--schema", store.schema, "--burst"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert (show(store, job_id)["pillar"], show(store, job_id)["state"]) == (
        "archive",
        "succeeded",
    )


def test_show_says_when_a_pending_job_expires(store: Store) -> None:
    [job_id] = enqueue(
        store, lambda h: [h["summary"].options(expires_after_seconds=600).prepare(n=1)]
    )
    shown = chokaq(store, "job", "show", job_id).stdout
    assert field(shown, "expires").endswith("UTC (not started by then: DLQ)")
    shape = show(store, job_id)
    created = datetime.fromisoformat(shape["created_at"])
    expires = datetime.fromisoformat(shape["expires_at"])
    assert (expires - created).total_seconds() == pytest.approx(600)


def test_a_failed_job_shows_its_error_and_wait_exits_1(store: Store) -> None:
    [job_id] = enqueue(store, lambda h: [h["poison"].prepare(n=7)])
    burst(store)
    shown = chokaq(store, "job", "show", job_id).stdout
    assert (field(shown, "pillar"), field(shown, "state")) == ("dlq", "failed (fatal_error)")
    assert "\nerror\nchokaq.errors.FatalError: poison 7" in shown and "\nresult\n" not in shown
    shape = show(store, job_id)
    assert (shape["state"], shape["failure_reason"]) == ("failed", "fatal_error")
    assert shape["error"].startswith("chokaq.errors.FatalError: poison 7")

    failed = chokaq(store, "job", "wait", job_id, expect=1)
    assert failed.stdout == ""
    assert f"job {job_id} failed: fatal_error" in failed.stderr
    assert "FatalError: poison 7" in failed.stderr
    line = json.loads(chokaq(store, "job", "wait", job_id, "--json", expect=1).stdout)
    assert (line["outcome"], line["failure_reason"]) == ("failed", "fatal_error")
    assert line["error"].startswith("chokaq.errors.FatalError: poison 7")


def test_a_waiting_job_shows_its_parents_then_blocked_and_wait_exits_5(store: Store) -> None:
    def chain(h: dict[str, Any]) -> list[NewJob]:
        first = h["ok"].prepare(n=1)
        poison = h["poison"].prepare(n=2)
        last = h["summary"].prepare(n=2, after=[first, poison])
        return [first, poison, last]

    first, poison, last = enqueue(store, chain)
    waiting = chokaq(store, "job", "show", last).stdout
    assert field(waiting, "state") == "waiting: waiting on 2 of 2 parent(s)"
    assert field(waiting, "workflow") == first
    parents = waiting.split("parents (2)", 1)[1]
    assert first in parents and poison in parents and "pending" in parents
    shape = show(store, last)
    assert (shape["state"], shape["status"], shape["parents_left"]) == ("waiting", "waiting", 2)
    assert [(p["id"], p["state"]) for p in shape["parents"]] == [
        (first, "pending"),
        (poison, "pending"),
    ]
    parent = show(store, first)
    assert parent["workflow_id"] == first and parent["children"] == [
        {
            "id": last,
            "type": "summary",
            "state": "waiting",
            "failure_reason": None,
            "any_outcome": False,
        }
    ]
    assert field(waiting, "runs after") == "every parent succeeded"

    burst(store)
    blocked = chokaq(store, "job", "show", last).stdout
    assert field(blocked, "state").startswith("blocked: waiting on 1 of 2 parent(s); parent ")
    assert poison in field(blocked, "state")
    shape = show(store, last)
    assert (shape["state"], shape["parents_left"]) == ("blocked", 1)
    assert {p["id"]: (p["state"], p["failure_reason"]) for p in shape["parents"]} == {
        first: ("succeeded", None),
        poison: ("failed", "fatal_error"),
    }
    children = chokaq(store, "job", "show", poison).stdout.split("children (1)", 1)[1]
    assert last in children and "blocked" in children  # waiting on a job in the DLQ

    # A wait without --timeout says the job is blocked instead of waiting for ever.
    stuck = chokaq(store, "job", "wait", last, expect=5)
    assert stuck.stdout == ""
    assert f"job {last} is blocked: it waits on job {poison}, which is in the DLQ" in stuck.stderr
    line = json.loads(chokaq(store, "job", "wait", last, "--json", expect=5).stdout)
    assert (line["outcome"], line["blocked_by"], line["failure_reason"]) == (
        "blocked",
        poison,
        "fatal_error",
    )


def test_a_job_on_any_outcome_says_so_and_runs_after_a_failed_parent(store: Store) -> None:
    def chord(h: dict[str, Any]) -> list[NewJob]:
        first = h["ok"].prepare(n=1)
        poison = h["poison"].prepare(n=2)
        last = h["summary"].options(after=[first, poison], after_outcome="any").prepare(n=2)
        return [first, poison, last]

    first, poison, last = enqueue(store, chord)
    waiting = chokaq(store, "job", "show", last).stdout
    assert field(waiting, "state") == (
        "waiting: waiting on 2 of 2 parent(s) to finish, on any outcome (succeeded or failed)"
    )
    assert field(waiting, "runs after") == (
        "every parent finished, on any outcome (succeeded or failed)"
    )
    assert show(store, last)["after_outcome"] == "any"
    flow = chokaq(store, "workflow", "show", first).stdout
    assert "#1, #2 (any outcome)" in flow or "#2, #1 (any outcome)" in flow
    shape = json.loads(chokaq(store, "workflow", "show", first, "--json").stdout)
    assert {j["id"]: j["after_outcome"] for j in shape["jobs"]}[last] == "any"

    burst(store)  # poison fails, and the last job runs all the same
    assert show(store, poison)["state"] == "failed"
    assert show(store, last)["state"] == "succeeded"


def test_wait_returns_the_result_when_a_worker_finishes_the_job(
    store: Store, raw_store: Callable[[], Raw], tmp_path: Path
) -> None:
    def pair(h: dict[str, Any]) -> list[NewJob]:
        parent = h["ok"].prepare(n=1)
        return [parent, h["summary"].prepare(n=2, after=[parent])]

    _, child = enqueue(store, pair)
    env = environment(store)
    waiter = subprocess.Popen(
        argv("job", "wait", child, "--timeout", "90"),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    worker: subprocess.Popen[bytes] | None = None
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115
    try:
        # The wait marks the job as waited on before it sleeps: from then on, the statement
        # that moves the job out of hot notifies it. The worker starts only once it has.
        raw = raw_store()
        poll(lambda: raw.rows("SELECT waited FROM {jobs_hot} WHERE id = ?", (child,))[0][0])
        worker = subprocess.Popen(
            argv("worker", "--app", APP), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        out, err = waiter.communicate(timeout=90)
    finally:
        for proc in (waiter, worker):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
    assert waiter.returncode == 0, (out, err, (tmp_path / "worker.log").read_text())
    assert json.loads(out) == {"n": 2, "squares": [0, 1], "label": "summary 2"}


def test_wait_times_out_with_124_naming_where_the_job_stands(store: Store) -> None:
    [job_id] = enqueue(store, lambda h: [h["ok"].prepare(n=1, queue="nobody")])
    late = chokaq(store, "job", "wait", job_id, "--timeout", "0.3", expect=124)
    assert late.stdout == ""
    assert f"job {job_id} has not finished within 0.3 s; it is pending" in late.stderr
    line = json.loads(
        chokaq(store, "job", "wait", job_id, "--timeout", "0", "--json", expect=124).stdout
    )
    assert (line["outcome"], line["state"], line["result"]) == ("timeout", "pending", None)


def test_a_result_that_was_not_kept_is_said_so_and_wait_exits_4(store: Store) -> None:
    [job_id] = enqueue(store, lambda h: [h["opaque"].prepare()])
    burst(store)
    shown = chokaq(store, "job", "show", job_id).stdout
    assert field(shown, "state") == "succeeded"
    assert "\nresult\nnot kept: not JSON-serializable" in shown
    shape = show(store, job_id)
    assert shape["result"] is None and "not JSON-serializable" in shape["result_error"]
    waited = chokaq(store, "job", "wait", job_id, expect=4)
    assert waited.stdout == "" and "its result was not kept: not JSON" in waited.stderr
    line = json.loads(chokaq(store, "job", "wait", job_id, "--json", expect=4).stdout)
    assert line["outcome"] == "succeeded" and "not JSON" in line["result_error"]


def test_an_unknown_job_or_workflow_is_its_own_exit_code(store: Store) -> None:
    chokaq(store, "migrate", "--schema", store.schema)  # (migrate reads no CHOKAQ_SCHEMA)
    missing = chokaq(store, "job", "show", UNKNOWN, expect=1)
    assert missing.stderr.strip() == (
        f"error: no job {UNKNOWN} in hot, archive or DLQ (never enqueued, or purged)"
    )
    gone = chokaq(store, "job", "wait", UNKNOWN, expect=3)
    assert gone.stderr.strip() == f"error: job {UNKNOWN} is not stored (never enqueued, or purged)"
    line = json.loads(chokaq(store, "job", "wait", UNKNOWN, "--json", expect=3).stdout)
    assert (line["id"], line["outcome"]) == (UNKNOWN, "not_found")
    nowhere = chokaq(store, "workflow", "show", UNKNOWN, expect=1)
    assert nowhere.stderr.startswith(f"error: no workflow and no job {UNKNOWN}")


@pytest.mark.parametrize(
    "args",
    [
        ["job", "show", "42"],
        ["job", "wait", "not-an-id"],
        ["job", "cancel", UNKNOWN, "nope"],
        ["workflow", "show", "0190F1C2"],
        ["workflow", "cancel", "x", "--yes"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_a_bad_id_is_a_usage_error_naming_the_argument(tmp_path: Path, args: list[str]) -> None:
    # Refused before a database is opened: the file named is never created.
    database = tmp_path / "never.db"
    done = subprocess.run(
        argv(*args, "--database", f"sqlite:///{database}"),
        cwd=REPO,
        env=environment(Store("sqlite", f"sqlite:///{database}", "chokaq")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "Invalid value for 'ID':" in done.stderr and "is not a job id" in done.stderr
    assert not database.exists()


def test_a_bad_timeout_is_a_usage_error(tmp_path: Path) -> None:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'never.db'}", "chokaq")
    for value, words in (("-1", "is not in the range x>=0"), ("nan", "finite number")):
        done = chokaq(store, "job", "wait", UNKNOWN, "--timeout", value, expect=2)
        assert "'--timeout'" in done.stderr and words in done.stderr, done.stderr


def test_cancel_names_what_it_cancelled_and_why_the_rest_was_not(store: Store) -> None:
    [finished] = enqueue(store, lambda h: [h["ok"].prepare(n=1)])
    burst(store)
    [pending] = enqueue(store, lambda h: [h["ok"].prepare(n=2, queue="nobody")])
    done = chokaq(
        store,
        "job",
        "cancel",
        pending,
        finished,
        UNKNOWN,
        pending.upper(),
        "--actor",
        "alice",
        expect=1,  # some were not cancelled: exit 1, as retry and run-now
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "cancelled 1, cancel requested 0, not cancelled 2"
    assert f"  cancelled (now in the DLQ): {pending}" in lines
    assert f"  not cancelled, already succeeded: {finished}" in lines
    assert f"  not cancelled, not stored (never enqueued, or purged): {UNKNOWN}" in lines
    assert "admin_completed" in done.stderr and "jobs.cancel" in done.stderr
    shape = show(store, pending)
    assert (shape["state"], shape["failure_reason"], shape["cancelled_by"]) == (
        "failed",
        "cancelled",
        "alice",
    )
    again = chokaq(store, "job", "cancel", pending, expect=1).stdout
    assert f"not cancelled, already failed (cancelled): {pending}" in again


def test_cancel_of_an_unknown_id_exits_1_as_show_retry_and_run_now_do(store: Store) -> None:
    # Issue 32: job cancel <unknown id> exited 0; job show, retry and run-now exit 1.
    [pending] = enqueue(store, lambda h: [h["ok"].prepare(n=2, queue="nobody")])
    for command in (["cancel"], ["retry"], ["run-now"], ["show"]):
        done = chokaq(store, "job", *command, UNKNOWN, expect=1)
        assert UNKNOWN in done.stdout + done.stderr, (command, done)
        assert "never enqueued, or purged" in done.stdout + done.stderr, (command, done)
    done = chokaq(store, "job", "cancel", pending)  # all cancelled: 0
    assert done.stdout.splitlines()[0] == "cancelled 1, cancel requested 0, not cancelled 0"


def test_workflow_show_and_cancel(store: Store) -> None:
    def workflow(h: dict[str, Any]) -> list[NewJob]:
        first = h["ok"].prepare(n=1)
        poison = h["poison"].prepare(n=2, after=[first])
        after_poison = h["summary"].prepare(n=3, after=[poison])
        slow_lane = h["ok"].prepare(n=4, queue="nobody", after=[first])
        return [first, poison, after_poison, slow_lane]

    first, poison, blocked, waiting = enqueue(store, workflow)
    burst(store)
    out = chokaq(store, "workflow", "show", first).stdout
    title = out.splitlines()[0]
    assert f"workflow {first} (in progress): 4 job(s): " in title
    assert "1 blocked, 1 failed, 1 pending, 1 succeeded" in title
    rows = {line.split("│")[2].strip(): line for line in out.splitlines() if "│" in line}
    assert "succeeded" in rows[first] and "failed (fatal_error)" in rows[poison]
    assert "blocked" in rows[blocked] and "#2" in rows[blocked]  # the poison job's number
    assert "pending" in rows[waiting] and "#1" in rows[waiting]
    assert "\nerrors\n  #2 chokaq.errors.FatalError: poison 2" in out

    shape = json.loads(chokaq(store, "workflow", "show", first, "--json").stdout)
    assert (shape["id"], shape["finished"]) == (first, False)
    assert shape["counts"] == {"succeeded": 1, "failed": 1, "blocked": 1, "pending": 1}
    assert [job["id"] for job in shape["jobs"]][:2] == [first, poison]  # parents first
    jobs = {job["id"]: job for job in shape["jobs"]}
    assert jobs[blocked] == {
        "id": blocked,
        "type": "summary",
        "queue": "default",
        "state": "blocked",
        "parents": [poison],
        "after_outcome": "success",
        "failure_reason": None,
        "error": None,
    }
    assert jobs[poison]["failure_reason"] == "fatal_error"
    via = chokaq(store, "workflow", "show", blocked, "--json")
    assert json.loads(via.stdout)["id"] == first
    assert via.stderr.strip() == f"job {blocked} is in workflow {first}"

    refused = chokaq(store, "workflow", "cancel", blocked, "--yes", expect=1)
    assert f"it is in workflow {first} (chokaq workflow cancel {first})" in refused.stderr
    declined = chokaq(store, "workflow", "cancel", first, input="n\n", expect=1)
    assert "cancel the 2 job(s) of it that have not finished?" in declined.stderr
    assert "nothing done" in declined.stdout
    assert show(store, waiting)["state"] == "pending"

    done = chokaq(store, "workflow", "cancel", first, "--actor", "bob", input="y\n")
    assert "cancelled 2, cancel requested 0, not cancelled 0" in done.stdout
    assert "admin_completed" in done.stderr and "workflows.cancel" in done.stderr
    after = json.loads(chokaq(store, "workflow", "show", first, "--json").stdout)
    assert after["finished"] is True and after["counts"] == {"succeeded": 1, "failed": 3}
    reasons = {job["id"]: job["failure_reason"] for job in after["jobs"]}
    assert (reasons[blocked], reasons[waiting]) == ("dependency_failed", "cancelled")
    nothing = chokaq(store, "workflow", "cancel", first, "--yes").stdout
    assert "nothing to cancel" in nothing


def test_job_list_filters_a_pillar_and_prints_json(store: Store) -> None:
    ids = enqueue(store, lambda h: [h["ok"].prepare(n=i) for i in range(3)])
    [bad] = enqueue(store, lambda h: [h["poison"].prepare(n=1)])
    listed = chokaq(store, "job", "list").stdout
    assert all(job_id in listed for job_id in [*ids, bad]) and "active: 4 of 4" in listed
    shape = json.loads(chokaq(store, "job", "list", "--type", "ok", "--json").stdout)
    assert sorted(j["id"] for j in shape) == sorted(ids)
    assert {(j["state"], j["pillar"], j["queue"]) for j in shape} == {("pending", "hot", "default")}
    burst(store)
    failed = json.loads(chokaq(store, "job", "list", "--in", "dlq", "--json").stdout)
    assert [j["id"] for j in failed] == [bad] and failed[0]["failure_reason"] is not None
    done = json.loads(
        chokaq(store, "job", "list", "--in", "archive", "--limit", "2", "--json").stdout
    )
    assert len(done) == 2 and {j["state"] for j in done} == {"succeeded"}
    refused = chokaq(store, "job", "list", "--reason", "timeout", expect=2)
    assert "--reason applies to failed jobs only" in refused.stderr


def test_job_retry_puts_failed_jobs_back_and_names_the_others(store: Store) -> None:
    [bad] = enqueue(store, lambda h: [h["poison"].prepare(n=1)])
    [fine] = enqueue(store, lambda h: [h["ok"].prepare(n=1)])
    burst(store)
    done = chokaq(store, "job", "retry", bad, fine, UNKNOWN, "--actor", "ops", expect=1).stdout
    assert "retried 1, not retried 2" in done
    assert f"{bad}: back to pending" in done
    assert f"{fine}: already succeeded" in done and f"{UNKNOWN}: not stored" in done
    shape = show(store, bad)
    assert (shape["pillar"], shape["state"], shape["attempt_count"]) == ("hot", "pending", 0)
    assert shape["last_modified_by"] == "ops"


def test_enqueue_with_app_takes_the_handlers_queue_and_checks_its_signature(
    store: Store, tmp_path: Path
) -> None:
    chokaq(store, "migrate")
    flaky = chokaq(store, "enqueue", "flaky", '{"n": 2}', "--app", APP).stdout.strip()
    assert show(store, flaky)["queue"] == "mail"  # the handler's queue, not 'default'
    bad = chokaq(store, "enqueue", "flaky", '{"m": 2}', "--app", APP, expect=2).stderr
    assert "does not fit flaky(n: int = 0)" in bad and "unknown argument(s) m" in bad
    big = tmp_path / "payload.json"
    big.write_text(json.dumps({"n": 7, "pad": "x" * 2_000_000}))
    too_big = chokaq(store, "enqueue", "ok", "--payload-file", str(big), expect=2).stderr
    assert "--payload-file" in too_big and "at most 1000000 bytes" in too_big
    # An App of larger limits takes it (a type it has no handler for: no signature to fit).
    larger = chokaq(
        store,
        "enqueue",
        "import_rows",
        "--app",
        "tests.ops.ops_app:large",
        "--payload-file",
        str(big),
    ).stdout.strip()
    assert len(show(store, larger)["payload"]["pad"]) == 2_000_000
    piped = chokaq(store, "enqueue", "ok", "--payload-file", "-", input='{"n": 5}').stdout
    assert show(store, piped.strip())["payload"] == {"n": 5}
    both = chokaq(store, "enqueue", "ok", "{}", "--payload-file", "-", input="{}", expect=2)
    assert "give PAYLOAD or --payload-file, not both" in both.stderr


def test_show_lists_each_failed_attempt_newest_first(store: Store) -> None:
    [job_id] = enqueue(store, lambda h: [h["flaky"].prepare(n=4)])
    # A burst ends when nothing is due; the retry is due 0.05 s later, so run bursts until the
    # second attempt has failed too (the job is in the DLQ).
    poll(lambda: burst(store) or show(store, job_id)["pillar"] == "dlq", timeout=60)
    shown = chokaq(store, "job", "show", job_id).stdout
    table = shown.split("failed attempts (2, newest first)", 1)[1]
    cells = [line.split("│") for line in table.splitlines() if line.startswith("│ ")]
    rows = ["│".join(c) for c in cells if c[1].strip()]  # not a folded line's continuation
    assert [row.split("│")[1].strip() for row in rows] == ["2", "1"]
    assert [row.split("│")[5].strip() for row in rows] == ["transient", "retried"]
    assert all("ConnectionError: flaky 4" in row for row in rows)
    attempts = show(store, job_id)["attempts"]
    assert [(a["seq"], a["attempt"], a["failure_reason"]) for a in attempts] == [
        (2, 2, "transient"),
        (1, 1, None),
    ]
    for a in attempts:
        assert "ConnectionError: flaky 4" in a["error"] and "Traceback" in a["error"]
        assert a["worker_id"] and a["duration_seconds"] >= 0 and a["failed_at"] >= a["started_at"]

"""``chokaq archive requeue | delete``, ``chokaq job cancel`` by filter and ``chokaq job run-now``
as an operator runs them: the real CLI in a subprocess against both backends, with jobs finished
by real (burst) workers. A filter is previewed and confirmed (or --yes), the archive keeps its
rows on a requeue, and run-now makes a delayed job run at once."""

from __future__ import annotations

import json

from tests.conftest import Store

from .test_cli_jobs import UNKNOWN, burst, chokaq, enqueue, show


def test_archive_requeue_then_delete_by_filter(store: Store) -> None:
    done = enqueue(store, lambda h: [h["ok"].prepare(n=i) for i in range(3)])
    other = enqueue(store, lambda h: [h["summary"].prepare(n=2)])
    burst(store)
    refused = chokaq(store, "archive", "delete", expect=2)
    assert "--all" in refused.stderr
    asked = chokaq(store, "archive", "requeue", "--type", "ok", input="n\n", expect=1)
    assert "matching" in asked.stdout and "nothing done" in asked.stdout
    made = json.loads(chokaq(store, "archive", "requeue", "--type", "ok", "--yes", "--json").stdout)
    assert made["preview"]["matched"] == 3 and made["affected"] == 3
    assert sorted(m["archived_id"] for m in made["requeued"]) == sorted(done)
    for pair in made["requeued"]:
        new = show(store, pair["new_id"])
        assert (new["state"], new["created_by"]) == ("pending", f"requeue:{pair['archived_id']}")
        assert show(store, pair["archived_id"])["state"] == "succeeded"  # the archive keeps it
    deleted = chokaq(store, "archive", "delete", "--type", "ok", "--yes")
    assert "deleted 3 job(s)" in deleted.stdout
    assert "archive.delete_by_filter" in deleted.stderr and "admin_completed" in deleted.stderr
    gone = chokaq(store, "job", "show", done[0], expect=1)
    assert f"no job {done[0]}" in gone.stderr
    assert show(store, other[0])["state"] == "succeeded"


def test_job_cancel_by_filter_previews_and_cancels_the_matching_jobs(store: Store) -> None:
    doomed = enqueue(
        store,
        lambda h: [h["ok"].prepare(n=i, queue="nobody", delay_seconds=3600) for i in range(2)],
    )
    [kept] = enqueue(store, lambda h: [h["ok"].prepare(n=5, queue="elsewhere")])
    both = chokaq(store, "job", "cancel", kept, "--queue", "nobody", expect=2)
    assert "not both" in both.stderr
    done = chokaq(store, "job", "cancel", "--queue", "nobody", "--yes", "--actor", "alice")
    assert "cancelled 2, cancel requested 0, not cancelled 0" in done.stdout
    assert "jobs.cancel_by_filter" in done.stderr
    for job_id in doomed:
        shape = show(store, job_id)
        assert (shape["failure_reason"], shape["cancelled_by"]) == ("cancelled", "alice")
    assert show(store, kept)["state"] == "pending"


def test_run_now_makes_a_delayed_job_run_and_names_the_others(store: Store) -> None:
    [later] = enqueue(store, lambda h: [h["ok"].prepare(n=7, delay_seconds=3600)])
    [due] = enqueue(store, lambda h: [h["ok"].prepare(n=8, queue="nobody")])
    burst(store)
    assert show(store, later)["state"] == "pending"  # not due: the burst left it
    done = chokaq(
        store, "job", "run-now", later, due, UNKNOWN, "--json", "--actor", "ops", expect=1
    )
    answer = json.loads(done.stdout)
    assert answer["moved"] == [later]
    assert answer["refused"] == {
        due: "already due",
        UNKNOWN: "not stored (never enqueued, or purged)",
    }
    burst(store)
    shape = show(store, later)
    assert (shape["state"], shape["last_modified_by"], shape["result"]) == ("succeeded", "ops", 7)

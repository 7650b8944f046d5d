"""Durable jobs at the storage seam (both backends): steps recorded under the lease, sleeps and
event waits that suspend a job outside the fetch index with no attempt used, the wake pass,
events kept for a later wait, the resumption of durable zombies, and cancel of a suspended job."""

from __future__ import annotations

import json

import pytest
from conformance import at, claim, enqueue, succeed

from chokaq.errors import ValidationError
from chokaq.models import (
    FailMove,
    FailureReason,
    JobStatus,
    Lease,
    NewJob,
    Pillar,
    StepKind,
    StepState,
    StepWrite,
    SucceedMove,
)
from chokaq.storage.sqlite import durable as sqlite_durable


async def _running(backend, now=0.0, worker="w1", **options):
    [c] = await claim(backend, now=at(now), worker=worker, **options)
    return c


async def test_a_step_is_recorded_once_under_the_lease(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    done = await backend.steps_record(lease=c.lease, name="charge", value='{"ok": 1}', now=at(1))
    assert (done.name, done.kind, done.state, done.value, done.seq) == (
        "charge",
        StepKind.STEP,
        StepState.DONE,
        '{"ok": 1}',
        1,
    )
    # A completed step never changes; a second record reports not applied.
    again = await backend.steps_record(lease=c.lease, name="charge", value="2", now=at(2))
    assert again is None
    failed = await backend.steps_record(lease=c.lease, name="mail", error="boom", now=at(2))
    assert failed.state is StepState.FAILED and failed.error == "boom"
    # A failed step is recorded again when it runs again.
    redone = await backend.steps_record(lease=c.lease, name="mail", value="null", now=at(3))
    assert redone.state is StepState.DONE and redone.error is None and redone.seq == 2
    steps = await backend.steps_list(job_id=jid)
    assert [(s.name, s.value) for s in steps] == [("charge", '{"ok": 1}'), ("mail", "null")]


async def test_many_jobs_steps_are_recorded_in_one_call_each_under_its_own_lease(backend):
    a, b, c = await enqueue(backend, 3)
    ja, jb, jc = await claim(backend, now=at(0))
    stale = Lease(jc.id, jc.lease.worker_id, "00000000-0000-4000-8000-000000000000")
    await backend.steps_record(lease=ja.lease, name="done", value="0", now=at(1))
    records = [
        StepWrite(ja.lease, "done", "9"),  # already done: never changes
        StepWrite(ja.lease, "next", '{"n": 1}', elapsed_seconds=2.0),
        StepWrite(jb.lease, "boom", error="ValueError: no"),
        StepWrite(jb.lease, "then", "true"),  # two steps of one job: seqs in input order
        StepWrite(stale, "lost", "1"),  # a stale worker records nothing
    ]
    out = await backend.steps_record_many(records=records, now=at(10))
    assert out[0] is None and out[4] is None
    assert (out[1].job_id, out[1].seq, out[1].state, out[1].value) == (
        a,
        2,
        StepState.DONE,
        '{"n": 1}',
    )
    assert out[1].started_at == at(8) and out[1].finished_at == at(10)
    assert (out[2].job_id, out[2].state, out[2].error) == (b, StepState.FAILED, "ValueError: no")
    assert [out[2].seq, out[3].seq] == [1, 2]
    listed = await backend.steps_list_many(job_ids=[c, b, a])
    assert list(listed) == [c, b, a] and listed[c] == []
    assert [(s.name, s.value) for s in listed[a]] == [("done", "0"), ("next", '{"n": 1}')]
    assert listed[b] == [out[2], out[3]]
    assert listed[a] == await backend.steps_list(job_id=a)


async def test_a_bad_record_refuses_the_whole_batch_before_writing(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    good = StepWrite(c.lease, "a", "1")
    with pytest.raises(ValidationError) as bad:
        await backend.steps_record_many(records=[good, StepWrite(c.lease, "b", "{x")])
    assert bad.value.field == "records[1].value"
    with pytest.raises(ValidationError) as twice:
        await backend.steps_record_many(records=[good, good])
    assert twice.value.field == "records"
    with pytest.raises(ValidationError, match="at most 1000"):
        await backend.steps_list_many(job_ids=[jid] * 1001)
    assert await backend.steps_list(job_id=jid) == []


async def test_a_stale_lease_records_nothing(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    stale = Lease(c.id, c.lease.worker_id, "00000000-0000-4000-8000-000000000000")
    assert await backend.steps_record(lease=stale, name="a", value="1") is None
    assert (await backend.durable_sleep(lease=stale, name="s", seconds=5)).lost
    assert await backend.steps_list(job_id=jid) == []


async def test_a_sleep_suspends_the_job_and_the_wake_pass_brings_it_back(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend, 0)
    outcome = await backend.durable_sleep(lease=c.lease, name="sleep#1", seconds=60, now=at(1))
    assert outcome.suspended
    view = await backend.job_get(jid)
    assert (view.status, view.attempt_count, view.worker_id) == (JobStatus.SUSPENDED, 0, None)
    assert await claim(backend, now=at(2)) == []  # outside the fetch index
    assert await backend.durable_wake(now=at(60)) == []
    assert await backend.durable_wake(now=at(61)) == [jid]
    again = await _running(backend, 62)
    assert again.attempt_count == 1  # the suspension used no attempt
    # On replay the sleep is over: recorded done, not suspended again.
    over = await backend.durable_sleep(lease=again.lease, name="sleep#1", seconds=60, now=at(62))
    assert not over.suspended and over.step.state is StepState.DONE
    assert over.step.kind is StepKind.SLEEP and over.step.wake_at == at(61)
    assert await succeed(backend, [again], now=at(63)) == [True]
    assert (await backend.job_get(jid)).attempt_count == 1


async def test_a_zero_sleep_does_not_suspend(backend):
    await enqueue(backend)
    c = await _running(backend)
    outcome = await backend.durable_sleep(lease=c.lease, name="s", seconds=0, now=at(1))
    assert not outcome.suspended and outcome.step.state is StepState.DONE


async def test_a_zero_sleep_or_timeout_on_the_store_clock_ends_at_once(backend, monkeypatch):
    # SQLite's clock is a float of Unix seconds; this one rounds up to the next microsecond as
    # a datetime, which made the end of a zero sleep or timeout look ahead of the clock.
    rounds_up = 1_767_225_600.0000007
    monkeypatch.setattr(
        sqlite_durable, "ts_now", lambda now: rounds_up if now is None else now.timestamp()
    )
    [jid] = await enqueue(backend)
    c = await _running(backend)
    slept = await backend.durable_sleep(lease=c.lease, name="sleep#1", seconds=0)
    assert not slept.suspended and slept.step.state is StepState.DONE
    waited = await backend.durable_wait(lease=c.lease, name="wait#1", key="k", timeout_seconds=0)
    assert not waited.suspended and waited.step.error == "timeout"
    assert (await backend.job_get(jid)).status is JobStatus.PROCESSING


async def test_an_event_wakes_the_waiting_job_with_its_data(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    outcome = await backend.durable_wait(
        lease=c.lease, name="wait#1", key="verified-42", timeout_seconds=3600, now=at(1)
    )
    assert outcome.suspended
    assert (await backend.job_get(jid)).status is JobStatus.SUSPENDED
    assert await backend.events_send(key="verified-42", data='{"ok": true}', now=at(2)) == jid
    again = await _running(backend, 3)
    got = await backend.durable_wait(
        lease=again.lease, name="wait#1", key="verified-42", timeout_seconds=3600, now=at(3)
    )
    assert got.step.state is StepState.DONE and got.step.value == '{"ok": true}'
    # The event was consumed by that wait: a second one is kept for the next waiter.
    assert await backend.events_send(key="verified-42", data="2", now=at(4)) is None


async def test_an_event_sent_before_the_wait_is_kept_for_it(backend):
    await enqueue(backend)
    assert await backend.events_send(key="k", data='"first"', now=at(0)) is None
    assert await backend.events_send(key="k", data='"second"', now=at(0)) is None
    c = await _running(backend, 1)
    got = await backend.durable_wait(lease=c.lease, name="w1", key="k", now=at(1))
    assert not got.suspended and got.step.value == '"first"'
    got = await backend.durable_wait(lease=c.lease, name="w2", key="k", now=at(1))
    assert got.step.value == '"second"'


async def test_a_kept_event_expires_after_its_retention(backend):
    await enqueue(backend)
    await backend.events_send(key="k", data="1", now=at(0))
    c = await _running(backend, 7 * 86_400 + 1)
    outcome = await backend.durable_wait(lease=c.lease, name="w", key="k", now=at(7 * 86_400 + 1))
    assert outcome.suspended  # the event expired: nothing to take
    assert await backend.durable_tidy(now=at(7 * 86_400 + 2)) == 1


async def test_a_wait_times_out(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    waited = await backend.durable_wait(
        lease=c.lease, name="w", key="never", timeout_seconds=10, now=at(1)
    )
    assert waited.suspended
    assert await backend.durable_wake(now=at(11)) == [jid]
    again = await _running(backend, 12)
    out = await backend.durable_wait(
        lease=again.lease, name="w", key="never", timeout_seconds=10, now=at(12)
    )
    assert out.step.state is StepState.DONE and out.step.error == "timeout"
    # An event sent after the timeout is kept, not delivered to the finished wait.
    assert await backend.events_send(key="never", data="1", now=at(13)) is None


@pytest.mark.parametrize("woken_first", [False, True])
async def test_an_event_sent_after_the_deadline_is_kept_and_the_wait_times_out(
    backend, woken_first
):
    # Past the deadline the wait has timed out, whether or not the wake pass has moved the
    # job yet: an event sent then is kept for the next wait, never taken by this one.
    [jid] = await enqueue(backend)
    c = await _running(backend)
    waited = await backend.durable_wait(
        lease=c.lease, name="w", key="late", timeout_seconds=10, now=at(1)
    )
    assert waited.suspended
    if woken_first:
        assert await backend.durable_wake(now=at(11.5)) == [jid]
    assert await backend.events_send(key="late", data='"late"', now=at(12)) is None
    if not woken_first:
        assert await backend.durable_wake(now=at(12.5)) == [jid]
    again = await _running(backend, 13)
    out = await backend.durable_wait(
        lease=again.lease, name="w", key="late", timeout_seconds=10, now=at(13)
    )
    assert out.step.state is StepState.DONE and out.step.error == "timeout"
    # The next wait on the key takes it.
    taken = await backend.durable_wait(lease=again.lease, name="w2", key="late", now=at(14))
    assert not taken.suspended and taken.step.value == '"late"'


async def test_cancelling_a_suspended_job_dead_letters_it(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    await backend.durable_sleep(lease=c.lease, name="s", seconds=600, now=at(1))
    result = await backend.jobs_cancel(ids=[jid], actor="ops", now=at(2))
    assert result.cancelled == (jid,)
    view = await backend.job_get(jid)
    assert (view.pillar, view.failure_reason) == (Pillar.DLQ, FailureReason.CANCELLED)


async def test_a_durable_zombie_is_resumed_while_attempts_remain(backend):
    [jid, other] = await enqueue(backend, 2, max_attempts=2)
    [a, b] = await claim(backend, now=at(0))
    await backend.steps_record(lease=a.lease, name="one", value="1", now=at(1))
    types = {"email.send": 5}
    assert (
        await backend.durable_resume(types=types, zombie_timeout_seconds=30, now=at(10)) == []
    )  # heartbeats are fresh
    resumed = await backend.durable_resume(types=types, zombie_timeout_seconds=30, now=at(40))
    assert sorted(resumed) == sorted([jid, other])
    view = await backend.job_get(jid)
    assert (view.status, view.attempt_count, view.worker_id) == (JobStatus.PENDING, 1, None)
    assert "resumed" in (view.last_error or "")
    # The step recorded by the dead worker is there for the replay; its lease is dead.
    assert await backend.steps_record(lease=a.lease, name="two", value="2", now=at(41)) is None
    assert [s.name for s in await backend.steps_list(job_id=jid)] == ["one"]
    # Out of attempts (2 of 2): left for the rescue, which dead-letters it as ZOMBIE.
    again = await claim(backend, now=at(50))
    assert {c.attempt_count for c in again} == {2}
    assert await backend.durable_resume(types=types, zombie_timeout_seconds=30, now=at(90)) == []
    rescued = await backend.jobs_rescue(
        fetched_timeout_seconds=30, processing_timeout_seconds=30, now=at(90)
    )
    assert sorted(rescued.zombies) == sorted([jid, other])
    del b


async def test_other_types_are_not_resumed(backend):
    await enqueue(backend, type="plain")
    await claim(backend, now=at(0))
    resumed = await backend.durable_resume(
        types={"email.send": 5}, zombie_timeout_seconds=30, now=at(40)
    )
    assert resumed == []


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": 7}, "name"),
        ({"seconds": -1}, "seconds"),
        ({"seconds": float("nan")}, "seconds"),
        ({"seconds": 366 * 86_400 + 1}, "seconds"),
    ],
)
async def test_a_bad_sleep_is_refused_naming_the_field(backend, call, field):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    args = {"lease": c.lease, "name": "s", "seconds": 1, **call}
    with pytest.raises(ValidationError) as caught:
        await backend.durable_sleep(**args)
    assert caught.value.field == field
    assert (await backend.job_get(jid)).status is JobStatus.PROCESSING
    assert await backend.steps_list(job_id=jid) == []


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"key": ""}, "key"),
        ({"key": "k" * 201}, "key"),
        ({"data": "{not json"}, "data"),
        ({"data": "NaN"}, "data"),
    ],
)
async def test_a_bad_event_is_refused_naming_the_field(backend, call, field):
    with pytest.raises(ValidationError) as caught:
        await backend.events_send(**{"key": "k", "data": "1", **call})
    assert caught.value.field == field


async def test_a_spawn_enqueues_its_children_once(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    children = [NewJob(type="child", queue="kids") for _ in range(3)]
    first = await backend.durable_spawn(lease=c.lease, name="spawn#1", jobs=children, now=at(1))
    ids = json.loads(first.value)
    assert first.kind is StepKind.SPAWN and len(ids) == 3
    again = await backend.durable_spawn(lease=c.lease, name="spawn#1", jobs=children, now=at(2))
    assert again == first  # recorded: nothing enqueued again
    assert (await backend.stats_summary()).pending == 3
    # The children join the parent's workflow.
    view = await backend.job_get_related(id=jid)
    assert sorted(link.id for link in view.children) == sorted(ids)
    assert view.workflow_id == jid


async def test_a_gather_suspends_until_every_child_finished(backend):
    [jid] = await enqueue(backend, queue="parents")
    c = await _running(backend, queues=["parents"])
    spawned = await backend.durable_spawn(
        lease=c.lease, name="spawn#1", jobs=[NewJob(type="child", queue="kids")] * 2, now=at(1)
    )
    ids = json.loads(spawned.value)
    waiting = await backend.durable_gather(lease=c.lease, name="gather#1", ids=ids, now=at(2))
    assert waiting.suspended
    assert (await backend.job_get(jid)).status is JobStatus.SUSPENDED
    kids = await claim(backend, now=at(3), queues=["kids"])
    assert await backend.jobs_finalize(
        moves=[
            SucceedMove(kids[0].lease, 0.1, result="7"),
            FailMove(kids[1].lease, FailureReason.TRANSIENT, "boom"),
        ],
        now=at(4),
    ) == [True, True]
    assert await backend.durable_wake(now=at(5)) == [jid]
    again = await _running(backend, 6, queues=["parents"])
    done = await backend.durable_gather(lease=again.lease, name="gather#1", ids=ids, now=at(6))
    outcomes = {row[0]: row for row in json.loads(done.step.value)}
    assert outcomes[kids[0].id][1:4] == ["archive", "7", None]
    assert outcomes[kids[1].id][1] == "dlq" and outcomes[kids[1].id][4] == 8


async def test_cancelling_a_parent_cancels_its_unfinished_children(backend):
    [jid] = await enqueue(backend, queue="parents")
    c = await _running(backend, queues=["parents"])
    spawned = await backend.durable_spawn(
        lease=c.lease, name="spawn#1", jobs=[NewJob(type="child", queue="kids")] * 2, now=at(1)
    )
    ids = json.loads(spawned.value)
    await backend.durable_gather(lease=c.lease, name="gather#1", ids=ids, now=at(2))
    result = await backend.jobs_cancel(ids=[jid], actor="ops", now=at(3))
    assert result.cancelled == (jid,)
    for child in ids:
        view = await backend.job_get(child)
        assert (view.pillar, view.failure_reason) == (Pillar.DLQ, FailureReason.CANCELLED)


async def test_a_spawn_refuses_bad_children_before_writing(backend):
    [jid] = await enqueue(backend)
    c = await _running(backend)
    with pytest.raises(ValidationError) as caught:
        await backend.durable_spawn(lease=c.lease, name="s", jobs=[NewJob(type="")])
    assert caught.value.field == "jobs[0].type"
    with pytest.raises(ValidationError) as caught:
        await backend.durable_spawn(lease=c.lease, name="s", jobs=[NewJob(type="t", after=[jid])])
    assert caught.value.field == "jobs[0].after"
    with pytest.raises(ValidationError) as caught:
        await backend.durable_gather(lease=c.lease, name="g", ids=["x"])
    assert caught.value.field == "ids[0]"
    assert await backend.steps_list(job_id=jid) == []

"""``make_context``: a real ``JobContext`` with defaults, from a handle, or asked to stop."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chokaq import App, JobContext, RetryPolicy, current_job
from chokaq.ids import is_job_id
from chokaq.testing import make_context


def test_defaults_are_those_of_a_first_attempt() -> None:
    ctx = make_context()
    assert is_job_id(ctx.job_id)
    assert (ctx.type, ctx.queue, ctx.attempt, ctx.max_attempts) == ("test", "default", 1, 3)
    assert ctx.tags == () and ctx.parent_results == {} and ctx.worker_id == "test-worker"
    assert ctx.created_at.tzinfo is UTC and ctx.created_at <= datetime.now(UTC)
    assert not ctx.cancel_requested and not ctx.cancelled.is_set()
    assert (ctx.requeues, ctx.requeued, ctx.previous_error) == (0, False, None)


def test_a_context_for_the_first_run_after_a_requeue() -> None:
    ctx = make_context(requeues=1, previous_error="Attempts exhausted (3 of 3): boom")
    assert ctx.requeued and ctx.attempt == 1 and ctx.previous_error is not None


def test_a_handle_gives_its_type_queue_and_attempts_and_fields_override(tmp_path) -> None:
    app = App(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.job(queue="mail", retry=RetryPolicy(max_attempts=7))
    def send(to: str, ctx: JobContext) -> str:
        ctx.report_progress(50)  # goes nowhere: no worker
        return f"{to} on attempt {ctx.attempt} of {ctx.max_attempts}"

    ctx = make_context(send, attempt=2, tags=["a", "b"], parent_results={"p": 1})
    assert (ctx.type, ctx.queue, ctx.max_attempts) == ("send", "mail", 7)
    assert ctx.tags == ("a", "b") and ctx.parent_results == {"p": 1}
    assert send("ada", ctx) == "ada on attempt 2 of 7"
    assert ctx.progress == 50

    @app.job(max_attempts=2)
    def other() -> None: ...

    assert make_context(other).max_attempts == 2


def test_a_cancelled_context_and_an_unknown_field() -> None:
    ctx = make_context(cancel_reason="cancelled")
    assert ctx.cancel_requested and ctx.cancelled.is_set() and ctx.cancel_reason == "cancelled"
    with pytest.raises(TypeError):
        make_context(attempts=2)
    with pytest.raises(LookupError):
        current_job()  # a made context is not bound: only a worker binds one

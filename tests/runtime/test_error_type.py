"""The exception's qualified class name kept beside a dead job's error, on both backends with
real burst workers: stored with the DLQ row by every path an exception takes there (fatal,
attempts exhausted), exposed as ``JobView.error_type`` and ``JobFailedError.error_type``, None
where no exception did it (a timeout, ``Fail``, a cancel), and refused at the storage seam
when it is not text within its limit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from chokaq import (
    App,
    Fail,
    FailureReason,
    FatalError,
    JobFailedError,
    JobView,
    Pillar,
    ValidationError,
)
from chokaq.limits import MAX_ERROR_TYPE_LENGTH
from chokaq.models import FailMove, JobFilter
from chokaq.runtime.executor import error_type_of


class CardDeclined(Exception):
    """A domain error of the test module: its name is qualified by the module's."""

    class Expired(ValueError):
        """A nested class: its qualified name has both."""


async def view(app: App, job_id: str) -> JobView:
    found = await app.get_job(job_id)
    assert found is not None, job_id
    return found


def test_the_name_is_module_and_qualified_class() -> None:
    assert error_type_of(CardDeclined()) == f"{__name__}.CardDeclined"
    assert error_type_of(CardDeclined.Expired()) == f"{__name__}.CardDeclined.Expired"
    assert error_type_of(KeyError("x")) == "builtins.KeyError"
    long = type("X" * 600, (Exception,), {})
    assert len(error_type_of(long())) == MAX_ERROR_TYPE_LENGTH


async def test_every_dead_letter_an_exception_caused_keeps_its_class(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job(max_attempts=2)
    def declines() -> None:
        raise CardDeclined("card 42 declined")

    @app.job(fatal_on=(CardDeclined.Expired,))
    def expired() -> None:
        raise CardDeclined.Expired("card expired")

    @app.job
    def fatal() -> None:
        raise FatalError("no point retrying")

    @app.job
    def fails_by_value() -> Fail:
        return Fail("bad input")

    @app.job(timeout_seconds=0.2)
    async def hangs() -> None:
        await asyncio.Event().wait()

    ids = [
        await declines.enqueue(),
        await expired.enqueue(),
        await fatal.enqueue(),
        await fails_by_value.enqueue(),
        await hangs.enqueue(),
    ]
    await asyncio.wait_for(app.create_worker(burst=True).run(), timeout=60)
    views = [await view(app, i) for i in ids]
    assert [v.pillar for v in views] == [Pillar.DLQ] * 5
    assert [v.failure_reason for v in views] == [
        FailureReason.TRANSIENT,
        FailureReason.FATAL_ERROR,
        FailureReason.FATAL_ERROR,
        FailureReason.FATAL_ERROR,
        FailureReason.TIMEOUT,
    ]
    assert [v.error_type for v in views] == [
        f"{__name__}.CardDeclined",
        f"{__name__}.CardDeclined.Expired",
        "chokaq.errors.FatalError",
        None,
        None,
    ]
    assert views[0].error is not None and "card 42 declined" in views[0].error
    # The DLQ listing carries it too, and a wait on the job raises with it.
    page = await app.backend.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(type="declines"))
    assert [j.error_type for j in page.items] == [f"{__name__}.CardDeclined"]
    with pytest.raises(JobFailedError) as failed:
        await app.result(ids[0], timeout_seconds=10)
    assert failed.value.error_type == f"{__name__}.CardDeclined"
    assert failed.value.reason is FailureReason.TRANSIENT
    with pytest.raises(JobFailedError) as timed_out:
        await app.result(ids[4], timeout_seconds=10)
    assert timed_out.value.error_type is None


async def test_a_cancelled_job_has_no_error_type(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job
    def later() -> None: ...

    job_id = await later.options(delay_seconds=3600).enqueue()
    await app.cancel(job_id)
    dead = await view(app, job_id)
    assert (dead.failure_reason, dead.error_type) == (FailureReason.CANCELLED, None)


@pytest.mark.parametrize(
    ("error_type", "limit"),
    [(7, "must be a string"), ("x" * (MAX_ERROR_TYPE_LENGTH + 1), "at most 500 characters")],
)
async def test_the_seam_refuses_an_error_type_that_is_not_short_text(
    make_app: Callable[..., App], error_type: object, limit: str
) -> None:
    app = make_app()

    @app.job
    def work() -> None: ...

    await app.open()
    job_id = await work.enqueue()
    [job] = await app.backend.jobs_fetch(worker_id="w1", limit=1, queues=["default"])
    move = FailMove(job.lease, FailureReason.FATAL_ERROR, "boom", error_type=error_type)  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as caught:
        await app.backend.jobs_finalize(moves=[move], now=datetime.now(UTC))
    assert caught.value.field == "moves[0].error_type"
    assert limit in str(caught.value)
    assert (await view(app, job_id)).pillar is Pillar.HOT  # nothing was written

"""Which queues a worker serves by default, and what happens to a job of a type it has no
handler for, on both backends with real workers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.ops.test_events import captured

from chokaq import App, FailureReason
from chokaq.logs import Event
from chokaq.models import NO_HANDLER_ERROR, JobStatus, Pillar

from .conftest import running, until


async def _view(app: App, job_id: str) -> Any:
    view = await app.backend.job_get(job_id)
    assert view is not None
    return view


async def test_a_worker_serves_the_queues_its_handlers_declare(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job(queue="mail")
    async def send() -> None: ...

    await app.open()
    foreign = await app.enqueue_raw("invoice.render", "{}", queue="billing")  # another app's
    ours = await send.enqueue()
    worker = app.create_worker(burst=True)
    await asyncio.wait_for(worker.run(), timeout=30)
    assert worker.settings.queues == ("mail",)
    assert (await _view(app, ours)).pillar is Pillar.ARCHIVE
    view = await _view(app, foreign)
    assert view.pillar is Pillar.HOT and view.status is JobStatus.PENDING
    assert (view.attempt_count, view.last_error) == (0, None)  # never touched


async def test_a_worker_with_no_handler_says_it_serves_no_queue(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    await app.open()
    job_id = await app.enqueue_raw("invoice.render", "{}", queue="billing")
    with captured() as lines:
        worker = app.create_worker(burst=True)
        await asyncio.wait_for(worker.run(), timeout=30)
    assert worker.settings.queues == ()
    assert Event.WORKER_SERVES_NOTHING in [line["event_id"] for line in lines]
    assert (await _view(app, job_id)).pillar is Pillar.HOT  # untouched


async def test_star_serves_every_queue_and_an_unknown_type_is_released_then_rejected(
    make_app: Callable[..., App],
) -> None:
    app = make_app(unknown_type_grace_seconds=1.5)

    @app.job()
    async def known() -> None: ...

    await app.open()
    job_id = await app.enqueue_raw("new.kind", "{}", queue="elsewhere")
    events: list[tuple[str, dict[str, Any]]] = []
    async with running(app, queues=("*",)) as worker:
        worker.add_listener(lambda name, fields: events.append((name, fields)))

        async def released() -> bool:
            view = await _view(app, job_id)
            return view.pillar is Pillar.HOT and (view.last_error or "").startswith(
                NO_HANDLER_ERROR
            )

        await until(released)
        view = await _view(app, job_id)
        assert view.attempt_count == 0  # the handler never ran: no attempt used
        assert view.scheduled_at is not None and view.scheduled_at > view.created_at
        assert "new.kind" in (view.last_error or "") and "rejected at" in (view.last_error or "")

        async def rejected() -> bool:
            return (await _view(app, job_id)).pillar is Pillar.DLQ

        await until(rejected)
    assert worker.settings.queues is None  # "*": every queue
    view = await _view(app, job_id)
    assert view.failure_reason is FailureReason.REJECTED
    assert "unknown job type 'new.kind'" in view.error
    assert "unknown_type_grace_seconds" in view.error
    released_events = [f for name, f in events if name == "no_handler"]
    assert released_events and released_events[0]["type"] == "new.kind"
    assert not [f for name, f in events if name == "deferred"]  # not a circuit deferral


async def test_a_job_released_for_want_of_a_handler_runs_once_a_worker_has_one(
    make_app: Callable[..., App],
) -> None:
    old = make_app()  # the workers not yet deployed with the new type

    @old.job()
    async def existing() -> None: ...

    await old.open()
    job_id = await old.enqueue_raw("shiny", '{"n": 1}')
    async with running(old):

        async def released() -> bool:
            return (await _view(old, job_id)).last_error is not None

        await until(released)
    new = make_app()  # the deploy reached the workers
    ran: list[int] = []

    @new.job()
    async def shiny(n: int) -> None:
        ran.append(n)

    await new.open()
    async with running(new):

        async def archived() -> bool:
            return (await _view(new, job_id)).pillar is Pillar.ARCHIVE

        await until(archived)
    assert ran == [1]
    assert (await _view(new, job_id)).attempt_count == 1

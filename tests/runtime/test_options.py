"""Enqueue options through ``handle.options(...)``, on both backends: each option lands on the
job, a handler may have parameters named like options (they get their arguments), the older
keyword form keeps working where it does not clash, and ``prepare``/``enqueue_many`` take the
options too."""

from __future__ import annotations

import ast
import asyncio
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from chokaq import (
    App,
    ConfigurationError,
    ContextJobHandle,
    JobContext,
    JobHandle,
    RetryPolicy,
    ValidationError,
)
from chokaq.handles import OPTION_NAMES
from chokaq.limits import check_max_attempts
from chokaq.models import JobStatus, Pillar


async def test_options_set_each_option(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(queue="emails")
    async def send_email(to: str, subject: str) -> None: ...

    await app.open()
    first = await send_email.options(
        queue="urgent",
        priority=20,
        delay_seconds=60,
        idempotency_key="welcome:42",
        tags=["signup"],
        created_by="signup-service",
        max_attempts=4,
        timeout_seconds=30,
        partition="account:42",
    ).enqueue(to="a@b.c", subject="hi")
    view = await app.backend.job_get(first)
    assert view is not None
    assert json.loads(view.payload or "") == {"to": "a@b.c", "subject": "hi"}
    assert (view.queue, view.priority, view.tags, view.created_by) == (
        "urgent",
        20,
        ("signup",),
        "signup-service",
    )
    assert (view.max_attempts, view.timeout_seconds, view.idempotency_key, view.partition) == (
        4,
        30,
        "welcome:42",
        "account:42",
    )
    assert view.scheduled_at is not None
    assert view.scheduled_at > datetime.now(UTC) + timedelta(seconds=50)
    again = await send_email.options(idempotency_key="welcome:42").enqueue(to="x", subject="y")
    assert again.duplicate and again == first

    at = datetime.now(UTC) + timedelta(hours=1)
    later = await send_email.options(run_at=at).enqueue(to="a", subject="b")
    view = await app.backend.job_get(later)
    assert view is not None and view.scheduled_at is not None
    assert abs((view.scheduled_at - at).total_seconds()) < 1

    child = await send_email.options(after=[first]).enqueue(to="c", subject="d")
    view = await app.backend.job_get(child)
    assert view is not None and view.status is JobStatus.WAITING

    sync_id = await asyncio.to_thread(
        send_email.options(priority=3).enqueue_sync, to="s", subject="sync"
    )
    view = await app.backend.job_get(sync_id)
    assert view is not None and view.priority == 3


async def test_options_are_checked_and_layer(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(priority=7)
    async def ping(n: int) -> None: ...

    await app.open()
    with pytest.raises(ValidationError) as info:
        ping.options(colour="red")  # type: ignore[call-arg]
    assert info.value.field == "colour"
    with pytest.raises(ValidationError) as info:
        ping.options(delay=1, delay_seconds=1)
    assert info.value.field == "delay"
    with pytest.raises(ValidationError) as info:
        await ping.options(priority=10**9).enqueue(n=1)
    assert info.value.field == "priority"
    with pytest.raises(ValidationError) as info:
        ping.options(connection=object()).prepare(n=1)
    assert info.value.field == "connection"
    assert (await app.backend.stats_summary()).pending == 0

    base = ping.options(queue="slow", priority=1)
    job = base.options(priority=2).prepare(n=1)
    assert (job.queue, job.priority) == ("slow", 2)
    assert (base.prepare(n=1).priority, ping.prepare(n=1).priority) == (1, 7)
    # The aliases are the _seconds options.
    job = ping.options(delay=5, timeout=9).prepare(n=1)
    assert (job.delay_seconds, job.timeout_seconds) == (5, 9)
    # A generator of parents serves every job of the options, not only the first.
    parent = ping.prepare(n=0)
    waiting = ping.options(after=(j for j in [parent]))
    assert waiting.prepare(n=1).after == waiting.prepare(n=2).after == (parent.id,)


async def test_a_handler_may_have_parameters_named_like_options(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    seen: list[dict[str, Any]] = []
    names = sorted(OPTION_NAMES - {"after"})

    @app.job()
    async def everything(
        queue: str,
        priority: str,
        delay: str,
        delay_seconds: str,
        run_at: str,
        idempotency_key: str,
        tags: str,
        created_by: str,
        max_attempts: str,
        timeout: str,
        timeout_seconds: str,
        partition: str,
        expires_at: str,
        expires_after_seconds: str,
        unique_for_seconds: str,
        on_conflict: str,
        connection: str,
        after_outcome: str,
        pass_results: str,
        after: str = "-",
    ) -> None:
        got = dict(locals())
        del got["seen"]  # the closure, not an argument
        seen.append(got)

    @app.job()
    async def rank(priority: int) -> None:
        seen.append({"rank": priority})

    arguments: dict[str, Any] = {name: f"arg-{name}" for name in names}
    await app.open()
    first = await everything.enqueue(**arguments)  # every one an argument, none an option
    second = await rank.options(priority=30).enqueue(priority=5)
    legacy = await rank.enqueue(priority=6, queue="default")  # queue is still an option here
    views = [await app.backend.job_get(i) for i in (first, second, legacy)]
    assert [v.priority for v in views if v is not None] == [10, 30, 10]
    await app.run_worker(burst=True)
    assert [s for s in seen if "rank" not in s] == [{**arguments, "after": "-"}]
    assert sorted(s["rank"] for s in seen if "rank" in s) == [5, 6]
    assert {(await app.backend.job_get(i)).pillar for i in (first, second, legacy)} == {  # type: ignore[union-attr]
        Pillar.ARCHIVE
    }


async def test_the_keyword_options_keep_working(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(queue="emails", timeout=30)
    async def send_email(to: str, subject: str) -> None: ...

    assert send_email.timeout == 30
    await app.open()
    old = await send_email.enqueue(to="a", subject="b", priority=20, delay=60, timeout=5)
    new = await send_email.enqueue(to="a", subject="b", delay_seconds=60, timeout_seconds=6)
    views = [await app.backend.job_get(i) for i in (old, new)]
    assert [(v.priority, v.timeout_seconds) for v in views if v is not None] == [(20, 5), (10, 6)]
    assert all(v is not None and v.scheduled_at > datetime.now(UTC) for v in views)  # type: ignore[operator]
    with pytest.raises(ValidationError) as info:
        await send_email.enqueue(to="a", subject="b", timeout=1, timeout_seconds=1)
    assert info.value.field == "timeout"
    raw = app.raw("t", "{}", delay_seconds=5, timeout=7)
    assert (raw.delay_seconds, raw.timeout_seconds) == (5, 7)

    @app.job(timeout_seconds=12)
    async def other() -> None: ...

    assert other.timeout == 12
    with pytest.raises(ValidationError):

        @app.job(timeout=1, timeout_seconds=1)
        async def both() -> None: ...


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("priority", 10**9),
        ("priority", 1.5),
        ("timeout_seconds", math.nan),
        ("timeout_seconds", 1e308),
        ("timeout_seconds", -5),
        ("timeout_seconds", 0),
        ("timeout_seconds", "30"),
        ("timeout", math.inf),
        ("max_attempts", 0),
        ("max_attempts", 10**6),
        ("queue", ""),
        ("queue", " padded"),
    ],
)
async def test_handler_options_are_refused_at_decoration_as_enqueue_refuses_them(
    make_app: Callable[..., App], option: str, value: Any
) -> None:
    # Issue 32: @app.job(timeout_seconds=nan) was accepted and every job then failed as
    # TIMEOUT; @app.job(priority=10**9) was accepted and every enqueue then failed. One check,
    # the enqueue's, with the enqueue's message, when the module is imported.
    app = make_app()

    @app.job()
    async def ping() -> None: ...

    await app.open()
    with pytest.raises(ValidationError) as at_enqueue:
        await ping.options(**{option: value}).enqueue()
    with pytest.raises(ValidationError) as at_decoration:
        app.job(**{option: value})
    assert str(at_decoration.value) == str(at_enqueue.value)
    assert at_decoration.value.field == {"timeout": "timeout_seconds"}.get(option, option)
    if option != "priority":  # a pipe takes the others, checked alike
        with pytest.raises(ValidationError) as at_pipe:
            app.pipe(**{"queue": "raw", option: value})
        assert str(at_pipe.value) == str(at_enqueue.value)
    assert list(app.handlers) == ["ping"] and not app.pipes
    assert (await app.backend.stats_summary()).pending == 0


def test_a_retry_policy_checks_max_attempts_by_the_same_rule() -> None:
    with pytest.raises(ValidationError) as at_enqueue:
        check_max_attempts("max_attempts", 0)
    for bad in (0, 1001, True, 2.0):
        with pytest.raises(ConfigurationError) as info:
            RetryPolicy(max_attempts=bad)  # type: ignore[arg-type]
        assert str(info.value) == f"retry.{at_enqueue.value}"


async def test_prepare_and_enqueue_many_take_the_options(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    async def hold(i: int, priority: int = 0) -> None: ...

    await app.open()
    ids = await hold.options(queue="bulk", tags=["b"]).enqueue_many([{"i": 1}, {"i": 2}])
    ids += await app.enqueue_many(
        [hold.options(priority=4).prepare(i=3), hold.options(queue="bulk").prepare(4, 9)]
    )
    # The keyword form of enqueue_many: shared options, and the handler's own priority argument.
    ids += await hold.enqueue_many([{"i": 5, "priority": 1}], queue="bulk", priority=8)
    views = [await app.backend.job_get(i) for i in ids]
    assert [(v.queue, v.priority, json.loads(v.payload or "")) for v in views if v] == [
        ("bulk", 10, {"i": 1}),
        ("bulk", 10, {"i": 2}),
        ("default", 4, {"i": 3}),
        ("bulk", 10, {"i": 4, "priority": 9}),
        ("bulk", 8, {"i": 5, "priority": 1}),
    ]
    assert views[0] is not None and views[0].tags == ("b",)


def test_a_context_first_handler_is_called_with_its_context(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    def first(ctx: JobContext, n: int) -> tuple[Any, int]:
        return ctx, n

    @app.job()
    def last(n: int, ctx: JobContext) -> tuple[Any, int]:
        return ctx, n

    assert isinstance(first, ContextJobHandle)
    assert type(last) is JobHandle
    marker: Any = object()
    assert first(marker, 3) == (marker, 3)
    assert last(3, marker) == (marker, 3)
    assert json.loads(first.prepare(n=3).payload) == json.loads(last.prepare(n=3).payload)


@pytest.mark.postgres
async def test_options_connection_joins_the_callers_transaction(pg_app: Any, pg_store: Any) -> None:
    app = pg_app()

    @app.job()
    async def welcome(user: int, connection: str = "") -> None: ...

    await app.open()
    async with await psycopg.AsyncConnection.connect(pg_store.url) as conn:
        kept = await welcome.options(connection=conn).enqueue(user=1, connection="argument")
        many = await welcome.options(connection=conn).enqueue_many([{"user": 2}])
        assert await app.backend.job_get(kept) is None  # not visible before commit
        await conn.commit()
        dropped = await welcome.options(connection=conn).enqueue(user=3)
        await conn.rollback()
    view = await app.backend.job_get(kept)
    assert view is not None
    assert json.loads(view.payload or "") == {"user": 1, "connection": "argument"}
    assert await app.backend.job_get(many[0]) is not None
    assert await app.backend.job_get(dropped) is None


def _concepts_blocks(marker: str) -> list[str]:
    """The Python blocks of docs/concepts.md's "Enqueue options" section holding ``marker``."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "concepts.md").read_text("utf-8")
    section = text.split("## Enqueue options", 1)[1].split("\n## ", 1)[0]
    return [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if marker in b]


async def test_the_enqueue_option_examples_in_the_concepts_doc_run_as_written(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    async def send_email(to: str, subject: str) -> None: ...

    await app.open()
    parent = send_email.prepare(to="p@b.c", subject="first")
    await app.enqueue_many([parent])
    namespace: dict[str, Any] = {"send_email": send_email, "parent": parent}
    blocks = _concepts_blocks("send_email")
    assert len(blocks) == 2
    for block in blocks:
        code = compile(block, "concepts.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        run = eval(code, namespace)  # the block awaits: it compiles to a coroutine
        if run is not None:
            await run
    # The first block: a delayed job at priority 20, and a reusable options object.
    assert namespace["urgent"].settings.queue == "urgent"
    assert namespace["job"].after == (parent.id,) and namespace["job"].queue == "urgent"
    # The second: a key unique for an hour, expiring in ten minutes.
    digest = await app.get_job(namespace["digest_id"])
    assert digest is not None and digest.idempotency_key == "digest:ann"
    assert digest.expires_at is not None
    assert (digest.expires_at - digest.created_at).total_seconds() == pytest.approx(600)
    again = await send_email.options(idempotency_key="digest:ann", unique_for_seconds=3600).enqueue(
        to="ann@b.c", subject="your digest"
    )
    assert again == namespace["digest_id"] and again.duplicate

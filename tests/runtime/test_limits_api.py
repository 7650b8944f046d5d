"""The entry points of rate limits and partitions, on both backends: ``@app.job(rate_limit=,
partition_concurrency=)`` checked at decoration, ``partition=`` carried by every way to enqueue,
and a worker recording what its handlers declare."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chokaq import App, ValidationError

from .conftest import running, until


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rate_limit": "fast"}, "rate_limit"),
        ({"rate_limit": "0/s"}, "rate_limit"),
        ({"rate_limit": "1000000/s"}, "rate_limit"),
        ({"rate_limit": 10}, "rate_limit"),
        ({"partition_concurrency": 0}, "partition_concurrency"),
        ({"partition_concurrency": 10_001}, "partition_concurrency"),
        ({"partition_concurrency": True}, "partition_concurrency"),
    ],
)
def test_a_bad_limit_is_refused_at_decoration_naming_it(
    make_app: Callable[..., App], options: dict[str, object], field: str
) -> None:
    app = make_app()
    with pytest.raises(ValidationError) as caught:

        @app.job(**options)  # type: ignore[arg-type]
        async def limited() -> None: ...

    assert caught.value.field == field
    assert "limited" not in {h.name for h in app.handlers}


async def test_a_handler_may_take_a_parameter_named_partition(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    async def shard(partition: str) -> None: ...

    await app.open()
    job_id = await shard.options(partition="account:9").enqueue(partition="p-3")
    view = await app.backend.job_get(job_id)
    assert view is not None
    assert view.partition == "account:9"  # the option, through options()
    assert view.payload is not None and "p-3" in view.payload  # the argument, the handler's


async def test_every_way_to_enqueue_carries_the_partition(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(rate_limit="5/m", partition_concurrency=1)
    async def sync_account(account_id: int) -> None: ...

    await app.open()
    ids = [
        await sync_account.enqueue(account_id=42, partition="account:42"),
        await app.enqueue_raw(sync_account.name, {"account_id": 7}, partition="account:7"),
        *await app.enqueue_many([sync_account.prepare(account_id=1, partition="account:1")]),
    ]
    views = [await app.backend.job_get(i) for i in ids]
    partitions = [v.partition for v in views if v is not None]
    assert partitions == ["account:42", "account:7", "account:1"]
    with pytest.raises(ValidationError) as caught:
        await sync_account.enqueue(account_id=1, partition="x" * 256)
    assert caught.value.field == "partition"
    with pytest.raises(ValidationError):
        await sync_account.enqueue(account_id=1, partition="")
    pending = sum(q.pending for q in await app.backend.stats_queues())
    assert pending == 3  # the refused ones wrote nothing


async def test_a_worker_records_what_its_handlers_declare(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(queue="partner", rate_limit="10/s")
    async def call_partner(order_id: int) -> None: ...

    @app.job(rate_limit="5/m", partition_concurrency=1)
    async def sync_account(account_id: int) -> None: ...

    @app.job()
    async def plain() -> None: ...

    await app.open()
    assert await app.backend.limits_list() == []

    async def declared() -> dict[str, tuple[str | None, int | None]]:
        return {
            i.name: (i.declared_rate_limit, i.declared_partition_concurrency)
            for i in await app.backend.limits_list()
            if i.scope == "type"
        }

    async with running(app):
        await until(lambda: _is(declared, {call_partner.name, sync_account.name}))
    found = await declared()
    assert found == {call_partner.name: ("10/s", None), sync_account.name: ("5/m", 1)}


async def _is(read: Callable[..., object], names: set[str]) -> bool:
    return set(await read()) == names  # type: ignore[misc]


async def test_a_worker_declares_its_limits_before_its_first_claim(
    make_app: Callable[..., App],
) -> None:
    # Else the first claims of a newly limited type, on a store that has never heard of its
    # limit, start its jobs unlimited (found by a test of run_until_idle that saw all three
    # jobs of a "1/h" type run, once). The burst ends 0.5 s after the one start the hour
    # allows (its horizon), with the two held jobs left.
    app = make_app(burst_horizon_seconds=0.5)

    @app.job(rate_limit="1/h")
    async def slow() -> None: ...

    await app.open()
    for _ in range(3):
        await slow.enqueue()
    seen: list[str] = []
    app.backend.add_observer(lambda op, _s, _e: seen.append(op))
    worker = app.create_worker(burst=True)
    await worker.run()
    assert "jobs_claim" in seen and "limits_declare" in seen
    assert seen.index("limits_declare") < seen.index("jobs_claim")
    stats = await app.backend.stats_queues()
    assert sum(q.pending for q in stats) == 2  # one start in the hour, two held

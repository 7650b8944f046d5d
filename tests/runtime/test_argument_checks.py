"""Argument values checked against the handler's annotations at enqueue, on both backends: a
wrong type is refused with ``ValidationError`` naming the argument (and the item inside it),
through every way to enqueue, with nothing written; what Python's typing accepts (an int for a
float, a bool for an int) and what the checker does not understand pass; an annotation
resolved only later is checked from the first enqueue; ``check_arguments=False`` lets a wrong
type through to the worker, which handles it as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Literal, NewType, Protocol, TypedDict, TypeVar
from uuid import UUID

import pytest

from chokaq import App, FailureReason, ValidationError
from chokaq.models import Pillar

try:
    from tests.runtime.payload_models import Invoice
except ImportError:  # pydantic is not installed: its test skips
    Invoice = None  # type: ignore[assignment,misc]

ID = UUID("12345678-1234-5678-1234-567812345678")
NOW = datetime.now(UTC)
T = TypeVar("T")
UserId = NewType("UserId", int)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True)
class Line:
    sku: str
    qty: int


class Point(TypedDict):
    x: int


class Greeter(Protocol):
    def greet(self) -> str: ...


class Own:
    """A class of the handler's own: the checker leaves it alone."""


def register(app: App) -> Any:
    @app.job()
    async def typed(
        to: str,
        n: int = 0,
        ratio: float = 0.0,
        flag: bool = False,
        ids: list[UUID] | None = None,
        by_name: dict[str, Decimal] | None = None,
        pair: tuple[date, Colour] | None = None,
        counts: tuple[int, ...] = (),
        maybe: datetime | None = None,
        either: int | str = 0,
        colour: Colour = Colour.RED,
        line: Line | None = None,
        lines: list[Line] | None = None,
        mode: Literal["fast", "slow"] = "fast",
        day: date | None = None,
        tags: list[str] | None = None,
        user: UserId = UserId(1),
        point: Point | None = None,
        loose: int = None,  # type: ignore[assignment]  # noqa: RUF013 - as older code has
        anything: Any = None,
        generic: T | None = None,
        greeter: Greeter | None = None,
        own: Own | None = None,
        bare=None,
    ) -> None: ...

    return typed


REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"to": 123}, "arguments.to", "must be a str, not int"),
    ({"n": "1"}, "arguments.n", "must be an int, not str"),
    ({"n": 1.0}, "arguments.n", "must be an int, not float"),
    ({"ratio": "0.5"}, "arguments.ratio", "must be a float, not str"),
    ({"flag": 1}, "arguments.flag", "must be a bool, not int"),
    ({"ids": [ID, str(ID)]}, "arguments.ids[1]", "must be a UUID, not str"),
    ({"ids": {ID}}, "arguments.ids", "must be list[UUID] | None, not set"),
    ({"by_name": {"a": 1.5}}, "arguments.by_name.a", "must be a Decimal, not float"),
    ({"pair": (date(2024, 1, 1), "blue")}, "arguments.pair[1]", "must be a Colour, not str"),
    ({"pair": (date(2024, 1, 1),)}, "arguments.pair", "must hold 2 items, not 1"),
    ({"counts": (1, 2, "3")}, "arguments.counts[2]", "must be an int, not str"),
    ({"maybe": "2024-01-01T00:00:00+00:00"}, "arguments.maybe", "must be datetime | None"),
    ({"either": [1]}, "arguments.either", "must be int | str, not list"),
    ({"colour": "red"}, "arguments.colour", "must be a Colour, not str"),
    ({"line": {"sku": "a", "qty": 1}}, "arguments.line", "must be Line | None, not dict"),
    ({"lines": [Line("a", 1), ("b", 2)]}, "arguments.lines[1]", "must be a Line, not tuple"),
    ({"mode": "medium"}, "arguments.mode", "must be one of 'fast', 'slow', not 'medium'"),
    ({"day": NOW}, "arguments.day", "must be a date, not datetime"),
    ({"tags": ["a", 2]}, "arguments.tags[1]", "must be a str, not int"),
    ({"user": "u1"}, "arguments.user", "must be a UserId, not str"),
    ({"point": [1]}, "arguments.point", "must be Point | None, not list"),
    ({"loose": "1"}, "arguments.loose", "must be int | None, not str"),
]

ACCEPTED: list[dict[str, Any]] = [
    {"n": True},  # a bool is an int, for Python's typing as for isinstance
    {"ratio": 1},  # the numeric tower: an int where a float is expected
    {"ids": (ID, UUID(int=1))},  # a tuple for a list, a list for a tuple: one JSON array
    {"pair": [date(2024, 1, 1), Colour.BLUE], "counts": [1, 2]},
    {"by_name": {"a": Decimal("1.5")}, "maybe": None, "either": "x"},
    {"line": Line("a", 1), "lines": [Line("b", 2)], "mode": "slow", "day": date(2024, 2, 29)},
    {"user": UserId(7), "point": {"x": 1}, "loose": None, "colour": Colour.BLUE},
    {"anything": {"k": [1]}, "generic": "t", "greeter": "g", "own": {"a": 1}, "bare": [1]},
]


async def test_wrong_types_are_refused_naming_the_argument_and_nothing_is_written(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    typed = register(app)
    await app.open()
    before = await app.backend.stats_summary()
    for given, field, reason in REFUSED:
        arguments = {"to": "a@b.c", **given}
        with pytest.raises(ValidationError) as info:
            await typed.enqueue(**arguments)
        assert (info.value.field, given) == (field, given)
        assert reason in info.value.limit, (given, info.value.limit)
        with pytest.raises(ValidationError, match=re.escape(field)):
            typed.prepare(**arguments)
    assert await app.backend.stats_summary() == before
    assert before.pending == 0
    for given in ACCEPTED:
        await typed.enqueue(to="a@b.c", **given)
    assert (await app.backend.stats_summary()).pending == len(ACCEPTED)


async def test_every_way_to_enqueue_checks_and_enqueue_many_names_the_call(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    def count(n: int, label: str = "") -> None: ...

    await app.open()
    before = await app.backend.stats_summary()
    attempts: list[tuple[Callable[[], Any], str]] = [
        (lambda: count.prepare(n="1"), "arguments.n"),
        (lambda: count.prepare("1"), "arguments.n"),  # positional arguments are bound first
        (lambda: count.options(priority=3).prepare(n=1, label=2), "arguments.label"),
        (lambda: count.enqueue(n=None), "arguments.n"),
        (lambda: count.options(queue="q").enqueue(n=[1]), "arguments.n"),
        (lambda: asyncio.to_thread(count.enqueue_sync, n="x"), "arguments.n"),
        (
            lambda: asyncio.to_thread(count.options(priority=2).enqueue_sync, n=1, label=b"x"),
            "arguments.label",
        ),
        (lambda: count.enqueue_many([{"n": 1}, {"n": 2}, {"n": "3"}]), "jobs[2].arguments.n"),
        (
            lambda: count.options(tags=["t"]).enqueue_many([{"n": 1}, {"n": 2.5}]),
            "jobs[1].arguments.n",
        ),
        (lambda: count.enqueue_many([{"n": 1, "priority": 5}, {"n": ()}]), "jobs[1].arguments.n"),
    ]
    for attempt, field in attempts:
        with pytest.raises(ValidationError) as info:
            result = attempt()
            if asyncio.iscoroutine(result) or asyncio.isfuture(result):
                await result
        assert info.value.field == field
    assert await app.backend.stats_summary() == before
    # The older errors of enqueue_many name the call too.
    with pytest.raises(ValidationError) as info:
        await count.enqueue_many([{"n": 1}, {"m": 2}])
    assert info.value.field == "jobs[1].arguments"
    assert await app.backend.stats_summary() == before


async def test_a_naive_datetime_is_the_serializers_refusal_naming_the_argument(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    def at(when: datetime) -> None: ...

    await app.open()
    with pytest.raises(ValidationError) as info:
        await at.enqueue(when=datetime(2026, 1, 1))
    assert info.value.field == "payload"
    assert "arguments.when is a naive datetime" in info.value.limit
    with pytest.raises(ValidationError) as info:
        await at.enqueue(when="2026-01-01T00:00:00+00:00")  # text, not a datetime
    assert (info.value.field, info.value.limit) == (
        "arguments.when",
        "must be a datetime, not str",
    )
    assert (await app.backend.stats_summary()).pending == 0


async def test_an_annotation_resolved_only_later_is_checked_from_the_first_enqueue(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    def later(x: DefinedLater, n: int = 0) -> None: ...  # noqa: F821 - defined below, on purpose

    @app.job()
    def never(y: NeverDefined, n: int = 0) -> None: ...  # noqa: F821 - only for type checkers

    assert later.checks is None and never.checks is None  # not resolvable at decoration
    globals()["DefinedLater"] = Colour
    try:
        with pytest.raises(ValidationError) as info:
            later.prepare(x="red")
        assert (info.value.field, info.value.limit) == ("arguments.x", "must be a Colour, not str")
        later.prepare(x=Colour.RED)
    finally:
        del globals()["DefinedLater"]
    # What never resolves is not checked; the other parameters still are.
    never.prepare(y={"anything": 1})
    with pytest.raises(ValidationError, match=r"arguments\.n"):
        never.prepare(y=1, n="2")
    assert [check[0] for check in never.checks or ()] == ["n"]


async def test_check_arguments_false_lets_a_wrong_type_reach_the_worker_as_before(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    received: list[Any] = []

    @app.job(check_arguments=False)
    def lenient(to: str, day: date | None = None) -> None:
        received.append(to)

    assert lenient.checks == ()
    first = await lenient.enqueue(to=123)
    await app.run_worker(burst=True)
    assert received == [123]  # a str parameter is not converted: the handler gets the int
    assert (await app.wait(first, timeout=30)).pillar is Pillar.ARCHIVE
    # A value the worker cannot read back as its annotated type is rejected there, as before.
    bad = await lenient.enqueue(to="x", day="not a date")
    await app.run_worker(burst=True)
    outcome = await app.wait(bad, timeout=30)
    assert (outcome.pillar, outcome.failure_reason) == (Pillar.DLQ, FailureReason.REJECTED)
    assert "argument day:" in (outcome.error or "")


async def test_scalar_annotations_are_one_isinstance_and_bare_handlers_check_nothing(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    async def noop(i: int = 0, sent: float = 0.0) -> None: ...

    @app.job()
    def bare(a, b=1): ...

    @app.job()
    def loose(a: Any, b: object, c: Own) -> None: ...

    assert [(name, kinds, inner) for name, kinds, inner, _ in noop.checks or ()] == [
        ("i", int, None),
        ("sent", (float, int), None),
    ]
    assert bare.checks == () and loose.checks == ()


async def test_a_pydantic_model_is_an_instance_or_a_dict_it_validates(
    make_app: Callable[..., App],
) -> None:
    pytest.importorskip("pydantic")
    app = make_app()

    @app.job()
    def bill(invoice: Invoice) -> None: ...

    fields = {"number": 7, "issued_at": NOW, "total": Decimal("1.5"), "owner": ID}
    bill.prepare(invoice=Invoice(**fields))
    bill.prepare(invoice=fields)
    with pytest.raises(ValidationError) as info:
        bill.prepare(invoice={**fields, "number": "seven"})
    assert info.value.field == "arguments.invoice"
    assert info.value.limit.startswith("is not a valid Invoice (number: ")
    with pytest.raises(ValidationError) as info:
        bill.prepare(invoice=[fields])
    assert info.value.limit == "must be an Invoice (or a dict it validates), not list"

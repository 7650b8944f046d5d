"""Rich argument types through a real worker, on both backends: every supported type (aware
datetime, date, time, UUID, Decimal, enum, dataclass, pydantic model, and optional, list, tuple
and dict forms of them) reaches the handler as its annotated type; a naive datetime, NaN in a
dataclass and an object with no JSON form are refused naming the argument, with nothing
written; plain payloads keep their text and rows in the older spacing still decode; a payload
that does not fit its annotation is rejected naming the argument; results are stored as JSON.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest

from chokaq import App, FailureReason, ValidationError
from chokaq.models import Pillar

try:
    from tests.runtime.payload_models import Invoice
except ImportError:  # pydantic is not installed: its test skips
    Invoice = None  # type: ignore[assignment,misc]

EAST = timezone(timedelta(hours=5, minutes=30))
WHEN = datetime(2026, 12, 1, 23, 59, 30, 123456, tzinfo=EAST)
ID = UUID("12345678-1234-5678-1234-567812345678")


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    S = 1
    L = 3


@dataclasses.dataclass(frozen=True)
class Line:
    sku: str
    price: Decimal
    size: Size


@dataclasses.dataclass(frozen=True)
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ArithmeticError(f"{self.n} is not positive")


@dataclasses.dataclass(frozen=True)
class Order:
    id: UUID
    placed_at: datetime
    total: Decimal
    lines: list[Line]
    colour: Colour | None = None
    ship_on: date | None = None


ORDER = Order(
    id=ID,
    placed_at=WHEN,
    total=Decimal("1299.90"),
    lines=[Line("sku-1", Decimal("0.10"), Size.S), Line("sku-2", Decimal("1E+3"), Size.L)],
    colour=Colour.BLUE,
    ship_on=date(2026, 12, 3),
)

ARGUMENTS: dict[str, Any] = {
    "when": WHEN,
    "day": date(2027, 2, 28),
    "at": time(7, 30, 15, 5),
    "at_utc": time(7, 30, tzinfo=UTC),
    "id": ID,
    "amount": Decimal("-0.000000000000000000012345678901234567890"),
    "colour": Colour.RED,
    "order": ORDER,
    "maybe": None,
    "maybe_day": date(2020, 2, 29),
    "ids": [ID, UUID(int=1)],
    "by_name": {"a": Decimal("1.5"), "b": Decimal("2")},
    "pair": (date(2020, 1, 1), Colour.BLUE),
    "text": "Grüße, 東京",
    "untyped": {"k": [1, 2.5, None]},
}


def register(app: App, received: list[dict[str, Any]]) -> Any:
    @app.job()
    def typed(
        when: datetime,
        day: date,
        at: time,
        at_utc: time,
        id: UUID,
        amount: Decimal,
        colour: Colour,
        order: Order,
        maybe: datetime | None,
        maybe_day: date | None,
        ids: list[UUID],
        by_name: dict[str, Decimal],
        pair: tuple[date, Colour],
        text: str,
        untyped,
    ) -> Order:
        arguments = dict(locals())
        received.append({k: v for k, v in arguments.items() if k in ARGUMENTS})
        return order

    return typed


async def test_each_type_reaches_the_handler_as_annotated(make_app: Callable[..., App]) -> None:
    app = make_app()
    received: list[dict[str, Any]] = []
    typed = register(app, received)
    job_id = await typed.enqueue(**ARGUMENTS)
    await app.run_worker(burst=True)
    assert len(received) == 1
    got = received[0]
    assert got == ARGUMENTS
    for name, value in ARGUMENTS.items():
        assert type(got[name]) is type(value), name
    assert got["when"].utcoffset() == timedelta(hours=5, minutes=30)  # the offset as sent
    assert type(got["order"].lines[1].size) is Size
    assert str(got["amount"]) == str(ARGUMENTS["amount"])  # exact, digits and exponent alike
    # A result is stored as JSON and read back as JSON (the caller has no handler to type it).
    result = await app.result(job_id, timeout=30)
    assert result == {
        "id": str(ID),
        "placed_at": "2026-12-01T23:59:30.123456+05:30",
        "total": "1299.90",
        "lines": [
            {"sku": "sku-1", "price": "0.10", "size": 1},
            {"sku": "sku-2", "price": "1E+3", "size": 3},
        ],
        "colour": "blue",
        "ship_on": "2026-12-03",
    }


async def test_only_handlers_with_rich_annotations_convert(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    def plain(a: int, b: str, c: list[int], d: dict[str, Any], e: float | None, f) -> None: ...

    @app.job()
    def bare(a, b): ...

    assert plain.converters == ()
    assert bare.converters == ()
    typed = register(app, [])
    names = [name for name, _ in typed.converters]
    assert names == [
        "when",
        "day",
        "at",
        "at_utc",
        "id",
        "amount",
        "colour",
        "order",
        "maybe",
        "maybe_day",
        "ids",
        "by_name",
        "pair",
    ]


async def test_plain_payloads_keep_their_text_and_older_rows_decode(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    received: list[dict[str, Any]] = []

    @app.job()
    def plain(a: int, b: str, c: list[Any], d: date | None = None) -> None:
        received.append({"a": a, "b": b, "c": c, "d": d})

    job = plain.prepare(a=1, b="é\n", c=[1.5, None, True, {"x": '"y"'}, 1e300, -0.0])
    assert job.payload == '{"a":1,"b":"é\\n","c":[1.5,null,true,{"x":"\\"y\\""},1e+300,-0.0]}'
    # An integer beyond 64 bits is written (by the standard library's encoder) and read exactly.
    big = plain.prepare(a=2**70, b="", c=[-(2**80)])
    assert big.payload == '{"a":1180591620717411303424,"b":"","c":[-1208925819614629174706176]}'
    await app.enqueue_many([job, big])
    # A row written by an older version (the standard library's spacing, escaped non-ASCII).
    await app.enqueue_raw("plain", '{"a": 2, "b": "\\u00e9", "c": [], "d": "2024-02-29"}')
    await app.run_worker(burst=True, concurrency=1)
    assert sorted(received, key=lambda r: r["a"]) == [
        {"a": 1, "b": "é\n", "c": [1.5, None, True, {"x": '"y"'}, 1e300, -0.0], "d": None},
        {"a": 2, "b": "é", "c": [], "d": date(2024, 2, 29)},
        {"a": 2**70, "b": "", "c": [-(2**80)], "d": None},
    ]


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        ({"when": datetime(2026, 1, 1)}, "arguments.when is a naive datetime"),
        (
            {"order": dataclasses.replace(ORDER, placed_at=datetime(2026, 1, 1))},
            "arguments.order.placed_at is a naive datetime",
        ),
        ({"payload": {"k": [1, object()]}}, "arguments.payload.k[1] is of type object"),
        ({"payload": {"k": {1, 2}}}, "arguments.payload.k is of type set"),
        ({"payload": b"bytes"}, "arguments.payload is of type bytes"),
        (
            {"order": dataclasses.replace(ORDER, lines=[Line("x", Decimal(1), math.nan)])},
            "arguments.order.lines[0].size is nan",
        ),
    ],
    ids=["naive", "naive-in-dataclass", "object", "set", "bytes", "nan-in-dataclass"],
)
async def test_what_has_no_json_form_is_refused_naming_the_argument(
    make_app: Callable[..., App], arguments: dict[str, Any], names: str
) -> None:
    app = make_app()

    @app.job()
    def anything(
        when: datetime | None = None, order: Order | None = None, payload: Any = None
    ) -> None: ...

    await app.open()
    before = await app.backend.stats_summary()
    with pytest.raises(ValidationError) as info:
        await anything.enqueue(**arguments)
    assert info.value.field == "payload"
    assert names in str(info.value)
    with pytest.raises(ValidationError, match="arguments"):
        anything.prepare(**arguments)
    assert await app.backend.stats_summary() == before
    assert before.pending == 0


async def test_a_payload_that_does_not_fit_its_annotation_is_rejected_naming_it(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    received: list[Any] = []

    @app.job()
    def dated(day: date, colour: Colour = Colour.RED, p: Positive | None = None) -> None:
        received.append(day)

    bad_day = await app.enqueue_raw("dated", '{"day": "not a date"}')
    bad_colour = await app.enqueue_raw("dated", '{"day": "2024-01-01", "colour": "green"}')
    bad_p = await app.enqueue_raw("dated", '{"day": "2024-01-01", "p": {"n": -1}}')
    await app.run_worker(burst=True)
    assert received == []
    for job_id, name in ((bad_day, "day"), (bad_colour, "colour"), (bad_p, "p")):
        outcome = await app.wait(job_id, timeout=30)
        assert outcome.pillar is Pillar.DLQ
        assert outcome.failure_reason is FailureReason.REJECTED
        assert f"argument {name}:" in (outcome.error or "")


async def test_an_annotation_resolved_only_later_converts_from_the_first_job(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    received: list[Any] = []

    @app.job()
    def later(x: DefinedLater, n: float | date) -> None:  # noqa: F821 - defined below, on purpose
        received.append((x, n))

    assert later.converters is None  # not resolvable at decoration
    globals()["DefinedLater"] = Positive
    try:
        await later.enqueue(x=Positive(3), n=4)
        await app.run_worker(burst=True)
    finally:
        del globals()["DefinedLater"]
    assert received == [(Positive(3), 4)]
    assert [name for name, _ in later.converters or ()] == ["x", "n"]


async def test_a_pydantic_model_round_trips(make_app: Callable[..., App]) -> None:
    pydantic = pytest.importorskip("pydantic")
    app = make_app()
    received: list[Any] = []

    @app.job()
    def ship(invoice: Invoice, extra: list[Invoice]) -> None:
        received.append((invoice, extra))

    invoice = Invoice(number=7, issued_at=WHEN, total=Decimal("10.05"), owner=ID)
    await ship.enqueue(invoice=invoice, extra=[invoice, invoice])
    await app.run_worker(burst=True)
    assert received == [(invoice, [invoice, invoice])]
    assert isinstance(received[0][0], pydantic.BaseModel)
    assert received[0][0].issued_at == WHEN and received[0][0].total == Decimal("10.05")

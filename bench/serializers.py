"""Encode and decode speed of the JSON libraries chokaq could use, on chokaq's payload shapes.

Shapes: a no-op job's payload (``{"i": 1}``), a typical handler's keyword arguments (10 fields:
strings, ints, a float, a bool, a nested list and a small object) and a 100 KB document (a list
of records with non-ASCII text). Libraries: the standard library's ``json`` (``json.dumps``
with chokaq's settings, a fresh encoder per call as the public API builds it), the encoder chokaq
built from ``json.encoder.c_make_encoder`` before (for reference: what the switch is measured
against), orjson and msgspec, each where it is installed. Encoding includes turning the bytes
into ``str`` (chokaq stores text); decoding starts from ``str``.

Each round times every library once per shape and direction, in an order that rotates between
rounds (so none always runs first on a warm or a cold cache), all in this one process; the
figures are the median and min-max over the rounds, in microseconds per call and calls per
second. When chokaq is importable (``PYTHONPATH=src``), the same rounds also time chokaq's own
seam: ``encode_payload`` of the plain kwargs and of a typed payload (a dataclass with an aware
datetime and a Decimal, plus a UUID and a date), and the worker's decode of each (JSON text to
the handler's annotated arguments).

With ``--enqueue`` it also times ``prepare`` plus ``enqueue_many`` of 20,000 plain and 20,000
typed jobs into a SQLite file, alternating, in jobs/s.

    PYTHONPATH=src .venv/bin/python bench/serializers.py [--rounds 9] [--enqueue] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

try:
    import orjson
except ImportError:  # pragma: no cover - measured where installed
    orjson = None  # type: ignore[assignment]
try:
    import msgspec
except ImportError:  # pragma: no cover
    msgspec = None  # type: ignore[assignment]

SMALL = {"i": 1}
KWARGS = {
    "user_id": 123456,
    "email": "someone@example.com",
    "subject": "Your order has shipped",
    "template": "order_shipped_v2",
    "locale": "fr-FR",
    "order_id": "ord_8f14e45fceea167a5a36dedd4bea2543",
    "amount_cents": 129900,
    "ratio": 0.175,
    "urgent": False,
    "items": [[1, "sku-001", 2], [2, "sku-017", 1], [3, "sku-230", 5]],
}


def _stdlib_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _big() -> dict[str, Any]:
    rows = []
    i = 0
    while True:
        rows.append(
            {
                "id": i,
                "name": f"Élément numéro {i}",
                "tags": ["alpha", "beta", "gamma"],
                "price": i * 1.25,
                "active": i % 2 == 0,
                "note": None,
            }
        )
        i += 1
        if i % 50 == 0 and len(_stdlib_dumps({"rows": rows}).encode()) >= 100_000:
            return {"rows": rows}


BIG = _big()
SHAPES: dict[str, Any] = {"small": SMALL, "kwargs": KWARGS, "100KB": BIG}


def _private_encoder() -> Callable[[Any], str] | None:
    """The encoder chokaq used before, rebuilt here only to be measured against."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    plain = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    chunks = make(
        None, plain.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return lambda value: "".join(chunks(value, 0))


def libraries() -> dict[str, tuple[Callable[[Any], str], Callable[[str], Any]]]:
    found: dict[str, tuple[Callable[[Any], str], Callable[[str], Any]]] = {
        "stdlib json": (_stdlib_dumps, json.loads)
    }
    private = _private_encoder()
    if private is not None:  # its decoder is json.loads: only its encoding is timed
        found["stdlib c_make_encoder (before)"] = (private, json.loads)
    if orjson is not None:
        dumps = orjson.dumps
        found["orjson"] = (lambda v: dumps(v).decode(), orjson.loads)
    if msgspec is not None:
        encode = msgspec.json.Encoder().encode
        found["msgspec"] = (lambda v: encode(v).decode(), msgspec.json.Decoder().decode)
    return found


def _time_per_call(fn: Callable[[Any], Any], arg: Any, budget: float = 0.05) -> float:
    """Seconds per call of ``fn(arg)``, over as many calls as fit in about ``budget`` s."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn(arg)
        elapsed = time.perf_counter() - start
        if elapsed >= budget / 5:
            break
        n *= 4
    n = max(1, round(n * budget / elapsed))
    start = time.perf_counter()
    for _ in range(n):
        fn(arg)
    return (time.perf_counter() - start) / n


@dataclass
class Order:
    id: UUID
    placed_at: datetime
    total: Decimal
    ship_on: date
    note: str


def chokaq_cases() -> dict[str, tuple[Callable[[], Any], Callable[[], Any] | None]]:
    """(encode, decode) closures of chokaq's own seam, when chokaq is importable."""
    try:
        from chokaq import App
        from chokaq.payloads import encode_payload
        from chokaq.serializer import decode_arguments
    except ImportError:
        return {}
    app = App("sqlite:///:memory:")

    @app.job()
    def plain(
        user_id: int,
        email: str,
        subject: str,
        template: str,
        locale: str,
        order_id: str,
        amount_cents: int,
        ratio: float,
        urgent: bool,
        items: list[list[Any]],
    ) -> None: ...

    @app.job()
    def typed(order: Order) -> None: ...

    order = Order(
        UUID("12345678-1234-5678-1234-567812345678"),
        datetime(2026, 12, 1, 23, 59, 30, 123456, tzinfo=UTC),
        Decimal("1299.90"),
        date(2026, 12, 3),
        "leave at the door",
    )
    plain_text = encode_payload(KWARGS)
    typed_text = encode_payload({"order": order})
    return {
        "100KB (raw mapping)": (lambda: encode_payload(BIG, "payload"), None),
        "kwargs": (
            lambda: encode_payload(KWARGS),
            lambda: decode_arguments(app.handlers["plain"], plain_text),
        ),
        "typed Order": (
            lambda: encode_payload({"order": order}),
            lambda: decode_arguments(app.handlers["typed"], typed_text),
        ),
    }


def enqueue_rates(rounds: int, jobs: int = 20_000) -> dict[str, list[float]]:
    """Jobs/s of ``prepare`` plus ``app.enqueue_many`` (batches of 10,000) of ``jobs`` plain
    no-op jobs and of as many typed ones (an ``Order`` each), alternating, on a SQLite file."""
    import asyncio
    import tempfile
    from pathlib import Path

    try:
        from chokaq import App
    except ImportError:
        return {}

    async def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            app = App(f"sqlite:///{Path(tmp) / 'bench.db'}", auto_migrate=True)

            @app.job()
            async def noop(i: int = 0) -> None: ...

            @app.job()
            async def ship(order: Order) -> None: ...

            def plain(i: int) -> Any:
                return noop.prepare(i=i)

            def typed(i: int) -> Any:
                return ship.prepare(
                    order=Order(
                        UUID(int=i),
                        datetime(2026, 12, 1, 23, 59, 30, i % 1_000_000, tzinfo=UTC),
                        Decimal(i) / 100,
                        date(2026, 12, 3),
                        "leave at the door",
                    )
                )

            await app.open()
            for r in range(rounds):
                kinds = [("plain", plain), ("typed Order", typed)]
                for name, make in kinds if r % 2 == 0 else kinds[::-1]:
                    start = time.perf_counter()
                    for first in range(0, jobs, 10_000):
                        await app.enqueue_many([make(i) for i in range(first, first + 10_000)])
                    out.setdefault(name, []).append(jobs / (time.perf_counter() - start))
            await app.close()
        return out

    return asyncio.run(run())


def _row(stats: list[float]) -> str:
    us = [s * 1e6 for s in stats]
    med = statistics.median(us)
    return f"{med:9.2f} us ({min(us):.2f}-{max(us):.2f})  {1 / statistics.median(stats):>12,.0f}/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", help="write the figures (seconds per call) here")
    parser.add_argument(
        "--enqueue",
        action="store_true",
        help="also time prepare + bulk enqueue of 20,000 plain and typed jobs on SQLite",
    )
    args = parser.parse_args(argv)
    libs = libraries()
    names = list(libs)
    texts = {shape: _stdlib_dumps(value) for shape, value in SHAPES.items()}
    for name, (dumps, loads) in libs.items():  # every library agrees before it is timed
        for shape, value in SHAPES.items():
            assert loads(dumps(value)) == value, (name, shape)
    cases = chokaq_cases()
    figures: dict[str, list[float]] = {}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for shape, value in SHAPES.items():
            for name in order:
                dumps, loads = libs[name]
                figures.setdefault(f"encode {shape} {name}", []).append(
                    _time_per_call(dumps, value)
                )
                if "before" not in name:
                    figures.setdefault(f"decode {shape} {name}", []).append(
                        _time_per_call(loads, texts[shape])
                    )
        for case, (encode, decode) in cases.items():
            figures.setdefault(f"chokaq encode_payload {case}", []).append(
                _time_per_call(lambda _, f=encode: f(), None)
            )
            if decode is not None:
                figures.setdefault(f"chokaq worker decode {case}", []).append(
                    _time_per_call(lambda _, f=decode: f(), None)
                )
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds, median (min-max) per call")
    print("payload sizes: " + ", ".join(f"{s} {len(t.encode())} B" for s, t in texts.items()))
    for key in figures:
        print(f"{key:<52} {_row(figures[key])}")
    if args.enqueue:
        rates = enqueue_rates(args.rounds)
        for name, values in rates.items():
            med = statistics.median(values)
            print(
                f"{'chokaq bulk enqueue (SQLite) ' + name:<52} {med:12,.0f} jobs/s "
                f"({min(values):,.0f}-{max(values):,.0f})"
            )
            figures[f"enqueue jobs/s {name}"] = values
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Compact JSON text for what chokaq writes itself (job payloads, results, statement
parameters), and the JSON library it is written with.

Owns the choice of library and the plain text it produces: compact, non-ASCII kept as is, no
NaN or Infinity. What may be serialized, and how rich values become JSON, is
``chokaq.serializer``'s business; this module must not know about handler types.

The library is orjson, chosen by ``bench/serializers.py`` (CPython 3.11, x86_64; median of 9
rounds, microseconds per call, text in and out). Encoding: a no-op payload ``{"i": 1}`` takes
1.59 with ``json.dumps`` (the public API builds a fresh C encoder per call), 0.35 with the
private ``c_make_encoder`` encoder chokaq used before, 0.09 with orjson and 0.07 with msgspec; a
10-field kwargs dict 3.33 / 1.94 / 0.22 / 0.35; a 100 KB document 797 / 668 / 74 / 119. Dropping
the private encoder for the public stdlib API alone would have cost every enqueue 1.2 to 1.4 us
more; orjson takes a quarter of the old encoder's time or less. orjson and msgspec both ship
wheels for CPython 3.11-3.13 on manylinux x86_64 and aarch64, macOS (x86_64 and arm64) and
Windows, so speed did not decide between them; their semantics did. orjson refuses what JSON
would silently change (a non-string object key, a lone surrogate, a set, bytes) and lets
datetimes through to our hook (``OPT_PASSTHROUGH_DATETIME``), so a naive datetime can be
refused; msgspec turns ``{1: "a"}`` into ``{"1": "a"}``, bytes into base64 and sets into arrays,
and encodes a naive datetime with no way to stop it, each of which would need a walk over every
payload to refuse. Neither refuses NaN (both write ``null``): the serializer looks for a
non-finite float only when the text holds a ``null``. Where orjson cannot encode a value the
standard library can (an integer beyond 64 bits, a key of a ``str`` subclass such as a
``StrEnum``), the standard library's encoder serves, with the same settings, so every payload
accepted before is accepted still.

Decoding stays with ``json.loads``: orjson and msgspec decode about four times faster on the
kwargs dict (0.56 and 0.54 against 2.14 us; 422 and 396 against 687 us at 100 KB), but orjson
turns an integer beyond 64 bits into a float, silently, and stored rows (written by any version,
or by another service as raw text) may hold one. msgspec decodes them exactly, but a second
dependency for 1.5 us of a no-op job that costs about 130 us in the burn-down is not worth it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dump_json", "load_json", "orjson_text", "stdlib_text"]

load_json: Callable[[str], Any] = json.loads
"""JSON text to Python values (the standard library's parser: exact integers of any size)."""

_orjson_dumps = orjson.dumps


def orjson_text(
    value: Any, default: Callable[[Any], Any] | None = None, option: int | None = None
) -> str:
    """``value`` as compact JSON text by orjson; raises ``TypeError`` for what it cannot
    encode (``default`` is called for the types it does not know, and those ``option``
    passes through to it)."""
    return _orjson_dumps(value, default, option).decode()


def stdlib_text(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as the same compact JSON text by the standard library (integers beyond 64
    bits, keys of ``str`` subclasses); raises ``ValueError`` for NaN or Infinity,
    ``TypeError`` for what ``default`` refuses and ``RecursionError`` for a cycle."""
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default
    )


def dump_json(value: Any) -> str:
    """Plain JSON values (what statements send: lists and objects of text and numbers) as
    compact text; ``ValueError`` for NaN or Infinity, ``TypeError`` for anything else."""
    try:
        text = _orjson_dumps(value).decode()
    except TypeError:
        return stdlib_text(value)
    if "null" in text:
        return stdlib_text(value)  # a NaN would have become null: refuse it as before
    return text

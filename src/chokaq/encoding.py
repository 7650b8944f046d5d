"""Compact JSON text for what chokaq writes itself: job payloads and statement parameters.

Owns serialization speed only; what may be serialized is the callers' business.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["dump_json"]


def _json_encoder() -> Callable[[Any], str]:
    """Compact JSON text, no NaN or Infinity, non-ASCII kept as is.

    ``JSONEncoder.encode`` builds a fresh C encoder on every call, which costs more than the
    encoding of a small payload; this one is built once (without the circular-reference
    table, which it could not share between threads: a cycle ends in RecursionError instead).
    Where the C encoder is missing or behaves otherwise, the plain encoder serves."""
    plain = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    try:
        chunks = make(
            None, plain.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
        )
    except TypeError:  # another signature
        return plain.encode

    def encode(value: Any) -> str:
        if isinstance(value, dict | list):
            return "".join(chunks(value, 0))
        return plain.encode(value)

    samples = ({"a": [1, 2.5, None, True, "é\n"], "b": {"c": -0.0}}, [{"x": '"y"'}, 1e300])
    same = all(encode(sample) == plain.encode(sample) for sample in samples)
    return encode if same else plain.encode


dump_json = _json_encoder()

"""What an enqueue's Python values become: the payload's JSON text and the tags tuple.

Owns turning handler arguments (or a raw job's mapping or list) into payload text that every
limit accepts, refusing what JSON would silently change (a non-string object key, NaN, a naive
datetime, a string given as tags). How rich values become JSON is ``chokaq.serializer``'s, the
limits themselves are ``chokaq.limits``'. It must not touch storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import ValidationError
from .limits import MAX_PAYLOAD_DEPTH, JsonText, json_too_deep
from .serializer import Unserializable, encode

__all__ = ["encode_payload", "encode_result", "tags_option"]


def tags_option(tags: Sequence[str] | None) -> tuple[str, ...]:
    """The ``tags=`` option as a tuple; a lone string is refused (``tuple("abc")`` would make
    three one-letter tags of it, silently)."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise ValidationError("tags", "must be a list of strings, not a string")
    try:
        return tuple(tags)
    except TypeError:
        raise ValidationError(
            "tags", f"must be a list of strings, not {type(tags).__name__}"
        ) from None


def _refusal(exc: Unserializable) -> str:
    if exc.keys:
        return f"object keys must be strings: {exc.path} {exc.reason}"
    return f"must be JSON-serializable: {exc.path} {exc.reason}"


def encode_payload(arguments: Any, path: str = "arguments") -> JsonText:
    """Handler arguments (or a raw payload's object or array) as the JSON text stored as the
    payload (``chokaq.serializer``: rich types included): nesting at most
    ``MAX_PAYLOAD_DEPTH`` deep, object keys strings, no NaN, no naive datetime. Raises
    ``ValidationError`` for ``payload`` naming the offending value (``arguments.when``)."""
    try:
        text = encode(arguments, path)
    except Unserializable as exc:
        raise ValidationError("payload", _refusal(exc)) from None
    except RecursionError:
        raise ValidationError(
            "payload",
            f"must be JSON-serializable: it refers to itself or nests more than "
            f"{MAX_PAYLOAD_DEPTH} deep",
        ) from None
    if json_too_deep(text):
        raise ValidationError(
            "payload", f"must not nest arrays and objects more than {MAX_PAYLOAD_DEPTH} deep"
        )
    return JsonText(text)


def encode_result(value: Any, max_bytes: int) -> tuple[str | None, str | None]:
    """A handler's return value as (JSON text, None), or (None, why it is not kept): not
    JSON-serializable (rich types are, as for arguments), nested too deep, or larger than
    ``max_bytes`` UTF-8 bytes. None is (None, None): nothing to keep."""
    if value is None:
        return None, None
    try:
        text = encode(value, "result")
    except RecursionError:
        return None, f"not kept: it refers to itself or nests more than {MAX_PAYLOAD_DEPTH} deep"
    except Unserializable as exc:
        if exc.keys:
            return None, f"not kept: {_refusal(exc)}"
        return None, f"not kept: not JSON-serializable ({exc})"
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > max_bytes:
        return None, f"not kept: {size} bytes of JSON, over the limit of {max_bytes}"
    if json_too_deep(text):
        return None, f"not kept: it nests more than {MAX_PAYLOAD_DEPTH} deep"
    return text, None

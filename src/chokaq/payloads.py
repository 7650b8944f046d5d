"""What an enqueue's Python values become: the payload's JSON text and the tags tuple.

Owns turning handler arguments (or a raw job's mapping or list) into payload text that every
limit accepts, refusing what JSON would silently change (a non-string object key, a string given
as tags); the limits themselves are ``chokaq.limits``'. It must not touch storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .encoding import dump_json
from .errors import ValidationError
from .limits import MAX_PAYLOAD_DEPTH, JsonText, json_too_deep

__all__ = ["encode_payload", "encode_result", "string_keys", "tags_option"]


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


def string_keys(value: Any, path: str) -> None:
    """Refuse an object key that is not a string: JSON would turn ``1`` into ``"1"``, so the
    handler would get other keys than were sent, and ``{1: "a", "1": "b"}`` would collapse."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(
                    "payload",
                    f"object keys must be strings: {path} has the key {key!r} "
                    f"({type(key).__name__})",
                )
            if isinstance(item, dict | list | tuple):
                string_keys(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if isinstance(item, dict | list | tuple):
                string_keys(item, f"{path}[{i}]")


def encode_payload(arguments: Any, path: str = "arguments") -> JsonText:
    """Handler arguments (or a raw payload's object or array) as the JSON text stored as the
    payload: nesting at most ``MAX_PAYLOAD_DEPTH`` deep, object keys strings, no NaN."""
    try:
        text = dump_json(arguments)
    except RecursionError:
        raise ValidationError(
            "payload",
            f"must be JSON-serializable: it refers to itself or nests more than "
            f"{MAX_PAYLOAD_DEPTH} deep",
        ) from None
    except (TypeError, ValueError) as exc:
        raise ValidationError("payload", f"must be JSON-serializable: {exc}") from None
    if json_too_deep(text):
        raise ValidationError(
            "payload", f"must not nest arrays and objects more than {MAX_PAYLOAD_DEPTH} deep"
        )
    # The top level of handler arguments has keyword names: only a nested object can hold a
    # key that is not a string, and its text has a second "{".
    if text.count("{") > (1 if isinstance(arguments, dict) else 0):
        string_keys(arguments, path)
    return JsonText(text)


def encode_result(value: Any, max_bytes: int) -> tuple[str | None, str | None]:
    """A handler's return value as (JSON text, None), or (None, why it is not kept): not
    JSON-serializable, nested too deep, or larger than ``max_bytes`` UTF-8 bytes. None is
    (None, None): nothing to keep."""
    if value is None:
        return None, None
    try:
        text = dump_json(value)
    except RecursionError:
        return None, f"not kept: it refers to itself or nests more than {MAX_PAYLOAD_DEPTH} deep"
    except (TypeError, ValueError) as exc:
        return None, f"not kept: not JSON-serializable ({exc})"
    try:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None, "not kept: it holds a lone surrogate (not valid Unicode)"
    if size > max_bytes:
        return None, f"not kept: {size} bytes of JSON, over the limit of {max_bytes}"
    if json_too_deep(text):
        return None, f"not kept: it nests more than {MAX_PAYLOAD_DEPTH} deep"
    try:
        string_keys(value, "result")
    except ValidationError as exc:
        return None, f"not kept: {exc.limit}"
    return text, None

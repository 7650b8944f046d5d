"""How handler arguments and return values of richer types than JSON's travel as JSON.

Owns both directions. At enqueue, ``encode`` writes aware datetimes, dates and times as ISO 8601
text, UUIDs in their canonical text, Decimals as exact text, enums as their value, dataclasses
as objects of their init fields and pydantic models as their own JSON (``model_dump(mode=
"json")``, when pydantic is installed: it is never imported here), and refuses anything else
with the path of the offending value (``arguments.order.placed_at``). On the worker,
``decode_arguments`` turns the decoded JSON back into the types the handler's parameters are
annotated with (``typing.get_type_hints``; ``X | None``, unions, ``list[X]``, ``tuple[X, ...]``
and ``dict[str, X]`` of them). What to convert is worked out once per handler
(``parameter_converters``): a handler annotated with plain JSON types only (or not at all) pays
nothing per job. It must not touch storage; which JSON library writes the text is
``chokaq.encoding``'s business.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any
from uuid import UUID

import orjson

from .encoding import load_json, orjson_text, stdlib_text

__all__ = [
    "Converter",
    "Unserializable",
    "converter_for",
    "decode_arguments",
    "encode",
    "parameter_converters",
]

Converter = Callable[[Any], Any]
_OPTION = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SUPPORTED = (
    "JSON types, aware datetimes, dates, times, UUIDs, Decimals, enums, dataclasses and "
    "pydantic models"
)
# How deep the search for an offending value goes: orjson refuses deeper nesting itself, and
# the payload limit (MAX_PAYLOAD_DEPTH, 100) is lower still.
_LOCATE_DEPTH = 260


class Unserializable(ValueError):
    """A value ``encode`` refuses: ``path`` names it (``arguments.when``), ``reason`` says why
    (``is a naive datetime ...``); ``keys`` is set for an object key that is not a string (the
    reason is then ``has the key 1 (int)``)."""

    def __init__(self, path: str, reason: str, *, keys: bool = False) -> None:
        self.path = path
        self.reason = reason
        self.keys = keys
        super().__init__(f"{path} {reason}")


class _Refused(TypeError):
    """Raised inside the encoder's hook; ``encode`` then locates the value for the message."""


def _pydantic_model(value: Any) -> bool:
    pydantic = sys.modules.get("pydantic")  # not imported: no value can be one of its models
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _init_fields(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}


def _default(value: Any) -> Any:
    """What a value JSON does not know becomes (called by either encoder)."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise _Refused("naive datetime")
        return value.isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _init_fields(value)
    if _pydantic_model(value):
        return value.model_dump(mode="json")
    raise _Refused(type(value).__name__)


def encode(value: Any, path: str = "arguments") -> str:
    """``value`` as compact JSON text (non-ASCII kept). Raises ``Unserializable`` naming the
    offending value under ``path``: a type it cannot write, a naive datetime, NaN or Infinity,
    a lone surrogate, an object key that is not a string; ``RecursionError`` for a value that
    refers to itself or nests too deep."""
    try:
        text = orjson_text(value, _default, _OPTION)
    except TypeError:
        # orjson's refusal, or one it cannot write but the standard library can (an integer
        # beyond 64 bits, a key of a str subclass): find the offender first, if there is one.
        found = _locate(value, path, 0)
        if found is not None:
            raise found from None
        try:
            return stdlib_text(value, _default)
        except _Refused:
            reason = f"holds a value with no JSON form ({_SUPPORTED} have)"
            raise Unserializable(path, reason) from None
    if "null" in text:  # NaN and Infinity are written as null: refuse them as JSON would
        found = _locate(value, path, 0)
        if found is not None:
            raise found
    return text


def _locate(value: Any, path: str, depth: int) -> Unserializable | None:
    """The first value under ``value`` that ``encode`` refuses, as the error naming it."""
    if depth > _LOCATE_DEPTH:
        raise RecursionError(path)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return Unserializable(path, "holds a lone surrogate (not valid Unicode)")
        return None
    if value is None or isinstance(value, int):  # bool is an int
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return Unserializable(
            path, f"is {value!r}, which JSON cannot hold (NaN and Infinity have no JSON spelling)"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return Unserializable(
                    path,
                    f"has the key {key!r} ({type(key).__name__})",
                    keys=True,
                )
            found = _locate(item, f"{path}.{key}", depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _locate(item, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(value, datetime) and (value.tzinfo is None or value.utcoffset() is None):
        return Unserializable(
            path, "is a naive datetime: give it a timezone (datetime.now(UTC), not utcnow())"
        )
    if isinstance(value, date | time | Decimal | UUID):
        return None
    if isinstance(value, enum.Enum):
        return _locate(value.value, path, depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _locate(_init_fields(value), path, depth + 1)
    if _pydantic_model(value):
        return None  # the model's own serialization decides
    kind = type(value)
    name = kind.__qualname__
    if kind.__module__ != "builtins":
        name = f"{kind.__module__}.{name}"
    return Unserializable(path, f"is of type {name}, which has no JSON form ({_SUPPORTED} have)")


# -- decoding to the annotated types ---------------------------------------------------------

_PLAIN: frozenset[Any] = frozenset({Any, object, int, str, float, bool, type(None), list, dict})


def _fail(tp: Any, value: Any) -> ValueError:
    name = getattr(tp, "__name__", repr(tp))
    return ValueError(f"{value!r} is not a {name}")


def _from_text(tp: Any, parse: Callable[[str], Any]) -> Converter:
    """The converter of a type JSON carries as a string (ISO dates and times, UUIDs): a string
    through ``parse``; anything else is not that type."""

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            raise _fail(tp, value)
        return parse(value)

    return convert


def _decimal(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(Decimal, value)
    try:
        return Decimal(value if isinstance(value, str | int) else str(value))
    except InvalidOperation:
        raise _fail(Decimal, value) from None


_SCALARS: dict[Any, Converter] = {
    datetime: _from_text(datetime, datetime.fromisoformat),
    date: _from_text(date, date.fromisoformat),
    time: _from_text(time, time.fromisoformat),
    UUID: _from_text(UUID, UUID),
    Decimal: _decimal,
}


def converter_for(tp: Any) -> Converter | None:
    """How a decoded JSON value becomes an instance of the annotation ``tp``, or None when it
    needs no conversion (plain JSON types, ``Any``, types this module does not know)."""
    if tp in _PLAIN:
        return None
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return converter_for(args[0])
    if origin in (typing.Union, types.UnionType):
        return _union(args)
    if origin in (list, tuple, dict) or origin is Mapping:
        return _container(origin, args)
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return _enum(tp)
        if dataclasses.is_dataclass(tp):
            return _dataclass(tp)
        pydantic = sys.modules.get("pydantic")
        if pydantic is not None and issubclass(tp, pydantic.BaseModel):
            model: Any = tp
            return model.model_validate  # type: ignore[no-any-return]
    return None  # a TypedDict, a Literal, a NewType, a class of the handler's own: as JSON


def _enum(tp: type[enum.Enum]) -> Converter:
    def convert(value: Any) -> Any:
        return value if isinstance(value, tp) else tp(value)

    return convert


def _union(args: tuple[Any, ...]) -> Converter | None:
    members = [a for a in args if a is not type(None)]
    convs = [converter_for(a) for a in members]
    if all(c is None for c in convs):
        return None
    optional = len(members) < len(args)
    if len(members) == 1:
        only = convs[0]
        assert only is not None

        def optional_one(value: Any) -> Any:
            return None if value is None else only(value)

        return optional_one if optional else only

    def first_fit(value: Any) -> Any:
        if value is None and optional:
            return None
        for member, conv in zip(members, convs, strict=True):
            if conv is None:
                plain = typing.get_origin(member) or member
                if plain is float and isinstance(value, int):
                    return value  # a JSON number without a fraction: a float as plain JSON has it
                if isinstance(plain, type) and isinstance(value, plain):
                    return value
                continue
            try:
                return conv(value)
            except (ValueError, TypeError):
                continue
        raise ValueError(f"{value!r} fits none of {', '.join(map(_name, members))}")

    return first_fit


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", repr(tp))


def _container(origin: Any, args: tuple[Any, ...]) -> Converter | None:
    if origin is list:
        found = converter_for(args[0]) if args else None
        if found is None:
            return None
        item: Converter = found

        def a_list(value: Any) -> Any:
            if not isinstance(value, list):
                raise ValueError(f"{value!r} is not a list")
            return [item(v) for v in value]

        return a_list
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = converter_for(args[0])

            def a_tuple(value: Any) -> Any:
                if not isinstance(value, list):
                    raise ValueError(f"{value!r} is not an array")
                return tuple(value) if each is None else tuple(each(v) for v in value)

            return a_tuple
        convs = [converter_for(a) for a in args]

        def fixed(value: Any) -> Any:
            if not isinstance(value, list) or len(value) != len(convs):
                raise ValueError(f"{value!r} is not an array of {len(convs)}")
            return tuple(v if c is None else c(v) for c, v in zip(convs, value, strict=True))

        return fixed
    found = converter_for(args[1]) if len(args) == 2 else None
    if found is None:
        return None
    value_conv: Converter = found

    def a_dict(value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"{value!r} is not an object")
        return {k: value_conv(v) for k, v in value.items()}

    return a_dict


def _dataclass(tp: type) -> Converter:
    fields: dict[str, Converter | None] | None = None

    def convert(value: Any) -> Any:
        nonlocal fields
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"{value!r} is not an object (for {tp.__name__})")
        if fields is None:  # resolved on first use: the dataclass may refer to later types
            try:
                hints = typing.get_type_hints(tp, include_extras=True)
            except Exception:  # an annotation that cannot be resolved: its fields stay JSON
                hints = {}
            fields = {
                f.name: converter_for(hints.get(f.name, Any))
                for f in dataclasses.fields(tp)
                if f.init
            }
        unknown = value.keys() - fields.keys()
        if unknown:
            raise ValueError(f"{tp.__name__} has no field(s) {', '.join(sorted(unknown))}")
        kwargs = {}
        for key, item in value.items():
            conv = fields[key]
            kwargs[key] = item if conv is None else conv(item)
        return tp(**kwargs)

    return convert


def parameter_converters(
    fn: Callable[..., Any], names: Iterable[str]
) -> tuple[tuple[str, Converter], ...] | None:
    """For each parameter of ``fn`` among ``names`` whose annotation needs it, its converter;
    () when none does. None when the annotations cannot be resolved yet (a forward reference
    to a type defined later): the caller tries again at the first job."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # NameError and whatever an annotation's evaluation raises
        return None
    found = []
    for name in names:
        conv = converter_for(hints.get(name, Any))
        if conv is not None:
            found.append((name, conv))
    return tuple(found)


def decode_arguments(handle: Any, text: str, passed: Sequence[Any] = ()) -> dict[str, Any]:
    """A job's payload as the keyword arguments of ``handle`` (a ``JobHandle``), each in its
    annotated type, with ``passed`` (its parents' results, for a job enqueued with
    ``pass_results``) in its leading positional parameters. Raises ``ValueError`` or
    ``TypeError`` for a payload that does not fit: not an object, missing or unknown
    arguments, a value that is not of its type."""
    arguments = load_json(text)
    if not isinstance(arguments, dict):
        raise ValueError("the payload is not a JSON object")
    if passed:
        for name, value in zip(handle.passed_names(len(passed)), passed, strict=True):
            if name in arguments:
                raise ValueError(f"argument {name} is in the payload and a parent's result too")
            arguments[name] = value
    misfit = handle.misfit(arguments)
    if misfit is not None:
        raise ValueError(misfit)
    convs = handle.converters
    if convs is None:
        convs = handle.resolve_converters()
    for name, conv in convs:
        if name in arguments:
            try:
                arguments[name] = conv(arguments[name])
            except Exception as exc:  # a constructor's own check (__post_init__) may raise anything
                raise ValueError(f"argument {name}: {type(exc).__name__}: {exc}") from None
    return arguments

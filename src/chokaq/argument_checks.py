"""What an enqueue checks of a handler's arguments against the handler's annotations.

Owns the enqueue direction of ``chokaq.serializer``'s decoding: once per handler
(``parameter_checks``), each annotated parameter gets a check of the Python value given for it,
so that ``send_email.enqueue(to=123)`` for ``to: str`` raises ``ValidationError("arguments.to",
"must be a str, not int")`` before anything is written, instead of reaching the handler as an
int. A plain scalar annotation is one ``isinstance`` per job (a type or a tuple of types worked
out here); containers, unions, ``Literal`` and pydantic models add a function that looks inside.
It checks as a type checker would, lenient where Python's typing is (an int for a float, a bool
for an int) and where JSON makes no difference (a tuple for a list, a list for a tuple); what it
does not understand (``Any``, ``object``, TypeVars, Protocols, classes of the handler's own) it
leaves alone, so that it never refuses a value merely for being unsure. Whether a value has a
JSON form (a naive datetime, NaN) is the serializer's to refuse. It must not touch storage.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from .errors import ValidationError

__all__ = ["Check", "Inner", "check_for", "parameter_checks", "refusal"]

# Looks inside a value that passed its isinstance (``path`` names it: ``arguments.ids[2]``);
# raises ValidationError for what does not fit.
Inner = Callable[[Any, str], None]
Kinds = type | tuple[type, ...]
# One parameter's check: its name, the type(s) its value must be an instance of, what looks
# inside (None for a scalar) and the annotation (for the message, worked out only on refusal).
Check = tuple[str, Kinds, Inner | None, Any]

_NONE = type(None)
_SCALARS: dict[Any, Kinds] = {
    bool: bool,
    int: int,  # bool is an int, for Python's typing as for isinstance
    float: (float, int),  # the numeric tower: an int is fine where a float is expected
    str: str,
    _NONE: _NONE,
    list: (list, tuple),  # both travel as a JSON array
    tuple: (tuple, list),
    dict: dict,
    datetime: datetime,
    time: time,
    UUID: UUID,
    Decimal: Decimal,
}


def _describe(tp: Any) -> str:
    """``tp`` as a reader writes it: ``int``, ``list[int]``, ``str | None``."""
    if tp is _NONE:
        return "None"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(map(_describe, args))
    if origin is typing.Annotated:
        return _describe(args[0])
    if origin is not None and args:
        inner = ", ".join("..." if a is Ellipsis else _describe(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def refusal(tp: Any, value: Any) -> str:
    """Why ``value`` is refused for the annotation ``tp``: ``must be a str, not int``."""
    expected = _describe(tp)
    if expected.isidentifier() and expected != "None":
        expected = f"{'an' if expected[0] in 'aeiouAEIO' else 'a'} {expected}"
    given = "None" if value is None else type(value).__name__
    if typing.get_origin(tp) is typing.Literal:
        given = repr(value)
    return f"must be {expected}, not {given}"


def _refuse(tp: Any, value: Any, path: str) -> ValidationError:
    return ValidationError(path, refusal(tp, value))


def check_for(tp: Any) -> tuple[Kinds, Inner | None] | None:
    """How a value given for the annotation ``tp`` is checked: the type(s) it must be an
    instance of, and what looks inside it (or None); None when nothing is checked."""
    kinds = _SCALARS.get(tp)
    if kinds is not None:
        return kinds, None
    if tp is date:
        return date, _not_a_datetime
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return check_for(args[0])
    if origin in (typing.Union, types.UnionType):
        return _union(tp, args)
    if origin is typing.Literal:
        return object, _literal(tp, args)
    if origin in (list, tuple):
        return (list, tuple), _items(args)
    if origin in (dict, Mapping):
        value = check_for(args[1]) if len(args) == 2 else None
        return dict, None if value is None else _values(args[1], value)
    supertype = getattr(tp, "__supertype__", None)  # a NewType: checked as its supertype
    if supertype is not None:
        return check_for(supertype)
    if not isinstance(tp, type):
        return None  # Any, a TypeVar, a ForwardRef, Callable, ...
    if typing.is_typeddict(tp):
        return dict, None
    if issubclass(tp, enum.Enum) or dataclasses.is_dataclass(tp):
        return tp, None
    pydantic = sys.modules.get("pydantic")  # not imported: no annotation can be one of its models
    if pydantic is not None and issubclass(tp, pydantic.BaseModel):
        return object, _model(tp, pydantic)
    return None  # object, a Protocol, a class of the handler's own: not checked


def _not_a_datetime(value: Any, path: str) -> None:
    # A datetime is a date for isinstance, but the worker reads a date's text back with
    # date.fromisoformat, which refuses a datetime's: refused here rather than at the worker.
    if isinstance(value, datetime):
        raise ValidationError(path, "must be a date, not datetime")


def _fits(check: tuple[Kinds, Inner | None], value: Any, path: str) -> bool:
    kinds, inner = check
    if not isinstance(value, kinds):
        return False
    if inner is not None:
        inner(value, path)
    return True


def _union(tp: Any, args: tuple[Any, ...]) -> tuple[Kinds, Inner | None] | None:
    checks = [check_for(a) for a in args]
    if any(c is None for c in checks):
        return None  # a member that is not checked may take anything
    members = [c for c in checks if c is not None]
    if all(inner is None for _, inner in members):  # int | None: one isinstance
        flat: list[type] = []
        for kinds, _ in members:
            flat.extend(kinds if isinstance(kinds, tuple) else (kinds,))
        return tuple(dict.fromkeys(flat)), None

    def one_of(value: Any, path: str) -> None:
        errors = []
        for member in members:
            try:
                if _fits(member, value, path):
                    return
            except ValidationError as exc:
                if member[0] is not object:  # a Literal or a model refuses every other value
                    errors.append(exc)
        if len(errors) == 1:  # one member took the value's type, and refused what is inside
            raise errors[0]
        raise _refuse(tp, value, path)

    return object, one_of


def _literal(tp: Any, args: tuple[Any, ...]) -> Inner:
    def literal(value: Any, path: str) -> None:
        if not any(value == a and type(value) is type(a) for a in args):
            raise _refuse(tp, value, path)

    return literal


def _each(tp: Any, check: tuple[Kinds, Inner | None]) -> Callable[[Any, str], None]:
    kinds, inner = check

    def each(item: Any, path: str) -> None:
        if not isinstance(item, kinds):
            raise _refuse(tp, item, path)
        if inner is not None:
            inner(item, path)

    return each


def _items(args: tuple[Any, ...]) -> Inner | None:
    if len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis):  # list[X], tuple[X, ...]
        found = check_for(args[0])
        if found is None:
            return None
        item = _each(args[0], found)

        def items(value: Any, path: str) -> None:
            for i, v in enumerate(value):
                item(v, f"{path}[{i}]")

        return items
    if not args or args == ((),):  # bare, or tuple[()]
        return None
    fixed = [(a, check_for(a)) for a in args]
    each = [None if check is None else _each(a, check) for a, check in fixed]

    def positions(value: Any, path: str) -> None:
        if len(value) != len(each):
            raise ValidationError(path, f"must hold {len(each)} items, not {len(value)}")
        for i, (item, v) in enumerate(zip(each, value, strict=True)):
            if item is not None:
                item(v, f"{path}[{i}]")

    return positions


def _values(tp: Any, check: tuple[Kinds, Inner | None]) -> Inner:
    item = _each(tp, check)

    def values(value: Any, path: str) -> None:
        for key, v in value.items():
            item(v, f"{path}.{key}")

    return values


def _model(tp: Any, pydantic: Any) -> Inner:
    def model(value: Any, path: str) -> None:
        if isinstance(value, tp):
            return
        if not isinstance(value, dict):
            reason = refusal(tp, value).replace(", not", " (or a dict it validates), not")
            raise ValidationError(path, reason)
        try:
            tp.model_validate(value)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first.get("loc", ())))
            detail = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
            raise ValidationError(path, f"is not a valid {tp.__name__} ({detail})") from None

    return model


def _hints(fn: Callable[..., Any], names: list[str]) -> dict[str, Any]:
    """Each annotation of ``names`` that resolves: one that does not (a type only imported for
    type checkers) leaves its parameter unchecked rather than every other one. A forward
    reference nested inside one that does (``list["Later"]``) is left unchecked too."""
    raw = getattr(fn, "__annotations__", {})
    namespace = getattr(fn, "__globals__", {})
    hints = {}
    for name in names:
        annotation = raw.get(name)
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # the handler's own annotation
            except Exception:  # NameError and whatever an annotation's evaluation raises
                continue
        if annotation is not None:
            hints[name] = annotation
    return hints


def parameter_checks(
    fn: Callable[..., Any], params: Iterable[inspect.Parameter], *, final: bool = False
) -> tuple[Check, ...] | None:
    """For each of ``params`` whose annotation is checked, its ``Check``; () when none is.
    None when the annotations cannot be resolved yet (a forward reference to a type defined
    later) and not ``final``: the caller tries again at the first enqueue, with ``final``, and
    then leaves unchecked each parameter whose annotation still does not resolve. A parameter
    whose default is None also takes None (``x: int = None``)."""
    params = list(params)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        if not final:
            return None
        hints = _hints(fn, [p.name for p in params])
    found: list[Check] = []
    for param in params:
        tp = hints.get(param.name)
        if tp is None:
            continue
        if param.default is None:
            tp = typing.Optional[tp]  # noqa: UP045 - X | None fails for some typing forms
        check = check_for(tp)
        if check is not None:
            found.append((param.name, check[0], check[1], tp))
    return tuple(found)

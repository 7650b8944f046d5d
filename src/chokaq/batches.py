"""Batch handlers' values: the ``Batched`` item a batch handler receives, the ``BatchSpec`` its
decoration declares (checked here, naming the field), and the arguments model its jobs take.

A batch handler (``@app.job(batch_size=...)``) is called with a list of due jobs of its type at
once (docs/batches.md). Each job is still enqueued alone, with the fields of the handler's
arguments model as its arguments (``list[Batched[EmbedArgs]]``: ``embed.enqueue(tenant=...,
text=...)``), and keeps its own row, attempts and outcome. This module holds data and the rules
about it; it does no I/O and knows nothing of the worker that runs the batches.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .context import JobContext
from .errors import ConfigurationError, ValidationError
from .limits import MAX_BATCH_SIZE, MAX_BATCH_WAIT_SECONDS, check_count, check_seconds

__all__ = [
    "ArgumentsModel",
    "BatchSpec",
    "Batched",
    "batch_options",
    "batch_results",
    "check_batch_key",
]

A = TypeVar("A")

# What a parameter that may be left out of an enqueue defaults to in the arguments' signature:
# only whether it is required matters there (the model fills in its own defaults).
_OPTIONAL = object()


@dataclass(frozen=True, slots=True)
class Batched(Generic[A]):
    """One job of a batch, as the batch handler receives it.

    ``id`` is the job's id, ``args`` its arguments (an instance of the handler's arguments
    model, or a dict when the handler declares none), ``attempt`` and ``max_attempts`` count
    its runs as ``JobContext`` does, ``key`` is its value of the type's ``batch_key`` (None
    without one) and ``context`` is its own ``JobContext`` (progress, heartbeat, whether a
    cancel was requested for it).
    """

    id: str
    args: A
    attempt: int
    max_attempts: int
    key: Any
    context: JobContext


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """How a job type's jobs are batched: at most ``size`` per call, claimed once ``size`` are
    due or once the oldest due one has waited ``wait_seconds``, never mixing two values of the
    argument ``key`` (None: any job of the type goes with any other)."""

    size: int
    wait_seconds: float
    key: str | None = None


@dataclass(frozen=True)
class ArgumentsModel:
    """The arguments a batch handler's jobs take: ``model`` (a dataclass, a pydantic model,
    a TypedDict, or None for a plain dict of any arguments), the signature an enqueue is bound
    to, and ``annotated``, a stand-in function carrying the fields' annotations, for the
    argument checks and converters that read them from a function."""

    model: Any
    signature: inspect.Signature
    annotated: Callable[..., Any]

    @property
    def names(self) -> frozenset[str] | None:
        """The arguments' names (None: any name is taken)."""
        params = self.signature.parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        return frozenset(p.name for p in params)

    def build(self, arguments: dict[str, Any]) -> Any:
        """The item's ``args`` from its decoded, converted arguments."""
        model = self.model
        if model is None or _is_typed_dict(model):
            return arguments
        return model(**arguments)

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str) -> ArgumentsModel:
        """The model of ``fn``'s one parameter, annotated ``list[Batched[Model]]`` (or a
        ``Sequence`` of them; unannotated: plain dicts). Raises ``ConfigurationError`` for a
        handler that takes anything else."""
        params = list(inspect.signature(fn).parameters.values())
        if len(params) != 1 or params[0].kind in (params[0].VAR_POSITIONAL, params[0].VAR_KEYWORD):
            raise ConfigurationError(
                f"job {name!r}: a batch handler takes one parameter, the list of Batched items "
                "(each item carries its job's context)"
            )
        try:
            hint = typing.get_type_hints(fn).get(params[0].name)
        except Exception:  # a forward reference that does not resolve: plain dicts
            hint = None
        return cls._from_model(_model_of(hint))

    @classmethod
    def _from_model(cls, model: Any) -> ArgumentsModel:
        fields = _fields(model)
        if fields is None:
            params = [inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)]
            hints: dict[str, Any] = {}
        else:
            params = [
                inspect.Parameter(
                    field,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if required else _OPTIONAL,
                    annotation=tp,
                )
                for field, (tp, required) in fields.items()
            ]
            hints = {field: tp for field, (tp, _) in fields.items()}

        def arguments(**given: Any) -> None:
            """Stands for the arguments model in the annotation-driven checks."""

        arguments.__annotations__ = hints
        signature = inspect.Signature(params)
        arguments.__signature__ = signature  # type: ignore[attr-defined]
        return cls(model, signature, arguments)


def _model_of(hint: Any) -> Any:
    """``Model`` out of ``list[Batched[Model]]``; None when the hint does not say."""
    if hint is None:
        return None
    origin = typing.get_origin(hint)
    if origin not in (list, Sequence, typing.Sequence):
        return None
    (item,) = typing.get_args(hint) or (None,)
    if typing.get_origin(item) is not Batched:
        return None
    (model,) = typing.get_args(item)
    return None if model is Any or model is dict or typing.get_origin(model) is dict else model


def _is_typed_dict(model: Any) -> bool:
    return isinstance(model, type) and issubclass(model, dict) and hasattr(model, "__total__")


def _fields(model: Any) -> dict[str, tuple[Any, bool]] | None:
    """Each field's annotation and whether an enqueue must give it; None: any arguments."""
    if model is None:
        return None
    if dataclasses.is_dataclass(model) and isinstance(model, type):
        hints = typing.get_type_hints(model)
        return {
            f.name: (
                hints.get(f.name, Any),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(model)
            if f.init
        }
    pydantic_fields = getattr(model, "model_fields", None)
    if isinstance(pydantic_fields, Mapping):
        return {
            name: (info.annotation, info.is_required()) for name, info in pydantic_fields.items()
        }
    if _is_typed_dict(model):
        hints = typing.get_type_hints(model)
        required = getattr(model, "__required_keys__", frozenset(hints))
        return {name: (tp, name in required) for name, tp in hints.items()}
    raise ConfigurationError(
        f"the batch arguments model {model!r} must be a dataclass, a pydantic model or a "
        "TypedDict (or dict, for plain JSON arguments)"
    )


def batch_options(
    batch_size: object,
    batch_wait_seconds: object,
    batch_key: object,
    *,
    rate_limit: object = None,
    partition_concurrency: object = None,
    durable: object = False,
) -> BatchSpec | None:
    """The decoration's batch options, checked (None: not a batch handler): ``batch_size`` 1
    to 10,000, ``batch_wait_seconds`` a finite number from 0 to 3,600, ``batch_key`` a string
    (whether it names an argument is ``check_batch_key``'s, once the handler is known). A
    batch type takes no rate limit, partition cap or durability: those count one job per
    start, and a batch starts many at once. Raises ``ValidationError`` naming the field."""
    if batch_size is None:
        if batch_key is not None:
            raise ValidationError("batch_key", "is only for a batch handler (give batch_size)")
        if batch_wait_seconds != 1.0:
            raise ValidationError(
                "batch_wait_seconds", "is only for a batch handler (give batch_size)"
            )
        return None
    size = check_count("batch_size", batch_size, minimum=1, maximum=MAX_BATCH_SIZE)
    wait = check_seconds(
        "batch_wait_seconds", batch_wait_seconds, maximum=MAX_BATCH_WAIT_SECONDS, allow_none=False
    )
    assert size is not None and wait is not None
    per_job = {"rate_limit": rate_limit, "partition_concurrency": partition_concurrency}
    for field, value in per_job.items():
        if value is not None:
            raise ValidationError(
                field, "is not taken by a batch handler (limit the batch_size instead)"
            )
    if durable:
        raise ValidationError("durable", "a batch handler cannot be durable")
    if batch_key is not None and not isinstance(batch_key, str):
        raise ValidationError(
            "batch_key", f"must be an argument name, not {type(batch_key).__name__}"
        )
    return BatchSpec(size, wait, batch_key)


def check_batch_key(spec: BatchSpec, names: frozenset[str] | None) -> BatchSpec:
    """``spec``, once its ``key`` is one of the arguments' ``names`` (None: the handler takes
    any argument, so any identifier); ``ValidationError`` for ``batch_key`` otherwise."""
    key = spec.key
    if key is None:
        return spec
    if names is None and not key.isidentifier():
        raise ValidationError("batch_key", f"must be an argument name, not {key!r}")
    if names is not None and key not in names:
        known = ", ".join(sorted(names)) or "none"
        raise ValidationError(
            "batch_key", f"{key!r} is not an argument of the handler (its arguments: {known})"
        )
    return spec


def batch_results(name: str, values: object, count: int) -> list[Any]:
    """A batch handler's return value as one result per item; raises ``ValueError`` (the
    whole batch fails, each job under its own retry policy) when it is not a list or tuple of
    ``count`` results."""
    if not isinstance(values, list | tuple):
        raise ValueError(
            f"batch handler {name} must return a list of {count} results (one per item, an "
            f"exception instance for an item that failed), not {type(values).__name__}"
        )
    if len(values) != count:
        raise ValueError(
            f"batch handler {name} returned {len(values)} results for {count} items "
            "(it must return one per item, in order)"
        )
    return list(values)

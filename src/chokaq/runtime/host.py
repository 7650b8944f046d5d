"""What the worker runtime needs of the app that hosts it, as protocols: the handlers it runs
(``JobHandler``, ``PipeHandler``), the ``Middleware`` around them, and the app itself
(``Host``: backend, open and close, handlers by type, pipes by queue, middleware list,
periodic schedules by name).

``chokaq.App``, ``JobHandle`` and ``PipeHandle`` satisfy them structurally, so the runtime never
imports ``chokaq.app`` (which imports the runtime to build workers). Owns these shapes only: no
behaviour, no state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ..batches import ArgumentsModel, BatchSpec
from ..context import Middleware
from ..models import ScheduleDeclaration
from ..policies import ExceptionTypes, RetryPolicy
from ..storage import Backend

__all__ = ["BatchHandler", "Host", "JobHandler", "Middleware", "PipeHandler"]


class PipeHandler(Protocol):
    """What the executor needs of a raw handler (``chokaq.app.PipeHandle`` is one)."""

    @property
    def fn(self) -> Callable[..., Any]: ...
    @property
    def context_param(self) -> str | None: ...
    @property
    def is_async(self) -> bool: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def max_attempts(self) -> int | None: ...


class JobHandler(PipeHandler, Protocol):
    """What the executor needs of a typed handler (``chokaq.handles.JobHandle`` is one), and the
    limits the worker records for its type.

    ``retry`` (None: the worker's policy), ``retry_on`` (None: every exception is retried) and
    ``fatal_on`` are the type's own retry rules, read when a job of the type fails."""

    name: str
    rate_limit: str | None
    partition_concurrency: int | None
    retry: RetryPolicy | None
    retry_on: ExceptionTypes | None
    fatal_on: ExceptionTypes
    durable: bool

    def misfit(self, arguments: Mapping[str, Any]) -> str | None: ...


class BatchHandler(JobHandler, Protocol):
    """What the batch runner needs of a batch handler (``chokaq.handles.BatchHandle`` is one):
    how its jobs are batched and the model their arguments build."""

    batch: BatchSpec
    arguments: ArgumentsModel | None


class Host(Protocol):
    """What a worker needs of its app (``chokaq.App`` is one): the backend, opening and closing
    it, the handlers by job type, the pipe handlers by queue, the middleware list and the
    periodic schedules its code declares, by name."""

    @property
    def backend(self) -> Backend: ...
    @property
    def opened(self) -> bool: ...
    @property
    def handlers(self) -> Mapping[str, JobHandler]: ...
    @property
    def pipes(self) -> Mapping[str, PipeHandler]: ...
    @property
    def middlewares(self) -> Sequence[Middleware]: ...
    @property
    def periodics(self) -> Mapping[str, ScheduleDeclaration]: ...
    async def open(self) -> object: ...
    async def close(self) -> None: ...

"""The storage seam's instrumentation point: ``operation`` wraps every public coroutine of
``Backend`` (and of the operation groups it is assembled from) so that each call is timed,
its driver errors are translated into our tree, and it is observed exactly once.

Owns that wrapper and the ``Observer`` shape; no storage logic.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from ..errors import ChokaqError

__all__ = ["Observed", "Observer", "observed_operations", "operation", "unobserved"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

# (operation name, seconds taken, the error raised or None)
Observer = Callable[[str, float, BaseException | None], None]


class _Translator(Protocol):
    def translate(self, exc: Exception) -> ChokaqError: ...


class Observed(Protocol):
    """What ``operation`` needs of the object it wraps a method of."""

    @property
    def driver(self) -> _Translator: ...
    def _observe(self, operation: str, seconds: float, error: BaseException | None) -> None: ...


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def operation(method: F) -> F:
    """The instrumentation point: time the whole call, translate driver errors, observe once."""
    name = method.__name__

    @functools.wraps(method)
    async def observed(self: Observed, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = await method(self, *args, **kwargs)
        except ChokaqError as exc:
            self._observe(name, time.perf_counter() - started, exc)
            raise
        except Exception as exc:
            translated = self.driver.translate(exc)
            self._observe(name, time.perf_counter() - started, translated)
            if _cancelling():
                # The caller's task was cancelled mid-statement and the driver answered with
                # an error of its own (a cancelled query, a closed connection): the
                # cancellation must win, or a loop that retries storage errors would never stop.
                raise asyncio.CancelledError() from translated
            raise translated from exc
        self._observe(name, time.perf_counter() - started, None)
        return result

    observed.__wrapped_operation__ = name  # type: ignore[attr-defined]
    return observed  # type: ignore[return-value]


def observed_operations(cls: type) -> list[str]:
    """The names of every observed operation of ``cls`` and the classes it inherits from."""
    return sorted(
        {
            name
            for klass in cls.__mro__
            for name, member in vars(klass).items()
            if hasattr(member, "__wrapped_operation__")
        }
    )


def unobserved(cls: type) -> list[str]:
    """Public coroutines of ``cls`` (and its bases) without ``@operation``: each would escape
    the instrumentation point."""
    import inspect

    return sorted(
        {
            name
            for klass in cls.__mro__
            for name, member in vars(klass).items()
            if not name.startswith("_")
            and inspect.iscoroutinefunction(member)
            and not hasattr(member, "__wrapped_operation__")
        }
    )

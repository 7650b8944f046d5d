"""The worker's event emitter: the listeners that hear job and worker events (the metrics and
OpenTelemetry hooks), and ``emit``, which calls each of them.

Owns the list of listeners and shields the runtime from them: a listener that raises is
ignored. It must not decide anything or reach storage; it only passes events on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

__all__ = ["Events", "Listener"]

Listener = Callable[[str, dict[str, Any]], None]


class Events:
    """Listeners of one worker. ``listeners`` is public so that a hot path can skip building an
    event's fields when nobody listens (``if events.listeners: events.emit(...)``)."""

    __slots__ = ("listeners",)

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def add(self, listener: Listener) -> None:
        """``listener(name, fields)`` hears every later event."""
        self.listeners.append(listener)

    def emit(self, name: str, **fields: Any) -> None:
        """Call every listener with ``name`` and ``fields``; a listener's error is swallowed."""
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener(name, fields)

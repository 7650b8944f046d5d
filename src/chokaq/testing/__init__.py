"""Test helpers for code that uses chokaq: drain a store under a fake clock, run jobs eagerly,
build a ``JobContext`` for a direct handler call, and pytest fixtures (docs/testing.md).

Everything here drives the real worker against a real store (SQLite or PostgreSQL); nothing is
mocked. It must not be imported by the engine itself.
"""

from __future__ import annotations

from .contexts import make_context
from .drain import Drained, run_until_idle
from .eager import eager

__all__ = ["Drained", "eager", "make_context", "run_until_idle"]

"""The Deck's "Why the wait": pending jobs by queue and type with the reason their due jobs are
not running, and the queues with due jobs that no live worker serves.

Its route sits beside ``api.ROUTES`` (``app`` registers both, and the OpenAPI document lists
both) and runs inside ``api.endpoint`` like every other read (any signed-in role). The live
stream carries the same document (``snapshot``'s ``waits`` and ``unserved``); this route reads
it now. It reaches data through the backend (``chokaq.waits``) and must not hold SQL.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from ..views import parse_int
from ..waits import explain
from .api import ApiRoute
from .auth import Principal
from .state import DeckState

__all__ = ["ROUTES"]


async def get_lag(request: Request, state: DeckState, who: Principal) -> Any:
    """Why jobs wait, read now (the live stream's copy may be a few seconds old and lists
    the 50 groups with the most due jobs); ``limit``: 1..1000 groups (default 200)."""
    limit = parse_int("limit", request.query_params.get("limit"), default=200, low=1, high=1000)
    return (await explain(state.app.backend, limit=limit)).as_json()


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "GET",
        "/api/lag",
        get_lag,
        "Why jobs wait: pending jobs by queue and type with a reason (no worker, paused, "
        "circuit, limit, capacity, retrying, delayed, parents) and the queues with due jobs "
        "no live worker serves",
        query=("limit",),
    ),
)

"""The Deck's batch handlers: each batch type's batches over a window (how many, their mean and
largest size, the newest ones), for the Batches panel; a job's own batches are in its inspector
(``api.get_job``).

Its route sits beside ``api.ROUTES`` (``app`` registers both) and runs inside ``api.endpoint``
like every other. It reads through the backend and must not hold SQL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request

from ..batches import BatchSpec
from ..limits import check_name
from ..views import batch_sizes_json, parse_int
from .api import ApiRoute
from .auth import Principal
from .state import DeckState

__all__ = ["ROUTES"]

# The newest batches listed per type, and the longest window asked for (31 days).
RECENT = 20
MAX_WINDOW_SECONDS = 31 * 86_400


def _declared(state: DeckState) -> dict[str, BatchSpec]:
    """The batch types the Deck's app declares, with how each batches."""
    return {
        name: spec
        for name, handle in state.app.handlers.items()
        if (spec := getattr(handle, "batch", None)) is not None
    }


async def get_batches(request: Request, state: DeckState, who: Principal) -> Any:
    """Each batch type's batches over the last ``since_seconds`` (default an hour): its
    settings when the Deck's app declares it, how many batches and jobs, their mean and
    largest size and the newest 20. ``type`` limits it to one type, declared or not."""
    window = parse_int(
        "since_seconds",
        request.query_params.get("since_seconds"),
        default=3600,
        low=1,
        high=MAX_WINDOW_SECONDS,
    )
    since = datetime.now(UTC) - timedelta(seconds=window)
    declared = _declared(state)
    wanted = request.query_params.get("type")
    types = [check_name("type", wanted)] if wanted is not None else sorted(declared)
    out = []
    for name in types:
        sizes = await state.app.backend.batch_sizes(type=name, since=since)
        data = batch_sizes_json(name, sizes, RECENT)
        spec = declared.get(name)
        data["batch_size"] = None if spec is None else spec.size
        data["batch_wait_seconds"] = None if spec is None else spec.wait_seconds
        data["batch_key"] = None if spec is None else spec.key
        out.append(data)
    return {"since_seconds": window, "types": out}


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "GET",
        "/api/batches",
        get_batches,
        "Each batch handler type's batches over the last since_seconds (default 3600): its "
        "settings, how many batches and jobs, their mean and largest size, the newest 20",
        query=("type", "since_seconds"),
    ),
)

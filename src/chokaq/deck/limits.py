"""The Deck's rate limits: the list of limited queues and job types with their load, and the
admin actions that set a limit over what the code declares or put it back to the code.

Its routes sit beside ``api.ROUTES`` (``app`` registers both, and the OpenAPI document lists
both); every handler runs inside ``api.endpoint``, so roles, CSRF, the mapping of errors to 4xx
answers and the audit line are the same as for every other action. The storage seam checks
every value (scope, name, rate, concurrency) before it writes anything and names the field;
this module adds only what is the Deck's own. It reaches data through the backend and must not
hold SQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from ..errors import ValidationError
from ..views import dump
from .api import ApiRoute, json_body
from .audit import Done
from .auth import Principal
from .state import DeckState

__all__ = ["ROUTES"]

SETTINGS = ("rate_limit", "partition_concurrency")


async def get_limits(request: Request, state: DeckState, who: Principal) -> Any:
    """Every limited queue and type, read now (the live stream's copy may be two seconds old)."""
    now = datetime.now(UTC)
    limits = await state.app.backend.limits_list(now=now)
    return {"at": dump(now), "items": [state.limit_json(info) for info in limits]}


def _target(data: dict[str, Any]) -> tuple[Any, Any]:
    # Passed on as they came: the storage seam says what is wrong with either, by name.
    return data.get("scope"), data.get("name")


async def post_limit_set(request: Request, state: DeckState, who: Principal) -> Any:
    """Set a queue's rate, or a type's rate and partition concurrency, over what the code
    declares. A setting left out is unchanged; ``null`` clears it (for a type that declares
    one, the operator's "none" is in force until reset)."""
    data = await json_body(request)
    scope, name = _target(data)
    changes = {key: data[key] for key in SETTINGS if key in data}
    if not changes:
        raise ValidationError(
            "rate_limit", "nothing to change: give rate_limit or partition_concurrency"
        )
    info = await state.app.backend.limit_set(scope=scope, name=name, actor=who.name, **changes)
    return Done(
        state.limit_json(info), info.name, 1, extra={"scope": info.scope, **_logged(changes)}
    )


def _logged(changes: dict[str, Any]) -> dict[str, Any]:
    # Checked by the storage seam by now: a rate's text form and an integer, or None.
    return {key: "none" if value is None else value for key, value in changes.items()}


async def post_limit_reset(request: Request, state: DeckState, who: Principal) -> Any:
    """Drop an operator's settings: what the code declares is in force again (for a queue:
    no rate). 404 when there is no such limit."""
    data = await json_body(request)
    scope, name = _target(data)
    info = await state.app.backend.limit_reset(scope=scope, name=name, actor=who.name)
    return Done(state.limit_json(info), info.name, 1, extra={"scope": info.scope})


LIMIT_TARGET = {"scope": "string", "name": "string"}

ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "GET",
        "/api/limits",
        get_limits,
        "Every limited queue and job type: the rate and partition concurrency in force and "
        "where each comes from (operator or code), the current rate, pending, held and running "
        "jobs, and the busiest partitions",
    ),
    ApiRoute(
        "POST",
        "/api/limits/set",
        post_limit_set,
        'Set a limit over what the code declares: scope "queue" (rate_limit only) or "type" '
        "(rate_limit, partition_concurrency); a rate is N/s, N/m or N/h, null clears one",
        admin=True,
        body={**LIMIT_TARGET, "rate_limit": "string", "partition_concurrency": "integer"},
    ),
    ApiRoute(
        "POST",
        "/api/limits/reset",
        post_limit_reset,
        "Drop an operator's limit settings: what the code declares is in force again",
        admin=True,
        body=LIMIT_TARGET,
    ),
)

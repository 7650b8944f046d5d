"""The Deck's bulk actions beyond the DLQ's: "all matching the filter" on Active (cancel) and on
Archive (requeue as new, delete), each with the preview and typed confirmation the DLQ's actions
by filter have, and run-now of delayed jobs (one or the selected ones).

A preview answers with the filter pinned to now (``until``); an action by filter requires that
pinned filter back, so it acts on the previewed set and never on a job that arrived afterwards,
at most ``cap`` (1..``MAX_BULK_CAP``) rows, newest first. Cancel, delete and any action on
``confirm.CONFIRM_AT`` or more jobs carry the typed word (``deck.confirm``). Its routes sit
beside ``api.ROUTES`` (``app`` registers them all) and run inside ``api.endpoint``: admin role,
CSRF, Origin, 4xx answers and the audit line with the actor are the same as for every other
action. It reaches data through the backend only and must not hold SQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from ..errors import ValidationError
from ..limits import MAX_BULK_CAP
from ..models import JobFilter, Pillar
from ..views import dump, filter_json, parse_filter, parse_int
from . import audit
from .api import ApiError, ApiRoute, json_body
from .audit import Done
from .auth import Principal
from .confirm import FILTER_BODY, IDS_BODY, confirm, job_ids
from .state import DeckState

__all__ = ["ROUTES"]

NOT_DELAYED = "not a pending job scheduled in the future"


def _by_filter(data: dict[str, Any]) -> tuple[JobFilter, int]:
    raw = data.get("filter", {})
    if not isinstance(raw, dict):
        raise ValidationError("filter", "must be an object")
    cap = parse_int("cap", data.get("cap"), default=100, low=1, high=MAX_BULK_CAP)
    return parse_filter(raw), cap


def _pinned(data: dict[str, Any]) -> tuple[JobFilter, int]:
    """The filter a preview returned: without its ``until``, an action could sweep up jobs
    that arrived after the operator looked."""
    job_filter, cap = _by_filter(data)
    if job_filter.until is None:
        raise ValidationError("filter.until", "is required: send the filter the preview returned")
    return job_filter, cap


async def _preview(request: Request, state: DeckState, pillar: Pillar) -> Any:
    data = await json_body(request)
    job_filter, cap = _by_filter(data)
    now = datetime.now(UTC)
    pinned = replace(job_filter, until=min(job_filter.until or now, now))
    preview = await state.app.backend.jobs_preview(pillar=pillar, filter=pinned, cap=cap, sample=10)
    return {**dump(preview), "filter": filter_json(pinned), "cap": cap}


async def post_active_preview(request: Request, state: DeckState, who: Principal) -> Any:
    """What "cancel all matching" would touch: active jobs by created_at, newest first."""
    return await _preview(request, state, Pillar.HOT)


async def post_archive_preview(request: Request, state: DeckState, who: Principal) -> Any:
    """What an archive action by filter would touch: archived jobs by finished_at, newest
    first."""
    return await _preview(request, state, Pillar.ARCHIVE)


def _done(body: dict[str, Any], job_filter: JobFilter, rows: int, cap: int) -> Done:
    return Done(body, audit.filter_summary(job_filter), rows, extra={"cap": cap})


async def post_cancel_by_filter(request: Request, state: DeckState, who: Principal) -> Any:
    """Cancel the previewed active jobs as ``/api/jobs/cancel`` does: pending, fetched and
    waiting ones go to the DLQ now, running ones get the durable cancel request their worker
    hears. The typed word is always required."""
    data = await json_body(request)
    job_filter, cap = _pinned(data)
    confirm(data, "CANCEL", cap, always=True)
    result = await state.app.backend.jobs_cancel_by_filter(
        filter=job_filter, actor=who.name, cap=cap
    )
    rows = len(result.cancelled) + len(result.requested)
    return _done({**dump(result), "affected": rows}, job_filter, rows, cap)


async def post_archive_requeue(request: Request, state: DeckState, who: Principal) -> Any:
    """A new pending job from each previewed archived job (the archived rows stay)."""
    data = await json_body(request)
    job_filter, cap = _pinned(data)
    backend = state.app.backend
    preview = await backend.jobs_preview(
        pillar=Pillar.ARCHIVE, filter=job_filter, cap=cap, sample=0
    )
    confirm(data, "REQUEUE", preview.will_affect)
    made = await backend.archive_requeue_by_filter(filter=job_filter, actor=who.name, cap=cap)
    return _done({"affected": len(made), "requeued": dump(made)}, job_filter, len(made), cap)


async def post_archive_delete(request: Request, state: DeckState, who: Principal) -> Any:
    """Delete the previewed archived jobs (lifetime counters and charts keep them); an
    archived parent a job in hot still depends on is kept. The typed word is always
    required."""
    data = await json_body(request)
    job_filter, cap = _pinned(data)
    confirm(data, "DELETE", cap, always=True)
    ids = await state.app.backend.archive_delete_by_filter(
        filter=job_filter, actor=who.name, cap=cap
    )
    return _done({"affected": len(ids), "ids": ids}, job_filter, len(ids), cap)


async def post_run_now(request: Request, state: DeckState, who: Principal) -> Any:
    """Make delayed jobs (pending, scheduled in the future) due now and wake the workers.
    One id that is not delayed is refused (409) with its state; of several, the others are
    listed under ``refused``."""
    data = await json_body(request)
    ids = job_ids(data)
    confirm(data, "RUN", len(ids))
    backend = state.app.backend
    moved = await backend.jobs_run_now(ids=ids, actor=who.name)
    done = set(moved)
    refused = [i for i in ids if i not in done]
    if len(ids) == 1 and refused:
        job = await backend.job_get(ids[0])
        where = "gone" if job is None else job.state
        raise ApiError(409, f"job {ids[0]} is {where}: run-now needs {NOT_DELAYED}")
    body = {"moved": moved, "refused": refused, "reason": NOT_DELAYED if refused else None}
    return Done(body, target=f"{len(ids)} id(s)", rows=len(moved))


ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute(
        "POST",
        "/api/jobs/preview",
        post_active_preview,
        "Preview cancel of all active jobs matching a filter; returns the filter pinned to now",
        body={"filter": "object", "cap": "integer"},
    ),
    ApiRoute(
        "POST",
        "/api/jobs/cancel-by-filter",
        post_cancel_by_filter,
        'Cancel the active jobs matching a previewed filter (confirm: "CANCEL"); running '
        "ones get a cancel request their worker hears",
        admin=True,
        body=FILTER_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/archive/preview",
        post_archive_preview,
        "Preview an archive action by filter; returns the filter pinned to now",
        body={"filter": "object", "cap": "integer"},
    ),
    ApiRoute(
        "POST",
        "/api/archive/requeue-by-filter",
        post_archive_requeue,
        "Requeue as new the archived jobs matching a previewed filter (a new pending job each, "
        'created_by "requeue:<archived id>"; confirm: "REQUEUE" at 25+)',
        admin=True,
        body=FILTER_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/archive/delete-by-filter",
        post_archive_delete,
        'Delete the archived jobs matching a previewed filter (confirm: "DELETE"); counters '
        "keep them",
        admin=True,
        body=FILTER_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/jobs/run-now",
        post_run_now,
        'Make delayed jobs due now and wake the workers (confirm: "RUN" at 25+)',
        admin=True,
        body=IDS_BODY,
    ),
)

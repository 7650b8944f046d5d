"""The Deck's JSON API: every read and action the page (and automation) uses, with the route
metadata the OpenAPI document is generated from (the limits' routes live in ``deck.limits``,
the chart's in ``deck.series``).

Each handler authorizes (``admin`` routes need the admin role and, for cookie sessions, the CSRF
header), validates its input before calling storage, and maps errors to 4xx answers with a
message. Admin handlers return ``audit.Done`` so that the wrapper logs every completed or refused
action once (``deck.audit``). It reaches data only through ``chokaq.storage.Backend``; it must
not hold SQL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import NotFoundError, StorageError, ValidationError
from ..limits import (
    MAX_BULK_CAP,
    MAX_PAYLOAD_DEPTH,
    check_job_id,
    check_name,
    check_payload,
    check_priority,
    check_tags,
    json_too_deep,
)
from ..models import FailureReason, JobFilter, JobView, Pillar, Workflow
from ..storage import UNSET
from ..storage.workflows import MAX_RELATIVES
from ..views import (
    SOURCES,
    STREAM_TAIL,
    batch_json,
    dump,
    filter_json,
    job_json,
    parse_filter,
    parse_int,
    schedule_json,
    slot_json,
    step_json,
    stream_json,
    workflow_json,
)
from . import audit, paging
from .audit import Done
from .auth import Principal, Role, csrf_ok, origin_ok
from .confirm import FILTER_BODY, IDS_BODY, confirm, job_ids
from .state import DeckState, snapshot

__all__ = ["ROUTES", "ApiRoute", "json_body", "snapshot"]

Handler = Callable[[Request, "DeckState", Principal], Awaitable[Any]]
MAX_WORKFLOW_LISTED = 10_000  # one read of a workflow lists at most this many of its jobs


@dataclass(frozen=True)
class ApiRoute:
    """One API operation: where it lives, who may call it, and what it takes."""

    method: str
    path: str
    handler: Handler
    summary: str
    admin: bool = False
    query: tuple[str, ...] = ()
    body: dict[str, str] = field(default_factory=dict)  # property -> JSON type

    @property
    def doc_path(self) -> str:
        """The path as OpenAPI writes it: ``{name:path}`` (Starlette's convertor, for names
        that hold a slash) is ``{name}``."""
        return PATH_PARAM.sub(r"{\1}", self.path)


PATH_PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def endpoint(route: ApiRoute) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler with authorization, CSRF and error mapping (never a 500 for bad input),
    and, on admin routes, the audit line of what was done or refused."""
    action = audit.action_name(route.path)

    def refuse(who: Principal | None, status: int, message: str, **extra: Any) -> JSONResponse:
        if route.admin:
            audit.rejected(action, who.name if who else None, status, message)
        return _error(status, message, **extra)

    async def asgi(request: Request) -> Response:
        state: DeckState = request.app.state.deck
        principal = await state.principal(request)
        if principal is None:
            wait = getattr(request.state, "retry_after", 0.0)
            if wait > 0:
                response = refuse(None, 429, "too many failed logins from this client")
                response.headers["retry-after"] = str(math.ceil(wait))
                return response
            return refuse(None, 401, "authentication required")
        if route.admin:
            if principal.role is not Role.ADMIN:
                return refuse(principal, 403, "this action needs the admin role")
            if not csrf_ok(request):
                return refuse(principal, 403, "missing or wrong CSRF token (header X-CSRF-Token)")
            if not origin_ok(request):
                return refuse(principal, 403, "cross-site request refused (Origin is another site)")
        try:
            await state.ensure_open()
            result = await route.handler(request, state, principal)
            if route.admin:
                state.invalidate()
            if isinstance(result, Done):
                result = audit.completed(action, principal.name, result)
        except ApiError as exc:
            return refuse(principal, exc.status, exc.message)
        except ValidationError as exc:
            return refuse(principal, 422, str(exc), field=exc.field)
        except NotFoundError as exc:
            return refuse(principal, 404, str(exc))
        except StorageError as exc:
            return _error(503, f"storage unavailable: {exc}")
        except Exception as exc:
            audit.failed(request.method, request.url.path, exc)
            return _error(500, f"internal error ({type(exc).__name__}); see the Deck's log")
        return result if isinstance(result, Response) else JSONResponse(result)

    return asgi


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


# A request body holds at most this many bytes (or room for the largest payload the App takes,
# escaped, when that is more: an edit sends one), and nests at most this deep (a payload's own
# depth, plus the object that carries it).
MAX_BODY_BYTES = 1024 * 1024
MAX_BODY_DEPTH = MAX_PAYLOAD_DEPTH + 4


class _NotJson(ValueError):
    """Text Python's parser takes but JSON has no spelling for."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"{text} is beyond what a number may be")
    return value


def body_limit(request: Request) -> int:
    """The most bytes a request body of this Deck may hold."""
    deck = getattr(request.app.state, "deck", None)
    payload = deck.app.limits.max_payload_bytes if deck is not None else 0
    return max(MAX_BODY_BYTES, 2 * payload + 64 * 1024)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's body as a JSON object, read up to ``body_limit`` bytes (413 past it, before
    the rest is read), strict: no NaN, Infinity or a number beyond a float, nesting at most
    ``MAX_BODY_DEPTH`` deep (400 with the reason)."""
    limit = body_limit(request)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body must be at most {limit} bytes (got {declared})")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise ApiError(413, f"request body must be at most {limit} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "request body must be UTF-8 JSON") from None
    if json_too_deep(text, MAX_BODY_DEPTH):
        raise ApiError(
            400, f"request body must not nest arrays and objects more than {MAX_BODY_DEPTH} deep"
        )
    try:
        data = json.loads(text or "{}", parse_constant=_no_constant, parse_float=_finite)
    except _NotJson as exc:
        raise ApiError(400, f"request body is not JSON: {exc}") from None
    except (ValueError, RecursionError):
        raise ApiError(400, "request body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object")
    return data


# -- reads ------------------------------------------------------------------------------------


async def get_me(request: Request, state: DeckState, who: Principal) -> Any:
    return {"name": who.name, "role": who.role.value}


async def get_overview(request: Request, state: DeckState, who: Principal) -> Any:
    return await state.live_snapshot()


async def get_jobs(request: Request, state: DeckState, who: Principal) -> Any:
    params = request.query_params
    source = params.get("source", "active")
    if source not in SOURCES:
        raise ValidationError("source", "must be active, archive or dlq")
    job_filter = parse_filter(params)
    if job_filter.blocked is not None and source != "active":
        raise ValidationError("blocked", "applies to active jobs only (source=active)")
    sort = params.get("sort", "date")
    descending = params.get("order", "desc") != "asc"
    pillar = SOURCES[source]
    result = await state.app.backend.jobs_page(
        pillar=pillar,
        filter=job_filter,
        sort=sort,
        descending=descending,
        **paging.page_arguments(params, pillar, sort, descending),
    )
    return {
        "source": source,
        **paging.page_fields(result, pillar, sort, descending),
        "items": [_listed(job, job_filter) for job in result.items],
    }


def _listed(job: JobView, job_filter: JobFilter) -> dict[str, Any]:
    # A listing reads no relatives, so a waiting row says "waiting" unless the blocked filter
    # chose it (the inspector reads its parents and says "blocked" itself).
    state = "blocked" if job_filter.blocked else job.state
    return {**dump(job), "state": state}


async def get_job(request: Request, state: DeckState, who: Principal) -> Any:
    """Every field of one job, its ``state``, its result (archive), its ``workflow_id`` and
    its ``parents`` and ``children`` (at most ``relatives_limit`` each) with their states, a
    durable job's ``steps``, its ``stream``: how many items it emitted and the last
    ``STREAM_TAIL`` (20), and its ``supersession`` (``on_conflict``: which job superseded it,
    which it superseded)."""
    job_id = check_job_id("id", request.path_params["id"])
    backend = state.app.backend
    job = await backend.job_get_related(id=job_id)
    if job is None:
        raise ApiError(404, f"job {job_id} not found in hot, archive or DLQ")
    steps = [step_json(step) for step in await backend.steps_list(job_id=job_id)]
    length = await backend.streams_length(job_id=job_id)
    tail = []
    if length:
        start = max(0, length - STREAM_TAIL)
        tail = await backend.streams_read(job_id=job_id, from_index=start, limit=STREAM_TAIL)
    supersession = dump(await backend.job_supersession(id=job_id))
    batches = [
        batch_json(batch, job_id, MAX_RELATIVES) for batch in await backend.job_batches(id=job_id)
    ]
    return {
        **job_json(job),
        "relatives_limit": MAX_RELATIVES,
        "steps": steps,
        "supersession": supersession,
        "stream": stream_json(length, tail),
        "batches": batches,
    }


async def get_top_errors(request: Request, state: DeckState, who: Principal) -> Any:
    limit = parse_int("limit", request.query_params.get("limit"), default=5, low=1, high=50)
    return dump(await state.app.backend.dlq_top_errors(limit=limit))


# -- job actions ------------------------------------------------------------------------------


async def post_event(request: Request, state: DeckState, who: Principal) -> Any:
    """Send an event (``App.send_event``): ``key``, and ``data`` (any JSON; null by default)."""
    data = await json_body(request)
    key = data.get("key")
    if not isinstance(key, str):
        raise ValidationError("key", "must be a string")
    woken = await state.app.send_event(key, data.get("data"))  # ValidationError: 422
    return Done({"woken": woken}, target=str(key), rows=1 if woken else 0)


async def post_cancel(request: Request, state: DeckState, who: Principal) -> Any:
    data = await json_body(request)
    ids = job_ids(data)
    confirm(data, "CANCEL", len(ids))
    result = await state.app.backend.jobs_cancel(ids=ids, actor=who.name)
    rows = len(result.cancelled) + len(result.requested)
    return Done(dump(result), target=f"{len(ids)} id(s)", rows=rows)


async def post_resurrect(request: Request, state: DeckState, who: Principal) -> Any:
    data = await json_body(request)
    ids = job_ids(data)
    confirm(data, "RETRY", len(ids))
    moved = await state.app.backend.dlq_resurrect(ids=ids, actor=who.name)
    return Done({"moved": moved}, target=f"{len(ids)} id(s)", rows=len(moved), action="dlq.requeue")


async def post_purge(request: Request, state: DeckState, who: Principal) -> Any:
    data = await json_body(request)
    ids = job_ids(data)
    confirm(data, "PURGE", len(ids), always=True)
    deleted = await state.app.backend.dlq_purge(ids=ids, actor=who.name)
    return Done({"deleted": deleted}, target=f"{len(ids)} id(s)", rows=len(deleted))


def _fields(edits: dict[str, Any]) -> dict[str, Any]:
    # The audit line names the edited fields; it never carries the payload itself.
    return {"fields": ",".join(sorted(edits))}


def _edits(data: dict[str, Any], state: DeckState) -> dict[str, Any]:
    edits: dict[str, Any] = {}
    if data.get("payload") is not None:
        edits["payload"] = check_payload("payload", data["payload"], state.app.limits)
    if data.get("tags") is not None:
        edits["tags"] = check_tags("tags", data["tags"])
    if data.get("priority") is not None:
        edits["priority"] = check_priority("priority", data["priority"])
    return edits


async def post_edit(request: Request, state: DeckState, who: Principal) -> Any:
    """Save a pending job's or a DLQ job's payload, tags, priority; ``requeue`` (DLQ only)
    saves and resurrects in one transaction."""
    job_id = check_job_id("id", request.path_params["id"])
    data = await json_body(request)
    edits = _edits(data, state)
    requeue = data.get("requeue", False)
    if not isinstance(requeue, bool):
        raise ValidationError("requeue", "must be true or false")
    backend = state.app.backend
    job = await backend.job_get(job_id)
    if job is None:
        raise ApiError(404, f"job {job_id} not found")
    if requeue:
        if job.pillar is not Pillar.DLQ:
            raise ApiError(409, "only a DLQ job can be saved and requeued")
        moved = await backend.dlq_resurrect(ids=[job_id], actor=who.name, **edits)
        if not moved:
            raise ApiError(409, "the job left the DLQ before it could be requeued")
        return Done({"saved": True, "requeued": True}, job_id, 1, action="dlq.edit_requeue")
    if not edits:
        raise ValidationError("payload", "nothing to save: give payload, tags or priority")
    if job.pillar is Pillar.DLQ:
        applied = await backend.dlq_edit(id=job_id, actor=who.name, **edits)
    elif job.pillar is Pillar.HOT:
        applied = await backend.jobs_edit(id=job_id, actor=who.name, **edits)
    else:
        raise ApiError(409, "an archived job cannot be edited")
    if not applied:
        raise ApiError(409, "the job is no longer editable (only pending or DLQ jobs are)")
    what = "dlq.edit" if job.pillar is Pillar.DLQ else "jobs.edit"
    return Done({"saved": True, "requeued": False}, job_id, 1, action=what, extra=_fields(edits))


# -- DLQ by filter ----------------------------------------------------------------------------


def _dlq_filter(data: dict[str, Any]) -> tuple[JobFilter, int]:
    raw = data.get("filter", {})
    if not isinstance(raw, dict):
        raise ValidationError("filter", "must be an object")
    job_filter = parse_filter(raw)
    if job_filter.status is not None:
        raise ValidationError("filter.status", "does not apply to the DLQ")
    if job_filter.blocked is not None:
        raise ValidationError("filter.blocked", "does not apply to the DLQ")
    cap = parse_int("cap", data.get("cap"), default=100, low=1, high=MAX_BULK_CAP)
    return job_filter, cap


async def post_preview(request: Request, state: DeckState, who: Principal) -> Any:
    """What a bulk action by filter would touch. The filter comes back pinned to now
    (``until``), and executing with that pinned filter touches only rows that existed at
    preview time: a failure arriving in between is not swept up unseen."""
    data = await json_body(request)
    job_filter, cap = _dlq_filter(data)
    now = datetime.now(UTC)
    pinned = replace(job_filter, until=min(job_filter.until or now, now))
    preview = await state.app.backend.dlq_preview(filter=pinned, cap=cap, sample=10)
    return {**dump(preview), "filter": filter_json(pinned), "cap": cap}


async def _by_filter(request: Request, state: DeckState, who: Principal, word: str) -> Any:
    data = await json_body(request)
    job_filter, cap = _dlq_filter(data)
    if job_filter.until is None:
        raise ValidationError("filter.until", "is required: send the filter the preview returned")
    backend = state.app.backend
    if word == "PURGE":
        confirm(data, word, cap, always=True)
        ids = await backend.dlq_purge_by_filter(filter=job_filter, actor=who.name, cap=cap)
    else:
        preview = await backend.dlq_preview(filter=job_filter, cap=cap, sample=0)
        confirm(data, word, preview.will_affect)
        ids = await backend.dlq_resurrect_by_filter(filter=job_filter, actor=who.name, cap=cap)
    return Done(
        {"affected": len(ids), "ids": ids},
        audit.filter_summary(job_filter),
        len(ids),
        extra={"cap": cap},
    )


async def post_purge_by_filter(request: Request, state: DeckState, who: Principal) -> Any:
    return await _by_filter(request, state, who, "PURGE")


async def post_requeue_by_filter(request: Request, state: DeckState, who: Principal) -> Any:
    return await _by_filter(request, state, who, "REQUEUE")


# -- queues, circuits, workers ------------------------------------------------------------------


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data.get(name)
    if not isinstance(value, bool):
        raise ValidationError(name, "must be true or false")
    return value


def _optional_number(data: dict[str, Any], name: str) -> Any:
    if name not in data:
        return UNSET
    value = data[name]
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(name, "must be a number or null")
    return value


async def post_queue(request: Request, state: DeckState, who: Principal) -> Any:
    """Pause/resume (``paused``: workers stop or start claiming its jobs), hide/unhide
    (``hidden``: the Deck's queue list only), activate (``active``: a compatibility flag with the
    effect of ``paused``) or set limits of one queue; an unknown queue is refused (404) unless
    ``create`` is true."""
    data = await json_body(request)
    name = check_name("queue", data.get("queue"))
    create = _flag(data, "create") if "create" in data else False
    backend = state.app.backend
    info = None
    done: list[str] = []
    if "paused" in data:
        paused = _flag(data, "paused")
        info = await backend.queue_pause(name=name, paused=paused, actor=who.name, create=create)
        done.append("pause" if paused else "resume")
    if "active" in data:
        active = _flag(data, "active")
        info = await backend.queue_activate(name=name, active=active, actor=who.name, create=create)
        done.append("activate" if active else "deactivate")
    if "hidden" in data:
        hidden = _flag(data, "hidden")
        info = await backend.queue_hide(name=name, hidden=hidden, actor=who.name, create=create)
        done.append("hide" if hidden else "unhide")
    max_workers = _optional_number(data, "max_workers")
    zombie = _optional_number(data, "zombie_timeout_seconds")
    if max_workers is not UNSET or zombie is not UNSET:
        if max_workers not in (UNSET, None) and not isinstance(max_workers, int):
            raise ValidationError("max_workers", "must be an integer")
        info = await backend.queue_configure(
            name=name,
            max_workers=max_workers,
            zombie_timeout_seconds=zombie,
            actor=who.name,
            create=create,
        )
        done.append("limits")
    if info is None:
        raise ValidationError("queue", "nothing to change: give paused, hidden, active or limits")
    return Done(dump(info), name, 1, action="queues." + "+".join(done))


async def post_close_circuit(request: Request, state: DeckState, who: Principal) -> Any:
    data = await json_body(request)
    key = check_name("key", data.get("key"))
    asked = await state.app.backend.worker_request(worker_id=None, close_circuit=key)
    return Done({"workers_asked": asked}, key, asked)


async def post_concurrency(request: Request, state: DeckState, who: Principal) -> Any:
    data = await json_body(request)
    worker_id = check_name("worker_id", data.get("worker_id"))
    concurrency = parse_int("concurrency", data.get("concurrency"), default=0, low=1, high=1000)
    asked = await state.app.backend.worker_request(worker_id=worker_id, concurrency=concurrency)
    if not asked:
        raise ApiError(404, f"worker {worker_id} is not registered")
    return Done({"workers_asked": asked}, worker_id, asked, extra={"concurrency": concurrency})


# -- workflows --------------------------------------------------------------------------------


async def _workflow(state: DeckState, workflow_id: str, limit: int) -> Workflow:
    workflow = await state.app.backend.workflow_get(id=workflow_id, limit=limit)
    if workflow is None:
        raise ApiError(
            404,
            f"no workflow {workflow_id}: a workflow's id is the id of its first job "
            "(a job's workflow_id)",
        )
    return workflow


async def get_workflow(request: Request, state: DeckState, who: Principal) -> Any:
    workflow_id = check_job_id("id", request.path_params["id"])
    limit = parse_int(
        "limit", request.query_params.get("limit"), default=1000, low=1, high=MAX_WORKFLOW_LISTED
    )
    # One more than asked: the answer says whether the workflow has more jobs than it lists.
    return workflow_json(await _workflow(state, workflow_id, limit + 1), limit)


async def post_workflow_cancel(request: Request, state: DeckState, who: Principal) -> Any:
    """Cancel every unfinished job of a workflow: blocked ones go to the DLQ as
    dependency_failed naming their failed parent, the others are cancelled as by
    ``/api/jobs/cancel``. It may touch many jobs, so the typed word is always required."""
    workflow_id = check_job_id("id", request.path_params["id"])
    data = await json_body(request)
    confirm(data, "CANCEL", 0, always=True)
    await _workflow(state, workflow_id, 1)
    result = await state.app.backend.workflow_cancel(id=workflow_id, actor=who.name)
    rows = len(result.cancelled) + len(result.requested)
    return Done(dump(result), target=workflow_id, rows=rows)


# -- periodic schedules -----------------------------------------------------------------------


def _schedule_name(request: Request) -> str:
    # A slash is allowed in a schedule's name: its routes take the rest of the path.
    return check_name("name", request.path_params["name"])


async def get_schedules(request: Request, state: DeckState, who: Principal) -> Any:
    now = datetime.now(UTC)
    schedules = await state.app.backend.schedules_list(now=now)
    return {"at": dump(now), "items": [schedule_json(s, now) for s in schedules]}


async def get_schedule(request: Request, state: DeckState, who: Principal) -> Any:
    name = _schedule_name(request)
    limit = parse_int("limit", request.query_params.get("limit"), default=50, low=1, high=100)
    now = datetime.now(UTC)
    backend = state.app.backend
    schedule = await backend.schedule_get(name, now=now)
    if schedule is None:
        raise ApiError(404, f"no schedule named {name!r}")
    history = await backend.schedule_history(name, limit=limit)
    return {**schedule_json(schedule, now), "history": [slot_json(r) for r in history]}


async def _pause(request: Request, state: DeckState, who: Principal, paused: bool) -> Any:
    name = _schedule_name(request)
    schedule = await state.app.backend.schedule_pause(name, actor=who.name, paused=paused)
    return Done(schedule_json(schedule, datetime.now(UTC)), name, 1)


async def post_schedule_pause(request: Request, state: DeckState, who: Principal) -> Any:
    return await _pause(request, state, who, True)


async def post_schedule_resume(request: Request, state: DeckState, who: Principal) -> Any:
    return await _pause(request, state, who, False)


async def post_schedule_trigger(request: Request, state: DeckState, who: Principal) -> Any:
    name = _schedule_name(request)
    job_id = await state.app.backend.schedule_trigger(name, actor=who.name)
    return Done({"job_id": job_id}, name, 1, extra={"job_id": job_id})


SCHEDULE_EDITS = ("cron", "every_seconds", "timezone", "kwargs")


async def post_schedule_edit(request: Request, state: DeckState, who: Principal) -> Any:
    """An operator's edit of a schedule's timing (``cron`` or ``every_seconds``, ``timezone``)
    and ``kwargs`` (a JSON object); the storage seam checks each and names the field."""
    name = _schedule_name(request)
    data = await json_body(request)
    edits = {k: data[k] for k in SCHEDULE_EDITS if data.get(k) is not None}
    if "kwargs" in edits and not isinstance(edits["kwargs"], dict):
        raise ValidationError("kwargs", "must be a JSON object of keyword arguments")
    if not edits:
        raise ValidationError(
            "cron", "nothing to change: give cron, every_seconds, timezone or kwargs"
        )
    schedule = await state.app.backend.schedule_edit(name, actor=who.name, **edits)
    return Done(schedule_json(schedule, datetime.now(UTC)), name, 1, extra=_fields(edits))


async def post_schedule_reset(request: Request, state: DeckState, who: Principal) -> Any:
    name = _schedule_name(request)
    schedule = await state.app.backend.schedule_reset(name, actor=who.name)
    return Done(schedule_json(schedule, datetime.now(UTC)), name, 1)


FILTER_QUERY = (
    "queue",
    "type",
    "partition",
    "status",
    "blocked",
    "reason",
    "since",
    "until",
    "search",
    "family",
)

ROUTES: tuple[ApiRoute, ...] = (
    ApiRoute("GET", "/api/me", get_me, "Who you are and your role"),
    ApiRoute(
        "GET",
        "/api/overview",
        get_overview,
        "Counts, throughput, queues, workers, circuits and top errors (the live snapshot)",
    ),
    ApiRoute(
        "GET",
        "/api/jobs",
        get_jobs,
        "One page of jobs from active, archive or dlq; status=waiting lists jobs waiting on "
        "parents, blocked=true (active only) those waiting on a parent in the DLQ",
        query=("source", *FILTER_QUERY, "sort", "order", *paging.QUERY),
    ),
    ApiRoute(
        "GET",
        "/api/jobs/{id}",
        get_job,
        "Every field of one job wherever it lives, its state, its result (archive), its "
        "workflow and its parents and children with their states, and which job superseded "
        "it or it superseded (on_conflict)",
    ),
    ApiRoute(
        "GET",
        "/api/errors",
        get_top_errors,
        "The most frequent DLQ error families",
        query=("limit",),
    ),
    ApiRoute(
        "POST",
        "/api/jobs/{id}/edit",
        post_edit,
        "Edit a pending or DLQ job; requeue=true saves and resurrects a DLQ job atomically",
        admin=True,
        body={"payload": "string", "tags": "array", "priority": "integer", "requeue": "boolean"},
    ),
    ApiRoute(
        "POST",
        "/api/events/send",
        post_event,
        "Send an event under a key: the durable job waiting on it the longest runs again "
        "(woken: its id), else the event is kept 7 days for the first job that waits on it",
        admin=True,
        body={"key": "string", "data": "object"},
    ),
    ApiRoute(
        "POST",
        "/api/jobs/cancel",
        post_cancel,
        "Cancel pending, fetched or running jobs",
        admin=True,
        body=IDS_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/dlq/resurrect",
        post_resurrect,
        "Requeue DLQ jobs by id",
        admin=True,
        body=IDS_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/dlq/purge",
        post_purge,
        'Delete DLQ jobs by id (confirm: "PURGE")',
        admin=True,
        body=IDS_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/dlq/preview",
        post_preview,
        "Preview a bulk action by filter; returns the filter pinned to now",
        body={"filter": "object", "cap": "integer"},
    ),
    ApiRoute(
        "POST",
        "/api/dlq/purge-by-filter",
        post_purge_by_filter,
        'Delete DLQ jobs matching a previewed filter (confirm: "PURGE")',
        admin=True,
        body=FILTER_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/dlq/requeue-by-filter",
        post_requeue_by_filter,
        'Requeue DLQ jobs matching a previewed filter (confirm: "REQUEUE" at 25+)',
        admin=True,
        body=FILTER_BODY,
    ),
    ApiRoute(
        "POST",
        "/api/queues",
        post_queue,
        "Pause/resume, hide/unhide or set max_workers / zombie timeout of a queue (an unknown "
        "queue is 404 unless create is true)",
        admin=True,
        body={
            "queue": "string",
            "create": "boolean",
            "paused": "boolean",
            "active": "boolean",
            "max_workers": "integer",
            "zombie_timeout_seconds": "number",
        },
    ),
    ApiRoute(
        "POST",
        "/api/circuits/close",
        post_close_circuit,
        "Force-close a job type's circuit on every worker",
        admin=True,
        body={"key": "string"},
    ),
    ApiRoute(
        "POST",
        "/api/workers/concurrency",
        post_concurrency,
        "Change a worker's concurrency",
        admin=True,
        body={"worker_id": "string", "concurrency": "integer"},
    ),
    ApiRoute(
        "GET",
        "/api/workflows/{id}",
        get_workflow,
        "Every job of a workflow (its id is its first job's), parents first, with its state, "
        "parents and depth, and the counts per state; 404 for an id that is no workflow's",
        query=("limit",),
    ),
    ApiRoute(
        "POST",
        "/api/workflows/{id}/cancel",
        post_workflow_cancel,
        'Cancel every unfinished job of a workflow (confirm: "CANCEL"): blocked jobs go to the '
        "DLQ as dependency_failed, the others are cancelled",
        admin=True,
        body={"confirm": "string"},
    ),
    ApiRoute(
        "GET",
        "/api/schedules",
        get_schedules,
        "Every periodic schedule: its timing in force and as declared, next run (UTC and its "
        "zone), last run, paused, orphaned, edited, lag",
    ),
    ApiRoute(
        "GET",
        "/api/schedules/{name:path}",
        get_schedule,
        "One periodic schedule and its recent slots, newest first (enqueued, triggered, "
        "skipped, missed)",
        query=("limit",),
    ),
    ApiRoute(
        "POST",
        "/api/schedules/{name:path}/pause",
        post_schedule_pause,
        "Pause a schedule: no slot fires until it is resumed",
        admin=True,
    ),
    ApiRoute(
        "POST",
        "/api/schedules/{name:path}/resume",
        post_schedule_resume,
        "Resume a schedule; its slots count afresh from now (none is missed for the pause)",
        admin=True,
    ),
    ApiRoute(
        "POST",
        "/api/schedules/{name:path}/trigger",
        post_schedule_trigger,
        "Enqueue one run of a schedule now, outside its slots; returns the job id",
        admin=True,
    ),
    ApiRoute(
        "POST",
        "/api/schedules/{name:path}/edit",
        post_schedule_edit,
        "An operator's edit of a schedule's timing and kwargs, kept across restarts and "
        "deploys until reset",
        admin=True,
        body={
            "cron": "string",
            "every_seconds": "number",
            "timezone": "string",
            "kwargs": "object",
        },
    ),
    ApiRoute(
        "POST",
        "/api/schedules/{name:path}/reset",
        post_schedule_reset,
        "Drop an operator's edit: the timing and kwargs the code declares are in force again",
        admin=True,
    ),
)

REASONS = [r.name.lower() for r in FailureReason]


def openapi(prefix: str = "", routes: tuple[ApiRoute, ...] = ROUTES) -> dict[str, Any]:
    """The OpenAPI 3.1 document, generated from ``routes`` (default: this module's)."""
    paths: dict[str, Any] = {}
    for route in routes:
        op: dict[str, Any] = {
            "summary": route.summary,
            "operationId": route.handler.__name__,
            "responses": {
                "200": {"description": "OK"},
                "401": {"description": "not authenticated"},
                "422": {"description": "invalid input; the body names the field"},
            },
        }
        params: list[dict[str, Any]] = [
            {"name": q, "in": "query", "schema": {"type": "string"}} for q in route.query
        ]
        for name in PATH_PARAM.findall(route.path):
            kind = {"type": "string", "format": "uuid"} if name == "id" else {"type": "string"}
            params.append({"name": name, "in": "path", "required": True, "schema": kind})
        if params:
            op["parameters"] = params
        if route.body:
            op["requestBody"] = {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {k: {"type": v} for k, v in route.body.items()},
                        }
                    }
                }
            }
        if route.admin:
            op["description"] = (
                "Needs the admin role; cookie sessions must send the X-CSRF-Token header."
            )
            op["responses"]["403"] = {"description": "not an admin, or CSRF token missing"}
        paths.setdefault(prefix + route.doc_path, {})[route.method.lower()] = op
    schema: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "chokaq Deck API", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"FailureReason": {"type": "string", "enum": REASONS}}},
    }
    return schema

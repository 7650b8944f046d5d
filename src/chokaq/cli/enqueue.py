"""``chokaq enqueue``: write one raw job (type plus JSON payload), for operators and scripts."""

from __future__ import annotations

import inspect
from typing import Any, TextIO

import click

from ..errors import ValidationError
from ..handles import JobHandle, JobId
from ..limits import check_payload
from ..models import ON_CONFLICT_MODES
from ..serializer import decode_arguments
from .options import Store, parse_when, run_with_app, store_options

__all__ = ["COMMANDS"]


@click.command()
@click.argument("job_type", metavar="TYPE")
@click.argument("payload", required=False)
@click.option(
    "--payload-file",
    type=click.File("r", encoding="utf-8"),
    help="Read the JSON payload from this file ('-': standard input) instead of PAYLOAD.",
)
@click.option(
    "--queue", help="Queue to enqueue on (default: the --app handler's queue, else 'default')."
)
@click.option(
    "--priority", type=int, help="Higher runs first (default: the --app handler's, else 10)."
)
@click.option("--partition", help="The key its type's rate limit and partition cap apply per.")
@click.option("--delay", type=float, help="Seconds to wait before the job is due.")
@click.option(
    "--run-at",
    help="When the job is due: ISO date/time (UTC when naive) or a time from now (2h, 30m).",
)
@click.option(
    "--idempotency-key",
    help="Skip the enqueue while a job with this key is active (kept as given: an empty key, "
    "or one with spaces at either end, is refused).",
)
@click.option(
    "--on-conflict",
    type=click.Choice(ON_CONFLICT_MODES),
    help="With --idempotency-key, what to do to the active job holding the key: keep it "
    "(default), replace its payload and due time, replace_payload only (throttle), or "
    "cancel_running (latest wins). See docs/concepts.md, 'Debounce, throttle, latest wins'.",
)
@click.option(
    "--unique-for",
    type=float,
    metavar="SECONDS",
    help="With --idempotency-key: skip it for this long after the first, even once it finished.",
)
@click.option(
    "--expires-after",
    type=float,
    metavar="SECONDS",
    help="Not started within this many seconds, the job goes to the DLQ as EXPIRED.",
)
@click.option(
    "--expires-at",
    help="Not started by then (ISO date/time, UTC when naive, or 2h, 30m from now): EXPIRED. "
    "It must be after the job is due.",
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--max-attempts", type=int, help="Executions allowed, the first included.")
@click.option("--timeout", type=float, help="Execution timeout in seconds.")
@click.option("--created-by", default="cli", show_default=True, help="Recorded on the job.")
@click.option(
    "--after",
    "after",
    multiple=True,
    metavar="ID",
    help="A stored job it waits on: it runs once every --after job has succeeded (repeatable).",
)
@store_options
def enqueue(
    job_type: str,
    payload: str | None,
    payload_file: TextIO | None,
    queue: str | None,
    priority: int | None,
    partition: str | None,
    delay: float | None,
    run_at: str | None,
    idempotency_key: str | None,
    on_conflict: str | None,
    unique_for: float | None,
    expires_after: float | None,
    expires_at: str | None,
    tags: tuple[str, ...],
    max_attempts: int | None,
    timeout: float | None,
    created_by: str,
    after: tuple[str, ...],
    store: Store,
) -> None:
    """Enqueue a raw job: TYPE and a JSON PAYLOAD (default {}); prints the job id.

    With --app, a TYPE the app has a handler for takes the handler's queue and priority
    unless given, and its payload is checked against the handler's signature and
    annotations first (as the worker will read it): a payload the handler could not take is
    refused, nothing written.

    \b
    Example:
      chokaq enqueue send_receipt '{"order_id": 42}' --queue emails --delay 60 \\
          --database postgresql://app@db/app
      chokaq enqueue publish '{}' --after 0190d1c2-... --after 0190d1c3-...
      chokaq enqueue digest '{"user": 7}' --idempotency-key digest:7 --unique-for 3600 \
          --expires-after 600
      chokaq enqueue reindex '{"doc": 7}' --idempotency-key doc:7 --on-conflict replace \
          --delay 5
      chokaq enqueue import_rows --payload-file rows.json --app myproject.jobs:app
      produce-json | chokaq enqueue import_rows --payload-file -
    """
    if payload_file is not None:
        if payload is not None:
            raise click.UsageError("give PAYLOAD or --payload-file, not both")
        payload = payload_file.read()
    if payload is None:
        payload = "{}"
    hint = "--payload-file" if payload_file is not None else "PAYLOAD"
    if delay is not None and run_at is not None:
        raise click.UsageError("give --delay or --run-at, not both")
    if expires_after is not None and expires_at is not None:
        raise click.UsageError("give --expires-after or --expires-at, not both")
    app = store.app()
    try:  # strict JSON within the App's limits (a larger max_payload_bytes of its own), before
        check_payload("payload", payload, app.limits)  # the database is opened
    except ValidationError as exc:
        raise click.BadParameter(exc.limit, param_hint=hint) from None
    handle = app.handlers.get(job_type) if store.app_spec else None
    if handle is not None:
        try:  # what the worker will do with it: bind to the signature, convert the types
            decode_arguments(handle, payload)
        except (ValueError, TypeError) as exc:
            raise click.BadParameter(
                f"does not fit {job_type}{_signature(handle)}: {exc}", param_hint=hint
            ) from None
        queue = handle.queue if queue is None else queue
        priority = handle.priority if priority is None else priority
    options: dict[str, Any] = {
        "queue": "default" if queue is None else queue,  # a blank one is refused, not replaced
        "partition": partition,
        "delay": delay,
        "run_at": parse_when(run_at, param="--run-at", ahead=True),
        "idempotency_key": idempotency_key,
        "unique_for_seconds": unique_for,
        "on_conflict": on_conflict,
        "expires_after_seconds": expires_after,
        "expires_at": parse_when(expires_at, param="--expires-at", ahead=True),
        "tags": tags,
        "created_by": created_by,
        "max_attempts": max_attempts,
        "timeout": timeout,
        "after": list(after) or None,
    }
    if priority is not None:
        options["priority"] = priority
    job_id = run_with_app(app, lambda a: a.enqueue_raw(job_type, payload, **options))
    click.echo(_answer(job_id, unique_for))


def _answer(job_id: JobId, unique_for: float | None) -> str:
    """The id printed, and what the enqueue did when it wrote no plain new job."""
    if job_id.outcome == "replaced":
        return f"{job_id} (replaced: the pending job with this idempotency key took the payload)"
    if job_id.outcome == "superseded":
        return f"{job_id} (superseded: the job with this idempotency key had started; new job)"
    if job_id.duplicate:
        held = "its window is open" if unique_for is not None else "it is still active"
        return f"{job_id} (duplicate: the job with this idempotency key; {held})"
    return str(job_id)


def _signature(handle: JobHandle[Any, Any]) -> str:
    """The handler's parameters as the payload gives them (its context left out)."""
    try:  # annotations as types, not the strings of a module with postponed annotations
        signature = inspect.signature(handle.fn, eval_str=True)
    except Exception:  # an annotation that cannot be evaluated here: as written
        signature = handle.signature
    params = [p for p in signature.parameters.values() if p.name != handle.context_param]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


COMMANDS = [enqueue]

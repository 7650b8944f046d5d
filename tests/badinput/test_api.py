"""Bad input through the Python API, on both backends: every case is refused with a
``ValidationError`` naming the field, before anything is written (the store's fingerprint is
unchanged); and hostile-looking but valid text (SQL metacharacters, ``<script>``) is stored and
returned verbatim, and matched literally by filters."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import App, NewJob, ValidationError
from chokaq.models import JobFilter, Pillar

from .conftest import Seeded

Case = Callable[[App], Awaitable[Any]]


def raw(**fields: Any) -> Case:
    """Enqueue one raw job with ``fields`` overriding a valid one."""

    async def call(app: App) -> Any:
        return await app.enqueue_many([NewJob(**{"type": "t", "payload": "{}", **fields})])

    return call


def batch(bad: dict[str, Any]) -> Case:
    """A batch of three whose middle job is bad: the first must not be written either."""

    async def call(app: App) -> Any:
        good = NewJob(type="t", payload="{}", queue="batch-q")
        return await app.enqueue_many([good, dataclasses.replace(good, **bad), good])

    return call


def typed(**kwargs: Any) -> Case:
    """Enqueue through a typed handler's ``enqueue`` (arguments and options)."""

    async def call(app: App) -> Any:
        handle = app.handlers.get("typed")
        if handle is None:

            @app.job(name="typed")
            async def typed_job(x: Any = None) -> None: ...

            handle = app.handlers["typed"]
        return await handle.enqueue(**kwargs)

    return call


def raw_api(*args: Any, **kwargs: Any) -> Case:
    """``app.enqueue_raw(*args, **kwargs)``."""

    async def call(app: App) -> Any:
        return await app.enqueue_raw(*args, **kwargs)

    return call


def prepared(**kwargs: Any) -> Case:
    """``handle.prepare(**kwargs)`` then a bulk enqueue of what it made."""

    async def call(app: App) -> Any:
        return await app.enqueue_many([app.handlers["typed"].prepare(**kwargs)])

    return call


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BIG = '"' + "x" * 1_000_001 + '"'
SURROGATE = "bad\udc80text"
NOW = datetime.now(UTC)
CYCLE: dict[str, Any] = {"a": []}
CYCLE["a"].append(CYCLE)

CASES: list[tuple[str, Case, str]] = [
    ("payload over 1 MB", raw(payload=BIG), "payload"),
    ("payload not JSON", raw(payload="{not json"), "payload"),
    ("payload not text", raw(payload=b"{}"), "payload"),
    ("payload lone surrogate", raw(payload=f'"{SURROGATE}"'), "payload"),
    ("payload NUL", raw(payload='"a\x00b"'), "payload"),
    ("argument not serializable", typed(x=object()), "payload"),
    ("argument NaN", typed(x=math.nan), "payload"),
    ("argument refers to itself", typed(x=CYCLE), "payload"),
    ("argument lone surrogate", typed(x=SURROGATE), "payload"),
    ("argument unknown", typed(y=1), "arguments"),
    ("payload nested 100,000 deep", raw(payload="[" * 100_000 + "]" * 100_000), "payload"),
    ("payload nested 101 deep", raw(payload="[" * 101 + "]" * 101), "payload"),
    ("payload NaN", raw(payload='{"a": NaN}'), "payload"),
    ("payload Infinity", raw(payload="[-Infinity]"), "payload"),
    ("payload duplicate key", raw(payload='{"a": 1, "b": {"c": 1, "c": 2}}'), "payload"),
    ("payload lone surrogate escape", raw(payload='{"a": "\\ud800"}'), "payload"),
    ("payload lone low surrogate escape", raw(payload='["\\uDC80x"]'), "payload"),
    ("argument nested 101 deep", typed(x=nested(100)), "payload"),
    ("argument nested 100,000 deep", typed(x=nested(100_000)), "payload"),
    ("argument keys collide", typed(x={1: "a", "1": "b"}), "payload"),
    ("argument key not a string", typed(x=[{"ok": {2.5: "a"}}]), "payload"),
    ("enqueue_raw bytes", raw_api("echo", b"{}"), "payload"),
    ("enqueue_raw a set", raw_api("echo", {1, 2}), "payload"),
    ("enqueue_raw mapping NaN", raw_api("echo", {"a": math.nan}), "payload"),
    ("enqueue_raw mapping nested", raw_api("echo", {"a": nested(150)}), "payload"),
    ("enqueue_raw key not a string", raw_api("echo", {"a": {None: 1}}), "payload"),
    ("enqueue_raw unknown option", raw_api("echo", "{}", colour="red"), "colour"),
    ("enqueue_raw tags a string", raw_api("echo", "{}", tags="abc"), "tags"),
    ("enqueue tags a string", typed(tags="abc"), "tags"),
    ("enqueue tags a number", typed(tags=3), "tags"),
    ("prepare tags a string", prepared(tags="abc"), "tags"),
    ("queue blank", raw(queue=""), "queue"),
    ("queue padded", raw(queue=" q"), "queue"),
    ("queue too long", raw(queue="q" * 256), "queue"),
    ("queue control char", raw(queue="a\nb"), "queue"),
    ("queue NUL", raw(queue="a\x00b"), "queue"),
    ("queue surrogate", raw(queue=SURROGATE), "queue"),
    ("type blank", raw(type=" "), "type"),
    ("type too long", raw(type="t" * 256), "type"),
    ("tags not a list", raw(tags="a,b"), "tags"),
    ("too many tags", raw(tags=tuple(f"t{i}" for i in range(51))), "tags"),
    ("tag too long", raw(tags=("x" * 101,)), "tags[0]"),
    ("tag with comma", raw(tags=("a,b",)), "tags[0]"),
    ("tag blank", raw(tags=("ok", " ")), "tags[1]"),
    ("tag NUL", raw(tags=("a\x00",)), "tags[0]"),
    ("tag not text", raw(tags=(1,)), "tags[0]"),
    ("tags over 1000 joined", raw(tags=tuple("y" * 95 + f"{i:02d}" for i in range(11))), "tags"),
    ("priority too high", raw(priority=10**7), "priority"),
    ("priority too low", raw(priority=-(10**7)), "priority"),
    ("priority not int", raw(priority=1.5), "priority"),
    ("priority bool", raw(priority=True), "priority"),
    ("delay negative", raw(delay_seconds=-1.0), "delay_seconds"),
    ("delay infinite", raw(delay_seconds=math.inf), "delay_seconds"),
    ("delay NaN", raw(delay_seconds=math.nan), "delay_seconds"),
    ("delay absurd", raw(delay_seconds=10 * 365 * 86400.0), "delay_seconds"),
    ("delay and run_at", raw(delay_seconds=1.0, run_at=NOW), "delay_seconds"),
    ("run_at naive", raw(run_at=datetime(2030, 1, 1)), "run_at"),
    ("run_at absurd", raw(run_at=NOW + timedelta(days=3650)), "run_at"),
    ("max_attempts zero", raw(max_attempts=0), "max_attempts"),
    ("max_attempts absurd", raw(max_attempts=10**6), "max_attempts"),
    ("timeout zero", raw(timeout_seconds=0.0), "timeout_seconds"),
    ("timeout negative", raw(timeout_seconds=-5.0), "timeout_seconds"),
    ("timeout absurd", raw(timeout_seconds=1e12), "timeout_seconds"),
    ("key too long", raw(idempotency_key="k" * 256), "idempotency_key"),
    ("key NUL", raw(idempotency_key="k\x00"), "idempotency_key"),
    ("key empty", raw(idempotency_key=""), "idempotency_key"),
    ("key blank", raw(idempotency_key="   "), "idempotency_key"),
    ("key padded", raw(idempotency_key=" k "), "idempotency_key"),
    ("enqueue key empty", typed(idempotency_key=""), "idempotency_key"),
    ("enqueue_raw key padded", raw_api("echo", "{}", idempotency_key="k "), "idempotency_key"),
    ("expires_at past", raw(expires_at=NOW - timedelta(seconds=1)), "expires_at"),
    (
        "expires_at inside delay",
        raw(expires_at=NOW + timedelta(hours=1), delay_seconds=7200.0),
        "expires_at",
    ),
    ("enqueue expires_at past", typed(expires_at=datetime(2001, 1, 1, tzinfo=UTC)), "expires_at"),
    ("batch middle key empty", batch({"idempotency_key": ""}), "jobs[1].idempotency_key"),
    ("batch middle expired", batch({"expires_at": NOW}), "jobs[1].expires_at"),
    ("created_by control", raw(created_by="eve\r\nX-Injected: 1"), "created_by"),
    ("created_by too long", raw(created_by="e" * 101), "created_by"),
    ("id not a uuid", raw(id="'; DROP TABLE jobs_hot; --"), "id"),
    ("batch middle payload", batch({"payload": "nope"}), "jobs[1].payload"),
    ("batch middle queue", batch({"queue": ""}), "jobs[1].queue"),
]


@pytest.mark.parametrize(("case", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_bad_enqueue_is_refused_naming_the_field_and_writes_nothing(
    seeded: Seeded, case: Case, field: str
) -> None:
    await typed()(seeded.app)  # the typed handler registered: its first job is in the snapshot
    before = seeded.snapshot()
    with pytest.raises(ValidationError) as info:
        await case(seeded.app)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert seeded.snapshot() == before


@pytest.mark.parametrize(
    ("case", "limit"),
    [
        (raw(payload="[" * 100_000 + "]" * 100_000), "more than 100 deep"),
        (typed(x=nested(100)), "more than 100 deep"),
        (raw(payload='{"a": NaN}'), "NaN"),
        (raw(payload='{"a": 1, "a": 2}'), "repeat the key 'a'"),
        (raw(payload='"\\ud800"'), "lone surrogate"),
        (typed(x={1: "a", "1": "b"}), "keys must be strings: arguments.x has the key 1 (int)"),
        (raw_api("echo", b"{}"), "not bytes (decode it first)"),
        (typed(tags="abc"), "a list of strings, not a string"),
    ],
    ids=["depth-raw", "depth-typed", "nan", "duplicate", "surrogate", "keys", "bytes", "tags"],
)
async def test_refusals_state_the_limit(seeded: Seeded, case: Case, limit: str) -> None:
    with pytest.raises(ValidationError) as info:
        await case(seeded.app)
    assert limit in str(info.value)


async def test_strict_json_still_takes_every_valid_payload(seeded: Seeded) -> None:
    app = seeded.app
    deepest = "[" * 100 + "]" * 100
    pair = '["\\ud83d\\ude00", "\\\\ud800 is text, not an escape", "[[[[[[[[[[[["]'
    for payload in (deepest, pair, '{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}', "1e308"):
        job_id = await app.enqueue_raw("echo", payload)
        view = await app.backend.job_get(job_id)
        assert view is not None and view.payload == payload
    typed_id = await typed(x=nested(99))(app)  # 99 lists inside the arguments object: 100
    assert (await app.backend.job_get(typed_id)) is not None
    tagged = await app.enqueue_raw("echo", {"k": [1, {"z": None}]}, tags=("abc",))
    view = await app.backend.job_get(tagged)
    assert view is not None and view.tags == ("abc",) and view.payload == '{"k":[1,{"z":null}]}'


HOSTILE = [
    "'; DROP TABLE jobs_hot; --",
    '" OR 1=1 --',
    "<script>alert(1)</script>",
    "%_\\[]*?",
    "Robert'); DELETE FROM stats_summary;--",
]


@pytest.mark.parametrize("text", HOSTILE)
async def test_hostile_text_is_stored_verbatim_in_every_field(seeded: Seeded, text: str) -> None:
    app = seeded.app
    tag = text.replace(",", ";")
    job_id = await app.enqueue_raw(
        text,
        {"note": text},
        queue=text,
        tags=[tag],
        created_by=text[:100],
        idempotency_key=text,
    )
    view = await app.backend.job_get(job_id)
    assert view is not None
    assert (view.type, view.queue, view.created_by, view.idempotency_key) == (
        text,
        text,
        text[:100],
        text,
    )
    assert view.tags == (tag,)
    assert view.payload is not None and text in __import__("json").loads(view.payload)["note"]
    # The seeded rows are untouched and still found.
    for other in (seeded.pending, seeded.archived, seeded.dead):
        assert await app.backend.job_get(other) is not None


@pytest.mark.parametrize("text", [*HOSTILE, "%", "_", "\\"])
async def test_filters_match_metacharacters_literally(seeded: Seeded, text: str) -> None:
    backend = seeded.app.backend
    before = seeded.snapshot()
    for pillar in Pillar:
        page = await backend.jobs_page(pillar=pillar, filter=JobFilter(search=text))
        assert page.total == 0, (pillar, text)
        page = await backend.jobs_page(pillar=pillar, filter=JobFilter(queue=text))
        assert page.total == 0
        page = await backend.jobs_page(pillar=pillar, filter=JobFilter(type=text))
        assert page.total == 0
    preview = await backend.dlq_preview(filter=JobFilter(search=text), cap=10)
    assert preview.matched == 0
    assert seeded.snapshot() == before


async def test_filter_matches_a_hostile_value_exactly(seeded: Seeded) -> None:
    app = seeded.app
    job_id = await app.enqueue_raw("t", {}, queue="q", tags=["100%_sure"])
    found = await app.backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(search="100%_s"))
    assert [v.id for v in found.items] == [job_id]
    none = await app.backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(search="100%%_s"))
    assert none.total == 0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda b: b.jobs_page(pillar=Pillar.HOT, sort="id; DROP TABLE x"), "sort"),
        (lambda b: b.jobs_page(pillar=Pillar.HOT, page_size=10**6), "page_size"),
        (lambda b: b.jobs_page(pillar=Pillar.HOT, page=0), "page"),
        (lambda b: b.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(ids=("x'--",))), "filter.ids"),
        (lambda b: b.jobs_page(pillar=Pillar.DLQ, filter=JobFilter(search="s" * 1001)), "search"),
        (lambda b: b.job_get("1 OR 1=1"), "id"),
        (lambda b: b.jobs_cancel(ids=["nope"], actor="x"), "ids"),
        (lambda b: b.dlq_resurrect(ids=["nope"], actor="x"), "ids"),
        (lambda b: b.dlq_purge(ids=["nope"], actor="x"), "ids"),
        (lambda b: b.queue_pause(name="", paused=True), "name"),
        (lambda b: b.queue_configure(name="q", max_workers=0), "max_workers"),
        (lambda b: b.queue_configure(name="q", zombie_timeout_seconds=-1), "zombie_timeout"),
        (lambda b: b.worker_request(worker_id=None, concurrency=10**6), "concurrency"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_bad_operator_arguments_are_refused(seeded: Seeded, call: Any, field: str) -> None:
    before = seeded.snapshot()
    with pytest.raises(ValidationError) as info:
        await call(seeded.app.backend)
    assert field in info.value.field
    assert seeded.snapshot() == before


async def test_editing_with_bad_values_changes_nothing(seeded: Seeded) -> None:
    backend = seeded.app.backend
    before = seeded.snapshot()
    for kwargs, field in [
        ({"payload": "{bad"}, "payload"),
        ({"payload": '"\x00"'}, "payload"),
        ({"tags": ["a,b"]}, "tags[0]"),
        ({"priority": 10**9}, "priority"),
    ]:
        for edit, job_id in ((backend.jobs_edit, seeded.pending), (backend.dlq_edit, seeded.dead)):
            with pytest.raises(ValidationError) as info:
                await edit(id=job_id, actor="ops", **kwargs)
            assert info.value.field == field
        with pytest.raises(ValidationError):
            await backend.dlq_resurrect(ids=[seeded.dead], actor="ops", **kwargs)
    assert seeded.snapshot() == before

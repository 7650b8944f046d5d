"""Every input limit: the error names the field and the rule, and nothing is written.

The messages are the ones ``chokaq.limits`` produces; a backend must validate with those rules
before it opens a transaction, so each case also checks that the store is unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conformance import T0, claim, enqueue, fail, job, succeed, totals

from chokaq.errors import ValidationError
from chokaq.limits import Limits
from chokaq.models import Pillar

TOO_MANY_TAGS = tuple(f"t{i}" for i in range(51))
LONG_TAGS = tuple(f"{i:02d}" + "x" * 97 for i in range(11))  # 11 * 99 + 10 commas > 1000

CASES = [
    # (id, NewJob fields, field, limit; a limit ending in "..." is a prefix)
    ("queue-blank", {"queue": ""}, "queue", "must not be blank"),
    ("queue-spaces", {"queue": "   "}, "queue", "must not be blank"),
    ("queue-outer-space", {"queue": " q"}, "queue", "must not start or end with whitespace"),
    ("queue-trailing-space", {"queue": "q "}, "queue", "must not start or end with whitespace"),
    ("queue-long", {"queue": "q" * 256}, "queue", "must be at most 255 characters (got 256)"),
    ("queue-tab", {"queue": "a\tb"}, "queue", "must not contain control characters"),
    ("queue-del", {"queue": "a\x7fb"}, "queue", "must not contain control characters"),
    ("queue-nul", {"queue": "a\x00b"}, "queue", "must not contain NUL bytes"),
    (
        "queue-bidi-only",
        {"queue": "\u202e"},
        "queue",
        "must not contain invisible or bidirectional characters (found U+202E)",
    ),
    (
        "type-bidi-spoof",
        {"type": "\u202eRTL-fdp.exe"},
        "type",
        "must not contain invisible or bidirectional characters (found U+202E)",
    ),
    (
        "queue-zero-width",
        {"queue": "a\u200bb"},
        "queue",
        "must not contain invisible or bidirectional characters (found U+200B)",
    ),
    (
        "queue-c1",
        {"queue": "a\x85b"},
        "queue",
        "must not contain invisible or bidirectional characters (found U+0085)",
    ),
    (
        "queue-hangul-filler",
        {"queue": "\u3164"},
        "queue",
        "must not contain invisible or bidirectional characters (found U+3164)",
    ),
    (
        "queue-line-separator",
        {"queue": "a\u2028b"},
        "queue",
        "must not contain invisible or bidirectional characters (found U+2028)",
    ),
    ("queue-int", {"queue": 7}, "queue", "must be a string, not int"),
    ("queue-none", {"queue": None}, "queue", "must be a string, not NoneType"),
    ("type-blank", {"type": ""}, "type", "must not be blank"),
    ("type-long", {"type": "t" * 256}, "type", "must be at most 255 characters (got 256)"),
    ("type-newline", {"type": "a\nb"}, "type", "must not contain control characters"),
    ("type-outer-space", {"type": "t "}, "type", "must not start or end with whitespace"),
    ("type-surrogate", {"type": "a\ud800"}, "type", "must be valid UTF-8 (no lone surrogates)"),
    ("type-bytes", {"type": b"t"}, "type", "must be a string, not bytes"),
    ("tags-too-many", {"tags": TOO_MANY_TAGS}, "tags", "must hold at most 50 tags (got 51)"),
    ("tag-long", {"tags": ("x" * 101,)}, "tags[0]", "must be at most 100 characters (got 101)"),
    (
        "tag-comma",
        {"tags": ("ok", "a,b")},
        "tags[1]",
        "must not contain commas or control characters",
    ),
    (
        "tag-control",
        {"tags": ("a\x01",)},
        "tags[0]",
        "must not contain commas or control characters",
    ),
    (
        "tag-bidi",
        {"tags": ("ok", "\u2067x")},
        "tags[1]",
        "must not contain commas or control characters",
    ),
    ("tag-blank", {"tags": (" ",)}, "tags[0]", "must not be blank"),
    ("tag-int", {"tags": (1,)}, "tags[0]", "must be a string, not int"),
    ("tag-nul", {"tags": ("a\x00",)}, "tags[0]", "must not contain NUL bytes"),
    ("tags-total", {"tags": LONG_TAGS}, "tags", "must be at most 1000 characters joined"),
    ("tags-string", {"tags": "a,b"}, "tags", "must be a list of strings, not a string"),
    ("tags-dict", {"tags": {"a": 1}}, "tags", "must be a list of strings, not dict"),
    (
        "key-long",
        {"idempotency_key": "k" * 256},
        "idempotency_key",
        "must be at most 255 characters (got 256)",
    ),
    # An empty key is not "no key", and outer whitespace is refused, not trimmed into another
    # key (issue 32: "" was taken as no key, " key " became "key").
    (
        "key-empty",
        {"idempotency_key": ""},
        "idempotency_key",
        "must not be empty (leave it out for no key)",
    ),
    (
        "key-blank",
        {"idempotency_key": " \t "},
        "idempotency_key",
        "must not be blank (leave it out for no key)",
    ),
    (
        "key-padded",
        {"idempotency_key": " key "},
        "idempotency_key",
        "must not start or end with whitespace",
    ),
    (
        "key-trailing-newline",
        {"idempotency_key": "key\n"},
        "idempotency_key",
        "must not start or end with whitespace",
    ),
    ("key-int", {"idempotency_key": 5}, "idempotency_key", "must be a string, not int"),
    ("key-nul", {"idempotency_key": "a\x00"}, "idempotency_key", "must not contain NUL bytes"),
    ("payload-not-json", {"payload": "{nope"}, "payload", "must be valid JSON (..."),
    ("payload-empty", {"payload": ""}, "payload", "must be valid JSON (..."),
    ("payload-dict", {"payload": {"a": 1}}, "payload", "must be JSON text (a string), not dict"),
    ("payload-nul", {"payload": '"a\x00"'}, "payload", "must not contain NUL bytes"),
    (
        "payload-surrogate",
        {"payload": '"\udc80"'},
        "payload",
        "must be valid UTF-8 (no lone surrogates)",
    ),
    ("priority-high", {"priority": 1_000_001}, "priority", "must be between -1000000 and 1000000"),
    ("priority-low", {"priority": -1_000_001}, "priority", "must be between -1000000 and 1000000"),
    ("priority-bool", {"priority": True}, "priority", "must be an integer, not bool"),
    ("priority-float", {"priority": 1.5}, "priority", "must be an integer, not float"),
    ("priority-str", {"priority": "1"}, "priority", "must be an integer, not str"),
    ("delay-negative", {"delay_seconds": -1}, "delay_seconds", "must not be negative"),
    (
        "delay-absurd",
        {"delay_seconds": 366 * 86400 + 1},
        "delay_seconds",
        "must be at most 31622400 seconds",
    ),
    (
        "delay-inf",
        {"delay_seconds": float("inf")},
        "delay_seconds",
        "must be a finite number of seconds",
    ),
    (
        "delay-nan",
        {"delay_seconds": float("nan")},
        "delay_seconds",
        "must be a finite number of seconds",
    ),
    ("delay-str", {"delay_seconds": "5"}, "delay_seconds", "must be a number of seconds, not str"),
    (
        "delay-and-run-at",
        {"delay_seconds": 5, "run_at": T0},
        "delay_seconds",
        "give either delay_seconds or run_at, not both",
    ),
    (
        "run-at-naive",
        {"run_at": datetime(2025, 1, 1)},
        "run_at",
        "must be a timezone-aware datetime",
    ),
    (
        "run-at-far",
        {"run_at": datetime.now(UTC) + timedelta(days=400)},
        "run_at",
        "must be at most 366 days in the future",
    ),
    ("attempts-zero", {"max_attempts": 0}, "max_attempts", "must be an integer between 1 and 1000"),
    (
        "attempts-1001",
        {"max_attempts": 1001},
        "max_attempts",
        "must be an integer between 1 and 1000",
    ),
    (
        "attempts-bool",
        {"max_attempts": True},
        "max_attempts",
        "must be an integer between 1 and 1000",
    ),
    ("timeout-zero", {"timeout_seconds": 0}, "timeout_seconds", "must be greater than 0 seconds"),
    (
        "timeout-negative",
        {"timeout_seconds": -3},
        "timeout_seconds",
        "must be greater than 0 seconds",
    ),
    (
        "timeout-week-plus",
        {"timeout_seconds": 7 * 86400 + 1},
        "timeout_seconds",
        "must be at most 604800 seconds",
    ),
    (
        "created-by-long",
        {"created_by": "a" * 101},
        "created_by",
        "must be at most 100 characters (got 101)",
    ),
    (
        "created-by-control",
        {"created_by": "a\nb"},
        "created_by",
        "must not contain control characters",
    ),
    # An expiry the job could never reach (issue 32: one in the past was taken, and the job
    # went to the DLQ as EXPIRED at its first claim). The clock is the enqueue's, T0.
    (
        "expires-past",
        {"expires_at": T0 - timedelta(seconds=1)},
        "expires_at",
        "must be after the job is due (now; it is 2025-01-01 11:59:59 UTC): the job could "
        "never start",
    ),
    (
        "expires-now",
        {"expires_at": T0},
        "expires_at",
        "must be after the job is due (now...",
    ),
    (
        "expires-inside-delay",
        {"expires_at": T0 + timedelta(seconds=30), "delay_seconds": 60},
        "expires_at",
        "must be after the job is due (now + delay_seconds (60); it is 2025-01-01 12:00:30 "
        "UTC): the job could never start",
    ),
    (
        "expires-before-run-at",
        {"expires_at": T0 + timedelta(seconds=5), "run_at": T0 + timedelta(seconds=6)},
        "expires_at",
        "must be after run_at: the job could never start",
    ),
    (
        "expires-after-short-of-run-at",
        {"expires_after_seconds": 60, "run_at": T0 + timedelta(seconds=600)},
        "expires_after_seconds",
        "must reach past run_at (600 s from now): the job could never start",
    ),
    (
        "expires-after-inside-delay",
        {"expires_after_seconds": 60, "delay_seconds": 60},
        "expires_after_seconds",
        "must be more than delay_seconds (60): the job could never start",
    ),
    ("id-not-uuid", {"id": "job-1"}, "id", "must be a job id (a canonical UUID string)"),
    (
        "id-uppercase",
        {"id": "0190A4B2-0000-7000-8000-000000000000"},
        "id",
        "must be a job id (a canonical UUID string)",
    ),
]

BY_ID = {c[0]: c[1:] for c in CASES}


def _assert_error(exc: ValidationError, field: str, limit: str) -> None:
    assert exc.field == field
    if limit.endswith("..."):
        assert exc.limit.startswith(limit[:-3])
    else:
        assert exc.limit == limit
    assert str(exc) == f"{exc.field}: {exc.limit}"


async def _state(backend):
    return (
        await backend.stats_summary(),
        await totals(backend),
        tuple(await backend.queue_list()),
        tuple(await backend.stats_queues(now=T0)),
    )


@pytest.fixture
async def seeded(backend):
    """A store with one job in each pillar, so "nothing written" compares non-empty states."""
    await enqueue(backend, 2)
    [a, b] = await claim(backend, 2)
    await fail(backend, [a])
    await succeed(backend, [b])
    await enqueue(backend)
    return backend


@pytest.mark.parametrize(
    ("fields", "field", "limit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_single_job_is_refused_before_writing(seeded, fields, field, limit):
    before = await _state(seeded)
    with pytest.raises(ValidationError) as caught:
        await seeded.jobs_enqueue([job(**fields)], now=T0)
    _assert_error(caught.value, field, limit)
    assert await _state(seeded) == before


@pytest.mark.parametrize(
    ("fields", "field", "limit"),
    [BY_ID[name] for name in ("queue-blank", "tag-long", "payload-not-json", "created-by-control")],
    ids=["queue", "tag", "payload", "created-by"],
)
async def test_one_bad_job_in_a_batch_writes_none_of_it(seeded, fields, field, limit):
    before = await _state(seeded)
    batch = [job(queue="batch-q")] * 3 + [job(**fields)] + [job(queue="batch-q")] * 3
    with pytest.raises(ValidationError) as caught:
        await seeded.jobs_enqueue(batch, now=T0)
    _assert_error(caught.value, f"jobs[3].{field}", limit)
    assert await _state(seeded) == before
    assert "batch-q" not in [q.name for q in await seeded.queue_list()]


async def test_limits_that_are_fine_are_accepted(backend):
    key = "k" * 255
    tags = tuple(f"{i:02d}" + "x" * 97 for i in range(10))  # 10 * 99 + 9 = 999 characters
    results = await backend.jobs_enqueue(
        [
            job(queue="q" * 255, type="t" * 255, idempotency_key=key, tags=tags),
            job(priority=1_000_000, max_attempts=1000, timeout_seconds=7 * 86400),
            job(priority=-1_000_000, max_attempts=1, delay_seconds=366 * 86400),
            job(payload='"\\u0000 escaped NUL is fine JSON"', tags=("x" * 100,)),
            job(queue="ünïcödé ✓", type="émoji 🚀"),
        ],
        now=T0,
    )
    assert [r.duplicate for r in results] == [False] * 5
    assert (await backend.job_get(results[0].id)).idempotency_key == "k" * 255
    assert (await backend.job_get(results[4].id)).queue == "ünïcödé ✓"


async def test_a_key_is_stored_exactly_as_given_and_an_expiry_just_ahead_is_taken(backend):
    # Inner whitespace and any case are the caller's: kept verbatim, so "a key" and "a  key"
    # are two keys, as they read.
    keys = ["a key", "a  key", "K", "k", "ключ"]
    results = await backend.jobs_enqueue(
        [job(idempotency_key=k, expires_at=T0 + timedelta(microseconds=1)) for k in keys],
        now=T0,
    )
    assert [r.duplicate for r in results] == [False] * len(keys)
    assert [(await backend.job_get(r.id)).idempotency_key for r in results] == keys
    later = T0 + timedelta(seconds=61)
    [due] = await backend.jobs_enqueue([job(delay_seconds=60, expires_at=later)], now=T0)
    assert (await backend.job_get(due.id)).expires_at == later


async def test_payload_cap_is_configurable(open_backend):
    small = await open_backend(limits=Limits(max_payload_bytes=100))
    fits = '{"a": "' + "x" * 91 + '"}'  # exactly 100 bytes
    assert len(fits.encode()) == 100
    await small.jobs_enqueue([job(payload=fits)], now=T0)
    before = await _state(small)
    over = '{"a": "' + "é" * 46 + '"}'  # 46 two-byte characters: 101 bytes, 55 characters
    with pytest.raises(ValidationError) as caught:
        await small.jobs_enqueue([job(payload=over)], now=T0)
    _assert_error(caught.value, "payload", "must be at most 100 bytes of UTF-8 (got 101)")
    assert await _state(small) == before


async def test_batch_size_cap(open_backend):
    capped = await open_backend(limits=Limits(max_batch=2))
    with pytest.raises(ValidationError) as caught:
        await capped.jobs_enqueue([job()] * 3, now=T0)
    _assert_error(caught.value, "jobs", "must hold at most 2 jobs per call")
    assert (await capped.stats_summary()).pending == 0


async def test_edits_are_validated_before_writing(backend):
    [pending] = await enqueue(backend)
    [dead] = await enqueue(backend, queue="d")
    await fail(backend, await claim(backend, queues=["d"]))
    before_hot = await backend.job_get(pending)
    before_dlq = await backend.job_get(dead)
    for edit, target in ((backend.jobs_edit, pending), (backend.dlq_edit, dead)):
        with pytest.raises(ValidationError) as caught:
            await edit(id=target, actor="ops", payload="{bad")
        assert caught.value.field == "payload"
        with pytest.raises(ValidationError) as caught:
            await edit(id=target, actor="ops", tags=("a,b",))
        assert caught.value.field == "tags[0]"
        with pytest.raises(ValidationError) as caught:
            await edit(id=target, actor="ops", priority=2_000_000)
        assert caught.value.field == "priority"
        with pytest.raises(ValidationError) as caught:
            await edit(id=target, actor="x" * 101, priority=1)
        assert caught.value.field == "actor"
    with pytest.raises(ValidationError) as caught:
        await backend.dlq_resurrect(ids=[dead], actor="ops", payload="{bad")
    assert caught.value.field == "payload"
    assert await backend.job_get(pending) == before_hot
    assert await backend.job_get(dead) == before_dlq


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_workers": 0}, "max_workers"),
        ({"max_workers": 10_001}, "max_workers"),
        ({"zombie_timeout_seconds": 0.5}, "zombie_timeout_seconds"),
        ({"zombie_timeout_seconds": 86_401}, "zombie_timeout_seconds"),
        ({"execution_timeout_seconds": 0}, "execution_timeout_seconds"),
        ({"execution_timeout_seconds": 7 * 86400 + 1}, "execution_timeout_seconds"),
    ],
)
async def test_queue_configure_ranges(backend, options, field):
    await backend.queue_ensure("q")
    before = await backend.queue_list()
    with pytest.raises(ValidationError) as caught:
        await backend.queue_configure(name="q", **options)
    assert caught.value.field == field
    assert await backend.queue_list() == before


@pytest.mark.parametrize("name", ["", " q", "q" * 256, "a\tb"])
async def test_queue_names_are_validated_on_control_operations(backend, name):
    before = await backend.queue_list()
    for op in (
        lambda: backend.queue_ensure(name),
        lambda: backend.queue_pause(name=name, paused=True),
        lambda: backend.queue_activate(name=name, active=False),
        lambda: backend.queue_configure(name=name, max_workers=1),
    ):
        with pytest.raises(ValidationError) as caught:
            await op()
        assert caught.value.field in ("name", "queue")
    assert await backend.queue_list() == before


@pytest.mark.parametrize("concurrency", [0, 1001])
async def test_worker_request_concurrency_range(backend, concurrency):
    with pytest.raises(ValidationError) as caught:
        await backend.worker_request(worker_id=None, concurrency=concurrency)
    assert caught.value.field == "concurrency"


async def test_jobs_page_refuses_unknown_sort_and_page_sizes(backend):
    await enqueue(backend)
    with pytest.raises(ValidationError) as caught:
        await backend.jobs_page(pillar=Pillar.HOT, sort="payload; drop table")
    assert caught.value.field == "sort"
    for size in (0, 1001):
        with pytest.raises(ValidationError) as caught:
            await backend.jobs_page(pillar=Pillar.HOT, page_size=size)
        assert caught.value.field == "page_size"
    assert (await backend.jobs_page(pillar=Pillar.HOT, page_size=1000)).total == 1

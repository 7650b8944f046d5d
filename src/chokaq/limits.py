"""Input limits and the checks that enforce them before anything is written.

Owns the rules for every field a caller can send (queue and type names, tags, keys, payloads,
priorities, delays, timeouts). Each violation raises ``ValidationError`` naming the field and the
limit. It must not touch storage.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from .errors import ValidationError
from .ids import is_job_id
from .models import ON_CONFLICT_MODES, NewJob

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_BATCH_SIZE",
    "MAX_BATCH_WAIT_SECONDS",
    "MAX_BULK_CAP",
    "MAX_DELAY_DAYS",
    "MAX_DELAY_SECONDS",
    "MAX_PAYLOAD_DEPTH",
    "MAX_RETENTION_DAYS",
    "MAX_STREAM_ITEMS",
    "MAX_STREAM_ITEM_BYTES",
    "MAX_TIMEOUT_SECONDS",
    "MAX_WORKER_SLOTS",
    "JsonText",
    "Limits",
    "check_actor",
    "check_count",
    "check_delay",
    "check_event_key",
    "check_job_id",
    "check_key",
    "check_max_attempts",
    "check_name",
    "check_number",
    "check_on_conflict",
    "check_partition",
    "check_payload",
    "check_priority",
    "check_seconds",
    "check_step_name",
    "check_stream_item",
    "check_tags",
    "check_text",
    "check_time",
    "check_timeout",
    "json_too_deep",
    "storable",
    "validate_new_job",
    "validate_new_jobs",
]

MAX_NAME_LENGTH = 255
# A durable job's step name and an event's key (docs/durable.md).
MAX_STEP_NAME_LENGTH = 200
MAX_EVENT_KEY_LENGTH = 200
# A job's stream (``ctx.emit``, docs/durable.md "Streams"): an item is progress or a partial
# result, not a payload, so it is held to 64 KiB of JSON (a reader gets items in pages, and The
# Deck shows the last ones inline); a stream holds at most 100,000 items, so one runaway loop
# cannot grow a job's rows without bound.
MAX_STREAM_ITEM_BYTES = 65_536
MAX_STREAM_ITEMS = 100_000
MAX_TAG_LENGTH = 100
MAX_TAGS = 50
MAX_TAGS_TOTAL_LENGTH = 1000
MAX_KEY_LENGTH = 255
MAX_PARTITION_LENGTH = 255
MAX_ACTOR_LENGTH = 100
# A dead job's exception class name (``module.Class``), kept beside its error text.
MAX_ERROR_TYPE_LENGTH = 500
MIN_PRIORITY = -1_000_000
MAX_PRIORITY = 1_000_000
# The furthest ahead anything is scheduled: an enqueue's delay or run_at, a retry's delay (the
# handler's own ``Retry(after_seconds=...)`` included), a window, a grace. The one definition of
# "366 days"; elsewhere it is derived from this.
MAX_DELAY_DAYS = 366
MAX_DELAY_SECONDS = MAX_DELAY_DAYS * 86_400.0
MAX_ATTEMPTS = 1000
MAX_TIMEOUT_SECONDS = 7 * 86_400.0
MAX_SEARCH_LENGTH = 1000
# The most job slots, prefetched jobs or threads one worker process may ask for.
MAX_WORKER_SLOTS = 1000
# How long history may be kept: ten years of days, so a retention cut-off is always a time
# every store can hold.
MAX_RETENTION_DAYS = 10 * MAX_DELAY_DAYS
# The most jobs one requeue or purge by filter may touch, from the Deck's API or the CLI alike: a
# larger batch is a long transaction holding row locks, so an operator runs it again instead.
MAX_BULK_CAP = 10_000
# The most jobs one batch handler call may take (``@app.job(batch_size=)``), and the longest a
# batch may wait to fill (``batch_wait_seconds``): a batch's jobs are all claimed, heartbeated
# and finalized together, so a bigger one is a longer claim and a bigger finalize transaction.
MAX_BATCH_SIZE = 10_000
MAX_BATCH_WAIT_SECONDS = 3600.0
# How deep arrays and objects may nest in a payload. Deep enough for any real document, shallow
# enough that no JSON parser on the way (ours, a handler's, The Deck's browser) runs out of stack.
MAX_PAYLOAD_DEPTH = 100
# Every stored or compared time lies in this range (UTC): both databases and both clients can
# represent it, so no row can ever hold a time that cannot be read back.
MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9999, 1, 1, tzinfo=UTC)


def _bound(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


def check_number(
    field: str,
    value: object,
    *,
    minimum: float = 0.0,
    maximum: float,
    above: bool = False,
    allow_none: bool = True,
    unit: str = "",
) -> float | None:
    """A finite real number (not a bool) from ``minimum`` (with ``above``: greater than it) to
    ``maximum``; None when ``allow_none``. The one rule of every numeric option that is not a
    count: NaN and infinity are refused here, whatever the bounds (``nan <= 0`` is false, so a
    bare comparison lets NaN through). ``unit`` ("seconds", "days") is said in the message."""
    if value is None:
        if allow_none:
            return None
        raise ValidationError(field, "is required")
    what = f"a number of {unit}" if unit else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be {what}, not {type(value).__name__}")
    number = float(value)
    suffix = f" {unit}" if unit else ""
    if minimum > 0 and math.isfinite(maximum):
        # A range with two real ends (1 to 366 days, 0.05 to 60 s): every refusal states both.
        if not (minimum < number if above else minimum <= number) or not number <= maximum:
            low, high = _bound(minimum), _bound(maximum)
            limit = (
                f"greater than {low} and at most {high}" if above else f"between {low} and {high}"
            )
            raise ValidationError(field, f"must be {limit}{suffix}")
        return number
    if not math.isfinite(number):
        raise ValidationError(field, f"must be a finite number{' of ' + unit if unit else ''}")
    if above and number <= minimum:
        raise ValidationError(field, f"must be greater than {_bound(minimum)}{suffix}")
    if number < minimum:
        limit = "must not be negative" if minimum == 0 else f"must be at least {_bound(minimum)}"
        raise ValidationError(field, limit + (suffix if minimum else ""))
    if number > maximum:
        raise ValidationError(field, f"must be at most {_bound(maximum)}{suffix}")
    return number


def check_seconds(
    field: str,
    value: object,
    *,
    minimum: float = 0.0,
    maximum: float = MAX_DELAY_SECONDS,
    positive: bool = False,
    allow_none: bool = True,
) -> float | None:
    """A duration: a finite number of seconds from ``minimum`` (``positive``: above it) to
    ``maximum`` (by default ``MAX_DELAY_SECONDS``, 366 days, the furthest anything waits)."""
    return check_number(
        field,
        value,
        minimum=minimum,
        maximum=maximum,
        above=positive,
        allow_none=allow_none,
        unit="seconds",
    )


def check_count(
    field: str,
    value: object,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    allow_none: bool = False,
) -> int | None:
    """An integer (not a bool, not a float: a count of slots, threads or bytes is whole) from
    ``minimum`` to ``maximum`` (None: no upper bound); None only when ``allow_none``."""
    if value is None:
        if allow_none:
            return None
        raise ValidationError(field, "is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, not {type(value).__name__}")
    if maximum is None:
        if value < minimum:
            raise ValidationError(field, f"must be at least {minimum}")
    elif not minimum <= value <= maximum:
        raise ValidationError(field, f"must be between {minimum} and {maximum}")
    return value


@dataclass(frozen=True, slots=True)
class Limits:
    """Configurable limits. ``max_payload_bytes`` counts the UTF-8 bytes of the JSON text;
    ``max_result_bytes`` those of a handler's return value as JSON (above it the job still
    succeeds and its result records that it was too large)."""

    max_payload_bytes: int = 1_000_000
    max_batch: int = 100_000
    max_result_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        check_count("max_payload_bytes", self.max_payload_bytes, minimum=2)
        check_count("max_result_bytes", self.max_result_bytes, minimum=4)
        check_count("max_batch", self.max_batch, minimum=1)


DEFAULT_LIMITS = Limits()
_STREAM_ITEM_LIMITS = Limits(max_payload_bytes=MAX_STREAM_ITEM_BYTES)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Beyond ASCII, the characters a name must not hold are those the operator cannot see or that
# change how the text around them reads: C1 controls (Cc), format characters (Cf: the bidi
# overrides and isolates U+202A-202E and U+2066-2069, the marks U+200E/F, zero-width space and
# joiners, the BOM) and the line and paragraph separators. U+202E alone makes an invisible
# queue, and "\u202eRTL-fdp.exe" reads as "exe.pdf-LTR". Names are identifiers, so refusing
# these costs nothing real (Python identifiers refuse them too); payloads and partitions are data,
# which The Deck shows with a visible marker for each such character instead.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
# Letters that draw nothing (the Hangul fillers): a name of one of them is as invisible.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
# Names seen valid, so a bulk enqueue checks each queue and type once, not once per job.
_VALID_NAMES: set[str] = set()
_VALID_NAMES_MAX = 10_000


def _has_control(value: str) -> bool:
    return _CONTROL.search(value) is not None or _invisible(value) is not None


def _invisible(value: str) -> str | None:
    """The first invisible or bidi character of ``value`` beyond ASCII, as "U+202E", or None."""
    if value.isascii():
        return None
    for ch in value:
        if ch in _BLANK_LETTERS or unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            return f"U+{ord(ch):04X}"
    return None


class JsonText(str):
    """JSON text that chokaq's serializer produced in this process (``App`` serializing handler
    arguments): its syntax is known good, so enqueue checks only its size."""

    __slots__ = ()


def _check_utf8(field: str, value: str) -> None:
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL bytes")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "must be valid UTF-8 (no lone surrogates)") from None


def storable(text: str | None) -> str | None:
    """Text every backend can store: NUL characters and lone surrogates escaped.

    For text we produce ourselves from arbitrary sources (exception messages, stack traces),
    where refusing is not an option; user input is checked by the functions below instead.
    """
    if text is None:
        return None
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def check_text(
    field: str, value: object, *, max_length: int, allow_none: bool = True
) -> str | None:
    """A free-text field: a string of at most ``max_length`` characters, valid UTF-8, no NUL."""
    if value is None:
        if allow_none:
            return None
        raise ValidationError(field, "is required")
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}")
    _check_utf8(field, value)
    if len(value) > max_length:
        raise ValidationError(field, f"must be at most {max_length} characters (got {len(value)})")
    return value


def check_name(field: str, value: object) -> str:
    """A queue or job type name: 1..255 characters, no outer spaces, no control characters
    and none of the invisible or bidi ones (format characters, C1 controls, line separators)."""
    if type(value) is str and value in _VALID_NAMES:
        return value
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, not {type(value).__name__}")
    _check_utf8(field, value)
    if not value.strip():
        raise ValidationError(field, "must not be blank")
    if value != value.strip():
        raise ValidationError(field, "must not start or end with whitespace")
    if len(value) > MAX_NAME_LENGTH:
        raise ValidationError(
            field, f"must be at most {MAX_NAME_LENGTH} characters (got {len(value)})"
        )
    if _CONTROL.search(value) is not None:
        raise ValidationError(field, "must not contain control characters")
    hidden = _invisible(value)
    if hidden is not None:
        raise ValidationError(
            field, f"must not contain invisible or bidirectional characters (found {hidden})"
        )
    if type(value) is str and len(_VALID_NAMES) < _VALID_NAMES_MAX:
        _VALID_NAMES.add(value)
    return value


def check_actor(field: str, value: object) -> str | None:
    """An audit identity (created_by, actor): at most 100 characters, no control characters."""
    text = check_text(field, value, max_length=MAX_ACTOR_LENGTH)
    if text is not None and _has_control(text):
        raise ValidationError(field, "must not contain control characters")
    return text


def check_tags(field: str, value: object) -> tuple[str, ...]:
    """Tags: at most 50, each 1..100 characters without commas or control characters,
    1000 characters in all once joined with commas."""
    if value is None:
        return ()
    if isinstance(value, str):
        raise ValidationError(field, "must be a list of strings, not a string")
    if not isinstance(value, Sequence):
        raise ValidationError(field, f"must be a list of strings, not {type(value).__name__}")
    if len(value) > MAX_TAGS:
        raise ValidationError(field, f"must hold at most {MAX_TAGS} tags (got {len(value)})")
    tags: list[str] = []
    for i, tag in enumerate(value):
        name = f"{field}[{i}]"
        if not isinstance(tag, str):
            raise ValidationError(name, f"must be a string, not {type(tag).__name__}")
        _check_utf8(name, tag)
        tag = tag.strip()
        if not tag:
            raise ValidationError(name, "must not be blank")
        if len(tag) > MAX_TAG_LENGTH:
            raise ValidationError(
                name, f"must be at most {MAX_TAG_LENGTH} characters (got {len(tag)})"
            )
        if "," in tag or _has_control(tag):
            raise ValidationError(name, "must not contain commas or control characters")
        if tag not in tags:
            tags.append(tag)
    if len(",".join(tags)) > MAX_TAGS_TOTAL_LENGTH:
        raise ValidationError(field, f"must be at most {MAX_TAGS_TOTAL_LENGTH} characters joined")
    return tuple(tags)


# A JSON string (escapes included) or one bracket: what a depth count has to look at.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# A \uD800-\uDFFF escape: the only way JSON text can spell a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_too_deep(text: str, limit: int = MAX_PAYLOAD_DEPTH) -> bool:
    """Whether arrays and objects in the JSON ``text`` nest more than ``limit`` deep.

    Text with no more brackets than the limit cannot nest deeper, so the common payload costs
    two ``str.count`` calls; only bracket-heavy text is scanned (strings skipped)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


class _Refused(ValueError):
    """JSON that parses but that chokaq refuses (a repeated key, NaN or Infinity)."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"must not repeat the key {key!r} in one object")
            seen.add(key)
    return obj


def _no_constant(name: str) -> object:
    raise _Refused(f"must not hold {name} (not JSON: NaN and Infinity have no JSON spelling)")


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _check_json(field: str, value: str) -> None:
    """Strict JSON: parses, nests at most MAX_PAYLOAD_DEPTH deep, no repeated keys in one
    object, no NaN or Infinity, no escaped lone surrogate (each would not survive a round trip
    through another JSON parser, or would mean something else there)."""
    if json_too_deep(value):
        raise ValidationError(
            field, f"must not nest arrays and objects more than {MAX_PAYLOAD_DEPTH} deep"
        )
    try:
        decoded = json.loads(value, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Refused as exc:
        raise ValidationError(field, str(exc)) from None
    except ValueError as exc:
        raise ValidationError(field, f"must be valid JSON ({exc.args[0]})") from None
    if _SURROGATE_ESCAPE.search(value) and _has_lone_surrogate(decoded):
        raise ValidationError(field, "must be valid UTF-8 (no lone surrogate escapes)")


def check_payload(field: str, value: object, limits: Limits = DEFAULT_LIMITS) -> str:
    """JSON text of at most ``limits.max_payload_bytes`` UTF-8 bytes, nesting at most 100 deep,
    with no repeated key in one object, no NaN or Infinity and no lone surrogate."""
    if type(value) is JsonText and value.isascii() and value.isprintable():
        # Our own serialization escapes NUL and every control character (printable ASCII
        # shows it did), and ASCII text has as many bytes as characters: only the size and the
        # depth are left (the serializer refused NaN, and non-string keys were refused first).
        size = len(value)
        if size > limits.max_payload_bytes:
            raise ValidationError(
                field, f"must be at most {limits.max_payload_bytes} bytes of UTF-8 (got {size})"
            )
        if json_too_deep(value):
            raise ValidationError(
                field, f"must not nest arrays and objects more than {MAX_PAYLOAD_DEPTH} deep"
            )
        return value
    if not isinstance(value, str):
        raise ValidationError(field, f"must be JSON text (a string), not {type(value).__name__}")
    _check_utf8(field, value)
    size = len(value.encode("utf-8"))
    if size > limits.max_payload_bytes:
        raise ValidationError(
            field, f"must be at most {limits.max_payload_bytes} bytes of UTF-8 (got {size})"
        )
    if type(value) is not JsonText or not value.isprintable():
        # Text we serialized ourselves is JSON by construction, unless it holds a raw control
        # character (then it was not ours): json.loads refuses those outside JSON whitespace.
        _check_json(field, value)
    elif json_too_deep(value):
        raise ValidationError(
            field, f"must not nest arrays and objects more than {MAX_PAYLOAD_DEPTH} deep"
        )
    return value


def check_priority(field: str, value: object) -> int:
    """An integer in [-1,000,000, 1,000,000]; higher runs first."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, not {type(value).__name__}")
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise ValidationError(field, f"must be between {MIN_PRIORITY} and {MAX_PRIORITY}")
    return value


def check_time(field: str, value: object) -> datetime:
    """An aware datetime between 1970-01-01 and 9999-01-01 UTC, returned in UTC."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field, "must be a timezone-aware datetime")
    try:
        utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None  # beyond what a datetime holds once in UTC (year 1 at +14:00)
    if utc is None or not MIN_TIME <= utc < MAX_TIME:
        raise ValidationError(field, "must be between 1970-01-01 and 9999-01-01 UTC")
    return utc


def check_job_id(field: str, value: object) -> str:
    """A job id: a canonical UUID string."""
    if not isinstance(value, str) or not is_job_id(value):
        raise ValidationError(field, "must be a job id (a canonical UUID string)")
    return value


def _check_seconds(field: str, value: object, *, maximum: float, positive: bool) -> float | None:
    return check_seconds(field, value, maximum=maximum, positive=positive)


def check_delay(field: str, value: object) -> float | None:
    """A delay (None: none): a finite number of seconds from 0 to ``MAX_DELAY_SECONDS`` (366
    days). The rule of an enqueue's ``delay_seconds``, and of every delay that schedules a job."""
    return _check_seconds(field, value, maximum=MAX_DELAY_SECONDS, positive=False)


def check_timeout(field: str, value: object) -> float | None:
    """An execution timeout (None: not set here): a finite number of seconds above 0 and at most
    ``MAX_TIMEOUT_SECONDS`` (7 days), per job at enqueue as per handler at ``@app.job``."""
    return _check_seconds(field, value, maximum=MAX_TIMEOUT_SECONDS, positive=True)


def check_expiry_seconds(field: str, value: object) -> float | None:
    """An expiry after the enqueue (None: none): a finite number of seconds above 0 and at most
    ``MAX_DELAY_SECONDS`` (366 days), per job at enqueue as per type at ``@app.job``."""
    return _check_seconds(field, value, maximum=MAX_DELAY_SECONDS, positive=True)


def check_key(field: str, value: object) -> str | None:
    """An idempotency key, kept exactly as given, or None (no key): 1 to 255 characters, not
    blank, no whitespace at either end, no NUL. An empty key is not "no key" (leave it out for
    that), and a key with outer whitespace is refused rather than trimmed: trimmed, ``" k"``
    collided with ``"k"``; kept, the two would be different keys that read alike."""
    key = check_text(field, value, max_length=MAX_KEY_LENGTH)
    if key is None:
        return None
    if not key:
        raise ValidationError(field, "must not be empty (leave it out for no key)")
    if not key.strip():
        raise ValidationError(field, "must not be blank (leave it out for no key)")
    if key != key.strip():
        raise ValidationError(field, "must not start or end with whitespace")
    return key


def _check_label(field: str, value: object, max_length: int) -> str:
    text = check_text(field, value, max_length=max_length, allow_none=False)
    assert text is not None
    if not text.strip():
        raise ValidationError(field, "must be a non-empty string")
    if _CONTROL.search(text) is not None:
        raise ValidationError(field, "must not contain control characters")
    return text


def check_step_name(field: str, value: object) -> str:
    """A durable job's step name: a non-empty string of at most ``MAX_STEP_NAME_LENGTH`` (200)
    characters, no control characters. Kept exactly as given: it is the step's key."""
    return _check_label(field, value, MAX_STEP_NAME_LENGTH)


def check_stream_item(field: str, value: object) -> str:
    """A stream item: JSON text of at most ``MAX_STREAM_ITEM_BYTES`` (64 KiB) of UTF-8, with
    the rules of a payload (nesting, no NaN, no repeated key, no lone surrogate)."""
    return check_payload(field, value, _STREAM_ITEM_LIMITS)


def check_event_key(field: str, value: object) -> str:
    """An event's key (``send_event``, ``wait_for_event``): a non-empty string of at most
    ``MAX_EVENT_KEY_LENGTH`` (200) characters, no control characters, kept exactly as given."""
    return _check_label(field, value, MAX_EVENT_KEY_LENGTH)


def validate_new_job(
    job: NewJob, limits: Limits = DEFAULT_LIMITS, now: datetime | None = None
) -> NewJob:
    """Check every field of ``job``; return it normalized (times in UTC, tags trimmed and
    de-duplicated). ``now`` is the enqueue's clock (None: this process's), which an expiry
    must be after."""
    check_name("queue", job.queue)
    check_name("type", job.type)
    check_payload("payload", job.payload, limits)
    check_priority("priority", job.priority)
    if (
        (job.tags is None or (type(job.tags) in (tuple, list) and not job.tags))
        and job.created_by is None
        and job.idempotency_key is None
        and job.delay_seconds is None
        and job.run_at is None
        and job.max_attempts is None
        and job.timeout_seconds is None
        and job.trace_context is None
        and job.partition is None
        and job.expires_at is None
        and job.expires_after_seconds is None
        and job.unique_for_seconds is None
        and job.on_conflict == "keep"
    ):
        if job.id is not None:  # prepare() gives every job its id
            check_job_id("id", job.id)
        if job.tags != ():
            job = replace(job, tags=())
        return job  # nothing optional given: the common shape of a bulk enqueue
    tags = check_tags("tags", job.tags)
    check_actor("created_by", job.created_by)
    key = check_key("idempotency_key", job.idempotency_key)
    if job.delay_seconds is not None and job.run_at is not None:
        raise ValidationError("delay_seconds", "give either delay_seconds or run_at, not both")
    check_delay("delay_seconds", job.delay_seconds)
    run_at = job.run_at
    if run_at is not None:
        run_at = check_time("run_at", run_at)
        if run_at - datetime.now(UTC) > timedelta(seconds=MAX_DELAY_SECONDS):
            raise ValidationError("run_at", f"must be at most {MAX_DELAY_DAYS} days in the future")
    check_max_attempts("max_attempts", job.max_attempts)
    check_timeout("timeout_seconds", job.timeout_seconds)
    expires_at = _check_expiry(job, run_at, now or datetime.now(UTC))
    if job.unique_for_seconds is not None:
        _check_seconds(
            "unique_for_seconds", job.unique_for_seconds, maximum=MAX_DELAY_SECONDS, positive=True
        )
        if key is None:
            raise ValidationError(
                "unique_for_seconds", "needs an idempotency_key (the key it keeps unique)"
            )
    check_on_conflict(job, key)
    check_text("trace_context", job.trace_context, max_length=1000)
    check_partition("partition", job.partition)
    if job.id is not None:
        check_job_id("id", job.id)
    if tags != job.tags or run_at is not job.run_at or expires_at is not job.expires_at:
        job = replace(job, tags=tags, run_at=run_at, expires_at=expires_at)
    return job


def check_on_conflict(job: NewJob, key: str | None) -> None:
    """``on_conflict``: one of ``ON_CONFLICT_MODES``; any but "keep" needs the idempotency key
    whose holder it acts on, and refuses ``unique_for_seconds``, whose window returns one job
    for the key even after it finished (which a replace cannot reach)."""
    mode = job.on_conflict
    if mode == "keep":
        return
    if mode not in ON_CONFLICT_MODES:
        raise ValidationError(
            "on_conflict", f"must be one of {', '.join(ON_CONFLICT_MODES)}, not {mode!r}"
        )
    if key is None:
        raise ValidationError(
            "on_conflict", f"{mode!r} needs an idempotency_key (the key whose job it replaces)"
        )
    if job.unique_for_seconds is not None:
        raise ValidationError(
            "on_conflict",
            f"{mode!r} cannot be combined with unique_for_seconds (a window returns one job "
            "for the key, even finished; give one or the other)",
        )


def _check_expiry(job: NewJob, run_at: datetime | None, now: datetime) -> datetime | None:
    """The job's ``expires_at`` in UTC, after checking it and ``expires_after_seconds``: one or
    the other, and after the job is due (``run_at``, ``now`` + ``delay_seconds``, or ``now``),
    since a job that expires before it is due could never start: it would go to the DLQ as
    EXPIRED at its first claim. ``now`` is the enqueue's clock."""
    after = job.expires_after_seconds
    if job.expires_at is not None and after is not None:
        raise ValidationError(
            "expires_after_seconds", "give either expires_after_seconds or expires_at, not both"
        )
    check_expiry_seconds("expires_after_seconds", after)
    if after is not None and job.delay_seconds is not None and after <= job.delay_seconds:
        raise ValidationError(
            "expires_after_seconds",
            f"must be more than delay_seconds ({job.delay_seconds:g}): the job could never start",
        )
    if after is not None and run_at is not None and now + timedelta(seconds=after) <= run_at:
        raise ValidationError(
            "expires_after_seconds",
            f"must reach past run_at ({(run_at - now).total_seconds():g} s from now): the job "
            "could never start",
        )
    if job.expires_at is None:
        return None
    expires_at = check_time("expires_at", job.expires_at)
    if run_at is not None and expires_at <= run_at:
        raise ValidationError("expires_at", "must be after run_at: the job could never start")
    delay = job.delay_seconds or 0.0
    if expires_at <= now + timedelta(seconds=delay):
        due = f"now + delay_seconds ({delay:g})" if delay else "now"
        raise ValidationError(
            "expires_at",
            f"must be after the job is due ({due}; it is {expires_at:%Y-%m-%d %H:%M:%S} UTC): "
            "the job could never start",
        )
    return expires_at


def check_partition(field: str, value: object) -> str | None:
    """A partition value: text of 1..MAX_PARTITION_LENGTH characters, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(field, f"must be text (got {type(value).__name__})")
    if not value:
        raise ValidationError(field, "must not be empty (leave it out for no partition)")
    return check_text(field, value, max_length=MAX_PARTITION_LENGTH)


def check_max_attempts(field: str, value: object) -> None:
    """``value`` is None or an integer from 1 to ``MAX_ATTEMPTS`` (1000), else ValidationError.

    The same limit holds wherever attempts are set: per job at enqueue, per handler at
    ``@app.job`` / ``@app.pipe``, and for the worker's retry policy."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPTS
    ):
        raise ValidationError(field, f"must be an integer between 1 and {MAX_ATTEMPTS}")


def validate_new_jobs(
    jobs: Sequence[NewJob], limits: Limits = DEFAULT_LIMITS, now: datetime | None = None
) -> list[NewJob]:
    """Check a batch; the first bad job's error names its index (``jobs[3].payload``)."""
    if len(jobs) > limits.max_batch:
        raise ValidationError("jobs", f"must hold at most {limits.max_batch} jobs per call")
    if len(jobs) == 1:
        return [validate_new_job(jobs[0], limits, now)]
    now = now or datetime.now(UTC)  # one clock for the batch
    out = []
    for i, job in enumerate(jobs):
        try:
            out.append(validate_new_job(job, limits, now))
        except ValidationError as exc:
            raise exc.at(f"jobs[{i}]") from None
    return out

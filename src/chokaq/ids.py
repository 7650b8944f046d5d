"""Job ids: UUIDv7 strings, time-ordered so that ids sort by creation and index well.

Owns id generation only; it must not know about storage.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid

__all__ = ["is_job_id", "new_job_id", "new_lease_token"]

_lock = threading.Lock()
_rng = random.Random(os.urandom(16))


def _reseed() -> None:
    _rng.seed(os.urandom(16))


os.register_at_fork(after_in_child=_reseed)  # a forked child must not repeat its parent
_last_ms = 0
_counter = 0


def new_job_id() -> str:
    """A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter and random bits.

    The counter keeps ids generated within one millisecond in order inside this process; it is
    re-seeded randomly each new millisecond so two processes do not walk the same sequence.
    """
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            _last_ms = ms
            _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF
        else:
            ms = _last_ms
            _counter += 1
            if _counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                _last_ms += 1
                ms = _last_ms
                _counter = 0
        counter = _counter
    # The random bits only keep ids of one millisecond apart across processes; they are not a
    # secret (lease tokens are), so a seeded generator serves instead of a syscall per id.
    rand = _rng.getrandbits(62)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_lease_token() -> str:
    """A random token minted for one claim; a stale holder cannot guess the next one."""
    return str(uuid.uuid4())


def is_job_id(value: str) -> bool:
    """Whether ``value`` is a canonical UUID string (the only shape job ids take)."""
    if len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False

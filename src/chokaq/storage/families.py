"""Error families: the normalised first line of an error that the DLQ's top-errors panel groups on.

Owns the one definition of the rules: the error's first line, with quoted values, uuids, hex ids
and numbers folded to ``<str>``, ``<id>`` and ``<n>``, whitespace collapsed, at most
``FAMILY_CHARS`` characters. SQLite runs this function itself (registered on each connection as
``chokaq_error_family``); PostgreSQL runs the same rules as the SQL function ``error_family`` of
migration 008, and the differential test holds the two to the same answers. Only ASCII classes
are used, so both regular-expression engines read them alike. It must not touch a database.
"""

from __future__ import annotations

import re

__all__ = ["EMPTY_FAMILY", "FAMILY_CHARS", "error_family"]

FAMILY_CHARS = 160
EMPTY_FAMILY = "(empty error details)"

_WORD = "0-9A-Za-z_"
_QUOTED = re.compile(rf"(?<![{_WORD}])('[^']*'|\"[^\"]*\")")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# 0x-prefixed hex, or a bare hex word of 8+ characters with at least one letter (a bare run of
# digits is a number, so "card 42424242" and "card 4242" stay in one family).
_HEX = re.compile(
    rf"(?<![{_WORD}])(0[xX][0-9a-fA-F]+|(?=[0-9]*[a-fA-F])[0-9a-fA-F]{{8,}}(?![{_WORD}]))"
)
_NUMBER = re.compile(rf"(?<![{_WORD}])[0-9]+(\.[0-9]+)?")
_SPACE = re.compile(r"[ \t\r\f\v]+")
_BLANK = " \t\r\f\v"


def error_family(error: str | None) -> str:
    """The family of ``error``: ``"ValueError: card 4242 declined for 'bob'"`` gives
    ``"ValueError: card <n> declined for <str>"``; an empty error gives ``EMPTY_FAMILY``."""
    line = (error or "").lstrip(_BLANK + "\n").split("\n", 1)[0]
    line = _QUOTED.sub("<str>", line)
    line = _UUID.sub("<id>", line)
    line = _HEX.sub("<id>", line)
    line = _NUMBER.sub("<n>", line)
    line = _SPACE.sub(" ", line).strip(_BLANK)[:FAMILY_CHARS].strip(_BLANK)
    return line or EMPTY_FAMILY

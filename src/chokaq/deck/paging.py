"""The paging of the Deck's job listings (``GET /api/jobs``): the opaque cursor tokens of its
``after``/``before`` links, the ``last`` page, the bound on numbered pages, and the paging
fields of the answer (``total_estimated``, ``next``, ``previous``).

A token is the base64url of ``[sort, order, value, id]``: the position of one row in one
sort order, so a token used with another sort or order is refused rather than misread. Deep
pages go by token (no OFFSET); numbered pages stop at ``MAX_OFFSET_ROWS``. It owns no
storage access beyond building the ``jobs_page`` arguments, and must not hold SQL.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..errors import ValidationError
from ..models import JobView, Page, PageKey, Pillar
from ..storage.checks import SORT_COLUMNS
from ..storage.paging import TIME_SORTS
from ..views import parse_bool, parse_int

__all__ = [
    "MAX_OFFSET_ROWS",
    "QUERY",
    "decode_cursor",
    "encode_cursor",
    "page_arguments",
    "page_fields",
]

# Numbered pages are read with an OFFSET, whose cost grows with the depth (page 20,000 of a
# million-row archive took 966 ms): past this many rows a page is reached by its cursor.
MAX_OFFSET_ROWS = 10_000
MAX_TOKEN_LENGTH = 2048
QUERY = ("page", "page_size", "after", "before", "last")  # what the OpenAPI document lists


def encode_cursor(sort: str, descending: bool, value: Any, job_id: str) -> str:
    """The token of the position (``value``, ``job_id``) in the ``sort`` order."""
    shown = value.isoformat() if isinstance(value, datetime) else value
    raw = json.dumps([sort, "desc" if descending else "asc", shown, job_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(field: str, token: str, pillar: Pillar, sort: str, descending: bool) -> PageKey:
    """The ``PageKey`` of a token made by ``encode_cursor`` for this pillar, sort and order
    (the storage seam checks the value against the column)."""
    if len(token) > MAX_TOKEN_LENGTH:
        raise ValidationError(field, f"must be at most {MAX_TOKEN_LENGTH} characters")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json.loads(raw)
    except (binascii.Error, ValueError):
        raise ValidationError(field, "is not a cursor of this listing") from None
    if not isinstance(decoded, list) or len(decoded) != 4:
        raise ValidationError(field, "is not a cursor of this listing")
    token_sort, order, value, job_id = decoded
    if token_sort != sort or order != ("desc" if descending else "asc"):
        raise ValidationError(field, "belongs to another sort or order: start from page 1")
    column = SORT_COLUMNS[pillar].get(sort)
    if column in TIME_SORTS and isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(field, "is not a cursor of this listing") from None
    return PageKey(value, job_id)


def page_arguments(
    params: Mapping[str, str], pillar: Pillar, sort: str, descending: bool
) -> dict[str, Any]:
    """The paging arguments of ``jobs_page`` from the query: ``page`` (numbered, at most
    ``MAX_OFFSET_ROWS`` rows deep), ``page_size`` (1..1000) and at most one of ``after``,
    ``before`` (cursor tokens) and ``last=true``."""
    size = parse_int("page_size", params.get("page_size"), default=50, low=1, high=1000)
    page = parse_int("page", params.get("page"), default=1, low=1, high=1_000_000)
    if (page - 1) * size >= MAX_OFFSET_ROWS:
        raise ValidationError(
            "page",
            f"must start within the first {MAX_OFFSET_ROWS} rows; deeper pages are read with "
            "the after/before cursors of the answers (or last=true)",
        )
    arguments: dict[str, Any] = {"page": page, "page_size": size}
    for name in ("after", "before"):
        token = params.get(name)
        if token:
            arguments[name] = decode_cursor(name, token, pillar, sort, descending)
    if parse_bool("last", params.get("last")):
        arguments["last"] = True
    return arguments


def page_fields(
    result: Page[JobView], pillar: Pillar, sort: str, descending: bool
) -> dict[str, Any]:
    """The paging part of the answer: counts (``total_estimated``: the total is the database's
    estimate), and the ``next``/``previous`` cursor tokens (null: no such page)."""

    def token(key: PageKey | None) -> str | None:
        return None if key is None else encode_cursor(sort, descending, key.value, key.id)

    return {
        "total": result.total,
        "total_estimated": result.total_estimated,
        "page": result.page,
        "page_size": result.page_size,
        "pages": result.pages,
        "next": token(result.next),
        "previous": token(result.previous),
    }

"""What every Deck action reads from its JSON body before it acts: the job ids it names
(``job_ids``) and, for destructive actions and large ones, the typed confirmation word
(``confirm``, needed at ``CONFIRM_AT`` jobs or more); and those bodies as the OpenAPI document
lists them (``IDS_BODY``, ``FILTER_BODY``). Shared by ``deck.api`` and ``deck.bulk``; it checks
input only and must not reach storage.
"""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..limits import check_job_id
from ..views import MAX_IDS

__all__ = ["CONFIRM_AT", "FILTER_BODY", "IDS_BODY", "confirm", "job_ids"]

CONFIRM_AT = 25  # bulk actions on this many jobs or more need a typed confirmation

# The bodies of an action by ids and of one by a previewed filter (property -> JSON type).
IDS_BODY = {"ids": "array", "confirm": "string"}
FILTER_BODY = {"filter": "object", "cap": "integer", "confirm": "string"}


def job_ids(data: dict[str, Any]) -> list[str]:
    """The body's ``ids``: a non-empty list of at most ``MAX_IDS`` job ids, repeats dropped;
    raises ``ValidationError`` naming ``ids`` (or the bad ``ids[i]``) otherwise."""
    ids = data.get("ids")
    if not isinstance(ids, list) or not ids:
        raise ValidationError("ids", "must be a non-empty list of job ids")
    if len(ids) > MAX_IDS:
        raise ValidationError("ids", f"must hold at most {MAX_IDS} ids (got {len(ids)})")
    return list(dict.fromkeys(check_job_id(f"ids[{i}]", v) for i, v in enumerate(ids)))


def confirm(data: dict[str, Any], word: str, count: int, *, always: bool = False) -> None:
    """Destructive actions (``always``), and any action on ``CONFIRM_AT`` or more jobs, carry
    the typed word as the body's ``confirm``; raises ``ValidationError`` when it is not there."""
    if (always or count >= CONFIRM_AT) and data.get("confirm") != word:
        raise ValidationError("confirm", f'must be "{word}" (typed confirmation)')

"""The ``--json`` output of the CLI's read commands: the Deck API's shapes, one line each.

Field names are the models' (``chokaq.models``) and, where the Deck's API has a shape for the
same thing (a queue row, a schedule, the throughput), that shape, built by the same functions
of ``chokaq.views``; times are ISO 8601 in UTC ending in ``Z``, enums are lower-case names
(``fatal_error``), a pillar its value (``dlq``). A list is one JSON array. This module only
shapes and prints values; it must not read storage. The Deck's package is imported when a
``--json`` is printed, not with the CLI: it brings Starlette (a seventh of a second to start).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, TypeVar

import click

from ..models import JobView

__all__ = ["echo_json", "echo_moves", "job_data", "json_flag"]

F = TypeVar("F", bound=Callable[..., Any])

# JobView fields that hold JSON text: embedded as values, not as strings (as ``job show``).
_JSON_TEXT = ("payload", "result")


def json_flag(what: str) -> Callable[[F], F]:
    """Add ``--json`` (into ``as_json``); ``what`` says what is printed ("a JSON array of ...")."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} instead.")


def echo_json(data: Any) -> None:
    """Print ``data`` as one line of JSON (non-ASCII text as is)."""
    click.echo(json.dumps(data, ensure_ascii=False))


def job_data(view: JobView) -> dict[str, Any]:
    """Every field of ``view`` under its ``JobView`` name, plus ``state``; the payload and the
    result as JSON values (``result`` null when the job returned None or has none yet)."""
    from ..views import dump

    data: dict[str, Any] = {"id": view.id, "state": view.state}
    for f in fields(view):
        value = getattr(view, f.name)
        if f.name in _JSON_TEXT and value is not None:
            data[f.name] = json.loads(value)
        else:
            data[f.name] = dump(value)
    return data


def echo_moves(
    moved: Sequence[str], why: Mapping[str, str], *, done: str, left: str, each: str
) -> None:
    """The plain report of a move by ids: "``done`` N, ``left`` M", then each moved id with
    ``each`` and each id left alone with its reason."""
    click.echo(f"{done} {len(moved)}, {left} {len(why)}")
    for job_id in moved:
        click.echo(f"  {job_id}: {each}")
    for job_id, reason in why.items():
        click.echo(f"  {job_id}: {reason}")

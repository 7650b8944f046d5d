"""``chokaq stats``'s answer to "why is lag growing?": a line per queue with due jobs that no
live worker serves, and a table of pending jobs by queue and type with the reason their due
jobs do not run (``chokaq.waits``, the same composition The Deck shows). Owns the rich output
only; it reads nothing itself.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..waits import Waits, unserved_message

__all__ = ["waits_view"]

_STYLES = {"no_worker": "red", "circuit": "red", "limit": "yellow", "paused": "yellow"}


def waits_view(waits: Waits) -> Group:
    """The unserved queues' lines (red) and the "Why the wait" table."""
    lines = [Text(f"! {unserved_message(u)}", style="bold red") for u in waits.unserved]
    table = Table(title="Why the wait", title_justify="left")
    for column in ("queue", "type", "due", "lag", "reason", "retrying", "delayed", "on parents"):
        table.add_column(
            column, justify="left" if column in ("queue", "type", "reason") else "right"
        )
    for row in waits.rows:
        reason = Text(row.reason, style=_STYLES.get(row.reason, ""))
        if row.held:
            reason.append(f" ({row.held} held)")
        table.add_row(
            row.queue,
            row.type,
            str(row.due),
            "-" if row.lag_seconds is None else f"{row.lag_seconds:.1f}s",
            reason,
            str(row.retrying),
            str(row.delayed),
            str(row.on_parents),
        )
    counts = waits.counts()
    summary = Text(
        f"due: {counts['no_worker']} without a worker, {counts['circuit']} deferred by a "
        f"circuit, {counts['limit']} held by a limit, {counts['paused']} paused, "
        f"{counts['capacity']} waiting for a slot"
    )
    return Group(*lines, table, summary)

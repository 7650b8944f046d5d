"""What a worker's maintenance takes for an interruption of its access to storage (``Reach``):
a failed call, or a renewal that took longer than a renewal interval, and when access counts
as regained. Times are given, as the renewals' own monotonic readings."""

from __future__ import annotations

import logging

import pytest

from chokaq.logs import Event
from chokaq.runtime.reach import Reach


def resumed(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    records = [getattr(r, "chokaq", {}) for r in caplog.records]
    return [r for r in records if r.get("event_id") == Event.RESCUE_RESUMING]


def test_the_first_answer_starts_the_stretch_and_prompt_ones_keep_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chokaq")
    reach = Reach(0.5)
    assert reach.since is None  # before the first answer nothing is known
    reach.answered(10.0, 10.1)
    reach.answered(10.6, 11.0)
    assert reach.since == 10.1
    assert resumed(caplog) == []  # starting up is no interruption


def test_a_slow_renewal_ends_an_interruption_when_it_comes_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chokaq")
    reach = Reach(0.5)
    reach.answered(10.0, 10.1)
    reach.answered(10.6, 18.6)  # waited 8 s: a locked file, a pool with no connection
    assert reach.since == 18.6
    [line] = resumed(caplog)
    assert line["interrupted_seconds"] == 8.0


def test_a_failure_ends_the_stretch_until_the_next_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="chokaq")
    reach = Reach(0.5)
    reach.answered(10.0, 10.1)
    reach.failed()
    assert reach.since is None  # no heartbeat counts as missed meanwhile
    reach.failed()
    reach.answered(30.0, 30.1)
    assert reach.since == 30.1
    assert len(resumed(caplog)) == 1

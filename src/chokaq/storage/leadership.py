"""Leadership: who runs maintenance and fires periodic schedules, one holder per role.

A role is one row of the ``leadership`` table: a lease with its holder, an epoch (the fencing
token) and an expiry on the database's clock, taken and renewed by compare-and-set through the
storage seam (``Backend.leadership_claim``). Every write made under leadership names the term
(``fence=``) and the database refuses it once that term is over, so a holder that was frozen,
partitioned or blocked past its lease writes nothing when it wakes. The handle also keeps a
local deadline on the monotonic clock, started before the claim was sent and so never later
than the database's expiry: a holder whose loop stalled past it stops writing at once instead
of waiting to be fenced. From its latest grant it also reads the database's clock (``clock``).
Owns the handle's state only; no SQL, no schedule (the worker's maintenance renews it), and it
never reads the worker's wall clock.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Protocol

from ..errors import ValidationError
from ..limits import check_name
from ..models import LeaderTerm
from . import checks
from .group import OperationGroup
from .observed import operation

__all__ = ["DEFAULT_LEASE_SECONDS", "Leadership", "LeadershipOperations", "Leases"]

# How long a term lasts unless renewed: rescue resumes at most this long (plus one renewal
# interval of the next holder) after a leader stops.
DEFAULT_LEASE_SECONDS = 10.0


class Leases(Protocol):
    """The two operations of the storage seam (``Backend``) a handle uses."""

    async def leadership_claim(
        self, *, name: str, holder: str, lease_seconds: float, term: LeaderTerm | None = None
    ) -> LeaderTerm | None: ...

    async def leadership_release(self, *, term: LeaderTerm) -> bool: ...


class Leadership:
    """One holder's handle on one role; made by ``Backend.leadership(name, holder=...)``.

    ``claim()`` takes or renews the lease (call it more often than ``lease_seconds``, say every
    third of it); ``term`` is what to pass as ``fence=`` to each write made under leadership;
    ``release()`` ends the term at once on clean shutdown so a successor need not wait for it
    to expire. Storage errors from ``claim`` and ``release`` propagate (``StorageError``).
    """

    def __init__(self, backend: Leases, *, name: str, holder: str, lease_seconds: float) -> None:
        self.backend = backend
        self.name = name
        self.holder = holder
        self.lease_seconds = lease_seconds
        self._term: LeaderTerm | None = None
        self._deadline = 0.0
        # The latest grant: when it came back (monotonic) and its renewal on the database's clock.
        self._granted: tuple[float, datetime] | None = None

    @property
    def term(self) -> LeaderTerm | None:
        """The term this holder may write under, or None: not granted, lost, or past the local
        deadline (the renewal is late, so the database's lease may be over too)."""
        if self._term is None or time.monotonic() >= self._deadline:
            return None
        return self._term

    @property
    def leading(self) -> bool:
        return self.term is not None

    async def claim(self) -> LeaderTerm | None:
        """Take the role, or renew the term held; the term granted, or None while another
        holder's term runs. A term past its local deadline is still offered for renewal: the
        database alone says whether it is over (and then grants a new epoch when free)."""
        sent = time.monotonic()
        term = await self.backend.leadership_claim(
            name=self.name, holder=self.holder, lease_seconds=self.lease_seconds, term=self._term
        )
        self._term = term
        self._deadline = sent + self.lease_seconds
        if term is not None:
            renewed = term.expires_at - timedelta(seconds=self.lease_seconds)
            self._granted = (time.monotonic(), renewed)
        return term

    def clock(self) -> datetime | None:
        """The database's clock now, read from the latest grant (None before the first): the
        time the database granted it (its expiry less the lease) plus the monotonic time since
        the grant came back. Never ahead of the database (it granted before the answer came
        back), to its clock's resolution; behind it by at most that claim's round trip. A write
        made under the term that must judge time as of its sending, not of when it runs, reads
        it: a statement that waited for a connection through an outage must not judge the
        outage."""
        if self._granted is None:
            return None
        came_back, renewed = self._granted
        return renewed + timedelta(seconds=time.monotonic() - came_back)

    def lost(self, term: LeaderTerm) -> None:
        """Forget ``term`` (a fenced write said it is over) unless a claim has since been
        granted a newer epoch; the next claim then starts afresh."""
        if self._term is not None and self._term.epoch == term.epoch:
            self._term = None

    async def release(self) -> None:
        """End the term held, if any (a term already over is left alone)."""
        term, self._term = self._term, None
        if term is not None:
            await self.backend.leadership_release(term=term)


class LeadershipOperations(OperationGroup):
    """The storage seam's leadership leases, checked once and observed once: claim (or renew),
    release and read a role's term."""

    @operation
    async def leadership_claim(
        self, *, name: str, holder: str, lease_seconds: float, term: LeaderTerm | None = None
    ) -> LeaderTerm | None:
        """Take the role ``name`` for ``holder``, or renew ``term``, for ``lease_seconds``
        (0 < t <= 1 hour) from now on the database's clock; never the caller's clock.

        Granted (the new term returned) when nobody holds the role, when the current term has
        expired, or when ``term`` is the current, unexpired term of this holder (a renewal: same
        epoch, later ``expires_at``). Taking the role, or re-taking it after one's own term
        lapsed, starts a new term with the epoch one higher. None while another holder's term
        (or this holder's, when ``term`` does not name it) is unexpired."""
        check_name("name", name)
        check_name("holder", holder)
        lease = checks.lease_seconds(lease_seconds)
        epoch = None
        if term is not None:
            checked = checks.term("term", term)
            if (checked.name, checked.holder) != (name, holder):
                raise ValidationError("term", "must be a term of this name and holder")
            epoch = checked.epoch
        return await self.driver.leadership_claim(name, holder, lease, epoch)

    @operation
    async def leadership_release(self, *, term: LeaderTerm) -> bool:
        """End ``term`` now (clean shutdown), so another holder may take the role at once;
        False when it was no longer current. The epoch is kept, so it never repeats."""
        return await self.driver.leadership_release(checks.term("term", term))

    @operation
    async def leadership_get(self, *, name: str) -> LeaderTerm | None:
        """The current, unexpired term of the role ``name``, or None."""
        return await self.driver.leadership_get(check_name("name", name))

"""A pydantic model for tests/runtime/test_payload_types.py, in a module of its own so that
the test module imports without pydantic (its test then skips)."""

from __future__ import annotations

from decimal import Decimal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel


class Invoice(BaseModel):
    number: int
    issued_at: AwareDatetime
    total: Decimal
    owner: UUID

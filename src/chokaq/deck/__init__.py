"""The Deck: chokaq's web dashboard for operators (live queues, jobs in every pillar, inspector,
editor, cancel/requeue/purge with previews, circuits, workers), with read-only and admin roles.

``create_deck(app)`` returns an ASGI application to mount in a host (FastAPI/Starlette) app;
``serve(app)`` runs it standalone (``chokaq deck``). See ``docs/deck.md``.
"""

from __future__ import annotations

from .app import create_deck
from .auth import Authorizer, Credentials, Principal, Role, credentials_from_env
from .serve import build_server, serve

__all__ = [
    "Authorizer",
    "Credentials",
    "Principal",
    "Role",
    "build_server",
    "create_deck",
    "credentials_from_env",
    "serve",
]

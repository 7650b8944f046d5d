"""A FastAPI app that writes a row and enqueues a job in one transaction, with The Deck mounted.

    CHOKAQ_DATABASE_URL=postgresql://app@db/app chokaq migrate
    CHOKAQ_DATABASE_URL=postgresql://app@db/app uvicorn examples.fastapi_signup:api
    CHOKAQ_DATABASE_URL=postgresql://app@db/app chokaq worker --app examples.fastapi_signup:app

``POST /signup?email=ann@example.com`` inserts the user and enqueues ``send_welcome`` in the
request's own transaction: both commit, or neither does (``...@invalid`` fails after the
enqueue, and leaves no user and no job). The Deck is at ``/deck``: behind the users of
``CHOKAQ_DECK_USERS`` when set, else for loopback requests only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Annotated, Any

import psycopg
from fastapi import Depends, FastAPI, HTTPException
from psycopg_pool import AsyncConnectionPool

from chokaq import App
from chokaq.contrib.fastapi import Enqueuer, enqueuer, lifespan, mount_deck
from chokaq.deck import credentials_from_env

DATABASE_URL = os.environ["CHOKAQ_DATABASE_URL"]
app = App(DATABASE_URL, schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"))
pool = AsyncConnectionPool(DATABASE_URL, open=False)
welcomed: list[str] = []


@app.job(queue="emails")
async def send_welcome(email: str) -> None:
    welcomed.append(email)  # a real app sends the email here


@contextlib.asynccontextmanager
async def database(web: Any) -> AsyncIterator[None]:
    await pool.open()
    async with pool.connection() as conn:
        await conn.execute("CREATE TABLE IF NOT EXISTS example_users (email text PRIMARY KEY)")
    yield
    await pool.close()


api = FastAPI(lifespan=lifespan(app, database))  # the App is open while the app serves


async def db() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    async with pool.connection() as conn:
        yield conn


Connection = Annotated[psycopg.AsyncConnection[Any], Depends(db)]
Jobs = Annotated[Enqueuer, Depends(enqueuer(db))]  # the same connection as the route's


@api.post("/signup")
async def signup(email: str, conn: Connection, jobs: Jobs) -> dict[str, str]:
    async with conn.transaction():
        await conn.execute("INSERT INTO example_users (email) VALUES (%s)", (email,))
        job_id = await jobs.enqueue(send_welcome, email=email)
        if email.endswith("@invalid"):
            raise HTTPException(400, "no such domain")  # the user and the job roll back
    return {"job_id": job_id}


mount_deck(api, app, credentials=credentials_from_env(), loopback_only=True)

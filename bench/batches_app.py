"""The app of bench/batches.py: the same work as a batch handler and as one job per call.

``single`` handles one item a call, ``batched`` up to 100 (``@app.job(batch_size=100)``). The
work (``CHOKAQ_BENCH_WORK``): ``noop`` (nothing: what the engine itself costs per job),
``insert`` (each call writes its items to a ``bench_sink`` table of the benchmark's database in
one statement and one commit: a bulk insert), or ``api`` (each call waits 5 ms, whatever the
number of items, as a call to an embedding or bulk HTTP API on the same network would).
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import threading
import time
from typing import Any

from chokaq import App, Batched

app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ["CHOKAQ_SCHEMA"])
WORK = os.environ.get("CHOKAQ_BENCH_WORK", "noop")
SINK = os.environ.get("CHOKAQ_BENCH_SINK", "")
EXIT = os.environ.get("EXIT_FILE")
handled = 0
_sink: Any = None
_lock = threading.Lock()  # the handlers run in the worker's threads; one sink connection


def _write(values: list[int]) -> None:
    """One statement and one commit for ``values`` (a sink connection per process)."""
    global _sink
    with _lock:
        if SINK.startswith("postgresql"):
            import psycopg

            if _sink is None:
                _sink = psycopg.connect(SINK, autocommit=True)
            _sink.execute("INSERT INTO bench_sink (n) SELECT unnest(%s::int[])", (values,))
            return
        if _sink is None:
            _sink = sqlite3.connect(SINK, check_same_thread=False, isolation_level=None)
            _sink.execute("PRAGMA journal_mode=WAL")
            _sink.execute("CREATE TABLE IF NOT EXISTS bench_sink (n INTEGER)")
        _sink.execute("BEGIN")
        _sink.executemany("INSERT INTO bench_sink (n) VALUES (?)", [(v,) for v in values])
        _sink.execute("COMMIT")


API_SECONDS = 0.005


def _work(values: list[int]) -> None:
    global handled
    handled += len(values)
    if WORK == "insert":
        _write(values)
    elif WORK == "api":
        time.sleep(API_SECONDS)  # the round trip of one remote call


def single(n: int) -> None:
    _work([n])


def batched(batch: list[Batched[dict[str, Any]]]) -> list[None]:
    _work([item.args["n"] for item in batch])
    return [None] * len(batch)


# Only the kind measured is declared (``CHOKAQ_BENCH_KIND``): a worker of an app that declares
# a batch type claims its batches on every turn of its loop, and one that declares a plain type
# claims plain jobs, so declaring both would make each kind pay for the other's claims.
if os.environ.get("CHOKAQ_BENCH_KIND", "single") == "single":
    handle: Any = app.job(name="single")(single)
else:
    handle = app.job(name="batched", batch_size=100, batch_wait_seconds=0.05)(batched)


def _at_exit() -> None:
    if EXIT:
        with open(EXIT, "w") as f:
            f.write(f"{handled}\n")


atexit.register(_at_exit)

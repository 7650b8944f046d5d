"""The sync client (``enqueue_sync``): fork-safe, one database with the async side on an
in-memory SQLite app, and closed cleanly (``close_sync()``, or at interpreter exit)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.conftest import Store

import chokaq
from chokaq import App
from chokaq.errors import ConfigurationError
from chokaq.models import JobFilter, Pillar

SRC = Path(chokaq.__file__).resolve().parents[1]  # the chokaq under test, for subprocesses
CHILD_DEADLINE_SECONDS = 60.0


def _app(store: Store) -> App:
    app = App(store.url, schema=store.schema, auto_migrate=True)

    @app.job()
    def note(n: int) -> None:
        return None

    return app


def _hot_count(store: Store) -> int:
    async def count() -> int:
        app = App(store.url, schema=store.schema, auto_migrate=True)
        async with app:
            page = await app.backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter())
            return page.total

    return asyncio.run(count())


def _run_in_fork(target: object, *args: object) -> int:
    """Run ``target(*args)`` in a forked child; its exit code (failing if it hangs)."""
    child = multiprocessing.get_context("fork").Process(target=target, args=args)
    child.start()
    child.join(CHILD_DEADLINE_SECONDS)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail(f"the forked child still ran after {CHILD_DEADLINE_SECONDS} s (hung)")
    return child.exitcode


def _child_enqueues(app: App, n: int) -> None:
    try:
        app.handlers["note"].enqueue_sync(n=n)
    except BaseException as exc:
        print(f"child failed: {exc!r}", file=sys.stderr, flush=True)
        os._exit(3)
    os._exit(0)


def test_enqueue_sync_in_a_forked_child_uses_its_own_client(store: Store) -> None:
    app = _app(store)
    note = app.handlers["note"]
    try:
        note.enqueue_sync(n=1)  # the parent's client: its loop thread and connections
        assert _run_in_fork(_child_enqueues, app, 2) == 0
        assert _run_in_fork(_child_enqueues, app, 3) == 0
        note.enqueue_sync(n=4)  # the parent's client was not touched by the children
    finally:
        asyncio.run(app.close())  # closes the sync client too
    assert _hot_count(store) == 4


def _child_on_memory(app: App) -> None:
    try:
        app.handlers["record"].enqueue_sync(n=2)
    except ConfigurationError as exc:
        os._exit(4 if "forked child" in str(exc) else 5)
    except BaseException as exc:
        print(f"child failed: {exc!r}", file=sys.stderr, flush=True)
        os._exit(6)
    os._exit(0)


def test_memory_app_enqueue_sync_shares_the_database_with_the_async_side() -> None:
    app = App("sqlite:///:memory:")
    seen: list[int] = []

    @app.job()
    def record(n: int) -> None:
        seen.append(n)

    ids = [str(record.enqueue_sync(n=i)) for i in range(3)]
    assert _run_in_fork(_child_on_memory, app) == 4  # refused, with the reason: not a hang

    async def main() -> None:
        for job_id in ids:
            assert await app.backend.job_get(job_id) is not None
        # Sync code called from the async side's process (a thread, as a sync view would).
        ids.append(str(await asyncio.to_thread(record.enqueue_sync, n=3)))
        await app.run_worker(burst=True)
        await app.close()

    asyncio.run(main())
    assert sorted(seen) == [0, 1, 2, 3]
    assert not app.opened


async def test_memory_app_opened_async_first_then_enqueue_sync() -> None:
    app = App("sqlite:///:memory:")

    @app.job()
    def record(n: int) -> None:
        return None

    async with app:
        job_id = await asyncio.to_thread(record.enqueue_sync, n=1)
        view = await app.backend.job_get(job_id)
        assert view is not None and view.type == "record"
    assert not app.opened


def test_close_sync_closes_the_client_and_a_new_one_starts_on_demand(store: Store) -> None:
    app = _app(store)
    note = app.handlers["note"]
    note.enqueue_sync(n=1)
    portal = app._portal
    assert portal is not None
    app.close_sync()
    assert app._portal is None and not portal._thread.is_alive()
    app.close_sync()  # a second close is a no-op
    note.enqueue_sync(n=2)
    app.close_sync()
    assert _hot_count(store) == 2


def test_a_sync_producer_exits_without_pending_task_noise(store: Store) -> None:
    script = textwrap.dedent(
        f"""
        from chokaq import App
        app = App({store.url!r}, schema={store.schema!r}, auto_migrate=True)

        @app.job()
        def note(n: int) -> None:
            return None

        print(note.enqueue_sync(n=1))
        """
    )
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert result.returncode == 0, result.stderr
    assert "Task was destroyed" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert _hot_count(store) == 1


def test_a_forked_child_that_exits_normally_leaves_the_parent_alone_and_quiet(
    store: Store,
) -> None:
    # A plain fork and a normal exit (atexit and interpreter finalization run in the child,
    # unlike multiprocessing's os._exit): the child must neither close the parent's
    # connections nor print the pending-task noise of the parent's loop.
    script = textwrap.dedent(
        f"""
        import os, sys
        from chokaq import App
        app = App({store.url!r}, schema={store.schema!r}, auto_migrate=True, pool_max_size=1)

        @app.job()
        def note(n: int) -> None:
            return None

        note.enqueue_sync(n=1)
        pid = os.fork()
        if pid == 0:
            note.enqueue_sync(n=2)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        note.enqueue_sync(n=3)
        print("done")
        """
    )
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert result.returncode == 0 and result.stdout.split() == ["done"], result.stderr
    assert "Task was destroyed" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert _hot_count(store) == 3

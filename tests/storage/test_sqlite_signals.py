"""SQLite's signal files across real processes: inotify where it can be had, the stat loop where
not (forced with ``CHOKAQ_SQLITE_WATCH=poll``, or without the library); either way an enqueue,
a cancel request and the end of a waited job committed in another process reach a listener."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from chokaq.storage.sqlite import notify
from chokaq.storage.sqlite.notify import ANY_QUEUE, WATCH_VARIABLE, FileNotifier

REPO = Path(__file__).resolve().parents[2]

# Another process sends one kind of signal on the file, as its driver would after a commit.
SENDER = """
import sys
from chokaq.storage.sqlite import notify
key, kind = sys.argv[1], sys.argv[2]
{"wake": lambda: notify.broadcast_jobs(key, ["q"]),
 "cancel": lambda: notify.broadcast_cancel(key, ["j1"]),
 "done": lambda: notify.broadcast_done(key, ["j1"])}[kind]()
"""


def _send(key: str, kind: str) -> None:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", SENDER, key, kind], env=env, check=True, timeout=60)


WATCHES = [
    pytest.param("inotify", id="inotify"),
    pytest.param("poll", id="poll-forced"),
    pytest.param("missing", id="poll-without-the-library"),
]


def _choose(watch: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Set up ``watch`` and return how the notifier should then hear other processes."""
    if watch == "inotify":
        if notify._inotify is None:
            pytest.skip("inotify_simple is not installed (not Linux)")
        monkeypatch.delenv(WATCH_VARIABLE, raising=False)
        return "inotify"
    if watch == "poll":
        monkeypatch.setenv(WATCH_VARIABLE, "poll")
    else:
        monkeypatch.setattr(notify, "_inotify", None)
    return "poll"


@pytest.mark.parametrize("watch", WATCHES)
async def test_signals_from_another_process_reach_the_listener(
    watch: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    expected = _choose(watch, monkeypatch)
    key = str((tmp_path / "jobs.db").resolve())
    heard: dict[str, asyncio.Queue[str]] = {k: asyncio.Queue() for k in ("wake", "cancel", "done")}

    def to(kind: str) -> Callable[[str], None]:
        return heard[kind].put_nowait

    notifier = FileNotifier(key)
    await notifier.start(to("wake"), to("cancel"), to("done"))
    try:
        assert notifier.watching == expected
        # The signal files do not exist yet: the first signal of each kind creates its file.
        for _ in range(2):
            for kind in ("wake", "cancel", "done"):
                await asyncio.to_thread(_send, key, kind)
                assert await asyncio.wait_for(heard[kind].get(), timeout=5) == ANY_QUEUE
        # Nothing else was heard: the database directory's other files do not wake anyone.
        (tmp_path / "jobs.db-wal").write_bytes(b"x")
        (tmp_path / "other").touch()
        await asyncio.to_thread(_send, key, "wake")
        assert await asyncio.wait_for(heard["wake"].get(), timeout=5) == ANY_QUEUE
        if expected == "inotify":  # one signal, one callback (the stat loop may see a file's
            # creation and its utime apart: a spurious second wake-up, harmless)
            assert all(q.empty() for q in heard.values()), {k: q.qsize() for k, q in heard.items()}
    finally:
        await notifier.stop()
    assert notifier.watching == ""


async def test_an_inotify_listener_that_loses_its_watch_polls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _choose("inotify", monkeypatch)
    folder = tmp_path / "db"
    folder.mkdir()
    key = str((folder / "jobs.db").resolve())
    woken: asyncio.Queue[str] = asyncio.Queue()
    notifier = FileNotifier(key)
    await notifier.start(woken.put_nowait, lambda _: None)
    try:
        assert notifier.watching == "inotify"
        folder.rmdir()  # the kernel drops the watch (IN_IGNORED)
        for _ in range(250):
            if notifier.watching == "poll":
                break
            await asyncio.sleep(0.02)
        assert notifier.watching == "poll"
        folder.mkdir()
        await asyncio.to_thread(_send, key, "wake")
        assert await asyncio.wait_for(woken.get(), timeout=5) == ANY_QUEUE
    finally:
        await notifier.stop()

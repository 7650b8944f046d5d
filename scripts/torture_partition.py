"""The torture run's partition scenario: one worker cut off from PostgreSQL while it runs jobs.

The worker runs in its own network namespace (``ip netns``), joined to this host by a veth pair
on a private /30, and reaches PostgreSQL through a TCP proxy bound to the host's veth address
(``python scripts/torture_partition.py proxy LISTEN TARGET``); killing the proxy cuts the link.
Needs root and iproute2; everything it creates is deleted on exit. Run through
``scripts/torture.py`` (``--partition-only``) or ``tests/reliability``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.torture_rig import (  # noqa: E402
    LEASE_LOST,
    NOT_APPLIED,
    Config,
    Report,
    WorkerProc,
    kill_all,
    prepare,
    reap,
    release,
    setup_store,
    spawn_worker,
    stop_worker,
)

from chokaq import FailureReason  # noqa: E402

# -- the proxy --------------------------------------------------------------------------


class Proxy:
    """A TCP forwarder in its own process (``python torture.py proxy``): killing it cuts the
    link (both sides see the connections drop); starting it again restores it."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.listen, self.target = listen, target
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "proxy",
                f"{self.listen[0]}:{self.listen[1]}",
                f"{self.target[0]}:{self.target[1]}",
            ],
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # "ready"

    def cut(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        self.proc = None


async def _proxy_main(listen: str, target: str) -> None:
    lhost, lport = listen.rsplit(":", 1)
    thost, tport = target.rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(thost, int(tport))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, lhost, int(lport), reuse_address=True)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


@contextlib.contextmanager
def network_namespace(tag: str) -> Iterator[tuple[str, str, str]]:
    """A namespace joined to this one by a veth pair on a private /30; yields (namespace, host
    address, namespace address). Everything is deleted on exit."""
    ns = f"chq{tag}"
    host_if, ns_if = f"chqh{tag}", f"chqn{tag}"
    octet = random.randint(1, 250)
    host_ip, ns_ip = f"10.231.{octet}.1", f"10.231.{octet}.2"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    try:
        ip("netns", "add", ns)
        ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        ip("link", "set", ns_if, "netns", ns)
        ip("addr", "add", f"{host_ip}/30", "dev", host_if)
        ip("link", "set", host_if, "up")
        ip("netns", "exec", ns, "ip", "addr", "add", f"{ns_ip}/30", "dev", ns_if)
        ip("netns", "exec", ns, "ip", "link", "set", ns_if, "up")
        ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        yield ns, host_ip, ns_ip
    finally:
        with contextlib.suppress(Exception):
            ip("link", "del", host_if)
        with contextlib.suppress(Exception):
            ip("netns", "del", ns)


def partition_available() -> str | None:
    """None when the partition scenario can run here, else why not."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    return None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


async def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def partition(config: Config) -> Report:
    """Cut one worker off the database while it runs two jobs: one still running when the link
    comes back (its heartbeat must find the lease lost: event 2008) and one that finishes during
    the cut (its finalize must be refused: event 2100). Meanwhile rescue dead-letters both as
    zombies, an operator resurrects them, and a second worker runs them to success."""
    from scripts import torture_app as t

    report = Report("partition-postgres")
    config.workdir.mkdir(parents=True, exist_ok=True)
    config.backend = "postgres"
    store = setup_store(config)
    client = await prepare(config, store)
    workers: list[WorkerProc] = []
    proxy: Proxy | None = None
    try:
        with network_namespace(uuid.uuid4().hex[:6]) as (ns, host_ip, _):
            port = _free_port(host_ip)
            proxy = Proxy((host_ip, port), ("127.0.0.1", 5432))
            proxy.start()
            far_url = config.url.replace("127.0.0.1:5432", f"{host_ip}:{port}")
            cut_off = spawn_worker(
                config, 0, prefix=["ip", "netns", "exec", ns], url=far_url, queues="part"
            )
            workers.append(cut_off)
            [long_id, short_id] = await client.enqueue_many(
                [t.hold.prepare(seconds=60.0), t.hold.prepare(seconds=2.0)]
            )
            ledger = store.table("torture_ledger")

            async def both_started() -> bool:
                rows = await asyncio.to_thread(store.rows, f"SELECT count(*) FROM {ledger}")
                return bool(rows[0][0] == 2)

            await _until(both_started, 30, "the cut-off worker to start both jobs")
            [(cut_worker_id,)] = store.rows(f"SELECT DISTINCT worker_id FROM {ledger}")
            proxy.cut()
            cut_at = time.monotonic()
            rescuer = spawn_worker(config, 1, queues="part")
            workers.append(rescuer)

            async def zombies() -> bool:
                views = [await client.backend.job_get(i) for i in (long_id, short_id)]
                zombie = FailureReason.ZOMBIE
                return all(v is not None and v.failure_reason is zombie for v in views)

            await _until(zombies, 30, "rescue to dead-letter both jobs as zombies")
            moved = await client.backend.dlq_resurrect(
                ids=[long_id, short_id], actor="torture-operator", payload='{"seconds": 0.1}'
            )
            report.check(sorted(moved) == sorted([long_id, short_id]), f"resurrected {moved}")

            async def archived() -> bool:
                views = [await client.backend.job_get(i) for i in (long_id, short_id)]
                return all(v is not None and v.pillar.value == "archive" for v in views)

            await _until(archived, 30, "the rescuer to run both jobs")
            report.figures["cut_seconds_before_restore"] = round(time.monotonic() - cut_at, 1)
            proxy.start()  # the link comes back

            def logged(event_id: int, job_id: str) -> bool:
                return any(
                    e.get("event_id") == event_id and e.get("job_id") == job_id
                    for e in cut_off.events()
                )

            async def refused() -> bool:
                return logged(LEASE_LOST, long_id) and logged(NOT_APPLIED, short_id)

            with contextlib.suppress(TimeoutError):
                await _until(refused, 45, "the cut-off worker to log 2008 and 2100")
            report.check(logged(LEASE_LOST, long_id), "no 2008 (lease lost) for the long job")
            report.check(logged(NOT_APPLIED, short_id), "no 2100 (not applied) for the short job")
            report.figures["cut_off_worker_events"] = dict(
                Counter(str(e.get("event_id")) for e in cut_off.events())
            )
            # The cut-off worker must not have finalized, heartbeated or rescheduled either job.
            for job_id in (long_id, short_id):
                view = await client.backend.job_get(job_id)
                report.check(
                    view is not None and view.pillar.value == "archive", f"{job_id} not archived"
                )
                if view is not None:
                    report.check(view.worker_id != cut_worker_id, f"{job_id} finalized cut-off")
                    report.check(view.attempt_count == 1, f"{job_id} attempts {view.attempt_count}")
            summary = await client.backend.stats_summary()
            report.check(summary.succeeded_total == 2, f"succeeded_total {summary.succeeded_total}")
            report.check(summary.failed_total == 2, f"failed_total {summary.failed_total}")
            report.check(summary.retried_total == 0, f"retried_total {summary.retried_total}")
            # And it keeps working once reconnected: it runs a new job.
            stop_worker(rescuer, signal.SIGTERM, "stopped")
            reap(rescuer)
            [again] = await client.enqueue_many([t.hold.prepare(seconds=0.0)])

            async def ran_again() -> bool:
                view = await client.backend.job_get(again)
                return view is not None and view.pillar.value == "archive"

            await _until(ran_again, 45, "the reconnected worker to run a new job")
            view = await client.backend.job_get(again)
            report.check(
                view is not None and view.worker_id == cut_worker_id,
                "the reconnected worker did not run the new job",
            )
            stop_worker(cut_off, signal.SIGTERM, "stopped")
            reap(cut_off)
            report.check(cut_off.exit_code == 0, f"cut-off worker exited {cut_off.exit_code}")
            report.figures.update(jobs=3, lost=0, partitions=1)
    finally:
        kill_all(workers)
        if proxy is not None:
            proxy.cut()
        await release(client, store, config)
    return report


if __name__ == "__main__":
    if sys.argv[1:2] != ["proxy"] or len(sys.argv) != 4:
        sys.exit("usage: torture_partition.py proxy LISTEN_HOST:PORT TARGET_HOST:PORT")
    asyncio.run(_proxy_main(sys.argv[2], sys.argv[3]))

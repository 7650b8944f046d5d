"""A PostgreSQL outage for one test only: a TCP forwarder on 127.0.0.1 that workers connect
through, which the test cuts and restores.

The shared server stays up for everyone else. Cut, every connection through the forwarder is
reset at once and new ones are refused (nothing listens on its port), which is what a client
sees of a server that stopped; restored, it listens on the same port again, as a restarted
server does. It runs on the test's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Proxy"]


class Proxy:
    """Forwards ``127.0.0.1:port`` to the server of ``url``; ``url_through`` is ``url`` with
    that address (the port is free when ``start`` first binds it, and kept after a cut)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._url = parts
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url_through(self) -> str:
        user = f"{self._url.username}@" if self._url.username else ""
        return urlunsplit(self._url._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    async def start(self) -> None:
        """Listen (again): on a free port the first time, on the same one after a cut."""
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Stop listening and reset every connection through the forwarder."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        if server is not None:
            await server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        if self._server is None:  # cut while this connection was being opened
            writer.transport.abort()
            up_writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._writers.difference_update((writer, up_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        # One side ended: end the other, as a TCP connection between the two would.
        with contextlib.suppress(Exception):
            writer.transport.abort()

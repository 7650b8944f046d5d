"""The operations endpoints over HTTP: ``/metrics``, ``/health/live`` and ``/health/ready``.

A worker serves them from a tiny asyncio HTTP server on ``WorkerSettings.metrics_port`` (no
framework, no signal handlers of its own, so it lives inside the worker's event loop without
disturbing its shutdown). The Deck mounts the same endpoints as Starlette routes
(``deck_routes``). This module owns the transport only; the figures come from
``chokaq.metrics`` and ``chokaq.health``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from . import health
from .logs import Event, log_event
from .metrics import CONTENT_TYPE, MetricsSettings, StoreMetrics, WorkerMetrics

if TYPE_CHECKING:
    from .app import App
    from .runtime.worker import Worker

__all__ = ["OpsServer", "deck_routes", "worker_ops"]

# (status code, content type, body)
Reply = tuple[int, str, bytes]
Handler = Callable[[], Awaitable[Reply]]

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


def _json(report: health.Report) -> Reply:
    body = json.dumps(report.as_json(), default=str).encode()
    return report.http_status, "application/json", body


class OpsServer:
    """A minimal HTTP/1.1 server answering GET requests from a table of handlers.

    ``port=0`` picks a free port (read it from ``port`` after ``start``).
    """

    def __init__(self, routes: dict[str, Handler], *, host: str, port: int) -> None:
        self.routes = routes
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=2)
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            method, _, rest = request.decode("latin-1").partition(" ")
            path = rest.partition(" ")[0].partition("?")[0]
            handler = self.routes.get(path)
            if method not in ("GET", "HEAD"):
                reply: Reply = 405, "text/plain", b"only GET\n"
            elif handler is None:
                reply = 404, "text/plain", b"not found\n"
            else:
                try:
                    reply = await handler()
                except Exception as exc:
                    reply = 503, "text/plain", f"{type(exc).__name__}: {exc}\n".encode()
            status, ctype, body = reply
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def worker_routes(
    worker: Worker[App],
    metrics: WorkerMetrics,
    beat: health.WorkerBeat,
    settings: health.HealthSettings | None = None,
) -> dict[str, Handler]:
    """The handler table for one worker."""

    async def metrics_page() -> Reply:
        return 200, CONTENT_TYPE, metrics.render()

    async def live() -> Reply:
        return _json(await health.liveness(worker, beat, settings))

    async def ready() -> Reply:
        return _json(await health.readiness(worker.app, worker, beat, settings))

    return {"/metrics": metrics_page, "/health/live": live, "/health/ready": ready}


@contextlib.asynccontextmanager
async def worker_ops(
    worker: Worker[App],
    *,
    health_settings: health.HealthSettings | None = None,
    metrics_settings: MetricsSettings | None = None,
) -> AsyncIterator[OpsServer | None]:
    """When ``worker.settings.metrics_port`` is set, instrument ``worker`` and serve its
    endpoints for the duration of the block (yields the server, or None). Without a port
    nothing could read the counters, so the worker is left uninstrumented: its listeners run
    for every job (0.68 s of a 5.0 s wall-clock profile of a 20,000-job no-op burn-down)."""
    port = worker.settings.metrics_port
    if port is None:
        yield None
        return
    metrics = WorkerMetrics(metrics_settings)
    metrics.attach(worker)
    beat = health.WorkerBeat(worker.app.backend)
    server = OpsServer(
        worker_routes(worker, metrics, beat, health_settings),
        host=worker.settings.metrics_host,
        port=port,
    )
    await server.start()
    log_event(
        Event.OPS_SERVER_STARTED,
        "serving metrics and health",
        url=f"http://{worker.settings.metrics_host}:{server.port}/metrics",
    )
    try:
        yield server
    finally:
        await server.stop()


def deck_routes(
    app: App,
    *,
    health_settings: health.HealthSettings | None = None,
    metrics_settings: MetricsSettings | None = None,
    guard: Callable[[Any], Awaitable[bool]] | None = None,
) -> list[Any]:
    """Starlette routes for The Deck: ``/metrics`` (database-derived gauges and the Deck's own
    storage latency), ``/health/live`` and ``/health/ready`` (storage, schema, queue lag).

    ``guard(request)``, when given, must return True for ``/metrics`` and ``/health/ready`` to
    answer (else 401): they name queues and schedules. ``/health/live`` answers everyone; it
    says only that the process answers."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    store = StoreMetrics(app, metrics_settings)
    refused = {"error": "authentication required"}

    async def metrics_page(request: Request) -> Response:
        if guard is not None and not await guard(request):
            return JSONResponse(refused, status_code=401)
        return Response(await store.render(), media_type=CONTENT_TYPE)

    async def live(request: Request) -> Response:
        report = await health.liveness(settings=health_settings)
        return JSONResponse(report.as_json(), status_code=report.http_status)

    async def ready(request: Request) -> Response:
        if guard is not None and not await guard(request):
            return JSONResponse(refused, status_code=401)
        report = await health.readiness(app, settings=health_settings)
        return JSONResponse(report.as_json(), status_code=report.http_status)

    return [
        Route("/metrics", metrics_page, methods=["GET"]),
        Route("/health/live", live, methods=["GET"]),
        Route("/health/ready", ready, methods=["GET"]),
    ]

"""Building and running a grpc.aio server the same way in every service.

Two steps, as in the grpc Python examples, so tests can run a server without signal handling::

    server, port, health = create_server("127.0.0.1:0", service_names=[ENGINE_SERVICE_NAME],
                                         interceptors=[CanonicalLogInterceptor("engine", hist)])
    server.add_generic_rpc_handlers((engine_handler(EngineServicer()),))
    await serve(server, health, grace=5.0, service_names=[ENGINE_SERVICE_NAME])

:func:`create_server` returns the server *not started*, so the caller adds its servicers first.
It already carries the standard health service (``grpcio-health-checking``) and, with
``reflection=True`` only, server reflection (``grpcio-reflection``) for the given fully-qualified
service names plus health and reflection: reflection describes every method to whoever asks, so
it is off unless a service is started with ``--reflection``.
Service names should come from the generated descriptors, e.g.
``engine_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name``.

:func:`serve` starts the server, reports SERVING for ``""`` and every name, then waits for SIGTERM
or SIGINT. On the signal it reports NOT_SERVING everywhere, stops accepting calls, runs
``on_draining`` (a service ends its long-lived calls there instead of at the end of the grace
period), lets in-flight calls finish within ``grace`` seconds, runs ``on_shutdown`` and returns --
the process exits 0.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer  # exported publicly as grpc_health.v1.health.aio
from grpc_health.v1.health import SERVICE_NAME as HEALTH_SERVICE_NAME
from grpc_health.v1.health_pb2_grpc import add_HealthServicer_to_server
from grpc_reflection.v1alpha import reflection as grpc_reflection

from ninetynine.common.logging import get_logger

__all__ = [
    "DEFAULT_OPTIONS",
    "HEALTH_SERVICE_NAME",
    "MAX_MESSAGE_BYTES",
    "HealthServicer",
    "create_server",
    "merge_options",
    "serve",
]

MAX_MESSAGE_BYTES = 4 * 1024 * 1024

ChannelOption = tuple[str, Any]

DEFAULT_OPTIONS: tuple[ChannelOption, ...] = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Ping idle connections so dead peers (and NAT/LB idle timeouts) are noticed.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Accept client keepalive pings down to every 10 s (clients use 30 s) without GOAWAY.
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    # A second instance on the same port must fail loudly instead of silently sharing it.
    ("grpc.so_reuseport", 0),
)

log = get_logger(__name__)


def merge_options(
    defaults: Sequence[ChannelOption], overrides: Sequence[ChannelOption]
) -> list[ChannelOption]:
    """Channel/server options with ``overrides`` replacing defaults of the same key."""
    merged = dict(defaults)
    merged.update(dict(overrides))
    return list(merged.items())


def create_server(
    address: str,
    *,
    service_names: Sequence[str],
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),  # type: ignore[type-arg]
    options: Sequence[ChannelOption] = (),
    reflection: bool = False,
) -> tuple[grpc.aio.Server, int, HealthServicer]:
    """A grpc.aio server bound to ``address`` (not started) with health (and, when ``reflection``,
    server reflection) installed.

    Returns ``(server, port, health)``; ``port`` is the real port (``"127.0.0.1:0"`` picks a free
    one). Raises ``RuntimeError`` when the address cannot be bound. Call inside the event loop
    that will run the server.
    """
    if any(not name or name.startswith("/") for name in service_names):
        raise ValueError(f"service names must be fully-qualified proto names, got {list(service_names)}")
    server = grpc.aio.server(interceptors=list(interceptors), options=merge_options(DEFAULT_OPTIONS, options))
    health = HealthServicer()
    add_HealthServicer_to_server(health, server)
    if reflection:
        grpc_reflection.enable_server_reflection(
            [*service_names, HEALTH_SERVICE_NAME, grpc_reflection.SERVICE_NAME], server
        )
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise RuntimeError(f"cannot listen on {address}: {exc}") from exc
    if port == 0:  # older grpc versions report a failed bind this way
        raise RuntimeError(f"cannot listen on {address}")
    log.info("grpc server bound", address=address, port=port, reflection=reflection)
    return server, port, health


async def _set_all(health: HealthServicer, names: Sequence[str], status: int) -> None:
    for name in ("", *names):
        await health.set(name, status)


async def serve(
    server: grpc.aio.Server,
    health: HealthServicer,
    *,
    grace: float,
    service_names: Sequence[str],
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    stop: asyncio.Event | None = None,
    on_draining: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run ``server`` until SIGTERM/SIGINT (or ``stop`` is set), then shut down gracefully.

    Order on shutdown: health NOT_SERVING for every service, ``server.stop(grace)`` begins (new
    calls are refused and clients are told to go elsewhere), ``on_draining`` (end long-lived
    streams early: their callers then move to another replica at once), in-flight calls get
    ``grace`` seconds, then ``on_shutdown`` (close channels, flush stores). Returns normally so the
    process can exit 0. ``stop`` lets tests and embedding code trigger the same path without a
    signal.
    """
    loop = asyncio.get_running_loop()
    stop_requested = stop or asyncio.Event()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop_requested.set)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread / no signal support
            pass

    try:
        await server.start()
        await _set_all(health, service_names, health_pb2.HealthCheckResponse.SERVING)
        log.info("server started", services=list(service_names))
        await stop_requested.wait()
        log.info("shutting down", grace_s=grace)
        # enter_graceful_shutdown marks every known service NOT_SERVING and ignores later sets.
        await health.enter_graceful_shutdown()
        stopping = asyncio.create_task(server.stop(grace))
        # stop()'s first step refuses new calls and sends GOAWAY; only then may streams be ended,
        # or their callers' next call could land on this server again.
        await asyncio.sleep(0)
        if on_draining is not None:
            try:
                await on_draining()
            except Exception:  # a failed drain must not keep the server from stopping
                log.exception("draining failed")
        await stopping
        if on_shutdown is not None:
            await on_shutdown()
        log.info("server stopped")
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)

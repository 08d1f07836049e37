"""The gateway: WebSocket (``/ws``, JSON) and gRPC (``GatewayService.Connect``) clients in, session calls out.

Both transports wrap the same :class:`~ninetynine.gateway.connection.Connection`; the WebSocket
one turns messages into the JSON of docs/client-protocol.md through
:mod:`ninetynine.gateway.convert`. The HTTP side also serves the web table (``/`` and the static
files) and ``/healthz``. The gRPC port carries health (and reflection with ``--reflection``).
Every session call presents the service credential (``--service-token-file`` or
``NINETYNINE_SERVICE_TOKEN``) when one is configured. Every client connection, WebSocket or
``Connect``, is counted against its address's budgets (:mod:`ninetynine.gateway.admission`); the HTTP
edge itself (security headers, Origin check, socket cap, header timeout) is
:mod:`ninetynine.gateway.edge`.

Shutdown (SIGTERM/SIGINT): health NOT_SERVING, ``goodbye{serverShutdown, retryAfterMs}`` to
every client, close them, stop the listeners (in-flight calls get ``grace`` seconds), close the
session channel, exit 0.

Run it with ``ninety-nine gateway --port 8080 --grpc-port 50053 --session localhost:50052``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import grpc
import grpc.aio
from aiohttp import WSMsgType, web
from grpc_health.v1 import health_pb2
from prometheus_client import REGISTRY, CollectorRegistry

from ninetynine.common.config import add_env_argument
from ninetynine.common.credential import (
    CredentialError,
    add_credential_flag,
    bearer_metadata,
    load_service_token,
)
from ninetynine.common.grpcclient import create_channel, failover_options
from ninetynine.common.grpcserver import HealthServicer, create_server
from ninetynine.common.interceptors import CanonicalLogInterceptor
from ninetynine.common.lenient import Undecodable, lenient
from ninetynine.common.logging import get_logger
from ninetynine.common.metrics import start_metrics_server
from ninetynine.common.runner import add_service_flags, run_service
from ninetynine.gateway.admission import (
    Admission,
    Budgets,
    Network,
    client_address,
    parse_networks,
    peer_of_grpc,
)
from ninetynine.gateway.connection import CLOSE_SHUTDOWN, Connection
from ninetynine.gateway.convert import JsonId, server_bytes
from ninetynine.gateway.edge import (
    SOCKET_SLACK,
    SocketGuard,
    add_security_headers,
    origin_allowed,
    parse_origins,
)
from ninetynine.gateway.encoding import SharedServerText
from ninetynine.gateway.handlers import HANDLER_OF_FIELD
from ninetynine.gateway.limits import Limits
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.protocol import ProtocolError, parse_text, short_detail
from ninetynine.gateway.relay import PlayRelay, SessionRelay, frames_calls
from ninetynine.gateway.static_files import StaticFiles
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.gateway.v1 import gateway_service_pb2_grpc as gw_grpc
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc

__all__ = ["GATEWAY_SERVICE_NAME", "Gateway", "RunningGateway", "add_parser", "start_gateway"]

GATEWAY_SERVICE_NAME: str = gw.DESCRIPTOR.services_by_name["GatewayService"].full_name
STATIC_DIR = Path(__file__).resolve().parent / "static"
# aiohttp refuses frames above this by itself (close 1009, no goodbye); below it the gateway
# answers oversized frames with its own errors.
WS_READ_LIMIT = 1024 * 1024
SESSION_SERVICE = spb.DESCRIPTOR.services_by_name["SessionService"]
# Session methods that may run twice with the effect of once: reads, and Play (by client_seq).
SESSION_IDEMPOTENT = (
    "GetRoom",
    "ListRooms",
    "ListRules",
    "GetView",
    "GetResult",
    "GetReplay",
    "Play",
    "Subscribe",
)
# Shared SubscribeMany calls to the session (a few, so several replicas behind round-robin share them).
DEFAULT_SESSION_STREAMS = 2
# Shared PlayMany calls carrying the clients' plays (a message on a stream instead of a unary call).
DEFAULT_SESSION_PLAY_STREAMS = 2
# A connection that has not sent a whole request this long after it was accepted (or after its
# last response) is closed: headers that never end hold no socket for long.
DEFAULT_HEADER_TIMEOUT_S = 10.0

log = get_logger(__name__)


def _text_frame(payload: bytes) -> bytes:
    """An unmasked, uncompressed, final WebSocket text frame (RFC 6455 section 5.2) of ``payload``."""
    size = len(payload)
    if size < 126:
        return _FRAME_LEN1(0x81, size) + payload
    if size < 65536:
        return _FRAME_LEN2(0x81, 126, size) + payload
    return _FRAME_LEN3(0x81, 127, size) + payload


_FRAME_LEN1 = struct.Struct("!BB").pack
_FRAME_LEN2 = struct.Struct("!BBH").pack
_FRAME_LEN3 = struct.Struct("!BBQ").pack


class Socket(Protocol):
    """What a batched write needs of the connection's transport (asyncio's or uvloop's)."""

    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...

    def get_write_buffer_size(self) -> int: ...


_SOCKET_METHODS = ("write", "is_closing", "get_write_buffer_size")
# Above this much unsent output a batch waits for the socket to drain (a slow reader's own
# queue then fills and the connection says goodbye with slowClient).
WRITE_HIGH_WATER = 256 * 1024
DRAIN_WAIT_S = 5.0


class WebSocketTransport:
    protocol = "ws"
    json_text = True

    def __init__(
        self,
        ws: web.WebSocketResponse,
        texts: SharedServerText | None = None,
        socket: Socket | None = None,
    ) -> None:
        self.ws = ws
        self.texts = texts
        # The connection's socket, for writing several frames at once (None: one send per frame).
        self.socket = socket

    def _payload(self, out: Outgoing) -> bytes:
        if out.text is not None:
            return out.text
        if self.texts is None:
            return server_bytes(out.msg, out.reply_id)
        return self.texts.frame(out.msg, out.reply_id)

    async def send(self, out: Outgoing) -> None:
        # The encoder gives the UTF-8 payload itself; send_frame sends it as the text frame that
        # send_str would make of the decoded str, without the decode and the re-encode.
        await self.ws.send_frame(self._payload(out), WSMsgType.TEXT)

    async def send_many(self, outs: list[Outgoing]) -> None:
        socket = self.socket
        if socket is None or self.ws.compress:  # permessage-deflate frames are aiohttp's to build
            for out in outs:
                await self.send(out)
            return
        if self.ws.closed or socket.is_closing():
            raise ConnectionResetError("the WebSocket is closed")
        self._write(socket, outs)
        if socket.get_write_buffer_size() > WRITE_HIGH_WATER:
            await self._drained(socket)

    def write_now(self, outs: list[Outgoing]) -> bool:
        """Write ``outs`` at once when the socket takes them without waiting; False leaves them to
        :meth:`send_many` (no batched writes here, a closed socket, or a client behind on reading)."""
        socket = self.socket
        if (
            socket is None
            or self.ws.compress
            or self.ws.closed
            or socket.is_closing()
            or socket.get_write_buffer_size() > WRITE_HIGH_WATER
        ):
            return False
        self._write(socket, outs)
        return True

    def _write(self, socket: Socket, outs: list[Outgoing]) -> None:
        # One write of every frame: one syscall and one wake-up of the reader instead of one each.
        socket.write(b"".join([_text_frame(self._payload(out)) for out in outs]))

    @staticmethod
    async def _drained(socket: Socket) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + DRAIN_WAIT_S
        while socket.get_write_buffer_size() > WRITE_HIGH_WATER:
            if socket.is_closing() or loop.time() > give_up:
                raise ConnectionResetError("the client does not read its socket")
            await asyncio.sleep(0.01)

    async def close(self, code: int) -> None:
        await self.ws.close(code=code)


class GrpcTransport:
    protocol = "grpc"
    json_text = False

    def __init__(self, context: grpc.aio.ServicerContext[gw.ConnectRequest, gw.ConnectResponse]) -> None:
        self.context = context
        self.done = asyncio.Event()

    async def send(self, out: Outgoing) -> None:
        if out.text is not None:  # the follower asks for JSON views only where json_text
            raise RuntimeError("a gRPC client cannot be sent a message encoded as JSON")
        msg = out.msg
        if out.reply_id is not None:
            msg.id = str(out.reply_id)
        await self.context.write(gw.ConnectResponse(message=msg))

    async def send_many(self, outs: list[Outgoing]) -> None:
        for out in outs:
            await self.send(out)

    def write_now(self, outs: list[Outgoing]) -> bool:
        return False  # a gRPC stream's writes are awaited: the writer task sends them

    async def close(self, code: int) -> None:
        self.done.set()


def _socket_of(request: web.Request) -> Socket | None:
    # uvloop's transports do not subclass asyncio.Transport: go by what is needed.
    transport = request.transport
    if transport is None or not all(hasattr(transport, name) for name in _SOCKET_METHODS):
        return None
    return cast(Socket, transport)


def _parse_grpc(request: gw.ConnectRequest) -> tuple[gw.ClientMessage, JsonId | None]:
    msg = request.message
    reply_id: JsonId | None = msg.id if 1 <= len(msg.id) <= 64 else None
    handler = HANDLER_OF_FIELD.get(msg.WhichOneof("kind") or "")
    if handler is None:
        raise ProtocolError("MALFORMED_MESSAGE", {"detail": "the message names no kind"}, reply_id)
    detail = handler.check(msg) if handler.check is not None else None
    if detail is not None:
        raise ProtocolError("MALFORMED_MESSAGE", {"detail": detail}, reply_id)
    return msg, reply_id


@dataclass
class Gateway:
    """The shared state of one gateway process: the session stub, the limits, live connections."""

    session: spb_grpc.SessionServiceAsyncStub
    # The clients' room streams, over a few shared SubscribeMany calls.
    relay: SessionRelay
    # The clients' plays, over a few shared PlayMany calls.
    plays: PlayRelay
    limits: Limits = field(default_factory=Limits)
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics.create)
    connections: set[Connection] = field(default_factory=set)
    draining: bool = False
    # JSON of pushed messages shared by the WebSocket connections that receive the same one.
    texts: SharedServerText = field(default_factory=SharedServerText)
    # Per-address budgets: connections, room creation, failed tokens.
    admission: Admission = field(default_factory=Admission)
    # Page origins besides the gateway's own that may open the WebSocket (browsers send Origin).
    allowed_origins: tuple[str, ...] = ()
    # Peers whose X-Forwarded-For names the client (the ingress); empty: the peer is the client.
    trusted_proxies: tuple[Network, ...] = ()
    # The web table's files, gzipped and revalidated by ETag.
    static_files: StaticFiles = field(default_factory=lambda: StaticFiles(STATIC_DIR))

    def _open(self, connection: Connection) -> Connection:
        connection.start()
        self.connections.add(connection)
        return connection

    async def shutdown_clients(self) -> None:
        """Tell every client to reconnect elsewhere, then close them (in parallel)."""
        self.draining = True
        retry = self.limits.shutdown_retry_after_ms
        await asyncio.gather(
            *(
                c.close_with("serverShutdown", CLOSE_SHUTDOWN, retry_after_ms=retry)
                for c in list(self.connections)
            ),
            return_exceptions=True,
        )

    # -- HTTP / WebSocket ----------------------------------------------------------------------

    def _connection(self, transport: WebSocketTransport | GrpcTransport, address: str) -> Connection:
        return Connection(
            transport,
            self.session,
            self.limits,
            self.metrics,
            relay=self.relay,
            plays=self.plays,
            admission=self.admission,
            address=address,
        )

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        if self.draining:
            raise web.HTTPServiceUnavailable(text="draining")
        if not origin_allowed(request, self.allowed_origins):
            self.metrics.refusals.labels("ORIGIN_NOT_ALLOWED").inc()
            log.info("websocket origin refused", origin=request.headers.get("Origin", "")[:200])
            raise web.HTTPForbidden(text="ORIGIN_NOT_ALLOWED: pages of this origin may not open /ws")
        forwarded = request.headers.getall("X-Forwarded-For", [])
        address = client_address(request.remote or "", forwarded, self.trusted_proxies)
        refusal = self.admission.connect(address)
        if refusal is not None:
            ws = web.WebSocketResponse(max_msg_size=WS_READ_LIMIT)
            await ws.prepare(request)
            await self._connection(WebSocketTransport(ws, self.texts), address).refuse(refusal)
            return ws
        try:
            return await self._serve_websocket(request, address)
        finally:
            self.admission.disconnect(address)

    async def _serve_websocket(self, request: web.Request, address: str) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=WS_READ_LIMIT, autoping=True)
        await ws.prepare(request)
        connection = self._open(
            self._connection(WebSocketTransport(ws, self.texts, _socket_of(request)), address)
        )
        try:
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    text: str = frame.data
                    await connection.on_frame(len(text.encode("utf-8")), functools.partial(parse_text, text))
                elif frame.type == WSMsgType.BINARY:
                    await connection.on_frame(len(frame.data), _refuse_binary)
                elif frame.type == WSMsgType.ERROR:
                    break
                if connection.closed.is_set():
                    break
        finally:
            self.connections.discard(connection)
            await connection.finish()
            if not ws.closed:
                await ws.close()
        return ws

    async def healthz(self, _request: web.Request) -> web.Response:
        if self.draining:
            return web.json_response({"status": "draining"}, status=503)
        return web.json_response({"status": "ok", "connections": len(self.connections)})

    async def index(self, request: web.Request) -> web.StreamResponse:
        if not (STATIC_DIR / "index.html").is_file():
            raise web.HTTPNotFound(
                text="the web table is not installed (ninetynine/gateway/static/index.html)"
            )
        return await self.static_files.serve(request)

    def web_app(self) -> web.Application:
        app = web.Application()
        app.on_response_prepare.append(add_security_headers)
        app.router.add_get("/", self.index)
        app.router.add_get("/ws", self.websocket)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/{path:.+}", self.static_files.serve)
        return app

    # -- gRPC ----------------------------------------------------------------------------------

    async def connect(
        self,
        requests: AsyncIterator[gw.ConnectRequest | Undecodable],
        context: grpc.aio.ServicerContext[gw.ConnectRequest, gw.ConnectResponse],
    ) -> None:
        if self.draining:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "draining")
        forwarded = [str(v) for k, v in context.invocation_metadata() or () if k == "x-forwarded-for"]
        address = client_address(peer_of_grpc(context.peer()), forwarded, self.trusted_proxies)
        refusal = self.admission.connect(address)
        if refusal is not None:
            await self._connection(GrpcTransport(context), address).refuse(refusal)
            return
        try:
            await self._serve_connect(requests, context, address)
        finally:
            self.admission.disconnect(address)

    async def _serve_connect(
        self,
        requests: AsyncIterator[gw.ConnectRequest | Undecodable],
        context: grpc.aio.ServicerContext[gw.ConnectRequest, gw.ConnectResponse],
        address: str,
    ) -> None:
        connection = self._open(self._connection(GrpcTransport(context), address))

        async def read() -> None:
            async for request in requests:
                if isinstance(request, Undecodable):
                    await connection.on_frame(request.size, functools.partial(_refuse_undecodable, request))
                else:
                    await connection.on_frame(request.ByteSize(), functools.partial(_parse_grpc, request))
                if connection.closed.is_set():
                    return

        reader = asyncio.create_task(read())
        closed = asyncio.create_task(connection.closed.wait())
        try:
            await asyncio.wait({reader, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, closed):
                task.cancel()
            self.connections.discard(connection)
            await connection.finish()


def _refuse_binary() -> tuple[gw.ClientMessage, JsonId | None]:
    raise ProtocolError("MALFORMED_MESSAGE", {"detail": "binary frames are not accepted; send JSON text"})


def _refuse_undecodable(request: Undecodable) -> tuple[gw.ClientMessage, JsonId | None]:
    # The gRPC twin of a WebSocket frame that is not JSON: refused, and the stream goes on.
    raise ProtocolError(
        "MALFORMED_MESSAGE", {"detail": short_detail(f"not a ConnectRequest: {request.error}")}
    )


class _GatewayServicer(gw_grpc.GatewayServiceServicer):
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def Connect(  # type: ignore[override]
        self,
        request_iterator: AsyncIterator[gw.ConnectRequest | Undecodable],
        context: grpc.aio.ServicerContext[gw.ConnectRequest, gw.ConnectResponse],
    ) -> None:
        await self.gateway.connect(request_iterator, context)


def _gateway_handler(servicer: _GatewayServicer) -> grpc.GenericRpcHandler[Any, Any]:
    """GatewayService with a request parser that never fails: grpc would end the call INTERNAL on
    bytes that do not parse (the generated ``add_*_to_server`` uses plain ``FromString``); here
    they reach the connection, which refuses them like any malformed frame."""
    connect = grpc.stream_stream_rpc_method_handler(
        servicer.Connect,
        request_deserializer=lenient(gw.ConnectRequest),
        response_serializer=gw.ConnectResponse.SerializeToString,
    )
    return grpc.method_handlers_generic_handler(GATEWAY_SERVICE_NAME, {"Connect": connect})


@dataclass
class RunningGateway:
    """A started gateway (HTTP + gRPC); :meth:`stop` runs the graceful shutdown."""

    gateway: Gateway
    http_port: int
    grpc_port: int
    runner: web.AppRunner
    grpc_server: grpc.aio.Server
    health: HealthServicer
    channel: grpc.aio.Channel

    async def stop(self, grace: float = 5.0) -> None:
        await self.health.enter_graceful_shutdown()
        await self.gateway.shutdown_clients()
        await self.runner.cleanup()
        await self.grpc_server.stop(grace)
        await self.gateway.relay.close()
        await self.gateway.plays.close()
        await self.channel.close(None)


async def start_gateway(
    *,
    session_target: str,
    host: str = "127.0.0.1",
    http_port: int = 0,
    grpc_port: int = 0,
    limits: Limits | None = None,
    registry: CollectorRegistry | None = REGISTRY,
    session_streams: int = DEFAULT_SESSION_STREAMS,
    session_play_streams: int = DEFAULT_SESSION_PLAY_STREAMS,
    session_frames: str = "",
    service_token: str | None = None,
    reflection: bool = False,
    budgets: Budgets | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
    allowed_origins: tuple[str, ...] = (),
    trusted_proxies: tuple[Network, ...] = (),
) -> RunningGateway:
    """Start the HTTP/WebSocket and gRPC listeners (port 0 picks free ones).

    ``session_streams`` shared SubscribeMany calls carry the clients' room streams and
    ``session_play_streams`` shared PlayMany calls their plays (at least 1 each: ValueError
    otherwise); with ``session_frames``, the frames socket of a session on this machine, they run
    there instead of over gRPC (:mod:`ninetynine.session.frames`). ``service_token`` is presented
    on every session gRPC call, the shared streams included. ``budgets`` are the per-address limits
    (:mod:`ninetynine.gateway.admission`; production defaults when None, loopback included).
    """
    if session_streams < 1 or session_play_streams < 1:
        raise ValueError("the gateway needs at least one shared call of each kind to the session")
    # Several session replicas (an ``ipv4:a,b`` list or a DNS name with several addresses) share the
    # load: any replica can serve any room on the Redis store, so a call cut off by one's death is
    # retried on another (the idempotent ones) and no call fails while one is up.
    channel = create_channel(
        session_target,
        options=failover_options(SESSION_SERVICE, SESSION_IDEMPOTENT),
        metadata=bearer_metadata(service_token) if service_token else (),
    )
    stub = spb_grpc.SessionServiceStub(channel)
    metrics = GatewayMetrics.create(registry)
    subscribe_many, play_many = (
        frames_calls(session_frames) if session_frames else (stub.SubscribeMany, stub.PlayMany)
    )
    gateway = Gateway(
        stub,
        SessionRelay(subscribe_many, session_streams),
        PlayRelay(play_many, session_play_streams, metrics.play_retries),
        limits or Limits(),
        metrics,
        admission=Admission(budgets),
        allowed_origins=allowed_origins,
        trusted_proxies=trusted_proxies,
    )
    # aiohttp's keep-alive timer also runs from accept to the first complete request: the header timeout.
    runner = web.AppRunner(gateway.web_app(), access_log=None, keepalive_timeout=header_timeout)
    await runner.setup()
    assert runner.server is not None
    socket_cap = gateway.admission.budgets.max_connections_per_address + SOCKET_SLACK
    refused = functools.partial(metrics.refusals.labels("SOCKET_LIMIT").inc, 1)
    SocketGuard(socket_cap, trusted_proxies, refused).install(runner.server)
    site = web.TCPSite(runner, host, http_port)
    await site.start()
    server_sockets = getattr(site._server, "sockets", None) or ()
    bound_http = int(server_sockets[0].getsockname()[1]) if server_sockets else http_port
    hard = (limits or Limits()).hard_max_message_bytes
    server, bound_grpc, health = create_server(
        f"{host}:{grpc_port}",
        service_names=[GATEWAY_SERVICE_NAME],
        interceptors=[CanonicalLogInterceptor("gateway")],
        # A frame far too large ends the stream (RESOURCE_EXHAUSTED), like close 1009 on a WebSocket.
        options=[("grpc.max_receive_message_length", hard)],
        reflection=reflection,
    )
    server.add_generic_rpc_handlers((_gateway_handler(_GatewayServicer(gateway)),))
    await server.start()
    for name in ("", GATEWAY_SERVICE_NAME):
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    return RunningGateway(gateway, bound_http, bound_grpc, runner, server, health, channel)


async def serve_gateway(args: argparse.Namespace) -> None:
    """Run until SIGTERM/SIGINT, then shut down gracefully."""
    token = load_service_token(args.service_token_file)
    metrics_port = start_metrics_server(args.metrics_port, args.metrics_host)
    limits = Limits(
        heartbeat_seconds=args.heartbeat_seconds,
        max_message_bytes=args.max_message_bytes,
        hello_timeout_seconds=args.hello_timeout_seconds,
    )
    budgets = Budgets(
        max_connections_per_address=args.max_connections_per_address,
        connection_rate_per_address=args.connections_per_second_per_address,
        rooms_per_minute_per_address=args.rooms_per_minute_per_address,
        auth_failures_per_minute_per_address=args.auth_failures_per_minute_per_address,
        auth_failures_per_minute_per_room=args.auth_failures_per_minute_per_room,
    )
    running = await start_gateway(
        session_target=args.session,
        host=args.host,
        http_port=args.port,
        grpc_port=args.grpc_port,
        limits=limits,
        session_streams=args.session_streams,
        session_play_streams=args.session_play_streams,
        session_frames=args.session_frames,
        service_token=token,
        reflection=args.reflection,
        budgets=budgets,
        header_timeout=args.header_timeout_seconds,
        allowed_origins=args.allowed_origins,
        trusted_proxies=args.trusted_proxies,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    shown_host = "localhost" if args.host in ("0.0.0.0", "::") else args.host
    log.info(
        "gateway listening",
        url=f"http://{shown_host}:{running.http_port}/",
        grpc_port=running.grpc_port,
        metrics_port=metrics_port,
        session=args.session,
        session_frames=args.session_frames or None,
    )
    print(f"ninety-nine web table: http://{shown_host}:{running.http_port}/", flush=True)
    try:
        await stop.wait()
        log.info("shutting down", clients=len(running.gateway.connections), grace_s=args.grace)
        await running.stop(args.grace)
        log.info("gateway stopped")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def run_command(args: argparse.Namespace) -> int:
    return run_service(
        "gateway", lambda: serve_gateway(args), log_level=args.log_level, usage_errors=(CredentialError,)
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "gateway",
        help="run the client gateway (WebSocket + gRPC) and the web table",
        description="Serve the web table, the WebSocket JSON protocol at /ws and "
        "ninetynine.gateway.v1.GatewayService, talking to the session service. "
        "Every flag can also come from the environment.",
    )
    # The client-facing service: every interface unless told otherwise.
    add_service_flags(
        parser, port=8080, metrics_port=9103, grace=5.0, port_help="HTTP/WebSocket port", host="0.0.0.0"
    )
    add_credential_flag(parser, who="presented on every session call")
    add_env_argument(parser, "--grpc-port", type=int, default=50053, help="gRPC port (0 picks one)")
    add_env_argument(parser, "--session", default="localhost:50052", help="session service address")
    add_env_argument(parser, "--heartbeat-seconds", type=int, default=20, help="client ping interval")
    add_env_argument(parser, "--max-message-bytes", type=int, default=4096, help="largest client message")
    add_env_argument(
        parser,
        "--session-streams",
        type=_flag_type(_shared_calls),
        default=DEFAULT_SESSION_STREAMS,
        help="shared SubscribeMany calls for the clients' room streams (at least 1)",
    )
    add_env_argument(
        parser,
        "--session-play-streams",
        type=_flag_type(_shared_calls),
        default=DEFAULT_SESSION_PLAY_STREAMS,
        help="shared PlayMany calls for the clients' plays (at least 1)",
    )
    add_env_argument(
        parser,
        "--session-frames",
        default="",
        help="the --frames-socket of the session on this machine: the shared calls run there instead "
        "of over gRPC, which costs each end less CPU per move (empty: gRPC to --session)",
    )
    _add_edge_flags(parser)
    parser.set_defaults(handler=run_command)
    return parser


def _flag_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` for argparse: its ValueError text becomes the flag's error message."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _shared_calls(text: str) -> int:
    """A count of shared session calls: a whole number, at least 1."""
    count = int(text)
    if count < 1:
        raise ValueError(f"must be at least 1 (shared calls to the session), got {count}")
    return count


def _add_edge_flags(parser: argparse.ArgumentParser) -> None:
    """Timeouts and per-client budgets of the HTTP/WebSocket/gRPC front end (docs/operations.md)."""
    b = Budgets()
    flag = functools.partial(add_env_argument, parser)
    flag(
        "--header-timeout-seconds",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT_S,
        help="close a connection that sent no complete HTTP request this long after accept",
    )
    flag(
        "--hello-timeout-seconds",
        type=float,
        default=Limits().hello_timeout_seconds,
        help="close a WebSocket/Connect stream that sent no first message this long after opening",
    )
    flag(
        "--max-connections-per-address",
        type=int,
        default=b.max_connections_per_address,
        help="concurrent WebSocket + gRPC Connect clients per client address (IPv6: per /64)",
    )
    flag(
        "--connections-per-second-per-address",
        type=float,
        default=b.connection_rate_per_address,
        help=f"new client connections per second per address (bursts of {b.connection_burst_per_address})",
    )
    flag(
        "--rooms-per-minute-per-address",
        type=int,
        default=b.rooms_per_minute_per_address,
        help="createRoom per minute per client address",
    )
    flag(
        "--auth-failures-per-minute-per-address",
        type=int,
        default=b.auth_failures_per_minute_per_address,
        help="refused seat tokens (resume) per minute per client address",
    )
    flag(
        "--auth-failures-per-minute-per-room",
        type=int,
        default=b.auth_failures_per_minute_per_room,
        help="refused seat tokens per minute against one room, from all addresses together",
    )
    flag(
        "--trusted-proxies",
        type=_flag_type(parse_networks),
        default="",
        help="comma-separated proxy addresses/CIDRs whose X-Forwarded-For names the client (empty: none)",
    )
    flag(
        "--allowed-origins",
        type=_flag_type(parse_origins),
        default="",
        help="comma-separated page origins, besides the gateway's own, that may open /ws (empty: none)",
    )

"""The session gRPC service: ``ninetynine.session.v1.SessionService`` over :class:`RoomService`.

Run it with ``ninety-nine session --port 50052 --engine localhost:50051
--store sqlite:///data/rooms.db --metrics-port 9102``. Several replicas may share one
``--store redis://...``; deadlines are then claimed by exactly one of them. ``--engine local``
runs the rules in this process (:class:`~ninetynine.engine.local.LocalEngine`) instead of calling
the engine service: no engine hop, but the session's CPU does the rules work.

Callers must present the service credential (``authorization: Bearer <secret>``, see
:mod:`ninetynine.common.credential`) on every call but health's; a session without one configured
listens on loopback only (it refuses to start on any other address), where it admits every caller
of this machine -- the development set-up.

On SIGTERM: health NOT_SERVING, new calls refused, the gateways' shared PlayMany and SubscribeMany
calls are drained (plays already running are answered, then the calls end and the gateways move
to another replica at once), in-flight moves finish within the grace period (each move is one
atomic commit, so nothing is ever half-written), the deadline scheduler stops, then the store
and the engine channel close.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, NoReturn

import grpc
import grpc.aio
from prometheus_client import REGISTRY, CollectorRegistry

from ninetynine.common.config import add_env_argument
from ninetynine.common.context import accept_language, bind_rpc_fields
from ninetynine.common.credential import CredentialError, add_credential_flag, is_loopback, load_service_token
from ninetynine.common.errors import ServiceError, abort, lang_from_metadata
from ninetynine.common.grpcserver import HealthServicer, create_server, serve
from ninetynine.common.interceptors import CanonicalLogInterceptor, ServiceCredentialInterceptor
from ninetynine.common.lenient import lenient_handler
from ninetynine.common.logging import get_logger
from ninetynine.common.metrics import rpc_histogram, start_metrics_server
from ninetynine.common.runner import add_service_flags, run_service
from ninetynine.engine.client import EngineClient
from ninetynine.engine.handlers import rules_metrics
from ninetynine.engine.local import LOCAL_TARGET, LocalEngine
from ninetynine.session import rulebook
from ninetynine.session.deadlines import DEFAULT_BOT_THINK_MS, DEFAULT_LEASE_MS
from ninetynine.session.draining import OpenStreams
from ninetynine.session.errors import DOMAIN, session_error
from ninetynine.session.expiry import DEFAULT_FINISHED_RETENTION_S, DEFAULT_LOBBY_IDLE_S, ExpiryPolicy
from ninetynine.session.frames import SessionFrames
from ninetynine.session.metrics import SessionMetrics
from ninetynine.session.multiplex import SubscribeMany
from ninetynine.session.playmany import PlayMany, Recorder, play
from ninetynine.session.service import RoomService
from ninetynine.session.store import InvalidStoreInput, open_store
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc

SESSION_SERVICE_NAME: str = pb.DESCRIPTOR.services_by_name["SessionService"].full_name
log = get_logger(__name__)

Context = grpc.aio.ServicerContext[Any, Any]


class SessionServicer(pb_grpc.SessionServiceServicer):
    """Thin transport layer: each RPC delegates to the part of :class:`RoomService` that holds it.

    ``record`` (the server's :meth:`CanonicalLogInterceptor.record`) logs and observes each play of
    a PlayMany stream like a unary Play. ``streams`` holds the open PlayMany and SubscribeMany
    calls, for the shutdown to drain.
    """

    def __init__(
        self, rooms: RoomService, record: Recorder | None = None, streams: OpenStreams | None = None
    ) -> None:
        self.rooms = rooms
        self.record = record
        self.streams = OpenStreams() if streams is None else streams

    async def _refuse(self, context: Context, err: ServiceError) -> NoReturn:
        self.rooms.metrics.refusals.labels(err.reason).inc()
        await abort(context, err)

    async def CreateRoom(self, request: pb.CreateRoomRequest, context: Context) -> pb.CreateRoomResponse:
        try:
            response = await self.rooms.lobby.create_room(request)
        except ServiceError as err:
            await self._refuse(context, err)
        bind_rpc_fields(room_id=response.room.room_id, player_id=response.player_id)
        return response

    async def JoinRoom(self, request: pb.JoinRoomRequest, context: Context) -> pb.JoinRoomResponse:
        bind_rpc_fields(room_id=request.room_id[:16])
        try:
            response = await self.rooms.lobby.join_room(request.room_id, request.name)
        except ServiceError as err:
            await self._refuse(context, err)
        bind_rpc_fields(player_id=response.player_id)
        return response

    async def Spectate(self, request: pb.SpectateRequest, context: Context) -> pb.SpectateResponse:
        bind_rpc_fields(room_id=request.room_id[:16])
        try:
            return await self.rooms.lobby.spectate(request.room_id)
        except ServiceError as err:
            await self._refuse(context, err)

    async def LeaveRoom(self, request: pb.LeaveRoomRequest, context: Context) -> pb.LeaveRoomResponse:
        try:
            return await self.rooms.lobby.leave_room(request.token)
        except ServiceError as err:
            await self._refuse(context, err)

    async def Rematch(self, request: pb.RematchRequest, context: Context) -> pb.RematchResponse:
        try:
            response = await self.rooms.lobby.rematch(request.token)
        except ServiceError as err:
            await self._refuse(context, err)
        bind_rpc_fields(room_id=response.joined.room.room_id)
        return response

    async def StartGame(self, request: pb.StartGameRequest, context: Context) -> pb.StartGameResponse:
        try:
            response = await self.rooms.lobby.start_game(request.token)
        except ServiceError as err:
            await self._refuse(context, err)
        bind_rpc_fields(room_id=response.room.room_id)
        return response

    async def AddBot(self, request: pb.AddBotRequest, context: Context) -> pb.AddBotResponse:
        try:
            return await self.rooms.lobby.add_bot(request.token, request.name)
        except ServiceError as err:
            await self._refuse(context, err)

    async def GetRoom(self, request: pb.GetRoomRequest, context: Context) -> pb.GetRoomResponse:
        try:
            return await self.rooms.lobby.get_room(request.room_id)
        except ServiceError as err:
            await self._refuse(context, err)

    async def ListRooms(self, request: pb.ListRoomsRequest, context: Context) -> pb.ListRoomsResponse:
        try:
            return await self.rooms.lobby.list_rooms(request.page_size, request.page_token, request.phase)
        except ServiceError as err:
            await self._refuse(context, err)

    async def Play(self, request: pb.PlayRequest, context: Context) -> pb.PlayResponse:
        try:
            return (await play(self.rooms, request)).response
        except ServiceError as err:
            await self._refuse(context, err)

    async def PlayMany(  # type: ignore[override]
        self, request_iterator: AsyncIterable[pb.PlayManyRequest], context: Context
    ) -> AsyncIterator[pb.PlayManyResponse]:
        # The call's accept-language, as the interceptor put it in this call's request scope.
        stream = PlayMany(self.rooms, accept_language(), self.record)
        try:
            with self.streams.track(stream):
                async for answer in stream.run(request_iterator):
                    yield answer
        except ServiceError as err:  # an undecodable request, already counted where it was parsed
            await abort(context, err)
        finally:
            bind_rpc_fields(plays=stream.received)

    async def GetView(self, request: pb.GetViewRequest, context: Context) -> pb.GetViewResponse:
        try:
            return await self.rooms.views.get_view(
                request.token, lang_from_metadata(context.invocation_metadata())
            )
        except ServiceError as err:
            await self._refuse(context, err)

    async def Subscribe(  # type: ignore[override]  # also yields pre-serialized bytes
        self, request: pb.SubscribeRequest, context: Context
    ) -> AsyncIterator[pb.SubscribeResponse | bytes]:
        bind_rpc_fields(
            room_id=request.token.partition(".")[0][:16], after_seq=request.after_seq, batched=request.batched
        )
        lang = lang_from_metadata(context.invocation_metadata())
        try:
            # Batched items come as serialized SubscribeResponse bytes; the serializer passes them on.
            async for item in self.rooms.subscriptions.subscribe(
                request.token,
                request.after_seq,
                lang,
                batched=request.batched,
                view_json=request.view_json,
            ):
                yield item
        except ServiceError as err:
            await self._refuse(context, err)

    async def SubscribeMany(  # type: ignore[override]  # yields pre-serialized bytes
        self, request_iterator: AsyncIterable[pb.SubscribeManyRequest], context: Context
    ) -> AsyncIterator[bytes]:
        # The call's accept-language, as the interceptor put it in this call's request scope.
        stream = SubscribeMany(self.rooms, accept_language())
        try:
            with self.streams.track(stream):
                async for message in stream.run(request_iterator):
                    yield message
        except ServiceError as err:  # an undecodable request, already counted where it was parsed
            await abort(context, err)
        finally:
            bind_rpc_fields(subscriptions=stream.opened)

    async def ListRules(self, request: pb.ListRulesRequest, context: Context) -> pb.ListRulesResponse:
        return rulebook.list_rules()

    async def GetResult(self, request: pb.GetResultRequest, context: Context) -> pb.GetResultResponse:
        try:
            return await self.rooms.results.get_result(request.room_id)
        except ServiceError as err:
            await self._refuse(context, err)

    async def GetReplay(self, request: pb.GetReplayRequest, context: Context) -> pb.GetReplayResponse:
        try:
            return await self.rooms.results.get_replay(request.room_id)
        except ServiceError as err:
            await self._refuse(context, err)


def create_session_server(
    address: str,
    *,
    engine_target: str,
    store_url: str,
    engine_frames: str = "",
    frames_socket: str = "",
    bot_think_ms: int = DEFAULT_BOT_THINK_MS,
    engine_timeout: float = 1.0,
    time_scale: float = 1.0,
    stream_heartbeat_s: float = 15.0,
    lease_ms: int = DEFAULT_LEASE_MS,
    lobby_idle_expiry_s: float = DEFAULT_LOBBY_IDLE_S,
    finished_retention_s: float = DEFAULT_FINISHED_RETENTION_S,
    registry: CollectorRegistry = REGISTRY,
    metrics: SessionMetrics | None = None,
    streams: OpenStreams | None = None,
    service_token: str | None = None,
    reflection: bool = False,
) -> tuple[grpc.aio.Server, int, HealthServicer, RoomService]:
    """A ready-to-start session server (port 0 picks one) and its :class:`RoomService`.

    ``engine_target`` is the engine's host:port, or ``"local"`` to run the rules in this process
    (their ``ninetynine_engine_*`` counters then go to ``registry``; ``engine_timeout`` does not
    apply); ``engine_frames``, the engine's frames socket on this machine, carries the moves
    (:mod:`ninetynine.engine.frames`). Call ``RoomService.start()`` next to ``server.start()`` so
    deadlines fire (and :func:`close_room_service` on the way out); call inside the event loop
    that will run it. ``streams`` collects the open PlayMany and SubscribeMany calls, for
    :func:`run_session` to drain on shutdown; ``frames_socket``, a Unix socket path, also takes
    them as frames from a gateway on this machine (:mod:`ninetynine.session.frames`; it needs
    ``streams``, whose listeners it joins, and :func:`run_session` opens it). ``service_token``:
    the secret every call but health's must present; without one ``address`` must be a loopback
    one (:class:`CredentialError` otherwise).
    """
    host = address.rsplit(":", 1)[0]
    if service_token is None and not is_loopback(host):
        raise CredentialError(
            f"the session listens on {host or 'every interface'} but has no service credential: "
            "set --service-token-file or NINETYNINE_SERVICE_TOKEN (the gateway's), or listen on "
            "127.0.0.1 (docs/operations.md#service-credential)"
        )
    store = open_store(store_url)
    engine: EngineClient
    if engine_target == LOCAL_TARGET:
        engine = LocalEngine(metrics=rules_metrics(registry))
    else:
        engine = EngineClient(engine_target, timeout=engine_timeout, frames=engine_frames)
    kind = "redis" if store_url.startswith(("redis", "unix")) else "sqlite"
    room_service = RoomService(
        store,
        engine,
        store_kind=kind,
        bot_think_ms=bot_think_ms,
        metrics=metrics or SessionMetrics(registry),
        time_scale=time_scale,
        stream_heartbeat_s=stream_heartbeat_s,
        lease_ms=lease_ms,
        expiry_policy=ExpiryPolicy.from_seconds(lobby_idle_expiry_s, finished_retention_s),
    )
    interceptor = CanonicalLogInterceptor(
        "session", rpc_histogram("session", registry=registry), retries=room_service.metrics.retried_calls
    )
    interceptors: list[grpc.aio.ServerInterceptor] = [interceptor]  # type: ignore[type-arg]
    if service_token is not None:

        def refusal(reason: str) -> ServiceError:
            room_service.metrics.refusals.labels(reason).inc()
            return session_error(reason)

        interceptors.append(ServiceCredentialInterceptor(service_token, refusal))
    server, port, health = create_server(
        address, service_names=[SESSION_SERVICE_NAME], interceptors=interceptors, reflection=reflection
    )
    if frames_socket:
        if streams is None:
            raise ValueError("a frames socket needs the streams that run_session drains")
        streams.listeners.append(
            SessionFrames(
                room_service,
                streams,
                interceptor.record,
                lambda reason: room_service.metrics.refusals.labels(reason).inc(),
                frames_socket,
            )
        )
    # Not the generated add_SessionServiceServicer_to_server: undecodable bytes must be
    # INVALID_ARGUMENT / MALFORMED_REQUEST, not grpc's INTERNAL.
    server.add_generic_rpc_handlers(
        (
            lenient_handler(
                pb.DESCRIPTOR.services_by_name["SessionService"],
                SessionServicer(room_service, interceptor.record, streams),
                DOMAIN,
                on_refusal=lambda reason: room_service.metrics.refusals.labels(reason).inc(),
            ),
        )
    )
    return server, port, health, room_service


async def close_room_service(room_service: RoomService) -> None:
    await room_service.stop()
    await room_service.store.close()
    await room_service.engine.close()


async def run_session(
    server: grpc.aio.Server,
    health: HealthServicer,
    room_service: RoomService,
    streams: OpenStreams,
    *,
    grace: float,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT (or ``stop``): then drain the shared calls, stop, close.

    ``room_service`` must be started already; ``streams`` is the one given to
    :func:`create_session_server`, whose listeners open here.
    """
    for listener in streams.listeners:  # before health says SERVING: the gateway comes at once
        await listener.start()

    async def on_shutdown() -> None:
        await asyncio.gather(*(listener.wait_closed(grace) for listener in streams.listeners))
        await close_room_service(room_service)

    await serve(
        server,
        health,
        grace=grace,
        service_names=[SESSION_SERVICE_NAME],
        on_draining=streams.drain,
        on_shutdown=on_shutdown,
        stop=stop,
    )


async def serve_session(args: argparse.Namespace) -> None:
    token = load_service_token(args.service_token_file)
    metrics_port = start_metrics_server(args.metrics_port, args.metrics_host)
    streams = OpenStreams()
    server, port, health, room_service = create_session_server(
        f"{args.host}:{args.port}",
        engine_target=args.engine,
        engine_frames=args.engine_frames,
        frames_socket=args.frames_socket,
        store_url=args.store,
        bot_think_ms=args.bot_think_ms,
        time_scale=args.turn_time_scale,
        stream_heartbeat_s=args.stream_heartbeat_seconds,
        lease_ms=args.lease_ms,
        lobby_idle_expiry_s=args.lobby_idle_expiry_seconds,
        finished_retention_s=args.finished_retention_seconds,
        streams=streams,
        service_token=token,
        reflection=args.reflection,
    )
    log.info(
        "session listening",
        host=args.host,
        port=port,
        metrics_host=args.metrics_host,
        metrics_port=metrics_port,
        # "required", or "none": every caller that reaches the loopback address is admitted.
        service_credential="none" if token is None else "required",
        reflection=args.reflection,
        store=args.store.split("?")[0],
        # Which engine answers the rules: "local" (in this process) or "remote" (the engine service).
        engine_mode="local" if args.engine == LOCAL_TARGET else "remote",
        engine=args.engine,
        engine_frames=args.engine_frames or None,
        frames_socket=args.frames_socket or None,
    )
    room_service.start()
    await run_session(server, health, room_service, streams, grace=args.grace)


def run_command(args: argparse.Namespace) -> int:
    return run_service(
        "session",
        lambda: serve_session(args),
        log_level=args.log_level,
        usage_errors=(InvalidStoreInput, CredentialError),
    )


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds, got {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        "session",
        help="run the session gRPC service",
        description="Serve ninetynine.session.v1.SessionService: rooms, seats, deadlines, reconnects. "
        "Every flag can also come from the environment.",
    )
    add_service_flags(parser, port=50052, metrics_port=9102, grace=10.0)
    add_credential_flag(parser, who="every caller must present (needed unless --host is loopback)")
    add_env_argument(
        parser,
        "--engine",
        default="localhost:50051",
        help="engine service host:port, or 'local' to run the rules in this process (no engine hop; "
        "the session takes the rules' CPU and the engine service is not used)",
    )
    add_env_argument(
        parser,
        "--engine-frames",
        default="",
        help="the engine's --frames-socket on this machine: moves (Apply, Timeout) go there instead "
        "of over gRPC, which costs each end less CPU per move (empty: gRPC)",
    )
    add_env_argument(
        parser,
        "--frames-socket",
        default="",
        help="also take a gateway's shared PlayMany and SubscribeMany calls as frames on this Unix "
        "socket, for a gateway on this machine (its --session-frames); empty: gRPC only",
    )
    add_env_argument(
        parser,
        "--store",
        default="sqlite:///data/rooms.db",
        help="sqlite:///path/rooms.db or redis://host:port/db",
    )
    add_env_argument(
        parser,
        "--bot-think-ms",
        type=int,
        default=DEFAULT_BOT_THINK_MS,
        help="a bot's turn: it plays this long after its turn began (the deadline its turnStarted and "
        "views carry); not scaled by --turn-time-scale",
    )
    add_env_argument(
        parser,
        "--turn-time-scale",
        type=float,
        default=1.0,
        help="multiply turn timers by this (tests and load runs compress time; keep 1 in production)",
    )
    add_env_argument(
        parser,
        "--stream-heartbeat-seconds",
        type=float,
        default=15.0,
        help="idle Subscribe streams get a heartbeat this often (ends streams of vanished clients)",
    )
    add_env_argument(
        parser,
        "--lease-ms",
        type=int,
        default=DEFAULT_LEASE_MS,
        help="a replica's claim on a due deadline; if it dies while firing, another fires it this much later",
    )
    add_env_argument(
        parser,
        "--lobby-idle-expiry-seconds",
        type=_seconds,
        default=DEFAULT_LOBBY_IDLE_S,
        help="a waiting room nobody is connected to and nothing happened in for this long is deleted "
        "(0 = never)",
    )
    add_env_argument(
        parser,
        "--finished-retention-seconds",
        type=_seconds,
        default=DEFAULT_FINISHED_RETENTION_S,
        help="a finished room (its result and replay) is deleted this long after its last change (0 = never)",
    )
    parser.set_defaults(handler=run_command)
    return parser

"""One client connection, whatever its transport: limits, binding, session calls and the push stream.

A :class:`Connection` receives frames from its transport (WebSocket or gRPC ``Connect``) through
:meth:`Connection.on_frame` and sends ``ServerMessage``s back through a bounded queue drained by
one writer task, so the direct replies and the pushed room stream keep their order and a slow
client never blocks anyone else: when its queue is full it gets ``goodbye slowClient`` and is
closed (it can ``resume``).

Per frame, in order: idle timer reset, hard size limit (fatal), rate limit (token bucket; too
many refusals in the window is abuse), soft size limit, parsing, then one session call
(``createRoom`` and ``resume`` first pass the per-address budgets of
:mod:`ninetynine.gateway.admission`). Every client message runs in its own request scope, so the
session sees a fresh ``x-request-id``, and ends with one canonical log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc
import grpc.aio

from ninetynine.common.context import bind_rpc_fields, new_request_id, request_scope
from ninetynine.common.errors import Lang, ServiceError, to_service_error
from ninetynine.common.logging import get_logger
from ninetynine.engine.errors import rule_texts
from ninetynine.engine.rules import Reason
from ninetynine.engine.rules.errors import message as rule_message
from ninetynine.gateway.admission import Admission, Refusal
from ninetynine.gateway.convert import CLIENT_TYPE_OF_FIELD, JsonId
from ninetynine.gateway.limits import AbuseMeter, Limits, TokenBucket
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.protocol import (
    GATEWAY_TEXTS,
    PROTOCOL_VERSION,
    ProtocolError,
    clean_metadata,
    gateway_message,
)
from ninetynine.gateway.relay import PlayRelay, SessionRelay
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.rooms import token_room
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc

__all__ = ["Connection", "Outgoing", "Transport"]

log = get_logger("gateway.messages")


def _log_message(line: dict[str, object]) -> None:
    """The canonical line of one client message."""
    log.info("message", **line)


# Close codes of docs/client-protocol.md §1.
CLOSE_SHUTDOWN = 1001
CLOSE_ABUSE = 1008
CLOSE_TOO_BIG = 1009
CLOSE_IDLE = 4000
CLOSE_SLOW = 4001

SESSION_TIMEOUT_S = 10.0
GOODBYE_TIMEOUT_S = 1.0
# At most this many queued messages go out in one transport write.
WRITE_BATCH_MAX = 64
# Refusals after which a subscription is not retried.
_FINAL_SUBSCRIBE_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
    }
)


class Transport(Protocol):
    """What a connection needs from its transport."""

    protocol: str

    async def send(self, msg: gw.ServerMessage, reply_id: JsonId | None) -> None: ...

    async def send_many(self, items: list[tuple[gw.ServerMessage, JsonId | None]]) -> None:
        """Send several messages in order, as one write where the transport can."""
        ...

    async def close(self, code: int) -> None: ...


@dataclass
class Outgoing:
    msg: gw.ServerMessage
    reply_id: JsonId | None = None
    # Monotonic time the play arrived (for the mover's 'played': the move latency metric).
    play_received: float | None = None


@dataclass
class Binding:
    room_id: str
    token: str
    player_id: str
    role: str
    host: bool
    # Set while this connection's own leaveRoom runs: the room stream that ends with it is no news.
    leaving: bool = False


class Connection:
    """One client: its language, its limits, its binding to a room and its push stream."""

    def __init__(
        self,
        transport: Transport,
        session: spb_grpc.SessionServiceAsyncStub,
        limits: Limits,
        metrics: GatewayMetrics,
        *,
        relay: SessionRelay,
        plays: PlayRelay,
        clock: Callable[[], float] = time.monotonic,
        admission: Admission | None = None,
        address: str = "",
    ) -> None:
        self.transport = transport
        # The gateway's per-address budgets, and this client's address (the peer or, behind a
        # trusted proxy, the one it forwarded).
        self.admission = admission
        self.address = address
        self.session = session
        # Room streams and plays over the gateway's shared SubscribeMany and PlayMany calls.
        self.relay = relay
        self.plays = plays
        self.limits = limits
        self.metrics = metrics
        self.clock = clock
        self.lang: Lang = "ko"
        self.binding: Binding | None = None
        self.closed = asyncio.Event()
        self._closing = False
        self._queue: asyncio.Queue[Outgoing] = asyncio.Queue(maxsize=limits.send_queue)
        now = clock()
        self._bucket = TokenBucket(limits.rate_per_second, limits.burst, now)
        self._abuse = AbuseMeter(limits.abuse_refusals, limits.abuse_window_seconds)
        self._last_received = now
        self._started = now
        self._heard = False
        self._writer: asyncio.Task[None] | None = None
        self._pump: asyncio.Task[None] | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        # The room stream's state: highest seq delivered, last room sent, bots, pending timeouts.
        self.last_seq = 0
        self._last_room: spb.Room | None = None
        self._bots: set[str] = set()
        self._timed_out: set[str] = set()
        self._finished = False
        self._counted = False
        self._doomed = False

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer and the idle timer (inside the event loop)."""
        self.metrics.connections.labels(self.transport.protocol).inc()
        self._counted = True
        self._writer = asyncio.create_task(self._write_loop())
        self._arm_idle_timer(min(self.limits.hello_timeout_seconds, self.limits.idle_seconds))

    async def finish(self) -> None:
        """The transport is gone (client closed): stop everything without a goodbye."""
        if not self._closing:
            self._closing = True
            await self._stop_tasks()
            self.closed.set()
        await self._release()

    async def _release(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._counted:
            self._counted = False
            self.metrics.connections.labels(self.transport.protocol).dec()

    async def _stop_tasks(self) -> None:
        tasks = [t for t in (self._pump, self._writer) if t is not None and t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            await _reap(task)
        self._pump = None

    async def close_with(
        self,
        reason: str,
        code: int,
        *,
        retry_after_ms: int = 0,
        error: gw.Error | None = None,
        reply_id: JsonId | None = None,
    ) -> None:
        """Send (when possible) an error and ``goodbye{reason}``, then close with ``code``."""
        if self._closing:
            return
        self._closing = True
        await self._stop_tasks()
        while not self._queue.empty():  # the client resumes from its last seq; drop the backlog
            self._queue.get_nowait()
        try:
            async with asyncio.timeout(GOODBYE_TIMEOUT_S):
                if error is not None:
                    await self._send_now(Outgoing(gw.ServerMessage(error=error), reply_id))
                goodbye = gw.Goodbye(reason=reason, retry_after_ms=retry_after_ms)
                await self._send_now(Outgoing(gw.ServerMessage(goodbye=goodbye)))
        except (TimeoutError, ConnectionError, OSError, RuntimeError, grpc.RpcError):
            pass  # the socket cannot take it any more; closing is all that is left
        log.info("goodbye", protocol=self.transport.protocol, reason=reason, code=code)
        try:
            await self.transport.close(code)
        finally:
            self.closed.set()
            await self._release()

    async def refuse(self, refusal: Refusal) -> None:
        """Turn the connection away (a budget of its address said no): fatal error, goodbye abuse, 1008."""
        self.metrics.refusals.labels(refusal.reason).inc()
        err = self.error_message(refusal.reason, refusal.metadata, fatal=True)
        await self.close_with("abuse", CLOSE_ABUSE, retry_after_ms=refusal.retry_after_ms, error=err)

    def send_refusal(self, refusal: Refusal, reply_id: JsonId | None) -> None:
        self.metrics.refusals.labels(refusal.reason).inc()
        self.send_error(refusal.reason, reply_id, refusal.metadata)

    def _close_soon(self, reason: str, code: int, **kwargs: object) -> None:
        # Frames still arriving before the close runs are ignored, not counted again.
        self._doomed = True
        task = asyncio.create_task(self.close_with(reason, code, **kwargs))  # type: ignore[arg-type]
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- outgoing -------------------------------------------------------------------------------

    def deliver(self, out: Outgoing) -> None:
        """Queue a message; a full queue means a slow client: goodbye slowClient and close."""
        if self._closing or self._doomed:
            return
        try:
            self._queue.put_nowait(out)
        except asyncio.QueueFull:
            self.metrics.slow_client_disconnects.labels(self.transport.protocol).inc()
            self._close_soon("slowClient", CLOSE_SLOW)

    async def _send_now(self, out: Outgoing) -> None:
        await self._send_batch([out])

    async def _send_batch(self, batch: list[Outgoing]) -> None:
        if len(batch) == 1:
            await self.transport.send(batch[0].msg, batch[0].reply_id)
        else:
            await self.transport.send_many([(out.msg, out.reply_id) for out in batch])
        for out in batch:
            kind = out.msg.WhichOneof("kind") or ""
            self.metrics.messages.labels("out", kind).inc()
            if out.play_received is not None and kind == "played":
                self.metrics.move_duration.labels(self.transport.protocol).observe(
                    self.clock() - out.play_received
                )

    async def _write_loop(self) -> None:
        while True:
            # Everything queued meanwhile (a move is several events, the room and the view) goes
            # out together: one socket write instead of one per message.
            batch = [await self._queue.get()]
            while len(batch) < WRITE_BATCH_MAX and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._send_batch(batch)
            except (ConnectionError, OSError, RuntimeError, grpc.RpcError) as exc:
                log.info("send failed; closing", protocol=self.transport.protocol, error=str(exc))
                self._closing = True
                self.closed.set()
                return

    def reply(self, reply_id: JsonId | None, **kind: object) -> None:
        self.deliver(Outgoing(gw.ServerMessage(**kind), reply_id))  # type: ignore[arg-type]

    def error_message(
        self, reason: str, metadata: dict[str, str] | None = None, *, fatal: bool = False
    ) -> gw.Error:
        meta = clean_metadata(metadata or {})
        if reason in GATEWAY_TEXTS:
            text = gateway_message(reason, self.lang, meta)
        elif reason in Reason.__members__:
            text = rule_message(Reason(reason), meta, self.lang)
        else:
            text = reason
        return gw.Error(reason=reason, message=text, metadata=meta, fatal=fatal)

    def send_error(
        self, reason: str, reply_id: JsonId | None, metadata: dict[str, str] | None = None
    ) -> None:
        bind_rpc_fields(reason=reason)
        self.deliver(Outgoing(gw.ServerMessage(error=self.error_message(reason, metadata)), reply_id))

    def send_service_error(
        self, err: ServiceError, reply_id: JsonId | None, extra: dict[str, str] | None = None
    ) -> None:
        reason = err.reason
        bind_rpc_fields(reason=reason)
        meta = clean_metadata({**err.metadata, **(extra or {})})
        text = err.message(self.lang) or gateway_message("UNAVAILABLE", self.lang)
        self.deliver(
            Outgoing(
                gw.ServerMessage(error=gw.Error(reason=reason, message=text[:500], metadata=meta)), reply_id
            )
        )

    # -- incoming -------------------------------------------------------------------------------

    def _arm_idle_timer(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        self._idle_timer = loop.call_later(delay, self._idle_check)

    def _idle_check(self) -> None:
        if self._closing:
            return
        now = self.clock()
        if self._heard:
            left = self.limits.idle_seconds - (now - self._last_received)
        else:  # not a word since the upgrade: the (shorter) first-message timeout
            left = min(self.limits.hello_timeout_seconds, self.limits.idle_seconds) - (now - self._started)
        if left <= 0:
            self._close_soon("idle", CLOSE_IDLE)
        else:
            self._arm_idle_timer(left)

    def _refused(self) -> bool:
        """Count a refusal; on sustained abuse close the connection (True)."""
        if self._abuse.refuse(self.clock()):
            self._close_soon("abuse", CLOSE_ABUSE)
            return True
        return False

    async def on_frame(self, size: int, parse: Callable[[], tuple[gw.ClientMessage, JsonId | None]]) -> None:
        """Handle one client frame of ``size`` bytes; ``parse`` turns it into a message."""
        if self._closing or self._doomed:
            return
        now = self.clock()
        self._last_received = now
        self._heard = True
        limits = self.limits
        if size > limits.hard_max_message_bytes:
            meta = {"size": str(size), "limit": str(limits.max_message_bytes)}
            err = self.error_message("MESSAGE_TOO_LARGE", meta, fatal=True)
            await self.close_with("abuse", CLOSE_TOO_BIG, error=err)
            return
        if not self._bucket.take(now):
            self.metrics.rate_limited.labels(self.transport.protocol).inc()
            if not self._refused():
                retry = str(self._bucket.retry_after_ms(now))
                self.send_error("RATE_LIMITED", None, {"retryAfterMs": retry})
            return
        if size > limits.max_message_bytes:
            if not self._refused():
                self.send_error(
                    "MESSAGE_TOO_LARGE", None, {"size": str(size), "limit": str(limits.max_message_bytes)}
                )
            return
        with request_scope(new_request_id(), protocol=self.transport.protocol) as fields:
            started = time.perf_counter()
            kind = "invalid"
            try:
                msg, reply_id = parse()
            except ProtocolError as exc:
                bind_rpc_fields(reason=exc.reason)
                if not self._refused():
                    self.deliver(
                        Outgoing(
                            gw.ServerMessage(error=self.error_message(exc.reason, exc.metadata)), exc.reply_id
                        )
                    )
            else:
                kind = CLIENT_TYPE_OF_FIELD.get(msg.WhichOneof("kind") or "", "invalid")
                await self._dispatch(kind, msg, reply_id, now)
            self.metrics.messages.labels("in", kind).inc()
            binding = self.binding
            line: dict[str, object] = {
                "type": kind,
                "room_id": binding.room_id if binding else "",
                "player_id": binding.player_id if binding else "",
                **fields,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            }
            # After the writer's turn (call_soon runs in a copy of this request's context): the
            # reply this message queued goes out before its log line is rendered, not after.
            asyncio.get_running_loop().call_soon(_log_message, line)

    # -- dispatch -------------------------------------------------------------------------------

    def _meta(self) -> tuple[tuple[str, str], ...]:
        return (("accept-language", self.lang),)

    async def _dispatch(
        self, kind: str, msg: gw.ClientMessage, reply_id: JsonId | None, received: float
    ) -> None:
        extra: dict[str, str] = {}
        try:
            if kind == "hello":
                await self._hello(msg.hello, reply_id)
            elif kind == "ping":
                self.reply(reply_id, pong=gw.Pong())
            elif kind == "listRooms":
                resp = await self.session.ListRooms(
                    spb.ListRoomsRequest(page_size=50), metadata=self._meta(), timeout=SESSION_TIMEOUT_S
                )
                self.reply(reply_id, rooms=gw.RoomList(rooms=resp.rooms))
            elif kind == "getReplay":
                room_id = msg.get_replay.room_id
                replay = await self.session.GetReplay(
                    spb.GetReplayRequest(room_id=room_id), metadata=self._meta(), timeout=SESSION_TIMEOUT_S
                )
                self.reply(reply_id, replay=gw.Replay(room_id=room_id, replay=replay))
            elif kind in ("createRoom", "joinRoom", "spectate", "resume"):
                if self.binding is not None:
                    self.send_error("ALREADY_IN_ROOM", reply_id, {"roomId": self.binding.room_id})
                    return
                await self._bind(kind, msg, reply_id)
            elif self.binding is None:
                self.send_error("NOT_IN_ROOM", reply_id)
            elif kind == "play":
                extra = {"clientSeq": str(msg.play.client_seq)}
                await self._play(msg.play, reply_id, received)
            elif kind == "addBot":
                added = await self.session.AddBot(
                    spb.AddBotRequest(token=self.binding.token),
                    metadata=self._meta(),
                    timeout=SESSION_TIMEOUT_S,
                )
                self._send_room(added.room, reply_id, force=True)
            elif kind == "startGame":
                started = await self.session.StartGame(
                    spb.StartGameRequest(token=self.binding.token),
                    metadata=self._meta(),
                    timeout=SESSION_TIMEOUT_S,
                )
                self._send_room(started.room, reply_id, force=True)
            elif kind == "leaveRoom":
                await self._leave(reply_id)
            else:
                self.send_error("UNKNOWN_TYPE", reply_id, {"type": kind})
        except grpc.RpcError as exc:
            err = to_service_error(exc, default_domain="gateway.ninetynine", texts=rule_texts)
            if err.domain == "gateway.ninetynine":  # no ErrorInfo: the session is unreachable or overloaded
                bind_rpc_fields(session_code=err.code.name)
                self.send_error("UNAVAILABLE", reply_id, {"code": err.code.name, **extra})
            else:
                self.send_service_error(err, reply_id, extra)

    async def _hello(self, hello: gw.Hello, reply_id: JsonId | None) -> None:
        if hello.lang not in ("ko", "en"):
            self.send_error("MALFORMED_MESSAGE", reply_id, {"detail": "lang must be 'ko' or 'en'"})
            return
        self.lang = "en" if hello.lang == "en" else "ko"
        welcome = gw.Welcome(
            protocol_version=PROTOCOL_VERSION,
            heartbeat_seconds=self.limits.heartbeat_seconds,
            max_message_bytes=self.limits.max_message_bytes,
            lang=self.lang,
        )
        self.reply(reply_id, welcome=welcome)

    async def _bind(self, kind: str, msg: gw.ClientMessage, reply_id: JsonId | None) -> None:
        view: spb.GetViewResponse | None = None
        after_seq: int
        if kind == "createRoom":
            refusal = self.admission.create_room(self.address) if self.admission else None
            if refusal is not None:
                self.send_refusal(refusal, reply_id)
                return
            c = msg.create_room
            created = await self.session.CreateRoom(
                spb.CreateRoomRequest(name=c.name, options=c.options, max_seats=c.seats),
                metadata=self._meta(),
                timeout=SESSION_TIMEOUT_S,
            )
            room, binding = (
                created.room,
                Binding(created.room.room_id, created.seat_token, created.player_id, "player", True),
            )
            after_seq = room.last_seq
        elif kind == "joinRoom":
            j = msg.join_room
            joined = await self.session.JoinRoom(
                spb.JoinRoomRequest(room_id=j.room_id, name=j.name),
                metadata=self._meta(),
                timeout=SESSION_TIMEOUT_S,
            )
            room = joined.room
            binding = Binding(
                room.room_id,
                joined.seat_token,
                joined.player_id,
                "player",
                room.host_player_id == joined.player_id,
            )
            after_seq = room.last_seq
        elif kind == "spectate":
            watched = await self.session.Spectate(
                spb.SpectateRequest(room_id=msg.spectate.room_id),
                metadata=self._meta(),
                timeout=SESSION_TIMEOUT_S,
            )
            room = watched.room
            binding = Binding(room.room_id, watched.spectator_token, "", "spectator", False)
            after_seq = room.last_seq
            if room.phase != spb.ROOM_PHASE_LOBBY:
                view = await self.session.GetView(
                    spb.GetViewRequest(token=binding.token), metadata=self._meta(), timeout=SESSION_TIMEOUT_S
                )
                after_seq = view.seq
        else:
            r = msg.resume
            view = await self._authenticate(r.token, reply_id)
            if view is None:
                return
            room = view.room
            player_id = view.player_id  # whose token: the seat, or empty for a spectator (also in the lobby)
            binding = Binding(
                room.room_id,
                r.token,
                player_id,
                "player" if player_id else "spectator",
                bool(player_id) and room.host_player_id == player_id,
            )
            after_seq = r.after_seq
            if view.HasField("view") and r.after_seq < view.seq:
                view = None  # the missed events come first; the stream's view follows them
        self.binding = binding
        bind_rpc_fields(room_id=binding.room_id, player_id=binding.player_id)
        joined_msg = gw.Joined(
            room_id=binding.room_id,
            player_id=binding.player_id,
            token=binding.token,
            role=binding.role,
            host=binding.host,
        )
        self.reply(reply_id, joined=joined_msg)
        self._send_room(room, None, force=True)
        self.last_seq = after_seq
        if view is not None and view.HasField("view"):
            self.last_seq = max(self.last_seq, view.seq)
            self.deliver(Outgoing(gw.ServerMessage(view=gw.ViewPush(seq=view.seq, view=view.view))))
        self._pump = asyncio.create_task(self._pump_room(binding))

    async def _authenticate(self, token: str, reply_id: JsonId | None) -> spb.GetViewResponse | None:
        """GetView for a resume, within the budgets of failed tokens (None: refused, error sent)."""
        admission = self.admission
        if admission is None:
            return await self._get_view(token)
        try:
            room_id: str | None = token_room(token)
        except ServiceError:
            room_id = None  # not even shaped like a token: counts against the address only
        refusal = admission.may_authenticate(self.address, room_id)
        if refusal is not None:
            self.send_refusal(refusal, reply_id)
            return None
        try:
            return await self._get_view(token)
        except grpc.RpcError as exc:
            if hasattr(exc, "code") and exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                admission.authentication_failed(self.address, room_id)
            raise

    async def _get_view(self, token: str) -> spb.GetViewResponse:
        return await self.session.GetView(
            spb.GetViewRequest(token=token), metadata=self._meta(), timeout=SESSION_TIMEOUT_S
        )

    async def _play(self, play: gw.Play, reply_id: JsonId | None, received: float) -> None:
        assert self.binding is not None
        if self.binding.role == "spectator":
            self.send_error("SPECTATOR_CANNOT_ACT", reply_id, {"clientSeq": str(play.client_seq)})
            return
        bind_rpc_fields(client_seq=play.client_seq, card_id=play.action.card_id)
        request = spb.PlayRequest(token=self.binding.token, client_seq=play.client_seq, action=play.action)
        if play.HasField("expected_move_seq"):  # unset and 0 differ: 0 names the opening view
            request.expected_move_seq = play.expected_move_seq
        resp = await self.plays.play(request, self.lang, timeout=SESSION_TIMEOUT_S)
        bind_rpc_fields(seq=resp.seq, duplicate=resp.duplicate)
        played = gw.Played(client_seq=resp.client_seq or play.client_seq, seq=resp.seq)
        self.deliver(Outgoing(gw.ServerMessage(played=played), reply_id, play_received=received))

    async def _leave(self, reply_id: JsonId | None) -> None:
        assert self.binding is not None
        binding = self.binding
        binding.leaving = True
        try:
            await self.session.LeaveRoom(
                spb.LeaveRoomRequest(token=binding.token), metadata=self._meta(), timeout=SESSION_TIMEOUT_S
            )
        finally:
            binding.leaving = False
        if self._pump is not None:
            self._pump.cancel()
            await _reap(self._pump)
        self._unbind()
        self.reply(reply_id, left=gw.Left(room_id=binding.room_id))

    def _unbind(self) -> None:
        self.binding = None
        self._pump = None
        self._last_room = None
        self.last_seq = 0

    # -- the room stream ------------------------------------------------------------------------

    def _send_room(self, room: spb.Room, reply_id: JsonId | None, *, force: bool = False) -> None:
        comparable = spb.Room()
        comparable.CopyFrom(room)
        comparable.last_seq = 0
        comparable.deadline_ms = 0
        self._bots = {s.player_id for s in room.seats if s.bot}
        if room.phase == spb.ROOM_PHASE_FINISHED:
            self._finished = True
        if not force and comparable == self._last_room:
            return
        self._last_room = comparable
        self.deliver(Outgoing(gw.ServerMessage(room=gw.RoomUpdate(room=room)), reply_id))

    async def _pump_room(self, binding: Binding) -> None:
        """Follow the room over the shared calls, resubscribing after ``last_seq`` when the stream breaks."""
        backoff = 0.2
        while not self._closing and self.binding is binding:
            try:
                request = spb.SubscribeRequest(token=binding.token, after_seq=self.last_seq, batched=True)
                # Closed when this task ends, not when the garbage collector gets to it: the session
                # marks the seat disconnected once its subscription is gone.
                async with contextlib.aclosing(self.relay.subscribe(request, self.lang)) as stream:
                    async for item in stream:
                        await self._on_stream_item(binding, item)
                        backoff = 0.2
                if self._finished:
                    return
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
                if code in _FINAL_SUBSCRIBE_CODES:
                    if binding.leaving:
                        return  # this connection's own leaveRoom: `left` answers it
                    err = to_service_error(exc, default_domain="gateway.ninetynine", texts=rule_texts)
                    self.send_service_error(err, None)
                    if err.reason == "INVALID_TOKEN" and self.binding is binding:
                        # The seat was given up (on another connection): this one is no longer in
                        # the room and may bind again.
                        self._unbind()
                    return
                log.info(
                    "subscribe broken; retrying",
                    room_id=binding.room_id,
                    code=code.name,
                    after_seq=self.last_seq,
                )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    async def _on_stream_item(self, binding: Binding, item: spb.SubscribeResponse) -> None:
        which = item.WhichOneof("item")
        if which == "batch":
            for ev in item.batch.events:
                self._on_event(ev)
            if item.batch.HasField("view"):
                await self._on_view(binding, item.batch.view)
        elif which == "event":
            self._on_event(item.event)
        elif which == "view":
            await self._on_view(binding, item.view)
        elif which == "snapshot":
            self.last_seq = max(self.last_seq, item.snapshot.seq)
            self.deliver(Outgoing(gw.ServerMessage(snapshot=item.snapshot)))

    def _on_event(self, ev: spb.RoomEvent) -> None:
        if ev.seq <= self.last_seq:
            return  # already delivered before a resubscribe
        self.last_seq = ev.seq
        kind = ev.WhichOneof("kind")
        if kind == "game":
            source = ""
            payload = ev.game.WhichOneof("payload")
            if payload == "card_played":
                pid = ev.game.card_played.player_id
                source = "timeout" if pid in self._timed_out else "bot" if pid in self._bots else "player"
                self._timed_out.discard(pid)
            elif payload == "game_finished":
                self._finished = True
            self.deliver(
                Outgoing(gw.ServerMessage(event=gw.EventPush(seq=ev.seq, event=ev.game, source=source)))
            )
        elif kind == "timeout_applied":
            self._timed_out.add(ev.timeout_applied.player_id)

    async def _on_view(self, binding: Binding, update: spb.ViewUpdate) -> None:
        if update.HasField("room"):
            self._send_room(update.room, None)
        else:
            room = await self.session.GetRoom(
                spb.GetRoomRequest(room_id=binding.room_id),
                metadata=self._meta(),
                timeout=SESSION_TIMEOUT_S,
            )
            self._send_room(room.room, None)
        if update.HasField("view"):
            self.deliver(Outgoing(gw.ServerMessage(view=gw.ViewPush(seq=update.seq, view=update.view))))


async def _reap(task: asyncio.Task[None]) -> None:
    """Wait for a cancelled task; its own failure was logged where it happened."""
    try:
        await task
    except asyncio.CancelledError:
        pass
    except (grpc.RpcError, ConnectionError, OSError, RuntimeError) as exc:
        log.info("background task ended with an error", error=str(exc))

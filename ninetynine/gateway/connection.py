"""One client connection, whatever its transport: its lifecycle, its limits and its language.

A :class:`Connection` receives frames from its transport (WebSocket or gRPC ``Connect``) through
:meth:`Connection.on_frame` and sends ``ServerMessage``s back through its bounded outbox
(:mod:`~ninetynine.gateway.outbox`), so the direct replies and the pushed room stream keep their
order and a slow client never blocks anyone else: when its outbox is full it gets ``goodbye
slowClient`` and is closed (it can ``resume``).

Per frame, in order: idle timer reset, hard size limit (fatal), rate limit (token bucket; too
many refusals in the window is abuse), soft size limit, parsing, then one session call
(``createRoom`` and ``resume`` first pass the per-address budgets of
:mod:`ninetynine.gateway.admission`). Every client message runs in its own request scope, so the
session sees a fresh ``x-request-id``, and ends with one canonical log line.

The parts of a connection live beside it: :mod:`~ninetynine.gateway.outbox` (the queue and its
writer), :mod:`~ninetynine.gateway.handlers` (what each client message does),
:mod:`~ninetynine.gateway.binding` (bind, resume, leave) and :mod:`~ninetynine.gateway.follower`
(the room stream).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import grpc

from ninetynine.common.context import bind_rpc_fields, new_request_id, request_scope
from ninetynine.common.errors import Lang, ServiceError
from ninetynine.common.logging import emit_line, get_logger
from ninetynine.common.reasons import SERVICE_TEXTS, service_text
from ninetynine.engine.rules import Reason
from ninetynine.engine.rules.errors import message as rule_message
from ninetynine.gateway.admission import Admission, Refusal
from ninetynine.gateway.binding import Binding
from ninetynine.gateway.convert import JsonId
from ninetynine.gateway.follower import RoomFollower
from ninetynine.gateway.handlers import HANDLER_OF_FIELD, dispatch
from ninetynine.gateway.limits import AbuseMeter, Limits, TokenBucket
from ninetynine.gateway.metrics import GatewayMetrics
from ninetynine.gateway.outbox import Outbox, Outgoing, Transport
from ninetynine.gateway.protocol import ProtocolError, clean_metadata
from ninetynine.gateway.relay import PlayRelay, SessionRelay
from ninetynine.gateway.tasks import reap
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc

__all__ = ["Connection", "Outgoing", "Transport"]

MESSAGES_LOGGER = "gateway.messages"
log = get_logger(MESSAGES_LOGGER)


def _log_message(line: dict[str, object]) -> None:
    """The canonical line of one client message (a heartbeat's at debug: it says nothing new)."""
    emit_line(MESSAGES_LOGGER, "debug" if line["type"] == "ping" else "info", "message", line)


# Close codes of docs/client-protocol.md §1.
CLOSE_SHUTDOWN = 1001
CLOSE_ABUSE = 1008
CLOSE_TOO_BIG = 1009
CLOSE_IDLE = 4000
CLOSE_SLOW = 4001

SESSION_TIMEOUT_S = 10.0
GOODBYE_TIMEOUT_S = 1.0
# The shortest heartbeat a hello may ask for: the idle limit is three of them.
MIN_HEARTBEAT_S = 2


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
        self.session_timeout = SESSION_TIMEOUT_S
        self.outbox = Outbox(transport, metrics, clock, limits.send_queue, self._send_broken)
        self.follower = RoomFollower(self)
        now = clock()
        self._bucket = TokenBucket(limits.rate_per_second, limits.burst, now)
        self._abuse = AbuseMeter(limits.abuse_refusals, limits.abuse_window_seconds)
        self._last_received = now
        self._started = now
        self.heartbeat_seconds = limits.heartbeat_seconds  # a hello may ask for a shorter one
        self._heard = False
        self._idle_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._counted = False
        self._doomed = False

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def closing(self) -> bool:
        """Closing or closed: nothing more is read or queued."""
        return self._closing

    def start(self) -> None:
        """Start the writer and the idle timer (inside the event loop)."""
        self.metrics.connections.labels(self.transport.protocol).inc()
        self._counted = True
        self.outbox.start()
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
        running = (self.follower.pump, self.outbox.writer)
        tasks = [t for t in running if t is not None and t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            await reap(task)
        self.follower.pump = None

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
        self.outbox.drop_backlog()  # the client resumes from its last seq
        try:
            async with asyncio.timeout(GOODBYE_TIMEOUT_S):
                if error is not None:
                    await self.outbox.send_now(Outgoing(gw.ServerMessage(error=error), reply_id))
                goodbye = gw.Goodbye(reason=reason, retry_after_ms=retry_after_ms)
                await self.outbox.send_now(Outgoing(gw.ServerMessage(goodbye=goodbye)))
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
        """Send a message through the outbox; a full one means a slow client: goodbye slowClient and close."""
        if self._closing or self._doomed:
            return
        if not self.outbox.put(out):
            self.metrics.slow_client_disconnects.labels(self.transport.protocol).inc()
            self._close_soon("slowClient", CLOSE_SLOW)

    def _send_broken(self) -> None:
        self._closing = True
        self.closed.set()

    def reply(self, reply_id: JsonId | None, **kind: object) -> None:
        self.deliver(Outgoing(gw.ServerMessage(**kind), reply_id))  # type: ignore[arg-type]

    def error_message(
        self, reason: str, metadata: dict[str, str] | None = None, *, fatal: bool = False
    ) -> gw.Error:
        meta = clean_metadata(metadata or {})
        if reason in SERVICE_TEXTS:
            text = service_text(reason, self.lang, meta)
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
        text = err.message(self.lang) or service_text("UNAVAILABLE", self.lang)
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
            left = self.heartbeat_seconds * self.limits.idle_factor - (now - self._last_received)
        else:  # not a word since the upgrade: the (shorter) first-message timeout
            left = min(self.limits.hello_timeout_seconds, self.limits.idle_seconds) - (now - self._started)
        if left <= 0:
            self._close_soon("idle", CLOSE_IDLE)
        else:
            self._arm_idle_timer(left)

    def set_heartbeat(self, asked: int) -> None:
        """The client pings at least every ``asked`` seconds: a silence of 3 × that closes it."""
        self.heartbeat_seconds = max(MIN_HEARTBEAT_S, min(self.limits.heartbeat_seconds, asked))
        if self._idle_timer is not None:  # the next check comes within the new idle limit
            self._idle_timer.cancel()
        self._arm_idle_timer(self.heartbeat_seconds * self.limits.idle_factor)

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
                field = msg.WhichOneof("kind") or ""
                handler = HANDLER_OF_FIELD.get(field)
                if handler is None:  # a parser passed a message naming no type; none of ours does
                    self.send_error("UNKNOWN_TYPE", reply_id, {"type": field})
                else:
                    kind = handler.type
                    await dispatch(self, handler, msg, reply_id, now)
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

    # -- what the parts share -------------------------------------------------------------------

    def call_metadata(self) -> tuple[tuple[str, str], ...]:
        """The metadata of a session call made for this client (its language)."""
        return (("accept-language", self.lang),)

    def unbind(self) -> None:
        """The connection is in no room any more (it left, or its token was given up)."""
        self.binding = None
        self.follower.forget()

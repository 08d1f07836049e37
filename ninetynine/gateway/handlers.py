"""The client messages, one handler each: the table the gateway dispatches from.

As Colyseus's ``Room.onMessage(type, handler)``: an entry of :data:`HANDLERS` names the protocol's
``type`` and holds everything about it: its handler, where it may run (any time, only before the
connection is in a room, only in one), the JSON Schema definition a JSON frame of it must pass
(:func:`ninetynine.gateway.protocol.parse_text`, two-tier), the check of a native (gRPC) frame for
what the schema says and protobuf cannot, and the metadata its refusals echo. Adding a message
type is adding its entry; ``tests/gateway/test_handlers.py`` fails while the client protocol (the
``ClientMessage`` oneof, the schema's ``ClientMessage``) and this table disagree.

A refusal of the session (or of the engine behind it) goes back to the client as an ``error`` with
the same reason and metadata; a call that failed without one (the session unreachable or
overloaded) is answered ``UNAVAILABLE``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import grpc

from ninetynine.common.context import bind_rpc_fields
from ninetynine.engine.errors import from_rpc_error
from ninetynine.gateway import binding
from ninetynine.gateway.binding import Binding
from ninetynine.gateway.convert import JsonId
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

if TYPE_CHECKING:
    from ninetynine.gateway.connection import Connection

__all__ = ["HANDLERS", "HANDLER_OF_FIELD", "PROTOCOL_VERSION", "MessageHandler", "Where", "dispatch"]

PROTOCOL_VERSION = 1

# (connection, message, the client's id, monotonic time the frame arrived).
Handle = Callable[["Connection", gw.ClientMessage, JsonId | None, float], Awaitable[None]]
# A native frame's fault the schema would have refused: the ``detail`` of its MALFORMED_MESSAGE.
NativeCheck = Callable[[gw.ClientMessage], str | None]


class Where(Enum):
    """Where a message may run; elsewhere it is refused before its handler runs."""

    ANYWHERE = "anywhere"
    UNBOUND = "unbound"  # binds the connection: refused ALREADY_IN_ROOM once it is in a room
    BOUND = "bound"  # acts in the room: refused NOT_IN_ROOM before


_ONEOF = gw.ClientMessage.DESCRIPTOR.oneofs_by_name["kind"]
# The protocol's type name of each ClientMessage oneof field is the field's JSON name.
_FIELD_OF_TYPE = {f.json_name: f.name for f in _ONEOF.fields}


@dataclass(frozen=True)
class MessageHandler:
    """One client message type and how the gateway takes it."""

    type: str
    handle: Handle
    where: Where = Where.ANYWHERE
    # The JSON Schema definition (``#/$defs/<schema>``) a JSON frame of this type must pass.
    schema: str = ""
    check: NativeCheck | None = None
    # The metadata a refusal of this message's session call echoes (e.g. the play's clientSeq).
    echo: Callable[[gw.ClientMessage], dict[str, str]] | None = None
    field: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", self.schema or self.type)
        # A type that is no ClientMessage field: the table and the proto disagree (the test says which).
        object.__setattr__(self, "field", _FIELD_OF_TYPE.get(self.type, ""))


async def dispatch(
    conn: Connection,
    handler: MessageHandler,
    msg: gw.ClientMessage,
    reply_id: JsonId | None,
    received: float,
) -> None:
    """Run ``handler`` for ``msg`` where it may run, answering a failed session call with an error."""
    if handler.where is Where.UNBOUND and conn.binding is not None:
        conn.send_error("ALREADY_IN_ROOM", reply_id, {"roomId": conn.binding.room_id})
        return
    if handler.where is Where.BOUND and conn.binding is None:
        conn.send_error("NOT_IN_ROOM", reply_id)
        return
    try:
        await handler.handle(conn, msg, reply_id, received)
    except grpc.RpcError as exc:
        extra = handler.echo(msg) if handler.echo is not None else {}
        err = from_rpc_error(exc, default_domain="gateway.ninetynine")
        if err.domain == "gateway.ninetynine":  # no ErrorInfo: the session is unreachable or overloaded
            bind_rpc_fields(session_code=err.code.name)
            conn.send_error("UNAVAILABLE", reply_id, {"code": err.code.name, **extra})
        else:
            conn.send_service_error(err, reply_id, extra)


def _bound(conn: Connection) -> Binding:
    assert conn.binding is not None, "dispatch runs a BOUND handler only in a room"
    return conn.binding


async def hello(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    lang = msg.hello.lang
    if lang not in ("ko", "en"):  # the schema's enum; a native hello reaches here
        conn.send_error("MALFORMED_MESSAGE", reply_id, {"detail": "lang must be 'ko' or 'en'"})
        return
    conn.lang = "en" if lang == "en" else "ko"
    if msg.hello.heartbeat_seconds:
        conn.set_heartbeat(msg.hello.heartbeat_seconds)
    welcome = gw.Welcome(
        protocol_version=PROTOCOL_VERSION,
        heartbeat_seconds=conn.heartbeat_seconds,
        max_message_bytes=conn.limits.max_message_bytes,
        lang=conn.lang,
    )
    conn.reply(reply_id, welcome=welcome)


async def ping(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    # The wall clock, which the deadlines are on too: the client runs its timer on it.
    now_ms = time.time_ns() // 1_000_000 if msg.ping.clock else 0
    conn.reply(reply_id, pong=gw.Pong(server_time_ms=now_ms))


async def list_rooms(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    resp = await conn.session.ListRooms(
        spb.ListRoomsRequest(page_size=50), metadata=conn.call_metadata(), timeout=conn.session_timeout
    )
    conn.reply(reply_id, rooms=gw.RoomList(rooms=resp.rooms))


async def list_rules(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    resp = await conn.session.ListRules(
        spb.ListRulesRequest(), metadata=conn.call_metadata(), timeout=conn.session_timeout
    )
    conn.reply(reply_id, rules_list=gw.RulesList(presets=resp.presets))


async def get_replay(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    room_id = msg.get_replay.room_id
    replay = await conn.session.GetReplay(
        spb.GetReplayRequest(room_id=room_id), metadata=conn.call_metadata(), timeout=conn.session_timeout
    )
    conn.reply(reply_id, replay=gw.Replay(room_id=room_id, replay=replay))


async def add_bot(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    added = await conn.session.AddBot(
        spb.AddBotRequest(token=_bound(conn).token),
        metadata=conn.call_metadata(),
        timeout=conn.session_timeout,
    )
    conn.follower.send_room(added.room, reply_id, force=True)


async def start_game(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    started = await conn.session.StartGame(
        spb.StartGameRequest(token=_bound(conn).token),
        metadata=conn.call_metadata(),
        timeout=conn.session_timeout,
    )
    conn.follower.send_room(started.room, reply_id, force=True)


async def play(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, received: float) -> None:
    bound, p = _bound(conn), msg.play
    if bound.role == "spectator":
        conn.send_error("SPECTATOR_CANNOT_ACT", reply_id, {"clientSeq": str(p.client_seq)})
        return
    bind_rpc_fields(client_seq=p.client_seq, card_id=p.action.card_id)
    request = spb.PlayRequest(token=bound.token, client_seq=p.client_seq, action=p.action)
    if p.HasField("expected_move_seq"):  # unset and 0 differ: 0 names the opening view
        request.expected_move_seq = p.expected_move_seq
    # An applied play's answer rides its move's events on the room stream, whose follower sends
    # `played`; a refusal or a repeated clientSeq is answered on the play's own call.
    expected = conn.follower.expect_answer(p.client_seq, reply_id, received)
    try:
        resp = await conn.plays.play(
            request,
            conn.lang,
            timeout=conn.session_timeout,
            answered=expected.future if expected is not None else None,
        )
    finally:
        if expected is not None:
            conn.follower.forget_answer(p.client_seq)
    bind_rpc_fields(seq=resp.seq, duplicate=resp.duplicate)
    if expected is not None and expected.sent:
        conn.metrics.play_answers.labels("room_stream").inc()
        return
    conn.metrics.play_answers.labels("call").inc()
    played = gw.Played(client_seq=resp.client_seq or p.client_seq, seq=resp.seq)
    conn.deliver(Outgoing(gw.ServerMessage(played=played), reply_id, play_received=received))


def _play_check(msg: gw.ClientMessage) -> str | None:
    return "play.client_seq must be >= 1" if msg.play.client_seq < 1 else None


def _play_echo(msg: gw.ClientMessage) -> dict[str, str]:
    return {"clientSeq": str(msg.play.client_seq)}


def _table(*handlers: MessageHandler) -> Mapping[str, MessageHandler]:
    table: dict[str, MessageHandler] = {}
    for handler in handlers:
        if handler.type in table:
            raise ValueError(f"two handlers for {handler.type!r}")
        table[handler.type] = handler
    return table


HANDLERS: Mapping[str, MessageHandler] = _table(
    MessageHandler("hello", hello),
    MessageHandler("ping", ping),
    MessageHandler("listRooms", list_rooms),
    MessageHandler("listRules", list_rules),
    MessageHandler("getReplay", get_replay),
    MessageHandler("createRoom", binding.create_room, Where.UNBOUND),
    MessageHandler("joinRoom", binding.join_room, Where.UNBOUND),
    MessageHandler("spectate", binding.spectate, Where.UNBOUND),
    MessageHandler("resume", binding.resume, Where.UNBOUND),
    MessageHandler("play", play, Where.BOUND, check=_play_check, echo=_play_echo),
    MessageHandler("addBot", add_bot, Where.BOUND),
    MessageHandler("startGame", start_game, Where.BOUND),
    MessageHandler("leaveRoom", binding.leave, Where.BOUND),
    MessageHandler("rematch", binding.rematch, Where.BOUND),
)
# The handler of each ClientMessage oneof field (what a parsed frame names).
HANDLER_OF_FIELD: Mapping[str, MessageHandler] = {h.field: h for h in HANDLERS.values() if h.field}

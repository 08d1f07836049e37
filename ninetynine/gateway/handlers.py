"""What the gateway does with each client message: one session call (or none), and the reply.

A refusal of the session (or of the engine behind it) goes back to the client as an ``error`` with
the same reason and metadata; a call that failed without one (the session unreachable or
overloaded) is answered ``UNAVAILABLE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from ninetynine.common.context import bind_rpc_fields
from ninetynine.common.errors import to_service_error
from ninetynine.engine.errors import rule_texts
from ninetynine.gateway.binding import bind, leave
from ninetynine.gateway.convert import JsonId
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.protocol import PROTOCOL_VERSION
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

if TYPE_CHECKING:
    from ninetynine.gateway.connection import Connection

__all__ = ["dispatch"]


async def dispatch(
    conn: Connection, kind: str, msg: gw.ClientMessage, reply_id: JsonId | None, received: float
) -> None:
    extra: dict[str, str] = {}
    meta, timeout = conn.call_metadata(), conn.session_timeout
    try:
        if kind == "hello":
            await _hello(conn, msg.hello, reply_id)
        elif kind == "ping":
            conn.reply(reply_id, pong=gw.Pong())
        elif kind == "listRooms":
            resp = await conn.session.ListRooms(
                spb.ListRoomsRequest(page_size=50), metadata=meta, timeout=timeout
            )
            conn.reply(reply_id, rooms=gw.RoomList(rooms=resp.rooms))
        elif kind == "getReplay":
            room_id = msg.get_replay.room_id
            replay = await conn.session.GetReplay(
                spb.GetReplayRequest(room_id=room_id), metadata=meta, timeout=timeout
            )
            conn.reply(reply_id, replay=gw.Replay(room_id=room_id, replay=replay))
        elif kind in ("createRoom", "joinRoom", "spectate", "resume"):
            if conn.binding is not None:
                conn.send_error("ALREADY_IN_ROOM", reply_id, {"roomId": conn.binding.room_id})
                return
            await bind(conn, kind, msg, reply_id)
        elif conn.binding is None:
            conn.send_error("NOT_IN_ROOM", reply_id)
        elif kind == "play":
            extra = {"clientSeq": str(msg.play.client_seq)}
            await _play(conn, msg.play, reply_id, received)
        elif kind == "addBot":
            added = await conn.session.AddBot(
                spb.AddBotRequest(token=conn.binding.token), metadata=meta, timeout=timeout
            )
            conn.follower.send_room(added.room, reply_id, force=True)
        elif kind == "startGame":
            started = await conn.session.StartGame(
                spb.StartGameRequest(token=conn.binding.token), metadata=meta, timeout=timeout
            )
            conn.follower.send_room(started.room, reply_id, force=True)
        elif kind == "leaveRoom":
            await leave(conn, reply_id)
        else:
            conn.send_error("UNKNOWN_TYPE", reply_id, {"type": kind})
    except grpc.RpcError as exc:
        err = to_service_error(exc, default_domain="gateway.ninetynine", texts=rule_texts)
        if err.domain == "gateway.ninetynine":  # no ErrorInfo: the session is unreachable or overloaded
            bind_rpc_fields(session_code=err.code.name)
            conn.send_error("UNAVAILABLE", reply_id, {"code": err.code.name, **extra})
        else:
            conn.send_service_error(err, reply_id, extra)


async def _hello(conn: Connection, hello: gw.Hello, reply_id: JsonId | None) -> None:
    if hello.lang not in ("ko", "en"):
        conn.send_error("MALFORMED_MESSAGE", reply_id, {"detail": "lang must be 'ko' or 'en'"})
        return
    conn.lang = "en" if hello.lang == "en" else "ko"
    welcome = gw.Welcome(
        protocol_version=PROTOCOL_VERSION,
        heartbeat_seconds=conn.limits.heartbeat_seconds,
        max_message_bytes=conn.limits.max_message_bytes,
        lang=conn.lang,
    )
    conn.reply(reply_id, welcome=welcome)


async def _play(conn: Connection, play: gw.Play, reply_id: JsonId | None, received: float) -> None:
    assert conn.binding is not None
    if conn.binding.role == "spectator":
        conn.send_error("SPECTATOR_CANNOT_ACT", reply_id, {"clientSeq": str(play.client_seq)})
        return
    bind_rpc_fields(client_seq=play.client_seq, card_id=play.action.card_id)
    request = spb.PlayRequest(token=conn.binding.token, client_seq=play.client_seq, action=play.action)
    if play.HasField("expected_move_seq"):  # unset and 0 differ: 0 names the opening view
        request.expected_move_seq = play.expected_move_seq
    resp = await conn.plays.play(request, conn.lang, timeout=conn.session_timeout)
    bind_rpc_fields(seq=resp.seq, duplicate=resp.duplicate)
    played = gw.Played(client_seq=resp.client_seq or play.client_seq, seq=resp.seq)
    conn.deliver(Outgoing(gw.ServerMessage(played=played), reply_id, play_received=received))

"""Binding a connection to a room: create, join, spectate or resume, and leaving it again.

A bound connection holds the room's token and follows the room's stream from the ``seq`` it was
bound at (a resume's ``afterSeq``: the missed events come first). ``createRoom`` and ``resume``
first pass the per-address budgets of :mod:`ninetynine.gateway.admission`; a resume's failed
token counts against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from ninetynine.common.context import bind_rpc_fields
from ninetynine.common.errors import ServiceError
from ninetynine.gateway.convert import JsonId, view_push
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.rooms import token_room
from ninetynine.session.v1 import session_service_pb2 as spb

if TYPE_CHECKING:
    from ninetynine.gateway.connection import Connection

__all__ = ["Binding", "create_room", "join_room", "leave", "resume", "spectate"]


@dataclass
class Binding:
    """The room a connection is in, and as whom (its token, seat and role)."""

    room_id: str
    token: str
    player_id: str
    role: str
    host: bool
    # Set while this connection's own leaveRoom runs: the room stream that ends with it is no news.
    leaving: bool = False


async def create_room(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    refusal = conn.admission.create_room(conn.address) if conn.admission else None
    if refusal is not None:
        conn.send_refusal(refusal, reply_id)
        return
    c = msg.create_room
    created = await conn.session.CreateRoom(
        spb.CreateRoomRequest(
            name=c.name,
            options=c.options,
            max_seats=c.seats,
            rules=c.rules,
            overrides=c.overrides,
            game="" if c.game == "adding" else c.game,
            trick_options=c.trick_options if c.HasField("trick_options") else None,
        ),
        metadata=conn.call_metadata(),
        timeout=conn.session_timeout,
    )
    room = created.room
    binding = Binding(room.room_id, created.seat_token, created.player_id, "player", True)
    _bound(conn, binding, room, room.last_seq, None, reply_id)


async def join_room(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    j = msg.join_room
    joined = await conn.session.JoinRoom(
        spb.JoinRoomRequest(room_id=j.room_id, name=j.name),
        metadata=conn.call_metadata(),
        timeout=conn.session_timeout,
    )
    room = joined.room
    host = room.host_player_id == joined.player_id
    binding = Binding(room.room_id, joined.seat_token, joined.player_id, "player", host)
    _bound(conn, binding, room, room.last_seq, None, reply_id)


async def spectate(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    meta, timeout = conn.call_metadata(), conn.session_timeout
    watched = await conn.session.Spectate(
        spb.SpectateRequest(room_id=msg.spectate.room_id), metadata=meta, timeout=timeout
    )
    room = watched.room
    binding = Binding(room.room_id, watched.spectator_token, "", "spectator", False)
    view: spb.GetViewResponse | None = None
    after_seq = room.last_seq
    if room.phase != spb.ROOM_PHASE_LOBBY:
        view = await conn.session.GetView(
            spb.GetViewRequest(token=binding.token), metadata=meta, timeout=timeout
        )
        after_seq = view.seq
    _bound(conn, binding, room, after_seq, view, reply_id)


async def resume(conn: Connection, msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    r = msg.resume
    view = await _authenticate(conn, r.token, reply_id)
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
    # With events missed, they come first; the stream's view follows them.
    missed = (view.HasField("view") or view.HasField("trick")) and r.after_seq < view.seq
    _bound(conn, binding, room, r.after_seq, None if missed else view, reply_id)


def _bound(
    conn: Connection,
    binding: Binding,
    room: spb.Room,
    after_seq: int,
    view: spb.GetViewResponse | None,
    reply_id: JsonId | None,
) -> None:
    """Answer ``joined``, send the room (and the view when there is one) and follow the room."""
    conn.binding = binding
    bind_rpc_fields(room_id=binding.room_id, player_id=binding.player_id)
    joined_msg = gw.Joined(
        room_id=binding.room_id,
        player_id=binding.player_id,
        token=binding.token,
        role=binding.role,
        host=binding.host,
    )
    conn.reply(reply_id, joined=joined_msg)
    follower = conn.follower
    follower.send_room(room, None, force=True)
    follower.last_seq = after_seq
    push = None if view is None else view_push(view)
    if view is not None and push is not None:
        follower.last_seq = max(follower.last_seq, view.seq)
        conn.deliver(Outgoing(gw.ServerMessage(view=push)))
    follower.follow(binding)


async def _authenticate(conn: Connection, token: str, reply_id: JsonId | None) -> spb.GetViewResponse | None:
    """GetView for a resume, within the budgets of failed tokens (None: refused, error sent)."""
    admission = conn.admission
    if admission is None:
        return await _get_view(conn, token)
    try:
        room_id: str | None = token_room(token)
    except ServiceError:
        room_id = None  # not even shaped like a token: counts against the address only
    refusal = admission.may_authenticate(conn.address, room_id)
    if refusal is not None:
        conn.send_refusal(refusal, reply_id)
        return None
    try:
        return await _get_view(conn, token)
    except grpc.RpcError as exc:
        if hasattr(exc, "code") and exc.code() == grpc.StatusCode.UNAUTHENTICATED:
            admission.authentication_failed(conn.address, room_id)
        raise


async def _get_view(conn: Connection, token: str) -> spb.GetViewResponse:
    return await conn.session.GetView(
        spb.GetViewRequest(token=token), metadata=conn.call_metadata(), timeout=conn.session_timeout
    )


async def leave(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    assert conn.binding is not None
    binding = conn.binding
    binding.leaving = True
    try:
        await conn.session.LeaveRoom(
            spb.LeaveRoomRequest(token=binding.token),
            metadata=conn.call_metadata(),
            timeout=conn.session_timeout,
        )
    finally:
        binding.leaving = False
    await conn.follower.stop()
    conn.unbind()
    conn.reply(reply_id, left=gw.Left(room_id=binding.room_id))


async def rematch(conn: Connection, _msg: gw.ClientMessage, reply_id: JsonId | None, _: float) -> None:
    """From a finished game to its rematch room (created by the first to ask, joined after)."""
    assert conn.binding is not None
    old = conn.binding
    answer = await conn.session.Rematch(
        spb.RematchRequest(token=old.token), metadata=conn.call_metadata(), timeout=conn.session_timeout
    )
    joined = answer.joined
    old.leaving = True  # the finished room's stream ends now: no news
    await conn.follower.stop()
    conn.unbind()
    room = joined.room
    host = room.host_player_id == joined.player_id
    binding = Binding(room.room_id, joined.seat_token, joined.player_id, "player", host)
    _bound(conn, binding, room, room.last_seq, None, reply_id)

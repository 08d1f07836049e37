"""The gateway's protobuf messages as the JSON client protocol, and client frames as messages.

The gateway's core works on ``ninetynine.gateway.v1`` messages only (``ClientMessage`` in,
``ServerMessage`` out). The WebSocket transport turns them into the JSON of
docs/client-protocol.md here, with the descriptor-driven codec of :mod:`ninetynine.common.codec`:
the keys, enum names and presence rules are declared in the ``.proto`` files. What is left here is
what no field option describes:

- a room list's entries are summaries of rooms (the host's display name looked up among the seats,
  the seat count, the mode of the options), and a replay is the session's log projected for
  clients (game events only, the private copy of each, names looked up per player);
- the client's request id is echoed as it came (a string or a number), after ``type``;
- options in client frames are parsed by the rules engine, so a key or value it does not know is
  a ``RuleError`` (INVALID_OPTION), as for a native client.

The frame is written by orjson, whose output for these values is the compact
``json.dumps(..., ensure_ascii=False)`` text byte for byte (tests/gateway/test_encoder_equivalence.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ninetynine.common.codec import Codec, Projection, camel, enum_json
from ninetynine.engine.convert import options_to_proto
from ninetynine.engine.rules import Options
from ninetynine.engine.v1 import events_pb2, game_pb2
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

__all__ = [
    "CLIENT_TYPES",
    "CODEC",
    "JsonId",
    "action_from_json",
    "client_from_json",
    "exact_copy",
    "server_bytes",
    "server_json",
    "server_text",
    "view_text",
]

# A client's request id as it came: a string or a non-negative integer.
JsonId = str | int

_ROOM_PHASE = enum_json(spb.RoomPhase.DESCRIPTOR)
_MODE = enum_json(game_pb2.Mode.DESCRIPTOR)


def _room_list(codec: Codec) -> Projection:
    def summary(room: spb.Room) -> dict[str, object]:
        host = next((s for s in room.seats if s.player_id == room.host_player_id), None)
        out: dict[str, object] = {
            "roomId": room.room_id,
            "phase": _ROOM_PHASE.get(room.phase, _ROOM_PHASE[0]),
            "hostName": (host.name or host.player_id) if host is not None else room.host_player_id,
            "seated": len(room.seats),
            "maxSeats": room.max_seats,
            "mode": _MODE.get(room.options.mode, _MODE[0]),
        }
        if room.HasField("rules"):
            out["rules"] = room.rules.name
        if room.game:
            out["game"] = room.game
        return out

    def room_list(msg: gw.RoomList) -> dict[str, object]:
        return {"rooms": [summary(r) for r in msg.rooms]}

    return room_list


def _replay(codec: Codec) -> Projection:
    event = codec.encoder(events_pb2.Event.DESCRIPTOR)

    def replay(msg: gw.Replay) -> dict[str, object]:
        log = msg.replay
        names = log.display_names
        return {
            "roomId": msg.room_id,
            "seed": str(log.seed),
            "players": [{"id": pid, "name": names.get(pid) or pid} for pid in log.player_ids],
            "events": [
                {"seq": e.seq, "event": event(e.game)}
                for e in log.events
                if e.WhichOneof("kind") == "game" and e.game.audience != events_pb2.AUDIENCE_EXCEPT
            ],
        }

    return replay


def _parse_options(raw: Any) -> game_pb2.Options:
    return options_to_proto(Options.from_mapping(raw))


CODEC = Codec(
    projections={"roomList": _room_list, "replay": _replay},
    parsers={game_pb2.Options.DESCRIPTOR.full_name: _parse_options},
)
_server = CODEC.encoder(gw.ServerMessage.DESCRIPTOR)
_frame = CODEC.encoder(gw.ServerMessage.DESCRIPTOR, frames=True)
_client = CODEC.decoder(gw.ClientMessage.DESCRIPTOR)
_action = CODEC.decoder(game_pb2.Action.DESCRIPTOR)


def exact_copy(data: bytes) -> bytes:
    """``data`` in an allocation of its own size, for bytes from orjson that are kept.

    ``orjson.dumps`` returns its whole work buffer (4 KiB for a small result) as the bytes object:
    harmless for a frame sent and dropped, ~4 KiB per entry in a cache.
    """
    return bytes(memoryview(data))


def server_json(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> dict[str, object]:
    """A server message as the JSON object of the protocol (``reply_id`` echoes the client's id)."""
    return _with_id(_server(msg), reply_id)


def _with_id(out: dict[str, Any], reply_id: JsonId | None) -> dict[str, Any]:
    if reply_id is None:
        return out
    with_id: dict[str, object] = {"type": out.pop("type"), "id": reply_id}
    with_id.update(out)
    return with_id


# orjson writes integers in [-2**63, 2**64 - 1]; every protobuf integer field fits, a client id
# is at most 2**53 - 1 (ninetynine.gateway.protocol.reply_id_of). Anything wider goes in as digits.
_ORJSON_INT_MIN = -(2**63)
_ORJSON_INT_MAX = 2**64 - 1


def server_bytes(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> bytes:
    """The WebSocket text frame's payload for ``msg``: compact JSON, UTF-8, non-ASCII unescaped.

    Byte for byte ``json.dumps(server_json(msg, reply_id), ensure_ascii=False,
    separators=(",", ":")).encode()``.
    """
    out = _with_id(_frame(msg), reply_id)
    if isinstance(reply_id, int) and not _ORJSON_INT_MIN <= reply_id <= _ORJSON_INT_MAX:
        out["id"] = orjson.Fragment(int.__repr__(reply_id))  # json.dumps writes ints this way
    return orjson.dumps(out)


def view_text(msg: gw.ServerMessage, field: str, view_json: bytes) -> bytes:
    """The payload of ``msg``, a ``view`` message without its game view, whose game view
    (ViewPush's ``field``, ``view`` or ``trick``) came as client JSON: :func:`server_bytes` of the
    whole message."""
    out = _frame(msg)
    out[camel(field)] = orjson.Fragment(view_json)  # ViewPush's last keys, after seq
    return orjson.dumps(out)


def server_text(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> str:
    """:func:`server_bytes` as ``str`` (the transports send the bytes; this is for callers that
    want text)."""
    return server_bytes(msg, reply_id).decode()


# The protocol's client message types: the ClientMessage oneof's fields, by the codec's rule.
CLIENT_TYPES = frozenset(camel(f.name) for f in gw.ClientMessage.DESCRIPTOR.oneofs_by_name["kind"].fields)


def client_from_json(raw: Mapping[str, Any]) -> gw.ClientMessage:
    """A schema-valid JSON client message as a ``ClientMessage`` (the id is kept by the caller).

    Raises ``RuleError`` (INVALID_OPTION) for options the rules engine refuses, ``ValueError`` for
    an unknown ``type``.
    """
    msg = gw.ClientMessage()
    _client(raw, msg)
    return msg


def action_from_json(raw: Mapping[str, Any], out: game_pb2.Action) -> None:
    """A client frame's ``action`` into ``out``."""
    _action(raw, out)


def view_push(update: spb.ViewUpdate | spb.GetViewResponse) -> gw.ViewPush | None:
    """The ``view`` message of the session's view of a room (its game's view field); None before
    the game starts."""
    if update.HasField("trick"):
        return gw.ViewPush(seq=update.seq, trick=update.trick)
    if update.HasField("view"):
        return gw.ViewPush(seq=update.seq, view=update.view)
    return None

"""The one converter between the gateway's protobuf messages and the JSON client protocol.

The gateway's core works on ``ninetynine.gateway.v1`` messages only (``ClientMessage`` in,
``ServerMessage`` out), whose game parts are the session's and the engine's own messages. The
gRPC transport sends them as they are; the WebSocket transport turns them into the JSON of
docs/client-protocol.md here, once per message. JSON coming in has already passed the JSON
Schema (:mod:`ninetynine.gateway.protocol`), so the client direction only maps names.

Two outputs share one set of builders: :func:`server_json` gives plain dicts (tests check them
against the schema), :func:`server_bytes` gives the frame itself. The frame is written by orjson,
whose output for these values is the compact ``json.dumps(..., ensure_ascii=False)`` text byte
for byte (tests/gateway/test_encoder_equivalence.py holds the two side by side). On the frame path
the parts that recur unchanged in message after message (options, seats, recent plays, cards,
actions) are serialized once per distinct protobuf encoding and spliced in as ``orjson.Fragment``:
a player's view differs per player, so the whole-message cache of
:mod:`ninetynine.gateway.encoding` cannot help there, but its parts repeat across viewers and moves.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

import orjson
from google.protobuf.message import Message

from ninetynine.engine.convert import options_from_proto, options_to_proto
from ninetynine.engine.rules import Options
from ninetynine.engine.v1 import events_pb2, game_pb2, state_pb2, view_pb2
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as spb

__all__ = [
    "JsonId",
    "action_json",
    "client_from_json",
    "event_json",
    "exact_copy",
    "options_json",
    "room_json",
    "room_summary_json",
    "server_bytes",
    "server_json",
    "server_text",
    "view_json",
]

# A client's request id as it came: a string or a non-negative integer.
JsonId = str | int

_MODE = {game_pb2.MODE_KR_PRODUCT: "kr-product", game_pb2.MODE_CLASSIC: "classic"}
_KIND = {
    game_pb2.CARD_KIND_ADD: "add",
    game_pb2.CARD_KIND_PLUS_MINUS: "plusMinus",
    game_pb2.CARD_KIND_REVERSE: "reverse",
    game_pb2.CARD_KIND_ZERO: "zero",
    game_pb2.CARD_KIND_HOLD: "hold",
    game_pb2.CARD_KIND_MINUS: "minus",
    game_pb2.CARD_KIND_ACE: "ace",
    game_pb2.CARD_KIND_TO99: "to99",
    game_pb2.CARD_KIND_JOKER: "joker",
}
_SIGN = {game_pb2.SIGN_PLUS: "+", game_pb2.SIGN_MINUS: "-"}
_SIGN_IN = {"+": game_pb2.SIGN_PLUS, "-": game_pb2.SIGN_MINUS}
_DIR_CHOICE = {game_pb2.DIRECTION_CHOICE_KEEP: "keep", game_pb2.DIRECTION_CHOICE_REVERSE: "reverse"}
_DIR_CHOICE_IN = {"keep": game_pb2.DIRECTION_CHOICE_KEEP, "reverse": game_pb2.DIRECTION_CHOICE_REVERSE}
_DIRECTION = {game_pb2.DIRECTION_CLOCKWISE: 1, game_pb2.DIRECTION_COUNTERCLOCKWISE: -1}
_ROUND_REASON = {
    events_pb2.ROUND_REASON_SETUP: "setup",
    events_pb2.ROUND_REASON_LIFE_LOST: "lifeLost",
    events_pb2.ROUND_REASON_RESET: "reset",
}
_ELIMINATION_REASON = {
    events_pb2.ELIMINATION_REASON_NO_PLAYABLE_CARD: "noPlayableCard",
    events_pb2.ELIMINATION_REASON_NO_LIVES_LEFT: "noLivesLeft",
    events_pb2.ELIMINATION_REASON_LOST_ON_THE_BOARD: "lostOnTheBoard",
}
_PHASE = {state_pb2.PHASE_PLAYING: "playing", state_pb2.PHASE_FINISHED: "finished"}
_ROOM_PHASE = {
    spb.ROOM_PHASE_LOBBY: "waiting",
    spb.ROOM_PHASE_PLAYING: "playing",
    spb.ROOM_PHASE_FINISHED: "finished",
}
_SNAPSHOT_REASON = {"GAP_TOO_OLD": "gapTooOld"}

# -- game values -------------------------------------------------------------------------------


def options_json(msg: game_pb2.Options) -> dict[str, object]:
    """Every spec §2 key with the value the engine writes (``auto`` kept, switches on/off)."""
    return options_from_proto(msg).to_mapping()


def card_json(card: game_pb2.Card) -> dict[str, object]:
    return {"id": card.id, "kind": _KIND.get(card.kind, "add"), "value": card.value, "face": card.face}


def choice_json(action: game_pb2.Action) -> dict[str, object]:
    """The choice part of an action (``{"sign": "-"}``; empty for cards without one)."""
    choice: dict[str, object] = {}
    if action.sign in _SIGN:
        choice["sign"] = _SIGN[action.sign]
    if action.HasField("ace_value"):
        choice["aceValue"] = action.ace_value
    if action.HasField("joker_value"):
        choice["jokerValue"] = action.joker_value
    if action.dir in _DIR_CHOICE:
        choice["dir"] = _DIR_CHOICE[action.dir]
    return choice


def action_json(action: game_pb2.Action) -> dict[str, object]:
    return {"cardId": action.card_id, **choice_json(action)}


def action_from_json(raw: Mapping[str, Any], out: game_pb2.Action) -> None:
    out.card_id = str(raw["cardId"])
    if "sign" in raw:
        out.sign = _SIGN_IN[raw["sign"]]
    if "aceValue" in raw:
        out.ace_value = int(raw["aceValue"])
    if "jokerValue" in raw:
        out.joker_value = int(raw["jokerValue"])
    if "dir" in raw:
        out.dir = _DIR_CHOICE_IN[raw["dir"]]


def _round_or_none(msg: Any, field: str) -> int | None:
    return int(getattr(msg, field)) if msg.HasField(field) else None


def player_json(p: view_pb2.PlayerView) -> dict[str, object]:
    """One seat of a view as everyone sees it."""
    return {
        "id": p.id,
        "name": p.name or p.id,
        "seat": p.seat,
        "handCount": p.hand_count,
        "lives": p.lives,
        "alive": p.alive,
        "onBoard": p.on_board,
        "livesLost": p.lives_lost,
        "eliminatedAtRound": _round_or_none(p, "eliminated_at_round"),
    }


def record_json(r: state_pb2.PlayRecord) -> dict[str, object]:
    """One of a view's recent plays."""
    return {
        "player": r.player_id,
        "cardId": r.action.card_id,
        "face": r.face,
        "before": r.before,
        "total": r.total,
        "choice": choice_json(r.action),
    }


def result_json(result: game_pb2.GameResult) -> dict[str, object]:
    return {
        "ranking": [
            {
                "player": r.player_id,
                "rank": r.rank,
                "livesLost": r.lives_lost,
                "eliminatedAtRound": _round_or_none(r, "eliminated_at_round"),
            }
            for r in result.ranking
        ],
        "winner": list(result.winner),
        "summary": result.summary,
        "summaryEn": result.summary_en,
        "finalTotal": result.final_total,
    }


# -- parts that recur unchanged ----------------------------------------------------------------


class _Parts(NamedTuple):
    """How the sub-messages that recur unchanged across messages become JSON values: plain dicts
    for :func:`server_json`, cached ``orjson.Fragment`` for :func:`server_bytes`."""

    options: Callable[[game_pb2.Options], object]
    card: Callable[[game_pb2.Card], object]
    action: Callable[[game_pb2.Action], object]
    choice: Callable[[game_pb2.Action], object]
    player: Callable[[view_pb2.PlayerView], object]
    record: Callable[[state_pb2.PlayRecord], object]


_M = TypeVar("_M", bound=Message)


def exact_copy(data: bytes) -> bytes:
    """``data`` in an allocation of its own size, for bytes from orjson that are kept.

    ``orjson.dumps`` returns its whole work buffer (4 KiB for a small result) as the bytes object:
    harmless for a frame sent and dropped, ~4 KiB per entry in a cache.
    """
    return bytes(memoryview(data))


class _Fragments(Generic[_M]):
    """``build`` as pre-serialized JSON, kept per distinct wire encoding of the message.

    The key is the message's own encoding and the fragment is built from the message parsed back
    from that key, so a kept fragment is always exactly what ``build`` makes of its key. Encoding a
    small message is one C call, cheaper than the field reads ``build`` makes. The oldest entry
    goes first when full (no LRU bookkeeping on hits): the entries that matter are either young
    (this move's seats and plays) or few (cards, actions, options). An OrderedDict because a plain
    dict slows down when its oldest keys are deleted over and over (each lookup of the first key
    walks over the holes left in front).
    """

    def __init__(self, cls: type[_M], build: Callable[[_M], dict[str, object]], max_entries: int) -> None:
        self._cls = cls
        self._build = build
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, orjson.Fragment] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, msg: _M) -> object:
        key = msg.SerializeToString()
        hit = self._entries.get(key)
        if hit is None:
            hit = orjson.Fragment(exact_copy(orjson.dumps(self._build(self._cls.FromString(key)))))
            if len(self._entries) >= self.max_entries:
                self._entries.popitem(last=False)
            self._entries[key] = hit
        return hit


_DICTS = _Parts(options_json, card_json, action_json, choice_json, player_json, record_json)


class _PublicViewText:
    """The JSON text of views' public part, kept per distinct encoding of that part.

    The players of a room get views of one state that differ only in their own fields (the public
    part is most of the text: seats, recent plays, options), so the public text is built once per
    move instead of once per player; a player's view text is it with the own keys appended.
    Oldest entries go first when full, like :class:`_Fragments`.
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def view(self, view: view_pb2.GameView) -> orjson.Fragment:
        """``view`` as the JSON text ``orjson.dumps(_view(view, _FRAGMENTS))`` makes, as a fragment."""
        public = view_pb2.GameView()
        public.CopyFrom(view)
        # Without the viewer's own fields it is the part the state's other viewers share.
        public.ClearField("viewer_id")
        public.ClearField("hand")
        public.ClearField("my_turn")
        public.ClearField("legal_plays")
        key = public.SerializeToString()
        text = self._entries.get(key)
        if text is None:
            text = exact_copy(orjson.dumps(_public_view(public, _FRAGMENTS)))
            if len(self._entries) >= self.max_entries:
                self._entries.popitem(last=False)
            self._entries[key] = text
        # Both texts are objects: "{public}" and "{own}" make "{public,own}" (own is never empty).
        return orjson.Fragment(text[:-1] + b"," + orjson.dumps(_own_view(view, _FRAGMENTS))[1:])


# Sizes: a room's recent plays and seats stay live for ~10 moves, so these hold a few thousand
# rooms' worth; cards, actions and options come from small fixed sets.
_FRAGMENTS = _Parts(
    options=_Fragments(game_pb2.Options, options_json, 256).get,
    card=_Fragments(game_pb2.Card, card_json, 1024).get,
    action=_Fragments(game_pb2.Action, action_json, 4096).get,
    choice=_Fragments(game_pb2.Action, choice_json, 4096).get,
    player=_Fragments(view_pb2.PlayerView, player_json, 8192).get,
    record=_Fragments(state_pb2.PlayRecord, record_json, 8192).get,
)
_PUBLIC_VIEWS = _PublicViewText(512)  # a move's views arrive within milliseconds of each other


# -- events and views --------------------------------------------------------------------------


def event_json(event: events_pb2.Event, source: str = "") -> dict[str, object]:
    """An engine event as ``Event.to_dict()`` writes it (``{"type": ..., **data}``)."""
    return _event(event, source, _DICTS)


def _event(event: events_pb2.Event, source: str, parts: _Parts) -> dict[str, object]:
    kind = event.WhichOneof("payload")
    if kind == "card_played":  # the most frequent kinds first
        p = event.card_played
        played: dict[str, object] = {
            "type": "cardPlayed",
            "player": p.player_id,
            "cardId": p.action.card_id,
            "face": p.face,
            "kind": _KIND.get(p.kind, "add"),
            "before": p.before,
            "total": p.total,
            "choice": parts.choice(p.action),
            "seq": p.seq,
        }
        if source:
            played["source"] = source
        return played
    if kind == "turn_started":
        t = event.turn_started
        return {
            "type": "turnStarted",
            "player": t.player_id,
            "total": t.total,
            "direction": _DIRECTION.get(t.direction, 1),
            "turnStartedAt": t.turn_started_at_ms,
            "deadline": t.deadline_ms,
        }
    if kind == "card_drawn":
        c = event.card_drawn
        drawn: dict[str, object] = {"type": "cardDrawn", "player": c.player_id}
        if c.HasField("card"):
            drawn["card"] = parts.card(c.card)
        return drawn
    if kind == "game_started":
        g = event.game_started
        return {
            "type": "gameStarted",
            "stateVersion": g.state_version,
            "mode": _MODE.get(g.mode, "kr-product"),
            "options": parts.options(g.options),
            "seats": list(g.seats),
            "handSize": g.hand_size,
            "lives": g.lives,
            "deckSize": g.deck_size,
            "seedCommitment": g.seed_commitment,
        }
    if kind == "hand_dealt":
        h = event.hand_dealt
        card = parts.card
        return {
            "type": "handDealt",
            "player": h.player_id,
            "round": h.round,
            "cards": [card(c) for c in h.cards],
        }
    if kind == "round_started":
        r = event.round_started
        return {
            "type": "roundStarted",
            "round": r.round,
            "starter": r.starter,
            "total": r.total,
            "reason": _ROUND_REASON.get(r.reason, "setup"),
            "handCounts": {c.player_id: c.count for c in r.hand_counts},
            "drawPileCount": r.draw_pile_count,
        }
    if kind == "direction_changed":
        d = event.direction_changed
        return {
            "type": "directionChanged",
            "player": d.player_id,
            "direction": _DIRECTION.get(d.direction, 1),
        }
    if kind == "reshuffled":
        return {"type": "reshuffled", "count": event.reshuffled.count, "total": event.reshuffled.total}
    if kind == "life_lost":
        lost = event.life_lost
        return {
            "type": "lifeLost",
            "player": lost.player_id,
            "left": lost.left,
            "onBoard": lost.on_board,
            "total": lost.total,
        }
    if kind == "eliminated":
        e = event.eliminated
        return {
            "type": "eliminated",
            "player": e.player_id,
            "round": e.round,
            "handCount": e.hand_count,
            "total": e.total,
            "reason": _ELIMINATION_REASON.get(e.reason, "noPlayableCard"),
            "remaining": e.remaining,
        }
    if kind == "game_finished":
        f = event.game_finished
        return {"type": "gameFinished", **result_json(f.result), "seed": str(f.seed)}
    raise ValueError(f"event without a payload: {event!r}")


def view_json(view: view_pb2.GameView) -> dict[str, object]:
    """``player_view`` of the rules engine (spectators: the public view with ``viewer: null``)."""
    return _view(view, _DICTS)


def _view(view: view_pb2.GameView, parts: _Parts) -> dict[str, object]:
    return {**_public_view(view, parts), **_own_view(view, parts)}


def _public_view(view: view_pb2.GameView, parts: _Parts) -> dict[str, object]:
    """The keys of a view every viewer of the same state gets alike (``viewer`` and after excluded)."""
    player, record = parts.player, parts.record
    out: dict[str, object] = {
        "stateVersion": view.state_version,
        "mode": _MODE.get(view.mode, "kr-product"),
        "options": parts.options(view.options),
        "seq": view.seq,
        "phase": _PHASE.get(view.phase, "playing"),
        "round": view.round,
        "total": view.total,
        "direction": _DIRECTION.get(view.direction, 1),
        "current": view.current,
        "turnStartedAt": view.turn_started_at_ms,
        "deadline": view.deadline_ms,
        "players": [player(p) for p in view.players],
        "eliminationOrder": list(view.elimination_order),
        "drawPileCount": view.draw_pile_count,
        "discardCount": view.discard_count,
        "recentPlays": [record(r) for r in view.recent_plays],
        "seedCommitment": view.seed_commitment,
    }
    if view.phase == state_pb2.PHASE_FINISHED:
        out["seed"] = str(view.seed)
        out["result"] = result_json(view.result)
    return out


def _own_view(view: view_pb2.GameView, parts: _Parts) -> dict[str, object]:
    """The keys after the public ones: ``viewer``, and a seated viewer's hand and legal plays."""
    if not view.viewer_id:
        return {"viewer": None}
    action = parts.action
    out: dict[str, object] = {"viewer": view.viewer_id}
    hand: list[dict[str, object]] = []
    for entry in view.hand:
        card: dict[str, object] = {
            "card": parts.card(entry.card),
            "playable": entry.playable,
            "choices": [
                {
                    "action": action(c.action),
                    "result": c.result_total,
                    "legal": c.legal,
                    "reason": c.reason or None,
                }
                for c in entry.choices
            ],
        }
        if entry.HasField("joker_min") and entry.HasField("joker_max"):
            card["jokerRange"] = {"min": entry.joker_min, "max": entry.joker_max}
        hand.append(card)
    out["hand"] = hand
    out["myTurn"] = view.my_turn
    out["legalPlays"] = [{"action": action(p.action), "result": p.result_total} for p in view.legal_plays]
    return out


# -- rooms -------------------------------------------------------------------------------------


def room_json(room: spb.Room) -> dict[str, object]:
    return _room(room, _DICTS)


def _room(room: spb.Room, parts: _Parts) -> dict[str, object]:
    return {
        "roomId": room.room_id,
        "phase": _ROOM_PHASE.get(room.phase, "waiting"),
        "hostId": room.host_player_id,
        "options": parts.options(room.options),
        "seats": [
            {"playerId": s.player_id, "name": s.name or s.player_id, "bot": s.bot, "connected": s.connected}
            for s in room.seats
        ],
        "maxSeats": room.max_seats,
        "spectators": room.spectator_count,
    }


def room_summary_json(room: spb.Room) -> dict[str, object]:
    host = next((s for s in room.seats if s.player_id == room.host_player_id), None)
    return {
        "roomId": room.room_id,
        "phase": _ROOM_PHASE.get(room.phase, "waiting"),
        "hostName": (host.name or host.player_id) if host is not None else room.host_player_id,
        "seated": len(room.seats),
        "maxSeats": room.max_seats,
        "mode": _MODE.get(room.options.mode, "kr-product"),
    }


def replay_json(room_id: str, replay: spb.GetReplayResponse) -> dict[str, object]:
    """The finished game's log: every event once (a private event, not its redacted twin)."""
    return _replay(room_id, replay, _DICTS)


def _replay(room_id: str, replay: spb.GetReplayResponse, parts: _Parts) -> dict[str, object]:
    names = replay.display_names
    events = [
        {"seq": e.seq, "event": _event(e.game, "", parts)}
        for e in replay.events
        if e.WhichOneof("kind") == "game" and e.game.audience != events_pb2.AUDIENCE_EXCEPT
    ]
    return {
        "roomId": room_id,
        "seed": str(replay.seed),
        "players": [{"id": pid, "name": names.get(pid) or pid} for pid in replay.player_ids],
        "events": events,
    }


# -- whole messages ----------------------------------------------------------------------------


def server_json(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> dict[str, object]:
    """A server message as the JSON object of the protocol (``reply_id`` echoes the client's id)."""
    return _server(msg, reply_id, _DICTS)


def _server(msg: gw.ServerMessage, reply_id: JsonId | None, parts: _Parts) -> dict[str, object]:
    kind = msg.WhichOneof("kind")
    body: dict[str, object]
    if kind == "event":  # the most frequent kinds first
        body = {"seq": msg.event.seq, "event": _event(msg.event.event, msg.event.source, parts)}
    elif kind == "view":
        view = msg.view.view
        body = {
            "seq": msg.view.seq,
            "view": _PUBLIC_VIEWS.view(view) if parts is _FRAGMENTS else _view(view, parts),
        }
    elif kind == "played":
        body = {"clientSeq": msg.played.client_seq, "seq": msg.played.seq}
    elif kind == "room":
        body = {"room": _room(msg.room.room, parts)}
    elif kind == "welcome":
        w = msg.welcome
        body = {
            "protocolVersion": w.protocol_version,
            "heartbeatSeconds": w.heartbeat_seconds,
            "maxMessageBytes": w.max_message_bytes,
            "lang": w.lang,
        }
    elif kind == "joined":
        j = msg.joined
        spectator = j.role == "spectator"
        body = {
            "roomId": j.room_id,
            "playerId": None if spectator else j.player_id,
            "token": j.token,
            "role": j.role,
            "host": j.host and not spectator,
        }
    elif kind == "rooms":
        body = {"rooms": [room_summary_json(r) for r in msg.rooms.rooms]}
    elif kind == "snapshot":
        body = {
            "seq": msg.snapshot.seq,
            "reason": _SNAPSHOT_REASON.get(msg.snapshot.reason, "gapTooOld"),
        }
    elif kind == "left":
        body = {"roomId": msg.left.room_id}
    elif kind == "replay":
        body = _replay(msg.replay.room_id, msg.replay.replay, parts)
    elif kind == "pong":
        body = {}
    elif kind == "goodbye":
        body = {"reason": msg.goodbye.reason, "retryAfterMs": msg.goodbye.retry_after_ms}
    elif kind == "error":
        e = msg.error
        body = {"reason": e.reason, "message": e.message, "metadata": dict(e.metadata), "fatal": e.fatal}
    else:
        raise ValueError(f"server message without a kind: {msg!r}")
    out: dict[str, object] = {"type": kind}
    if reply_id is not None:
        out["id"] = reply_id
    out.update(body)
    return out


# orjson writes integers in [-2**63, 2**64 - 1]; every protobuf integer field fits, a client id
# is at most 2**53 - 1 (ninetynine.gateway.protocol.reply_id_of). Anything wider goes in as digits.
_ORJSON_INT_MIN = -(2**63)
_ORJSON_INT_MAX = 2**64 - 1


def server_bytes(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> bytes:
    """The WebSocket text frame's payload for ``msg``: compact JSON, UTF-8, non-ASCII unescaped.

    Byte for byte ``json.dumps(server_json(msg, reply_id), ensure_ascii=False,
    separators=(",", ":")).encode()``, built for a fraction of its cost.
    """
    out = _server(msg, reply_id, _FRAGMENTS)
    if isinstance(reply_id, int) and not _ORJSON_INT_MIN <= reply_id <= _ORJSON_INT_MAX:
        out["id"] = orjson.Fragment(int.__repr__(reply_id))  # json.dumps writes ints this way
    return orjson.dumps(out)


def server_text(msg: gw.ServerMessage, reply_id: JsonId | None = None) -> str:
    """:func:`server_bytes` as ``str`` (the transports send the bytes; this is for callers that
    want text)."""
    return server_bytes(msg, reply_id).decode()


_CLIENT_FIELDS = {
    "hello": "hello",
    "createRoom": "create_room",
    "joinRoom": "join_room",
    "spectate": "spectate",
    "resume": "resume",
    "listRooms": "list_rooms",
    "addBot": "add_bot",
    "startGame": "start_game",
    "leaveRoom": "leave_room",
    "play": "play",
    "getReplay": "get_replay",
    "ping": "ping",
}
CLIENT_TYPES = frozenset(_CLIENT_FIELDS)
# The protocol's type name of each ClientMessage oneof field (for logs and metrics).
CLIENT_TYPE_OF_FIELD = {field: name for name, field in _CLIENT_FIELDS.items()}


def client_from_json(raw: Mapping[str, Any]) -> gw.ClientMessage:
    """A schema-valid JSON client message as a ``ClientMessage`` (the id is kept by the caller).

    Options go through the rules engine's own parser, so a key or value it does not know is a
    ``RuleError`` (INVALID_OPTION), exactly as for a native client.
    """
    kind = str(raw["type"])
    msg = gw.ClientMessage()
    if kind == "hello":
        msg.hello.lang = str(raw.get("lang", "ko"))
        msg.hello.client = str(raw.get("client", ""))
    elif kind == "createRoom":
        msg.create_room.name = str(raw["name"])
        msg.create_room.seats = int(raw["seats"])
        options = Options.from_mapping(raw.get("options", {}))
        msg.create_room.options.CopyFrom(options_to_proto(options))
    elif kind == "joinRoom":
        msg.join_room.room_id = str(raw["roomId"])
        msg.join_room.name = str(raw["name"])
    elif kind == "spectate":
        msg.spectate.room_id = str(raw["roomId"])
    elif kind == "resume":
        msg.resume.token = str(raw["token"])
        msg.resume.after_seq = int(raw["afterSeq"])
    elif kind == "play":
        msg.play.client_seq = int(raw["clientSeq"])
        if "moveSeq" in raw:
            msg.play.expected_move_seq = int(raw["moveSeq"])
        action_from_json(raw["action"], msg.play.action)
    elif kind == "getReplay":
        msg.get_replay.room_id = str(raw["roomId"])
    elif kind in _CLIENT_FIELDS:
        getattr(msg, _CLIENT_FIELDS[kind]).SetInParent()
    else:
        raise ValueError(f"unknown client message type {kind!r}")
    return msg

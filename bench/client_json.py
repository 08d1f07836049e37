"""One move's client JSON frames: the descriptor-driven codec against a plain dump of ready dicts.

Each move of a game makes the gateway write, for a four-seat room, the ``cardPlayed`` event push
and each seat's view (the spectator's is one more view). The messages are those of real games:
the rules engine plays random kr-product and classic games, the engine's converters build the
protobuf events and views the session pushes, wrapped as the gateway wraps them. Each timed call
encodes one move's five frames (the event and four views), cycling through the moves in game
order, so anything kept from one message to the next is used as on the real path.

Baseline: ``orjson.dumps`` of the same five frames' JSON objects built beforehand, the cost of
writing the text alone. ``json.dumps`` (the stdlib) is shown for scale. The codec case is
:func:`ninetynine.gateway.convert.server_bytes`, protobuf in, frame bytes out.

The last two cases follow a move's four seats' views from the committed state to the frames,
session and gateway together, on the same states: as messages (the session's view parts, the
gateway's parse and encoding: what a gRPC client's views cost) and as JSON (the session's
``view_json``, the gateway's frame of it: what a WebSocket client's cost).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import orjson
from google.protobuf.message import Message

from bench.framework import Report
from ninetynine.engine.convert import events_into, view_into
from ninetynine.engine.rules import (
    CLASSIC,
    KR,
    GameState,
    Options,
    Phase,
    Rng,
    apply,
    player_view,
    seed_rng,
    setup,
)
from ninetynine.engine.simulate import random_action
from ninetynine.engine.v1 import engine_service_pb2 as epb
from ninetynine.engine.v1 import view_pb2
from ninetynine.gateway.convert import server_bytes, server_json, view_push, view_text
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session import games
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.views import Shared, client_view_json

SEATS = ("p1", "p2", "p3", "p4")
NAMES = {"p1": "김민준", "p2": "이서연", "p3": "박도윤", "p4": "최지우"}
START_MS = 1_767_000_000_000
GAMES = 12


def move_messages(states: list[tuple[GameState, int]] | None = None) -> list[list[gw.ServerMessage]]:
    """Per move of several whole games: its cardPlayed push and the four seats' views (and, into
    ``states``, the state after the move with its event seq)."""
    moves: list[list[gw.ServerMessage]] = []
    rng = Rng(seed_rng(99))
    for game in range(GAMES):
        options = Options(mode=KR if game % 2 == 0 else CLASSIC)
        names = dict(NAMES)
        state, _ = setup(list(SEATS), options, seed=game + 2**63, now_ms=START_MS, names=names)
        seq = 0
        while state.phase is not Phase.FINISHED:
            now = START_MS + 2_500 * (state.seq + 1)
            state, events = apply(state, state.current, random_action(state, rng), now_ms=now)
            holder = epb.SetupResponse()
            events_into(events, holder.events)
            played = next(e for e in holder.events if e.HasField("card_played"))
            seq += len(holder.events)
            frames = [gw.ServerMessage(event=gw.EventPush(seq=seq, event=played, source="player"))]
            for viewer in SEATS:
                view = view_pb2.GameView()
                view_into(player_view(state, viewer), state.options, view, "ko")
                frames.append(gw.ServerMessage(view=gw.ViewPush(seq=seq, view=view)))
            moves.append(frames)
            if states is not None:
                states.append((state, seq))
    return moves


ADDING = games.REGISTRY[games.ADDING]
_VIEW_FIELD = spb.ViewUpdate.DESCRIPTOR.fields_by_name["view"].number


def views_as_messages(state: GameState, seq: int) -> list[bytes]:
    """The four seats' view frames as a gRPC subscriber's views travel: the session's public part
    once and each seat's own part, serialized; the gateway's parse, ``ViewPush`` and encoding."""
    public = ADDING.public_view(state, 0).SerializeToString()
    frames = []
    for viewer in SEATS:
        own = ADDING.private_view(state, viewer, "ko").SerializeToString()
        update = spb.ViewUpdate(seq=seq)
        update.view.MergeFromString(public + own)
        wire = update.SerializeToString()
        push = view_push(spb.ViewUpdate.FromString(wire))
        assert push is not None
        frames.append(server_bytes(gw.ServerMessage(view=push)))
    return frames


def views_as_json(state: GameState, seq: int) -> list[bytes]:
    """The same frames as a WebSocket subscriber's views travel (``view_json``)."""
    shared = Shared(spb.Room())
    frames = []
    for viewer in SEATS:

        def whole(viewer: str = viewer) -> Message:  # not called: the rules write every seat's JSON
            view = ADDING.public_view(state, 0)
            view.MergeFrom(ADDING.private_view(state, viewer, "ko"))
            return view

        text = client_view_json(ADDING, state, viewer, shared, 0, whole)
        update = spb.ViewUpdate.FromString(spb.ViewUpdate(seq=seq, view_json=text).SerializeToString())
        frames.append(view_text(gw.ServerMessage(view=gw.ViewPush(seq=update.seq)), "view", update.view_json))
    return frames


def run(report: Report) -> None:
    states: list[tuple[GameState, int]] = []
    moves = move_messages(states)
    for state, seq in states[:50]:  # the two paths make the same frames
        assert views_as_json(state, seq) == views_as_messages(state, seq)
    dicts = [[server_json(m) for m in move] for move in moves]
    size = sum(len(server_bytes(m)) for move in moves for m in move) / len(moves)
    report.begin_suite(
        "client_json",
        f"one move's frames (cardPlayed push + 4 seats' views, {size:.0f} bytes), {len(moves)} moves cycled",
    )

    def dump(i: int) -> Callable[[], object]:
        ready = dicts[i % len(dicts)]
        return lambda: [orjson.dumps(d) for d in ready]

    def stdlib(i: int) -> Callable[[], object]:
        ready = dicts[i % len(dicts)]
        return lambda: [json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode() for d in ready]

    def encode(i: int) -> Callable[[], object]:
        move = moves[i % len(moves)]
        return lambda: [server_bytes(m) for m in move]

    samples = 3000
    report.time_calls("orjson.dumps of the 5 prebuilt dicts", dump, samples=samples, baseline=True)
    report.time_calls("json.dumps of the 5 prebuilt dicts", stdlib, samples=samples)
    report.time_calls("server_bytes: 5 protobuf messages -> frames", encode, samples=samples)

    def as_messages(i: int) -> Callable[[], object]:
        state, seq = states[i % len(states)]
        return lambda: views_as_messages(state, seq)

    def as_json(i: int) -> Callable[[], object]:
        state, seq = states[i % len(states)]
        return lambda: views_as_json(state, seq)

    report.time_calls("4 seats' views, messages (session+gateway)", as_messages, samples=samples)
    report.time_calls("4 seats' views, JSON (session+gateway)", as_json, samples=samples)

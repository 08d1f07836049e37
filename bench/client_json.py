"""One move's client JSON frames: the descriptor-driven codec against a plain dump of ready dicts.

Each move of a game makes the gateway write, for a four-seat room, the ``cardPlayed`` event push
and each seat's view (the spectator's is one more view). The messages are those of real games:
the rules engine plays random kr-product and classic games, the engine's converters build the
protobuf events and views the session pushes, wrapped as the gateway wraps them. Each timed call
encodes one move's five frames (the event and four views), cycling through the moves in game
order, so anything kept from one message to the next is used as on the real path.

Baseline: ``orjson.dumps`` of the same five frames' JSON objects built beforehand, the cost of
writing the text alone. ``json.dumps`` (the stdlib, as the gateway once wrote frames) is shown
for scale. The codec case is :func:`ninetynine.gateway.convert.server_bytes`, protobuf in,
frame bytes out.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import orjson

from bench.framework import Report
from ninetynine.engine.convert import events_into, view_into
from ninetynine.engine.rules import CLASSIC, KR, Options, Phase, Rng, apply, player_view, seed_rng, setup
from ninetynine.engine.simulate import random_action
from ninetynine.engine.v1 import engine_service_pb2 as epb
from ninetynine.engine.v1 import view_pb2
from ninetynine.gateway.convert import server_bytes, server_json
from ninetynine.gateway.v1 import gateway_service_pb2 as gw

SEATS = ("p1", "p2", "p3", "p4")
NAMES = {"p1": "김민준", "p2": "이서연", "p3": "박도윤", "p4": "최지우"}
START_MS = 1_767_000_000_000
GAMES = 12


def move_messages() -> list[list[gw.ServerMessage]]:
    """Per move of several whole games: its cardPlayed push and the four seats' views."""
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
    return moves


def run(report: Report) -> None:
    moves = move_messages()
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

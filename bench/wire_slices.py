"""The session's reads of serialized messages without a parse, against protobuf's parse of the same bytes.

Per move the session takes the committed game state out of the room document's bytes (the engine
request carries it as it is, ``RoomCache.state_wire``), and each subscriber reads ``batch_end`` of
every stored event it passes on (``subscriptions.batch_end``). The documents are built as the
session commits them, from random kr-product games: the engine's state after the move and the
replay's list of every move so far, which grows through the game; the read stops at the state, so
its cost does not grow with the list. Baseline: ``RoomDocument.FromString`` of the document at the
game's first move, the parse these reads stand in for.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.framework import Report
from ninetynine.common.wire import first_payload
from ninetynine.engine import convert
from ninetynine.engine.rules import Options, Rng, apply, seed_rng, setup
from ninetynine.engine.simulate import PLAY_STREAM, random_action
from ninetynine.session.subscriptions import batch_end
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

SAMPLES = 20_000
START_MS = 1_767_000_000_000
_STATE = doc_pb.RoomDocument.DESCRIPTOR.fields_by_name["state"].number


def documents(seed: int, at_moves: tuple[int, ...]) -> dict[int, bytes]:
    """A four-seat room's committed document after each of ``at_moves`` moves of one random game."""
    seats = ["p1", "p2", "p3", "p4"]
    state, _ = setup(seats, Options(), seed=seed, now_ms=START_MS)
    rng = Rng(seed_rng(seed, PLAY_STREAM))
    doc = doc_pb.RoomDocument(room_id="bench-room", max_seats=4, game="adding")
    for seat in seats:
        doc.seats.add(player_id=seat)
    out: dict[int, bytes] = {}
    while not state.finished and len(out) < len(at_moves):
        player, action = state.current, random_action(state, rng)
        now = START_MS + 3_000 * (len(doc.moves) + 1)
        move = doc.moves.add(player_id=player, source="player", at_ms=now)
        convert.action_into(action, move.action)
        state, _ = apply(state, player, action, now_ms=now)
        doc.last_seq += 3
        if len(doc.moves) in at_moves:
            doc.ClearField("state")
            convert.state_into(state, doc.state)
            out[len(doc.moves)] = doc.SerializeToString()
    return out


def state_read(data: bytes) -> Callable[[int], Callable[[], object]]:
    return lambda _i: lambda: first_payload(data, _STATE)


def run(report: Report) -> None:
    report.begin_suite("wire_slices", "µs per read of serialized bytes (baseline: parse of the document)")
    at_moves = (1, 10, 20)
    docs = next(d for d in (documents(seed, at_moves) for seed in range(100)) if len(d) == len(at_moves))
    report.note(f"document bytes at moves {at_moves}: {[len(docs[m]) for m in at_moves]}")
    report.time_calls(
        "RoomDocument.FromString, move 1",
        lambda _i: lambda: doc_pb.RoomDocument.FromString(docs[1]),
        samples=SAMPLES,
        baseline=True,
    )
    for moves in at_moves:
        report.time_calls(f"state of the document, move {moves}", state_read(docs[moves]), samples=SAMPLES)
    event = pb.RoomEvent(seq=1_234, at_ms=START_MS, batch_end=True, source="player")
    event.game.card_played.player_id = "p3"
    payload = event.SerializeToString()
    report.time_calls("batch_end of a stored event", lambda _i: lambda: batch_end(payload), samples=SAMPLES)

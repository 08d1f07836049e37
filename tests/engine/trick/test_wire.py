"""The trick game's client JSON: every view and event dict of the rules core, decoded into its
protobuf message by the descriptor-driven codec and encoded back, is the same JSON byte for byte
(trick.proto's ``json_options`` describe exactly what view.py and game.py write)."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from ninetynine.common.codec import Codec
from ninetynine.engine import trick_wire
from ninetynine.engine.trick import (
    TrickError,
    TrickOptions,
    TrickState,
    apply,
    pending,
    player_view,
    setup,
    timeout_action,
)
from ninetynine.engine.trick.validate import validate_state
from ninetynine.engine.v1 import events_pb2, trick_pb2

from .builders import SEATS, random_policy

VIEW = trick_pb2.TrickView.DESCRIPTOR


def _same_json(codec: Codec, value: dict[str, Any], message: Message) -> None:
    """The codec's reader (what the engine uses) and its client-frame decoder both give back a
    message whose JSON is ``value``, byte for byte."""
    read = type(message)()
    descriptor: Any = read.DESCRIPTOR  # the stubs and upb disagree on descriptor types
    codec.reader(descriptor)(value, read)
    assert orjson.dumps(codec.encode(read)) == orjson.dumps(value)
    decoded = codec.decode(value, message)
    assert orjson.dumps(codec.encode(decoded)) == orjson.dumps(value)


def _views(codec: Codec, frames: Codec, s: TrickState) -> None:
    for viewer in (*SEATS, None, "not-seated"):
        view = player_view(s, viewer)
        _same_json(codec, view, trick_pb2.TrickView())
        # The frame encoder (kept texts shared between the viewers of one state) agrees.
        msg = codec.decode(view, trick_pb2.TrickView())
        assert orjson.loads(orjson.dumps(frames.part(VIEW, frozenset(), True)(msg))) == view


@pytest.mark.parametrize("seed", range(6))
def test_views_and_events_map_to_protobuf_and_back_exactly(seed: int) -> None:
    codec, frames = Codec(), Codec()
    options = TrickOptions(trumps="byContracts" if seed % 2 else "none", max_deals=9)
    s, events = setup(SEATS, options, seed=seed, now_ms=1_000)
    policy = random_policy(random.Random(seed), announce_chance=0.3)
    seen: set[str] = set()
    moves = 0
    while True:
        for event in events:
            seen.add(event.type)
            _same_json(codec, event.to_dict(), events_pb2.Event())
        if moves % 5 == 0 or s.finished:
            _views(codec, frames, s)
        if s.finished:
            break
        player = pending(s)[0]
        s, events = apply(s, player, policy(s, player), now_ms=2_000 + moves)
        moves += 1
    assert {"trickGameStarted", "bidPlaced", "trickWon", "dealScored", "trickGameFinished"} <= seen


def test_a_viewer_not_seated_sees_the_spectator_view() -> None:
    """Anyone not seated gets ``viewer: null`` and no private keys, as a spectator."""
    s, _ = setup(SEATS, seed=3)
    assert player_view(s, "someone") == player_view(s, None)
    assert player_view(s, None)["viewer"] is None


@pytest.mark.parametrize("seed", range(8))
def test_every_state_of_a_match_survives_the_wire_and_passes_validation(seed: int) -> None:
    """state_into then state_from_proto gives the same state back (validated on the way in)."""
    options = TrickOptions(trumps="byContracts" if seed % 2 else "none", max_deals=9, ties="playOn")
    s, _ = setup(SEATS, options, seed=seed, now_ms=5, names={"a": "Ann"})
    policy = random_policy(random.Random(seed), announce_chance=0.3)
    moves = 0
    while True:
        msg = trick_pb2.TrickState()
        trick_wire.state_into(s, msg)
        assert trick_wire.state_from_proto(msg) == s
        if s.finished:
            break
        player = pending(s)[-1]
        s, _ = apply(s, player, policy(s, player), now_ms=10 + moves)
        moves += 1


def test_validation_refuses_what_the_rules_could_not_have_made() -> None:
    s, _ = setup(SEATS, seed=9)
    broken = s.clone()
    broken.scores["a"] = 5
    with pytest.raises(TrickError) as caught:
        validate_state(broken)
    assert caught.value.meta["detail"] == "scores are not the sum of the deals"
    moved = s.clone()
    moved.hands["a"] = [*moved.hands["a"], moved.hands["b"].pop()]
    with pytest.raises(TrickError):
        validate_state(moved)


def _states(seed: int) -> list[TrickState]:
    s, _ = setup(SEATS, TrickOptions(trumps="byContracts", max_deals=9), seed=seed)
    policy = random_policy(random.Random(seed), announce_chance=0.5)
    out = [s]
    while not s.finished:
        player = pending(s)[0]
        s, _ = apply(s, player, policy(s, player))
        out.append(s)
    return out


STATES = _states(5)
_SEAT_IDS = [*SEATS, "zz", ""]
_CARDS = ["6S", "AS", "10H", "KC", "7D", "5S", ""]


def _mutate(msg: trick_pb2.TrickState, data: st.DataObject) -> None:
    """One random change to one field of a state message, anywhere in it."""
    seat = msg.seats[data.draw(st.integers(0, 2))]
    choice = data.draw(st.integers(0, 17))
    if choice >= 15 and msg.deals:
        deal = msg.deals[data.draw(st.integers(0, len(msg.deals) - 1))]
        line = deal.lines[data.draw(st.integers(0, 2))]
        if choice == 15:
            deal.dealer = data.draw(st.sampled_from(_SEAT_IDS))
        elif choice == 16:
            deal.declarer = data.draw(st.sampled_from(_SEAT_IDS))
        else:
            line.bid[:] = data.draw(st.lists(st.sampled_from(_CARDS), max_size=4))
        return
    if choice == 0:
        seat.hand.append(data.draw(st.sampled_from(_CARDS)))
    elif choice == 1 and seat.hand:
        seat.hand[data.draw(st.integers(0, len(seat.hand) - 1))] = data.draw(st.sampled_from(_CARDS))
    elif choice == 2:
        seat.bid[:] = data.draw(st.lists(st.sampled_from(_CARDS), max_size=4))
    elif choice == 3:
        seat.revealed = not seat.revealed
    elif choice == 4:
        seat.tricks_won = data.draw(st.integers(0, 12))
    elif choice == 5:
        seat.score = data.draw(st.integers(-200, 200))
    elif choice == 6:
        msg.current = data.draw(st.sampled_from(_SEAT_IDS))
    elif choice == 7:
        msg.declarer = data.draw(st.sampled_from(_SEAT_IDS))
    elif choice == 8:
        msg.passed[:] = data.draw(st.lists(st.sampled_from(_SEAT_IDS), max_size=3))
    elif choice == 9:
        msg.leader = data.draw(st.sampled_from(_SEAT_IDS))
    elif choice == 10:
        msg.trick_number = data.draw(st.integers(0, 10))
    elif choice == 11:
        msg.last_trick.add(
            player_id=data.draw(st.sampled_from(_SEAT_IDS)), card_id=data.draw(st.sampled_from(_CARDS))
        )
    elif choice == 12:
        msg.trumps = data.draw(st.sampled_from(["", "S", "H", "X"]))
    elif choice == 13:
        msg.phase = trick_pb2.TrickPhase.ValueType(data.draw(st.integers(0, 5)))
    elif choice == 14:
        msg.trick.add(
            player_id=data.draw(st.sampled_from(_SEAT_IDS)), card_id=data.draw(st.sampled_from(_CARDS))
        )


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(STATES) - 1), data=st.data())
def test_a_changed_state_is_refused_or_still_playable(index: int, data: st.DataObject) -> None:
    """Whatever one field of a received state says, the engine refuses it as INVALID_STATE or
    can view it and take a decision on it; it never fails another way."""
    msg = trick_pb2.TrickState()
    trick_wire.state_into(STATES[index], msg)
    _mutate(msg, data)
    try:
        s = trick_wire.state_from_proto(msg)
    except TrickError as err:
        assert err.reason.value == "INVALID_STATE"
        return
    for viewer in (*SEATS, None):
        player_view(s, viewer)
    for player in pending(s):
        apply(s, player, timeout_action(s, player))

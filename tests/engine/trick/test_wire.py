"""The trick game's client JSON: every view and event dict of the rules core, decoded into its
protobuf message by the descriptor-driven codec and encoded back, is the same JSON byte for byte
(trick.proto's ``json_options`` describe exactly what view.py and game.py write)."""

from __future__ import annotations

import random

import orjson
import pytest

from ninetynine.common.codec import Codec
from ninetynine.engine.trick import TrickOptions, TrickState, apply, pending, player_view, setup
from ninetynine.engine.v1 import events_pb2, trick_pb2

from .builders import SEATS, random_policy

VIEW = trick_pb2.TrickView.DESCRIPTOR


def _same_json(codec: Codec, value: dict[str, object], message: object) -> None:
    decoded = codec.decode(value, message)  # type: ignore[arg-type]
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

"""Proto conversions: lossless round trips of real games, and garbage refused as INVALID_STATE."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ninetynine.engine import convert
from ninetynine.engine.errors import REASON_STATUS
from ninetynine.engine.rules import (
    CLASSIC,
    Action,
    Options,
    Reason,
    RuleError,
    apply,
    player_view,
    private_view,
    public_view,
    setup,
    timeout_action,
)
from ninetynine.engine.rules.errors import TEXTS
from ninetynine.engine.rules.presets import preset, preset_names, with_house_rules
from ninetynine.engine.server import MALFORMED_REQUEST, MALFORMED_REQUEST_TEXTS
from ninetynine.engine.v1 import engine_service_pb2 as engine_pb2
from ninetynine.engine.v1 import events_pb2, game_pb2, state_pb2, view_pb2
from tests.engine.rules.test_properties import options_strategy, seed_strategy
from tests.engine.service_fixtures import ROOT


@pytest.mark.parametrize(
    "options",
    [
        Options(),
        Options(mode=CLASSIC, lives=2, on_the_board=True, ace_high=10, deck_count=2),
        Options(after_elimination="reset", hand_size=3, start_total="zero", floor_at_zero="clamp"),
        Options(joker_range="0-99", special_counts=6, refill=False, turn_seconds=30),
    ],
)
def test_every_state_of_a_game_survives_the_wire(options: Options) -> None:
    state, _ = setup(["a", "b", "c"], options, seed=31, names={"a": "에이"})
    seen = 0
    while True:
        wire = state_pb2.State.FromString(convert.state_to_proto(state).SerializeToString())
        assert dataclasses.asdict(convert.state_from_proto(wire)) == dataclasses.asdict(state)
        if state.finished:
            break
        action = timeout_action(state)
        assert convert.action_from_proto(convert.action_to_proto(action)) == action
        state, _ = apply(state, state.current, action, now_ms=seen)
        seen += 1
    assert seen > 0


def test_options_unset_means_default_and_auto_stays_unset() -> None:
    assert convert.options_from_proto(game_pb2.Options()) == Options()
    out = convert.options_to_proto(Options())
    assert not out.HasField("hand_size") and not out.HasField("lives") and not out.HasField("deck_count")
    assert convert.options_from_proto(out) == Options()
    assert convert.options_from_proto(game_pb2.Options(lives=0)).lives == 0  # 0 is a value, not "unset"


def test_joker_value_zero_is_distinguishable_from_unset() -> None:
    assert convert.action_from_proto(game_pb2.Action(card_id="J-1", joker_value=0)) == Action(
        "J-1", joker_value=0
    )
    assert convert.action_from_proto(game_pb2.Action(card_id="J-1")) == Action("J-1")


@pytest.mark.parametrize(
    ("options", "option"),
    [
        (game_pb2.Options(mode=3), "mode"),  # type: ignore[arg-type]
        (game_pb2.Options(start_total=9), "startTotal"),  # type: ignore[arg-type]
        (game_pb2.Options(turn_seconds=11), "turnSeconds"),
        (game_pb2.Options(hand_size=0), "handSize"),
    ],
)
def test_bad_options_are_invalid_option(options: game_pb2.Options, option: str) -> None:
    with pytest.raises(RuleError) as caught:
        convert.options_from_proto(options)
    assert caught.value.reason is Reason.INVALID_OPTION and caught.value.meta["option"] == option


def test_garbage_states_raise_invalid_state_only() -> None:
    good, _ = setup(["a", "b"], seed=1)
    for mutate in (
        lambda s: s.ClearField("options"),
        lambda s: setattr(s, "direction", 0),
        lambda s: setattr(s, "phase", 77),
        lambda s: setattr(s.options, "mode", 8),
        lambda s: s.seats[0].hand.append("N1-1"),
        lambda s: setattr(s, "deck_count", 4_000_000_000),
        lambda s: setattr(s, "hand_size", 0),
    ):
        proto = convert.state_to_proto(good)
        mutate(proto)
        with pytest.raises(RuleError) as caught:
            convert.state_from_proto(proto)
        assert caught.value.reason is Reason.INVALID_STATE


def test_docs_error_table_matches_the_code() -> None:
    text = (ROOT / "docs" / "engine-api.md").read_text(encoding="utf-8")
    table = text.split("<!-- error-table:start -->")[1].split("<!-- error-table:end -->")[0]
    rows = {}
    for line in table.splitlines():
        match = re.fullmatch(r"\| `(\w+)` \| `(\w+)` \| (.*) \| (.*) \|", line.strip())
        if match:
            rows[match[1]] = (match[2], match[3], match[4])
    expected = {r.value: (REASON_STATUS[r].name, *TEXTS[r]) for r in Reason}
    expected[MALFORMED_REQUEST] = ("INVALID_ARGUMENT", *MALFORMED_REQUEST_TEXTS)
    assert rows == expected


@settings(max_examples=12, deadline=None)
@given(
    options=options_strategy,
    players=st.integers(min_value=2, max_value=5),
    seed=seed_strategy,
    lang=st.sampled_from(["ko", "en"]),
)
def test_public_bytes_then_private_bytes_read_as_the_whole_view(
    options: Options, players: int, seed: int, lang: str
) -> None:
    """The session sends a viewer the shared public part's bytes followed by the viewer's own
    part: for every viewer at every move (of a game's first 150), it must read back as the whole view."""
    seats = [f"p{i}" for i in range(players)]
    state, _ = setup(seats, options, seed=seed)
    for step in range(150):
        public = view_pb2.GameView()
        convert.public_view_into(public_view(state), public)
        public_bytes = public.SerializeToString()
        for viewer in [*seats, None, "stranger"]:
            whole = view_pb2.GameView()
            convert.view_into(player_view(state, viewer), state.options, whole, lang)  # type: ignore[arg-type]
            own = view_pb2.GameView()
            convert.private_view_into(private_view(state, viewer), state.options, own, lang)  # type: ignore[arg-type]
            assert view_pb2.GameView.FromString(public_bytes + own.SerializeToString()) == whole
        if state.finished:
            break
        state, _ = apply(state, state.current, timeout_action(state), now_ms=step)


@pytest.mark.parametrize("name", preset_names())
def test_the_rules_write_events_and_views_in_the_shape_the_client_reads(name: str) -> None:
    """One representation: what the rules write is, key for key, the client JSON of the message
    the engine sends, so the engine's readers and the gateway's encoders are one mapping read both
    ways. A renamed, added or dropped key in the rules or a ``.proto`` fails here."""
    from ninetynine.gateway.convert import CODEC as CLIENT_JSON

    event_json = CLIENT_JSON.encoder(events_pb2.Event.DESCRIPTOR)
    view_json = CLIENT_JSON.encoder(view_pb2.GameView.DESCRIPTOR)
    rules = with_house_rules(preset(name), "exact99Bonus", "noSameNumberTwice", "exact69Bonus")
    for seed in range(3):
        players = [f"p{i}" for i in range(min(rules.players) + seed % 2)]
        state, events = setup(players, seed=seed, rules=rules)
        moves = 0
        while True:
            sent = engine_pb2.ApplyResponse()
            convert.events_into(events, sent.events)
            assert [event_json(e) for e in sent.events] == [e.to_dict() for e in events]
            if moves % 5 == 0 or state.phase.value == "finished":
                for viewer in (None, *state.seats):
                    view = view_pb2.GameView()
                    convert.view_into(player_view(state, viewer), state.options, view, "en", state.rules)
                    assert view_json(view) == player_view(state, viewer)
            if state.phase.value == "finished":
                break
            state, events = apply(state, state.current, timeout_action(state), now_ms=moves * 1000)
            moves += 1

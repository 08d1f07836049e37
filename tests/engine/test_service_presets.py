"""Every preset through the real engine service: Setup by name (and house rules), then Apply,
View and Timeout from the rule set the state carries; ListRules; and refusals of unknown presets,
bad overrides and tampered rule sets."""

from __future__ import annotations

from collections import Counter
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine import convert
from ninetynine.engine.rules import CLASSIC, KR, PRESETS, Options
from ninetynine.engine.rules.presets import preset_names, rules_for
from ninetynine.engine.ruleset_proto import rules_from_wire, rules_to_proto
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import game_pb2, rules_pb2, state_pb2
from tests.engine.service_fixtures import only_error_info

C = grpc.StatusCode
EN = (("accept-language", "en"),)
MODES = (KR, CLASSIC)


def _players(name: str, count: int = 4) -> list[str]:
    rules = PRESETS.get(name)
    most = rules.players[1] if rules is not None else 10
    return [f"p{i}" for i in range(min(count, most))]


def _setup(stub: pb_grpc.EngineServiceStub, name: str, seed: int = 5, **kw: Any) -> pb.SetupResponse:
    request = pb.SetupRequest(player_ids=_players(name), rules=name, seed=seed, now_ms=1_000, **kw)
    response: pb.SetupResponse = stub.Setup(request, timeout=10)
    return response


def _round_trips(state: state_pb2.State) -> None:
    """The engine reads the state back as exactly what it wrote."""
    again = convert.state_to_proto(convert.state_from_proto(state))
    assert again.SerializeToString() == state.SerializeToString()


def _refused(call: Any, request: Any, metadata: tuple[tuple[str, str], ...] = ()) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=10, metadata=metadata)
    return caught.value


def _play_to_end(
    stub: pb_grpc.EngineServiceStub, state: state_pb2.State
) -> tuple[state_pb2.State, Counter[str]]:
    """Apply the view's first legal play, every third move a Timeout, until the game ends."""
    kinds: Counter[str] = Counter()
    moves = 0
    while state.phase != state_pb2.PHASE_FINISHED:
        assert moves < 3000, "the game does not end"
        if moves % 3 == 2:
            response: Any = stub.Timeout(pb.TimeoutRequest(state=state, now_ms=2_000 + moves), timeout=10)
        else:
            view = stub.View(pb.ViewRequest(state=state, viewer_id=state.current), timeout=10).view
            assert view.my_turn and view.legal_plays, "the current player always has a legal play"
            play = view.legal_plays[0]
            response = stub.Apply(
                pb.ApplyRequest(
                    state=state, player_id=state.current, action=play.action, expected_seq=state.seq
                ),
                timeout=10,
            )
            if state.phase == state_pb2.PHASE_PLAYING:  # not a pass in an exchange (paranoia)
                played = next(e.card_played for e in response.events if e.HasField("card_played"))
                assert played.total == play.result_total
        kinds.update(e.WhichOneof("payload") for e in response.events)
        # a timeout in an exchange passes for everyone who still owes a card
        exchanged = state.phase == state_pb2.PHASE_EXCHANGE and moves % 3 == 2
        assert response.state.seq == state.seq + 1 or exchanged
        state = response.state
        _round_trips(state)
        moves += 1
    return state, kinds


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_plays_to_the_end_through_the_rpcs(stub: pb_grpc.EngineServiceStub, name: str) -> None:
    started = _setup(stub, name)
    state = started.state
    _round_trips(state)
    first = started.events[0].game_started
    if name in MODES:
        # The spec's modes stay what they were: no rule set in the state, none named.
        assert not state.HasField("rules") and not first.rules
        assert convert.state_from_proto(state).rules == rules_for(Options(mode=name))
    else:
        assert state.rules == rules_to_proto(PRESETS[name])
        assert first.rules == name
        assert stub.View(pb.ViewRequest(state=state), timeout=10).view.rules == name
    final, _ = _play_to_end(stub, state)
    view = stub.View(pb.ViewRequest(state=final), timeout=10).view
    # a game of rounds (paranoia) may end in a tie for the most points
    assert view.phase == state_pb2.PHASE_FINISHED and (len(view.result.winner) == 1 or name == "paranoia")
    assert final.rules == state.rules  # the whole game under the rule set it started with


@pytest.mark.parametrize(
    ("name", "players", "event"),
    [
        ("wikipedia", 4, "turn_skipped"),
        ("na-two-player-again", 2, "play_again"),
        ("na-online", 4, "tokens_paid"),
    ],
)
def test_preset_effects_reach_the_events(
    stub: pb_grpc.EngineServiceStub, name: str, players: int, event: str
) -> None:
    """Skips, plays again and tokens paid at thresholds come out of the RPCs as their own events."""
    seen: Counter[str] = Counter()
    for seed in range(1, 6):
        request = pb.SetupRequest(player_ids=[f"p{i}" for i in range(players)], rules=name, seed=seed)
        _, kinds = _play_to_end(stub, stub.Setup(request, timeout=10).state)
        seen += kinds
        if seen[event]:
            break
    assert seen[event] > 0, seen


def test_list_rules_lists_every_preset_with_its_rule_set(stub: pb_grpc.EngineServiceStub) -> None:
    every = stub.ListRules(rules_pb2.ListRulesRequest(), timeout=10).presets
    listed = [p for p in every if p.game == "adding"]
    # The adding game's presets first, then the other games' entries (tests/engine/test_service_trick.py).
    assert [p.name for p in every[: len(listed)]] == [p.name for p in listed] == list(preset_names())
    for p in listed:
        rules = PRESETS[p.name] if p.name in PRESETS else rules_for(Options(mode=p.name))
        assert (p.summary, p.summary_en, p.source) == (rules.summary, rules.summary_en, rules.source)
        assert p.summary and p.summary_en and p.source
        assert (p.min_players, p.max_players) == rules.players
        assert rules_from_wire(p.rules.SerializeToString()) == rules


def _hand_card(state: state_pb2.State, rank: str) -> str | None:
    seat = next(s for s in state.seats if s.id == state.current)
    return next((c for c in seat.hand if c.startswith(rank) and c[len(rank)] in "SHDC"), None)


def test_an_override_changes_play(stub: pb_grpc.EngineServiceStub) -> None:
    """na-standard's King sets 99; with the house rule ``card.K = add`` it adds 10."""
    for seed in range(200):
        plain = _setup(stub, "na-standard", seed=seed)
        king = _hand_card(plain.state, "K")
        if king is not None:
            break
    else:
        pytest.fail("no deal puts a King in the first player's hand")
    house = _setup(stub, "na-standard", seed=seed, overrides={"card.K": "add", "tokens": "2"})
    assert [list(s.hand) for s in house.state.seats] == [list(s.hand) for s in plain.state.seats]
    total = plain.state.total

    def result(state: state_pb2.State) -> int:
        view = stub.View(pb.ViewRequest(state=state, viewer_id=state.current), timeout=10).view
        (card,) = (c for c in view.hand if c.card.id == king)
        (choice,) = card.choices
        return choice.result_total

    assert result(plain.state) == 99
    assert result(house.state) == total + 10
    assert [s.lives for s in house.state.seats] == [2] * len(house.state.seats)
    assert house.events[0].game_started.rules == "na-standard"
    # The override is in the state's rule set, so the game keeps it to the end.
    applied = stub.Apply(
        pb.ApplyRequest(
            state=house.state, player_id=house.state.current, action=game_pb2.Action(card_id=king)
        ),
        timeout=10,
    )
    assert next(e.card_played.total for e in applied.events if e.HasField("card_played")) == total + 10
    assert applied.state.rules == house.state.rules


def test_a_locked_card_says_why_in_the_view(stub: pb_grpc.EngineServiceStub) -> None:
    """na-start-card's King may not be played in a player's first five turns: the view says so."""
    for seed in range(200):
        state = _setup(stub, "na-start-card", seed=seed).state
        if _hand_card(state, "K") is not None:
            break
    else:
        pytest.fail("no deal puts a King in the first player's hand")
    request = pb.ViewRequest(state=state, viewer_id=state.current)
    for lang, text in (
        (EN, "A K cannot be played in your first 5 turns"),
        ((), "K은(는) 내 차례 5번이 지나야 낼 수 있어요"),
    ):
        view = stub.View(request, timeout=10, metadata=lang).view
        (king,) = (c for c in view.hand if c.card.id == _hand_card(state, "K"))
        assert [(c.reason, c.reason_message) for c in king.choices] == [("CARD_TOO_EARLY", text)]


def test_the_spec_house_rules_are_overrides_too(stub: pb_grpc.EngineServiceStub) -> None:
    """§7's "exactly 99 earns a bonus" over na-standard: on in the rule set, and named like a preset."""
    house = _setup(stub, "na-standard", overrides={"exact99Bonus": "on", "noSameNumberTwice": "off"})
    assert house.state.rules.exact_limit_bonus and not house.state.rules.no_same_number_twice
    assert house.state.rules.name == "na-standard+exact99Bonus"
    assert house.events[0].game_started.rules == "na-standard+exact99Bonus"
    sixty_nine = _setup(stub, "na-standard", overrides={"exact69Bonus": "on"}).state.rules
    assert sixty_nine.exact_69_bonus and sixty_nine.name == "na-standard+exact69Bonus"
    err = _refused(
        stub.Setup, pb.SetupRequest(player_ids=["a", "b"], rules="classic", overrides={"exact99Bonus": "1"})
    )
    assert dict(only_error_info(err).metadata) == {"key": "exact99Bonus", "value": "1"}


def test_overrides_over_a_spec_mode_make_a_preset_game(stub: pb_grpc.EngineServiceStub) -> None:
    plain = _setup(stub, CLASSIC)
    assert not plain.state.HasField("rules")
    house = _setup(stub, CLASSIC, overrides={"card.8": "reverse"})
    rules = rules_from_wire(house.state.rules.SerializeToString())
    assert rules.deck.type_of("8").kind == "reverse"
    assert rules.deck.type_of("4").kind == "reverse"  # the rest is classic's


def test_unknown_rules_are_refused_in_both_languages(stub: pb_grpc.EngineServiceStub) -> None:
    request = pb.SetupRequest(player_ids=["a", "b"], rules="poker")
    err = _refused(stub.Setup, request)
    assert err.code() is C.INVALID_ARGUMENT
    info = only_error_info(err)
    assert (info.reason, dict(info.metadata)) == ("UNKNOWN_RULES", {"rules": "poker"})
    assert err.details() == "'poker'라는 규칙은 없어요"
    assert _refused(stub.Setup, request, EN).details() == "There is no rule set called 'poker'"


@pytest.mark.parametrize(
    ("name", "overrides", "key", "value"),
    [
        ("na-standard", {"card.Z": "add"}, "card.Z", "add"),
        ("na-standard", {"card.K": "fly"}, "card.K", "fly"),
        ("na-standard", {"tokens": "11"}, "tokens", "11"),
        ("na-standard", {"handSize": "0"}, "handSize", "0"),
        ("na-standard", {"turnSeconds": "12"}, "turnSeconds", "12"),
        ("na-standard", {"colour": "red"}, "colour", "red"),
        ("na-standard", {"handSize": "x" * 40}, "handSize", "x" * 32),
        (KR, {"card.7": "add"}, "card.7", "add"),  # a numbered deck has no ranks to change
        ("", {"tokens": "-1"}, "tokens", "-1"),
    ],
)
def test_bad_overrides_are_refused_naming_the_key_and_value(
    stub: pb_grpc.EngineServiceStub, name: str, overrides: dict[str, str], key: str, value: str
) -> None:
    request = pb.SetupRequest(player_ids=["a", "b", "c"], rules=name, overrides=overrides)
    err = _refused(stub.Setup, request)
    assert err.code() is C.INVALID_ARGUMENT
    info = only_error_info(err)
    assert (info.reason, dict(info.metadata)) == ("INVALID_OVERRIDE", {"key": key, "value": value})
    assert err.details() == f"규칙 변경 {key}에 '{value}'은(는) 쓸 수 없어요"
    assert _refused(stub.Setup, request, EN).details() == f"House rule {key} cannot be '{value}'"


def test_overrides_that_together_make_an_unplayable_game_are_refused(stub: pb_grpc.EngineServiceStub) -> None:
    """A sheet where no card raises the total would never end: refused, naming the whole sheet."""
    overrides = {f"card.{r}": "hold" for r in ("A", "2", "3", "5", "6", "7", "8", "J", "Q")} | {
        "card.10": "minus"
    }
    err = _refused(
        stub.Setup, pb.SetupRequest(player_ids=["a", "b"], rules="na-standard", overrides=overrides), EN
    )
    info = only_error_info(err)
    assert info.reason == "INVALID_OVERRIDE"
    assert info.metadata["key"] == ",".join(sorted(overrides))
    assert "never end" in info.metadata["value"]


def test_too_many_overrides_are_refused(stub: pb_grpc.EngineServiceStub) -> None:
    overrides = {f"card.{r}": "add" for r in ("A", "2", "3")} | {f"x{i}": "1" for i in range(30)}
    err = _refused(
        stub.Setup, pb.SetupRequest(player_ids=["a", "b"], rules="na-standard", overrides=overrides)
    )
    info = only_error_info(err)
    assert info.reason == "INVALID_OVERRIDE" and info.metadata["value"] == "<= 32"


def test_a_preset_refuses_a_player_count_it_does_not_seat(stub: pb_grpc.EngineServiceStub) -> None:
    err = _refused(stub.Setup, pb.SetupRequest(player_ids=[f"p{i}" for i in range(6)], rules="ru-99"))
    info = only_error_info(err)
    assert (info.reason, info.metadata["option"]) == ("INVALID_OPTION", "players")


# -- a received rule set is checked ------------------------------------------------------------


def _mid_game(stub: pb_grpc.EngineServiceStub, name: str) -> state_pb2.State:
    state = _setup(stub, name, seed=3).state
    for i in range(4):
        state = stub.Timeout(pb.TimeoutRequest(state=state, now_ms=5_000 + i), timeout=10).state
    return state


def _tampered() -> list[tuple[str, str, Any]]:
    """(name, preset, change to the state message)."""

    def more_plays(s: state_pb2.State) -> None:
        plays = s.rules.deck.cards[0].plays
        for _ in range(4):
            plays.add().CopyFrom(plays[0])

    def huge(s: state_pb2.State) -> None:
        s.rules.source = "x" * 10_000

    def add_type(s: state_pb2.State) -> None:
        for i in range(17):
            s.rules.deck.cards.add(rank=f"X{i}", kind=1, value=1, plays=[s.rules.deck.cards[1].plays[0]])

    def numbered_count(s: state_pb2.State) -> None:
        s.rules.deck.cards[0].count = 5000

    def players(s: state_pb2.State) -> None:
        s.rules.players.most = 20

    def limit(s: state_pb2.State) -> None:
        s.rules.limit = 500

    def op_unknown(s: state_pb2.State) -> None:
        s.rules.deck.cards[2].plays[0].op = 77  # type: ignore[assignment]

    def op_unset(s: state_pb2.State) -> None:
        s.rules.deck.cards[2].plays[0].op = rules_pb2.PLAY_OP_UNSPECIFIED

    def two_plays_unselected(s: state_pb2.State) -> None:
        card = s.rules.deck.cards[0]  # the ace: two plays told apart by aceValue
        card.plays[1].ClearField("select")

    def rank_twice(s: state_pb2.State) -> None:
        s.rules.deck.cards[1].rank = "A"

    def deck_missing(s: state_pb2.State) -> None:
        s.rules.ClearField("deck")

    def long_summary(s: state_pb2.State) -> None:
        s.rules.summary = "가" * 201

    def points_target(s: state_pb2.State) -> None:
        s.rules.end.kind = rules_pb2.END_KIND_POINTS_TARGET

    def too_many_thresholds(s: state_pb2.State) -> None:
        for _ in range(9):
            s.rules.thresholds.add().CopyFrom(s.rules.thresholds[0])

    def stranger_starts(s: state_pb2.State) -> None:
        s.round_starter = "zed"

    def rules_stripped(s: state_pb2.State) -> None:
        s.ClearField("rules")  # the round starter gives the preset game away

    def joker_range(s: state_pb2.State) -> None:
        s.rules.deck.cards[-1].plays[0].hi = 150

    def special_rank(s: state_pb2.State) -> None:
        s.rules.special_hands[0].rank = "Z"

    def locked(s: state_pb2.State) -> None:
        next(c for c in s.rules.deck.cards if c.locked_turns).locked_turns = 50

    def score_dropped(s: state_pb2.State) -> None:
        s.seats[0].ClearField("score")

    def special_end(s: state_pb2.State) -> None:
        s.special_end = "K"  # the game is still in play

    def tokens(s: state_pb2.State) -> None:
        s.rules.tokens.start_by_players[0].value = 50

    def no_token_rows(s: state_pb2.State) -> None:
        s.rules.tokens.ClearField("start_by_players")

    def no_deck_rows(s: state_pb2.State) -> None:
        s.rules.deck.ClearField("decks_by_players")

    def foreign_recent_card(s: state_pb2.State) -> None:
        s.rules.no_same_number_twice = True  # the rules read the last play's card
        s.history[-1].action.card_id = "10D-2"  # one deck at four players

    def stranger_played(s: state_pb2.State) -> None:
        s.history[-1].player_id = "zed"

    return [
        ("five plays on one card", "na-standard", more_plays),
        ("30 card types", "na-standard", add_type),
        ("a rule set of 10 kB", "na-standard", huge),
        ("5000 cards of a type", KR, numbered_count),
        ("20 players", "na-standard", players),
        ("limit 500", "na-standard", limit),
        ("unknown play op", "na-standard", op_unknown),
        ("unset play op", "na-standard", op_unset),
        ("two plays nothing tells apart", "na-standard", two_plays_unselected),
        ("a rank twice", "na-standard", rank_twice),
        ("no deck", "na-standard", deck_missing),
        ("a summary of 201 characters", "na-standard", long_summary),
        ("an end it does not play", "na-standard", points_target),
        ("nine more thresholds", "na-online", too_many_thresholds),
        ("round starter not seated", "na-standard", stranger_starts),
        ("rules removed", "na-standard", rules_stripped),
        ("a joker range past 99", KR, joker_range),
        ("fifty tokens", "na-standard", tokens),
        ("no row of starting tokens", "na-points", no_token_rows),
        ("no row of deck counts", "na-standard", no_deck_rows),
        ("a special hand of a rank not in the deck", "na-start-card", special_rank),
        ("a King locked for 50 turns", "na-start-card", locked),
        ("a seat without its score", "na-points", score_dropped),
        ("a special hand ending a game in play", "na-start-card", special_end),
        ("a recent play of a card not in the deck", "na-standard", foreign_recent_card),
        ("a recent play by somebody not seated", "na-standard", stranger_played),
    ]


@pytest.mark.parametrize(("case", "name", "change"), _tampered(), ids=[c[0] for c in _tampered()])
def test_a_tampered_rule_set_is_refused_by_every_rpc(
    stub: pb_grpc.EngineServiceStub, case: str, name: str, change: Any
) -> None:
    # The spec's modes carry no rule set: a house rule gives kr-product's to the state.
    state = _setup(stub, KR, overrides={"tokens": "1"}).state if name == KR else _mid_game(stub, name)
    tampered = state_pb2.State()
    tampered.CopyFrom(state)
    change(tampered)
    kept = state.SerializeToString()
    for call, request in (
        (
            stub.Apply,
            pb.ApplyRequest(state=tampered, player_id=state.current, action=game_pb2.Action(card_id="AS-1")),
        ),
        (stub.View, pb.ViewRequest(state=tampered, viewer_id=state.current)),
        (stub.Timeout, pb.TimeoutRequest(state=tampered)),
    ):
        err = _refused(call, request, EN)
        assert err.code() is C.INVALID_ARGUMENT, case
        assert only_error_info(err).reason == "INVALID_STATE", case
        assert (err.details() or "").startswith("Invalid game state"), case
    # The good state is still the game it was.
    assert state.SerializeToString() == kept
    assert stub.Timeout(pb.TimeoutRequest(state=state), timeout=10).state.seq == state.seq + 1


_INTS = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
}


def _leaves(msg: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, FieldDescriptor, int | None]]:
    """(message, scalar field, index in a repeated field) for every scalar set in ``msg``."""
    out: list[tuple[Any, FieldDescriptor, int | None]] = []
    for field in msg.DESCRIPTOR.fields:
        value = getattr(msg, field.name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            for sub in value if field.is_repeated else [value]:
                out += _leaves(sub)
        elif field.is_repeated:
            out += [(msg, field, i) for i in range(len(value))]
        else:
            out.append((msg, field, None))
    return out


def _value(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:
        return st.sampled_from(["", "A", "K", "10", "sign", "aceValue", "jokerValue", "dir", "+"]) | st.text(
            max_size=8
        )
    if field.type == FieldDescriptor.TYPE_ENUM:
        return st.integers(-2, 12)
    lo, hi = _INTS[field.type]
    return st.integers(max(lo, -3), 120) | st.integers(lo, hi)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["na-online", "wikipedia", "ru-99", "na-pile"]), data=st.data())
def test_a_rule_set_with_any_one_value_changed_is_played_or_refused(
    stub: pb_grpc.EngineServiceStub, name: str, data: st.DataObject
) -> None:
    """Whatever single value of the rule set changes, every RPC answers or refuses; none fails."""
    state = state_pb2.State()
    state.CopyFrom(_STATES[name])
    for _ in range(data.draw(st.integers(1, 3))):
        msg, field, index = data.draw(st.sampled_from(_leaves(state.rules)))
        value = data.draw(_value(field))
        if index is None:
            setattr(msg, field.name, value)
        else:
            getattr(msg, field.name)[index] = value
    calls: list[tuple[Any, Any]] = [
        (stub.View, pb.ViewRequest(state=state, viewer_id=state.current)),
        (stub.Timeout, pb.TimeoutRequest(state=state)),
    ]
    for call, request in calls:
        try:
            call(request, timeout=10)
        except grpc.RpcError as err:
            assert err.code() is C.INVALID_ARGUMENT, err.details()


def _preset_states() -> dict[str, state_pb2.State]:
    from ninetynine.engine.rules import apply, setup, timeout_action

    out = {}
    for name in ("na-online", "wikipedia", "ru-99", "na-pile"):
        s, _ = setup(["a", "b", "c"], Options(mode=CLASSIC), seed=4, rules=PRESETS[name])
        for _ in range(5):
            s, _ = apply(s, s.current, timeout_action(s), now_ms=7)
        out[name] = convert.state_to_proto(s)
    return out


_STATES = _preset_states()

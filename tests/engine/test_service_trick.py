"""The trick-taking "99" over the real engine server (``SetupRequest.game = "trick"``).

Setup / Apply / View / Timeout of the trick game on the gRPC contract; views and events never
show a player another hand or a face-down bid (random matches played through the RPCs);
determinism; every match ends; refusals with exactly one ErrorInfo and nothing changed;
ListRules names the game. The adding game's clients are covered by the golden corpus
(tests/engine/golden), which these changes must leave byte for byte.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine import trick_wire
from ninetynine.engine.trick import TrickAction, TrickState, card, pending, player_view
from ninetynine.engine.trick import setup as trick_setup
from ninetynine.engine.trick.bot import bot_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import events_pb2, game_pb2, rules_pb2, state_pb2, trick_pb2
from tests.engine.service_fixtures import only_error_info

SEATS = ("ann", "bob", "cho")
EN = (("accept-language", "en"),)
C = grpc.StatusCode
CODEC = trick_wire.CODEC


def _setup(stub: pb_grpc.EngineServiceStub, seed: int = 7, **options: Any) -> pb.SetupResponse:
    request = pb.SetupRequest(player_ids=SEATS, seed=seed, now_ms=1_000, game="trick")
    CODEC.decode(options, request.trick_options)
    response: pb.SetupResponse = stub.Setup(request, timeout=5)
    return response


def _action(action: TrickAction) -> game_pb2.Action:
    out = game_pb2.Action()
    trick_wire.action_into(action, out)
    return out


def _apply(
    stub: pb_grpc.EngineServiceStub,
    state: state_pb2.State,
    player: str,
    action: TrickAction,
    now_ms: int = 2_000,
) -> pb.ApplyResponse:
    request = pb.ApplyRequest(state=state, player_id=player, action=_action(action), now_ms=now_ms)
    response: pb.ApplyResponse = stub.Apply(request, timeout=5)
    return response


def _view(stub: pb_grpc.EngineServiceStub, state: state_pb2.State, viewer: str = "") -> dict[str, Any]:
    response = stub.View(pb.ViewRequest(state=state, viewer_id=viewer), timeout=5)
    assert not response.HasField("view")
    return CODEC.encode(response.trick)


def _events(events: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """(audience, player, client JSON) of each event."""
    return [(e.audience, e.player_id, CODEC.encode(e)) for e in events]


def _rules_state(state: state_pb2.State) -> TrickState:
    return trick_wire.state_from_proto(state.trick)


def _refused(call: Any, request: Any, metadata: tuple[tuple[str, str], ...] = EN) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=5, metadata=metadata)
    return caught.value


# -- Setup, View ------------------------------------------------------------------------------


def test_setup_deals_a_trick_match_and_each_player_sees_only_their_twelve_cards(
    stub: pb_grpc.EngineServiceStub,
) -> None:
    started = _setup(stub)
    assert started.state.HasField("trick") and not started.state.seats
    events = _events(started.events)
    assert events[0][2]["type"] == "trickGameStarted"
    assert events[0][2]["seedCommitment"] == started.seed_commitment
    dealt = [(player, e) for audience, player, e in events if e["type"] == "trickHandDealt"]
    assert all(a == events_pb2.AUDIENCE_ONLY for a, p, e in events if e["type"] == "trickHandDealt")
    assert sorted(p for p, _ in dealt) == sorted(SEATS)
    for player, event in dealt:
        view = _view(stub, started.state, player)
        assert [h["card"] for h in view["hand"]] == event["cards"]
        assert view["phase"] == "bidding" and view["myTurn"] and view["bidChoice"]["count"] == 3
        assert view["legalActions"] == []  # a bid is described (bidChoice), not listed
    spectator = _view(stub, started.state)
    assert spectator["viewer"] is None and "hand" not in spectator
    assert "seed" not in spectator and spectator["pending"] == list(SEATS)


def test_the_view_is_the_rules_cores_view_exactly(stub: pb_grpc.EngineServiceStub) -> None:
    started = _setup(stub, seed=11, trumps="byContracts", target=150)
    s = _rules_state(started.state)
    for viewer in (*SEATS, ""):
        assert _view(stub, started.state, viewer) == player_view(s, viewer or None)
    assert _view(stub, started.state)["options"]["trumps"] == "byContracts"


def test_list_rules_names_the_trick_game(stub: pb_grpc.EngineServiceStub) -> None:
    listed = stub.ListRules(rules_pb2.ListRulesRequest(), timeout=5).presets
    trick = [p for p in listed if p.game == "trick"]
    assert [p.name for p in trick] == ["trick"]
    assert (trick[0].min_players, trick[0].max_players) == (3, 3)
    assert "100" in trick[0].summary_en and trick[0].summary
    assert CODEC.encode(trick[0].trick_options)["target"] == 100
    assert {p.game for p in listed if p.name != "trick"} == {"adding"}


# -- Apply, Timeout ---------------------------------------------------------------------------


def _bid_all(stub: pb_grpc.EngineServiceStub, state: state_pb2.State) -> pb.ApplyResponse:
    response = None
    for player in SEATS:
        s = _rules_state(state)
        response = _apply(stub, state, player, bot_action(s, player))
        state = response.state
    assert response is not None
    return response


def test_apply_takes_bids_in_any_order_then_announcing_starts_left_of_the_dealer(
    stub: pb_grpc.EngineServiceStub,
) -> None:
    started = _setup(stub)
    s = _rules_state(started.state)
    state = started.state
    for player in reversed(SEATS):
        response = _apply(stub, state, player, TrickAction.bid(*s.hands[player][:3]))
        state = response.state
        shown = [(a, p, e) for a, p, e in _events(response.events) if e["type"] == "bidPlaced"]
        assert [(a, p) for a, p, _ in shown] == [
            (events_pb2.AUDIENCE_ONLY, player),
            (events_pb2.AUDIENCE_EXCEPT, player),
        ]
        assert "cards" in shown[0][2] and shown[1][2] == {"type": "bidPlaced", "player": player}
    view = _view(stub, state)
    assert view["phase"] == "announcing" and view["current"] == s.left_of(s.dealer)


def test_timeout_while_bidding_bids_for_every_pending_player_by_the_policy(
    stub: pb_grpc.EngineServiceStub,
) -> None:
    """Everyone bids at once, so one deadline passes for all who have not bid."""
    started = _setup(stub, seed=3)
    s = _rules_state(started.state)
    first = _apply(stub, started.state, "bob", TrickAction.bid(*s.hands["bob"][-3:]))
    timed = stub.Timeout(pb.TimeoutRequest(state=first.state, now_ms=90_000), timeout=5)
    moved = [(m.player_id, CODEC.encode(m.action)) for m in timed.trick_moves]
    assert [p for p, _ in moved] == ["ann", "cho"]
    for player, action in moved:
        lowest = sorted(s.hands[player], key=lambda c: (card(c).strength, "DSHC".index(card(c).suit)))[:3]
        assert action == {"kind": "bid", "cards": lowest}
    assert timed.player_id == "ann" and CODEC.encode(timed.action.trick) == moved[0][1]
    after = _rules_state(timed.state)
    assert after.phase.value == "announcing" and after.decision_started_at == 90_000
    # Then one player's announcement times out: a pass.
    again = stub.Timeout(pb.TimeoutRequest(state=timed.state, now_ms=200_000), timeout=5)
    assert [m.player_id for m in again.trick_moves] == [after.current]
    assert CODEC.encode(again.action.trick) == {"kind": "pass"}


def test_timeout_while_playing_plays_the_lowest_legal_card(stub: pb_grpc.EngineServiceStub) -> None:
    state = _bid_all(stub, _setup(stub, seed=5).state).state
    for _ in range(3):
        state = stub.Timeout(pb.TimeoutRequest(state=state, now_ms=300_000), timeout=5).state  # 3 passes
    s = _rules_state(state)
    assert s.phase.value == "playing"
    timed = stub.Timeout(pb.TimeoutRequest(state=state, now_ms=400_000), timeout=5)
    low = min(s.hands[s.leader], key=lambda c: (card(c).strength, "DSHC".index(card(c).suit)))
    assert CODEC.encode(timed.action.trick) == {"kind": "play", "card": low}


def test_the_view_marks_follow_suit_and_lists_only_legal_plays(stub: pb_grpc.EngineServiceStub) -> None:
    """Follow suit if you can: the view's legal plays are the led suit's cards when held."""
    for seed in range(20):
        state = _bid_all(stub, _setup(stub, seed=seed).state).state
        for _ in range(3):
            state = stub.Timeout(pb.TimeoutRequest(state=state), timeout=5).state
        s = _rules_state(state)
        led = s.hands[s.leader][0]
        state = _apply(stub, state, s.leader, TrickAction.play(led)).state
        nxt = s.left_of(s.leader)
        view = _view(stub, state, nxt)
        suit = card(led).suit
        follow = [h["card"]["id"] for h in view["hand"] if h["card"]["suit"] == suit]
        if not follow or len(follow) == len(view["hand"]):
            continue
        assert [a["card"] for a in view["legalActions"]] == follow
        refused = [h for h in view["hand"] if not h["playable"]]
        assert refused and all(h["reason"] == "MUST_FOLLOW_SUIT" for h in refused)
        other = refused[0]["card"]["id"]
        err = _refused(
            stub.Apply, pb.ApplyRequest(state=state, player_id=nxt, action=_action(TrickAction.play(other)))
        )
        assert err.code() == C.FAILED_PRECONDITION
        info = only_error_info(err)
        assert info.reason == "MUST_FOLLOW_SUIT" and info.metadata["cardId"] == other
        assert info.metadata["game"] == "trick" and "follow suit" in (err.details() or "")
        return
    pytest.fail("no seed gave a follow-suit position")


# -- whole matches ----------------------------------------------------------------------------


def _match(
    stub: pb_grpc.EngineServiceStub, seed: int, policy_seed: int, check_views: bool, **options: Any
) -> tuple[state_pb2.State, list[bytes]]:
    """Play a match through the RPCs: seat 0 the bot, the others random; returns the final state
    and every response's bytes."""
    rng = random.Random(policy_seed)
    started = _setup(stub, seed=seed, **options)
    state, log = started.state, [started.SerializeToString()]
    events = list(started.events)
    moves = 0
    while True:
        s = _rules_state(state)
        if check_views:
            _no_leak(stub, state, s, events)
        if s.finished:
            return state, log
        player = rng.choice(pending(s))
        if player == SEATS[0]:
            action = bot_action(s, player)
        elif s.phase.value == "bidding":
            action = TrickAction.bid(*rng.sample(s.hands[player], 3))
        else:
            legal = _view(stub, state, player)["legalActions"]
            raw = rng.choice(legal)
            action = TrickAction.play(raw["card"]) if raw["kind"] == "play" else _named(raw["kind"])
        response = _apply(stub, state, player, action, now_ms=10_000 + moves)
        state, events = response.state, list(response.events)
        log.append(response.SerializeToString())
        moves += 1
        assert moves < 40 * 60, "a match always ends"


def _named(kind: str) -> TrickAction:
    return TrickAction.announce() if kind == "announce" else TrickAction.pass_()


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(set(), *(_strings(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(set(), *(_strings(v) for v in value))
    return set()


def _no_leak(
    stub: pb_grpc.EngineServiceStub, state: state_pb2.State, s: TrickState, events: list[Any]
) -> None:
    """Neither the View nor the events a viewer may see show another hand or a face-down bid.

    Events of a response that started a new deal are checked from its dealStarted on (before
    it, the closed deal's cards were all public, and they are in the new hands now)."""
    encoded = _events(events)
    starts = [i for i, (_, _, e) in enumerate(encoded) if e["type"] == "dealStarted"]
    fresh = encoded[starts[-1] :] if starts else encoded
    for viewer in (*SEATS, ""):
        hidden: set[str] = set()
        for p in SEATS:
            if p != viewer:
                hidden.update(s.hands[p])
                if not s.revealed[p]:
                    hidden.update(s.bids.get(p, ()))
        hidden |= {card(c).face for c in hidden}
        view = _view(stub, state, viewer)
        assert not _strings({k: v for k, v in view.items() if k != "deals"}) & hidden, viewer
        for pl in view["players"]:
            if pl["id"] != viewer and not s.revealed[pl["id"]]:
                assert pl["bid"] is None
        for audience, player, event in fresh:
            visible = (
                audience == events_pb2.AUDIENCE_ALL
                or (audience == events_pb2.AUDIENCE_ONLY and player == viewer)
                or (audience == events_pb2.AUDIENCE_EXCEPT and player != viewer)
            )
            if visible:
                assert not _strings(event) & hidden, (viewer, event["type"])
        if not s.finished:
            assert "seed" not in view


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**64 - 1),
    policy_seed=st.integers(0, 2**32),
    trumps=st.sampled_from(["none", "byContracts"]),
)
def test_random_matches_through_the_rpcs_never_leak_and_end(
    stub: pb_grpc.EngineServiceStub, seed: int, policy_seed: int, trumps: str
) -> None:
    final, _ = _match(stub, seed, policy_seed, check_views=True, trumps=trumps, maxDeals=9)
    s = _rules_state(final)
    assert s.finished and s.winners
    view = _view(stub, final)
    assert view["seed"] == str(seed) and view["result"]["winner"] == list(s.winners)


def test_the_same_seed_and_moves_give_the_same_bytes(stub: pb_grpc.EngineServiceStub) -> None:
    first = _match(stub, 99, 5, check_views=False, maxDeals=9)
    second = _match(stub, 99, 5, check_views=False, maxDeals=9)
    assert first[1] == second[1]
    assert first[0].SerializeToString() == second[0].SerializeToString()


# -- refusals ---------------------------------------------------------------------------------


def _apply_request(state: state_pb2.State, player: str, action: game_pb2.Action) -> pb.ApplyRequest:
    return pb.ApplyRequest(state=state, player_id=player, action=action)


def test_bad_actions_are_refused_with_one_error_info_and_nothing_changes(
    stub: pb_grpc.EngineServiceStub,
) -> None:
    started = _setup(stub, seed=21)
    state = started.state
    s = _rules_state(state)
    before = state.SerializeToString()
    view_before = _view(stub, state, "ann")
    hand = s.hands["ann"]
    not_mine = s.hands["bob"][0]
    cases = [
        ("BID_CARD_COUNT", C.INVALID_ARGUMENT, "ann", _action(TrickAction.bid(hand[0], hand[0], hand[1]))),
        (
            "CARD_NOT_IN_HAND",
            C.FAILED_PRECONDITION,
            "ann",
            _action(TrickAction.bid(hand[0], hand[1], not_mine)),
        ),
        ("WRONG_PHASE", C.FAILED_PRECONDITION, "ann", _action(TrickAction.play(hand[0]))),
        ("WRONG_PHASE", C.FAILED_PRECONDITION, "ann", _action(TrickAction.announce())),
        ("UNKNOWN_PLAYER", C.FAILED_PRECONDITION, "zed", _action(TrickAction.bid(*hand[:3]))),
        ("INVALID_ACTION", C.INVALID_ARGUMENT, "ann", game_pb2.Action(card_id=hand[0])),
    ]
    for reason, code, player, action in cases:
        err = _refused(stub.Apply, _apply_request(state, player, action))
        assert err.code() == code, reason
        info = only_error_info(err)
        assert info.reason == reason and info.metadata["game"] == "trick"
        assert err.details(), reason
        korean = _refused(stub.Apply, _apply_request(state, player, action), metadata=())
        assert korean.details() != err.details(), reason  # Korean by default, English asked for
    bid = _apply(stub, state, "ann", TrickAction.bid(*hand[:3]))
    err = _refused(stub.Apply, _apply_request(bid.state, "ann", _action(TrickAction.bid(*hand[3:6]))))
    assert only_error_info(err).reason == "BID_ALREADY_PLACED"
    stale = pb.ApplyRequest(
        state=state, player_id="ann", action=_action(TrickAction.bid(*hand[:3])), expected_seq=5
    )
    assert only_error_info(_refused(stub.Apply, stale)).reason == "STALE_STATE"
    assert state.SerializeToString() == before
    assert _view(stub, state, "ann") == view_before
    # After all that, the same state still takes the same move to the same result.
    assert (
        _apply(stub, state, "ann", TrickAction.bid(*hand[:3])).SerializeToString() == bid.SerializeToString()
    )


def test_the_trick_entry_of_list_rules_sets_up_the_trick_game(stub: pb_grpc.EngineServiceStub) -> None:
    """SetupRequest.rules takes every ListRules name: rules "trick" without a game is the trick game."""
    by_rules = stub.Setup(pb.SetupRequest(player_ids=SEATS, seed=7, now_ms=1_000, rules="trick"), timeout=5)
    assert by_rules.SerializeToString() == _setup(stub, seed=7).SerializeToString()


def test_setup_refusals(stub: pb_grpc.EngineServiceStub) -> None:
    unknown = _refused(stub.Setup, pb.SetupRequest(player_ids=SEATS, game="bridge"))
    assert unknown.code() == C.INVALID_ARGUMENT
    assert only_error_info(unknown).reason == "UNKNOWN_GAME" and "bridge" in (unknown.details() or "")
    two = _refused(stub.Setup, pb.SetupRequest(player_ids=SEATS[:2], game="trick"))
    assert only_error_info(two).reason == "INVALID_PLAYER_COUNT" and "exactly 3" in (two.details() or "")
    preset = _refused(stub.Setup, pb.SetupRequest(player_ids=SEATS, game="trick", rules="na-standard"))
    assert only_error_info(preset).reason == "INVALID_OPTION"
    request = pb.SetupRequest(player_ids=SEATS, game="trick")
    request.trick_options.target = 77
    assert only_error_info(_refused(stub.Setup, request)).reason == "INVALID_OPTION"


def _tampered(state: state_pb2.State, change: Any) -> state_pb2.State:
    out = state_pb2.State()
    out.CopyFrom(state)
    change(out.trick)
    return out


def _swap_card(t: trick_pb2.TrickState) -> None:
    t.seats[0].hand[0] = t.seats[1].hand[0]  # one card twice, one missing


STATE_CHANGES = {
    "duplicate card": _swap_card,
    "unknown card": lambda t: t.seats[0].hand.__setitem__(0, "5S"),
    "seed commitment": lambda t: setattr(t, "seed", t.seed + 1),
    "score": lambda t: setattr(t.seats[1], "score", 40),
    "four seats": lambda t: t.seats.add().CopyFrom(t.seats[0]),
    "huge hand": lambda t: t.seats[0].hand.extend(["6S"] * 5000),
    "phase": lambda t: setattr(t, "phase", 0),
    "current while bidding": lambda t: setattr(t, "current", "ann"),
    "version": lambda t: setattr(t, "state_version", 2),
    "even rng increment": lambda t: setattr(t, "rng_inc", 2),
    "bad option": lambda t: setattr(t.options, "target", 77),
    "unknown enum option": lambda t: setattr(t.options, "trumps", 9),
    "last trick card": lambda t: t.last_trick.add(player_id="ann", card_id="ZZ"),
}


def test_a_trick_state_with_adding_game_fields_is_refused(stub: pb_grpc.EngineServiceStub) -> None:
    mixed = state_pb2.State()
    mixed.CopyFrom(_setup(stub).state)
    mixed.total = 40
    err = _refused(stub.View, pb.ViewRequest(state=mixed))
    assert only_error_info(err).reason == "INVALID_STATE" and "State.trick only" in (err.details() or "")


@pytest.mark.parametrize("name", sorted(STATE_CHANGES))
def test_inconsistent_states_are_refused(stub: pb_grpc.EngineServiceStub, name: str) -> None:
    started = _setup(stub, seed=13)
    bad = _tampered(started.state, STATE_CHANGES[name])
    for call, request in (
        (stub.View, pb.ViewRequest(state=bad, viewer_id="ann")),
        (stub.Timeout, pb.TimeoutRequest(state=bad)),
        (stub.Apply, _apply_request(bad, "ann", _action(TrickAction.bid("6S", "7S", "8S")))),
    ):
        err = _refused(call, request)
        assert err.code() == C.INVALID_ARGUMENT, name
        assert only_error_info(err).reason == "INVALID_STATE", name


def test_a_finished_match_refuses_moves_and_timeouts(stub: pb_grpc.EngineServiceStub) -> None:
    final, _ = _match(stub, 4, 4, check_views=False, maxDeals=9)
    err = _refused(stub.Timeout, pb.TimeoutRequest(state=final))
    assert err.code() == C.FAILED_PRECONDITION and only_error_info(err).reason == "GAME_FINISHED"
    err = _refused(stub.Apply, _apply_request(final, "ann", _action(TrickAction.pass_())))
    assert only_error_info(err).reason == "GAME_FINISHED"


def test_the_revealed_seed_proves_the_deal(stub: pb_grpc.EngineServiceStub) -> None:
    """The same seeded RNG and seed commitment as the adding game: the commitment published at
    Setup is the SHA-256 of the seed the finished view reveals, and that seed deals the same
    hands again (the shuffle and deal order of docs/games/trick-taking.md)."""
    started = _setup(stub, seed=2**63 + 5)
    final, _ = _match(stub, 2**63 + 5, 8, check_views=False, maxDeals=9)
    seed = int(_view(stub, final)["seed"])
    assert hashlib.sha256(seed.to_bytes(8, "big")).hexdigest() == started.seed_commitment
    again, _ = trick_setup(SEATS, seed=seed, now_ms=1_000)
    dealt = {p: e["cards"] for _, p, e in _events(started.events) if e["type"] == "trickHandDealt"}
    assert {p: [card(c).to_dict() for c in again.hands[p]] for p in SEATS} == dealt


def test_trick_moves_travel_on_an_apply_many_stream_too(stub: pb_grpc.EngineServiceStub) -> None:
    """ApplyMany answers a trick Apply and Timeout with what the unary calls return."""
    started = _setup(stub, seed=31)
    s = _rules_state(started.state)
    apply = pb.ApplyRequest(
        state=started.state,
        player_id="cho",
        action=_action(TrickAction.bid(*s.hands["cho"][:3])),
        now_ms=2_000,
    )
    timeout = pb.TimeoutRequest(state=started.state, now_ms=90_000)
    calls = [pb.ApplyManyRequest(call_id=1, apply=apply), pb.ApplyManyRequest(call_id=2, timeout=timeout)]
    answers = {a.call_id: a for a in stub.ApplyMany(iter(calls), timeout=10)}
    assert answers[1].applied.SerializeToString() == stub.Apply(apply, timeout=5).SerializeToString()
    assert answers[2].timed_out.SerializeToString() == stub.Timeout(timeout, timeout=5).SerializeToString()
    assert [m.player_id for m in answers[2].timed_out.trick_moves] == list(SEATS)

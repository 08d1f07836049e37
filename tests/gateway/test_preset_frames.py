"""Preset games reach clients through the gateway's path unchanged: the engine's events and views of
every preset, converted to protobuf as the engine sends them and written as the gateway writes
frames, are exactly the rules library's dicts and validate against the client protocol's schema."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from ninetynine.engine.convert import events_into, view_into
from ninetynine.engine.rules import (
    PRESETS,
    Event,
    GameState,
    Phase,
    Rng,
    apply,
    discard_action,
    player_view,
    seed_rng,
    setup,
)
from ninetynine.engine.rules.presets import with_house_rules
from ninetynine.engine.simulate import random_action
from ninetynine.engine.v1 import engine_service_pb2 as epb
from ninetynine.engine.v1 import view_pb2
from ninetynine.gateway.convert import server_json
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.engine.rules.builders import make_state, play
from tests.gateway.test_protocol_schema import EVENT, VIEW, _errors


def _frames(state: GameState, events: list[Any], seq: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    holder = epb.SetupResponse()
    events_into(events, holder.events)
    out = []
    for i, (event, ev) in enumerate(zip(events, holder.events, strict=True)):
        frame = server_json(gw.ServerMessage(event=gw.EventPush(seq=seq + i + 1, event=ev)))
        out.append((event.to_dict(), frame))
    return out


def _play(name: str, players: int, seed: int) -> Counter[str]:
    """One whole game of ``name`` (``+`` joins §7 house rules to a preset): every event's frame and a
    view's every few moves, checked."""
    base, *house = name.split("+")
    rules = with_house_rules(PRESETS[base], *house)
    seats = [f"p{i}" for i in range(players)]
    state, events = setup(seats, seed=seed, now_ms=1_700_000_000_000, rules=rules)
    rng = Rng(seed_rng(seed))
    seq = 0
    kinds: Counter[str] = Counter()
    for step in range(3000):
        for expected, frame in _frames(state, events, seq):
            assert frame["event"] == expected, (name, expected["type"])
            assert _errors(EVENT, frame) == [], (name, frame)
            kinds[expected["type"]] += 1
        seq += len(events)
        if step % 10 == 0 or state.phase is not Phase.PLAYING:  # every view of an exchange too
            for viewer in (state.current, None, *state.passing):
                view = view_pb2.GameView()
                view_into(player_view(state, viewer), state.options, view, "en")
                frame = server_json(gw.ServerMessage(view=gw.ViewPush(seq=seq, view=view)))
                assert frame["view"] == player_view(state, viewer), name
                assert frame["view"]["rules"] == name
                assert _errors(VIEW, frame) == [], (name, _errors(VIEW, frame)[:2])
        if state.phase is Phase.FINISHED:
            break
        state, events = apply(
            state, state.current, random_action(state, rng), now_ms=1_700_000_000_000 + step
        )
    assert state.phase is Phase.FINISHED
    return kinds


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_events_and_views_are_the_librarys_dicts_as_frames(name: str) -> None:
    kinds = _play(name, min(4, PRESETS[name].players[1]), seed=11)
    assert kinds["gameStarted"] == 1 and kinds["gameFinished"] == 1


@pytest.mark.parametrize(
    ("name", "players", "kind"),
    [
        ("wikipedia", 4, "turnSkipped"),
        ("na-two-player-again", 2, "playAgain"),
        ("na-online", 4, "tokensPaid"),
        ("na-points", 3, "roundScored"),
        ("na-start-card", 4, "startCard"),
        ("na-standard+exact99Bonus", 3, "bonus"),
        ("paranoia", 3, "pairPlayed"),
        ("paranoia", 3, "pointsScored"),
        ("paranoia", 3, "handScored"),
        ("paranoia", 3, "exchangeStarted"),
        ("paranoia", 3, "passChosen"),
        ("paranoia", 3, "exchangeDone"),
        ("ono99-2022", 3, "obligationPassed"),
        ("ono99-2022", 3, "secondCardOwed"),
        ("ono99-1980-points", 3, "handScored"),
    ],
)
def test_every_preset_effect_reaches_clients(name: str, players: int, kind: str) -> None:
    seen: Counter[str] = Counter()
    for seed in range(1, 40):
        seen += _play(name, players, seed)
        if seen[kind]:
            break
    assert seen[kind] > 0, seen


def test_a_special_hand_event_reaches_clients() -> None:
    """Three Kings in one hand are too rare to wait for in a played game: the event as game.py makes it."""
    state, _ = setup(["p1", "p2", "p3"], seed=1, rules=PRESETS["na-start-card"])
    for holder_wins in (True, False):
        event = Event("specialHand", {"player": "p2", "rank": "K", "count": 3, "holderWins": holder_wins})
        ((expected, frame),) = _frames(state, [event], 0)
        assert frame["event"] == expected
        assert _errors(EVENT, frame) == []


def _final(name: str, players: int, seed: int) -> GameState:
    state, _ = setup(
        [f"p{i}" for i in range(players)], seed=seed, now_ms=1_700_000_000_000, rules=PRESETS[name]
    )
    rng = Rng(seed_rng(seed))
    for step in range(3000):
        if state.phase is Phase.FINISHED:
            break
        state, _ = apply(state, state.current, random_action(state, rng), now_ms=1_700_000_000_000 + step)
    return state


def test_a_game_ended_over_99_previews_from_its_final_total_in_valid_frames() -> None:
    """002's online version: a play over 99 may be made, and it ends the game when one player is
    left; the winner's finished view still previews their cards from that total (a 2 doubles 103
    to 206), and those frames are valid."""
    for seed in range(600):
        state = _final("na-online", 3, seed)
        hand = player_view(state, state.current)["hand"]
        if state.total > 99 and any(c["result"] > 200 for card in hand for c in card["choices"]):
            break
    else:
        pytest.fail("no game ended over 99 with a doubling card in the winner's hand")
    _play("na-online", 3, seed)


def test_a_point_owed_with_none_left_is_a_valid_frame() -> None:
    """002's game-points version: a point is lost at every border crossing; with none left there is
    nothing to pay, and the ``tokensPaid`` that says so (``tokens: 0``) is a valid frame."""
    for seed in range(200):
        state, _ = setup(["p0", "p1", "p2"], seed=seed, now_ms=1_700_000_000_000, rules=PRESETS["na-points"])
        rng = Rng(seed_rng(seed))
        paid_nothing = False
        for step in range(3000):
            if state.phase is Phase.FINISHED:
                break
            action = random_action(state, rng)
            state, events = apply(state, state.current, action, now_ms=1_700_000_000_000 + step)
            paid_nothing |= any(e.type == "tokensPaid" and e.data["tokens"] == 0 for e in events)
        if paid_nothing:
            break
    else:
        pytest.fail("no game owed a point with none left")
    assert _play("na-points", 3, seed)["tokensPaid"]


def test_an_ono99_exchange_and_a_negative_total_are_valid_frames() -> None:
    """003: four ONO 99 cards exchanged (``cardsDiscarded``, the exchange in ``legalPlays``) and the
    1980 edition's total below 0 are valid frames, and exactly the library's dicts."""
    state = make_state(
        rules=PRESETS["ono99-2022"], total=40, hands={"p1": ["ONO99"] * 4, "p2": ["1", "2", "3", "4"]}
    )
    view = view_pb2.GameView()
    view_into(player_view(state, "p1"), state.options, view, "en")
    frame = server_json(gw.ServerMessage(view=gw.ViewPush(seq=1, view=view)))
    assert frame["view"] == player_view(state, "p1") and _errors(VIEW, frame) == []
    exchange = discard_action(state, "p1")
    assert exchange is not None
    state, events = apply(state, "p1", exchange)
    for expected, frame in _frames(state, events, 1):
        assert frame["event"] == expected and _errors(EVENT, frame) == []
    low = make_state(
        rules=PRESETS["ono99-1980"], total=5, hands={"p1": ["-10", "2", "3", "4"], "p2": ["5"] * 4}
    )
    low, events = apply(low, "p1", play(low, "p1", "-10"))
    assert low.total == -5
    for expected, frame in _frames(low, events, 1):
        assert frame["event"] == expected and _errors(EVENT, frame) == []
    for viewer in ("p2", None):
        view = view_pb2.GameView()
        view_into(player_view(low, viewer), low.options, view, "en")
        frame = server_json(gw.ServerMessage(view=gw.ViewPush(seq=9, view=view)))
        assert frame["view"] == player_view(low, viewer) and _errors(VIEW, frame) == []

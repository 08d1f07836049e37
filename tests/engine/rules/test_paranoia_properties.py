"""Property tests over random games of paranoia (004 part III), its exchanges included.

Random legal moves, and in an exchange a random player among those who still owe a pass (passes
come in any order): after every step the cards are conserved, the state validates and reads back
from its protobuf form as itself; no view (a spectator's, another player's) and no event another
player may see names a card passed or chosen for passing, and each ``exchangeDone`` is its own
player's alone, naming only the card they gave and the card they got. Every game ends after its
rounds, and the same seed and moves replay to byte-identical states and events.

Budget: 12 games of 2 to 5 players (a few seconds).
"""

from __future__ import annotations

import json
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.engine.convert import state_from_proto, state_to_proto
from ninetynine.engine.rules import (
    Action,
    Event,
    GameState,
    Phase,
    apply,
    check_action,
    legal_choices,
    player_view,
    setup,
    timeout_action,
    validate_state,
)
from ninetynine.engine.rules.presets import PRESETS

from .builders import snapshot
from .test_properties import NO_SHRINK, _all_cards, _deck, seed_strategy

RULES = PRESETS["paranoia"]
MAX_STEPS = 20_000


def _owing(s: GameState) -> list[str]:
    return [p for p, cid in s.passing.items() if not cid]


def _move(s: GameState, rnd: random.Random) -> tuple[str, Action]:
    player = rnd.choice(_owing(s)) if s.phase is Phase.EXCHANGE else s.current
    if rnd.random() < 0.2:
        return player, timeout_action(s, player)
    return player, rnd.choice(legal_choices(s, player)).action


def _check_secrets(before: GameState, s: GameState, events: list[Event], passed: set[str]) -> None:
    """No card chosen or passed in an exchange reaches anyone but its giver and receiver.

    ``passed``: the cards chosen for passing before this step, and the one chosen in it. A card
    id alone may be public for another reason (a card played earlier, shuffled back and dealt
    again shows in ``recentPlays``), so a pending choice is checked by counterfactual: every
    other player's view is the same had its owner chosen any other card of their hand.
    """
    views = {viewer: player_view(s, viewer) for viewer in (None, *s.seats)}
    for owner, cid in s.passing.items():
        if not cid:
            continue
        for alt in {c for c in s.hands[owner] if c != cid and c not in s.passing.values()}:
            other = s.clone()
            other.passing[owner] = alt
            for viewer, view in views.items():
                if viewer != owner:
                    assert player_view(other, viewer) == view, (viewer, owner, cid)
    between: dict[str, set[str]] = {}  # passed in this step: giver and receiver
    for e in events:
        if e.type == "exchangeDone":
            assert e.audience.value == "only"
            gave, got = e.data["gave"]["id"], e.data["received"]["id"]
            assert gave in passed and got in passed
            between.setdefault(gave, set()).update((e.data["player"], e.data["to"]))
            between.setdefault(got, set()).update((e.data["player"], e.data["from"]))
    if any(e.type == "roundStarted" for e in events):
        between = {}  # the exchange ended the round: every card was dealt again
    elif between:
        assert s.history == before.history  # an exchange is no play: the public record stays as it was
    for viewer, view in views.items():
        text = json.dumps({k: v for k, v in view.items() if k != "recentPlays"}, ensure_ascii=False)
        for cid, pair in between.items():
            assert viewer in pair or f'"{cid}"' not in text, (viewer, cid)
        for e in events:
            if not e.visible_to(viewer) or e.type in ("handScored", "handDealt"):
                continue  # a round's end shows the penalty cards; a new deal is its player's
            named = json.dumps(e.to_dict(), ensure_ascii=False)
            for cid in passed:
                if f'"{cid}"' in named:
                    assert e.type == "exchangeDone" and e.player == viewer, (viewer, e.type, cid)


def _play(start: GameState, rnd: random.Random) -> tuple[GameState, list[tuple[str, Action]], list[str]]:
    deck = Counter(_deck(start))
    s = start
    log: list[tuple[str, Action]] = []
    trace: list[str] = []
    for _ in range(MAX_STEPS):
        if s.finished:
            break
        player, action = _move(s, rnd)
        check_action(s, player, action)
        exchanging = s.phase is Phase.EXCHANGE
        passed = ({action.card_id} | set(s.passing.values())) - {""} if exchanging else set()
        before = s
        s, events = apply(s, player, action, now_ms=len(log) * 1000)
        log.append((player, action))
        trace.append(json.dumps([e.to_dict() | {"@": (e.audience.value, e.player)} for e in events]))
        assert Counter(_all_cards(s)) == deck, "cards not conserved"
        validate_state(s)
        assert snapshot(state_from_proto(state_to_proto(s))) == snapshot(s)
        _check_secrets(before, s, events, passed)
    assert s.finished, "the game did not end"
    return s, log, trace


@settings(max_examples=12, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(players=st.integers(2, 5), seed=seed_strategy, play_seed=st.integers(0, 2**32))
def test_random_paranoia_games_conserve_cards_keep_passes_secret_end_and_replay(
    players: int, seed: int, play_seed: int
) -> None:
    seats = [f"player-{i}" for i in range(players)]
    start, _ = setup(seats, seed=seed, rules=RULES)
    end, _, trace = _play(start, random.Random(play_seed))
    assert end.round == players  # one round per player
    assert end.score.keys() == set(seats) and all(v >= 0 for v in end.score.values())

    # the same seed and moves: the same states and events, step by step
    replayed, _, retrace = _play(setup(seats, seed=seed, rules=RULES)[0], random.Random(play_seed))
    assert snapshot(replayed) == snapshot(end) and retrace == trace

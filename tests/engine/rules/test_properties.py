"""Property-based tests: random option combinations, 2-10 players, random legal play to the end.

After every step: the cards are conserved, the total stays in 0..99, the state validates,
views and events never show a viewer anything hidden, the §8.5 timeout move is legal, and
random illegal actions are refused without touching the state. At the end: one winner,
every loser ranked once, the seed revealed. Replaying the same seed and actions gives a
byte-identical state.

Budget: 50 fully checked games plus 300 lightly checked ones (about 30 s on the shared
two-core machine).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ninetynine.engine.rules import (
    Action,
    Audience,
    Event,
    GameState,
    Kind,
    Options,
    Reason,
    RuleError,
    apply,
    card_choices,
    card_of,
    cards_of,
    check_action,
    discard_action,
    game_result,
    legal_choices,
    player_view,
    public_view,
    seed_commitment,
    setup,
    timeout_action,
    validate_state,
)
from ninetynine.engine.rules.options import CHOICES
from ninetynine.engine.rules.ruleset import Floor, Limit
from ninetynine.engine.rules.state import HISTORY_LENGTH

from .builders import snapshot

# A failing game is reported as drawn (options, players, seed, play_seed are enough to
# replay it); shrinking whole games took minutes for little gain, so it is skipped.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
MAX_STEPS = 20_000  # far above any game seen (a few hundred moves on average, ~1500 at most)
STEP_MS = 1_000

options_strategy = st.fixed_dictionaries(
    {attr: st.sampled_from(allowed) for attr, (_key, allowed) in CHOICES.items()}
).map(lambda kw: Options(**kw))  # type: ignore[arg-type]
players_strategy = st.integers(min_value=2, max_value=10)
# Seeds with at least ten digits, so "the seed is not in the view" is a meaningful text search.
seed_strategy = st.integers(min_value=2**40, max_value=2**64 - 1)


def _all_cards(state: GameState) -> list[str]:
    return [*state.draw_pile, *state.discard, *(cid for hand in state.hands.values() for cid in hand)]


def _deck(state: GameState) -> list[str]:
    return [c.id for c in cards_of(state.rules.deck, state.deck_count)]


def _random_legal_action(state: GameState, rnd: random.Random) -> Action:
    if rnd.random() < 0.1:
        return timeout_action(state)
    choices = legal_choices(state, state.current)
    if not choices:  # only dead cards (003's ONO 99): the exchange is the one move
        exchange = discard_action(state, state.current)
        assert exchange is not None
        return exchange
    action = rnd.choice(choices).action
    if action.joker_value is not None:  # any value of the range is legal, not only its ends
        lo, hi = state.options.joker_bounds()
        action = Action(action.card_id, joker_value=rnd.randint(lo, hi))
    return action


_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _strings(value: Any) -> set[str]:
    """Every string (keys included) in a JSON-like value, read off its JSON text."""
    return set(_JSON_STRING.findall(json.dumps(value, ensure_ascii=False)))


def public_cards(events: list[Event]) -> set[str]:
    """Cards an event shows everyone besides the card played: a preset's turned-up start card,
    the second card of a pair, 003's cards laid face up (the four ONO 99s exchanged) and the cards
    of a hand counted into a score."""
    shown = {e.data["card"]["id"] for e in events if e.type == "startCard"}
    shown |= {c["id"] for e in events if e.type in ("pairPlayed", "cardsDiscarded") for c in e.data["cards"]}
    return shown | {cid for e in events if e.type == "handScored" for cid in e.data["cards"]}


def _check_step_invariants(state: GameState, deck: Counter[str]) -> None:
    cards = _all_cards(state)
    assert Counter(cards) == deck, "cards not conserved"
    # A preset where a play over 99 may be made (and loses) can end on that play's total.
    lowest = -state.rules.limit if state.rules.floor is Floor.NEGATIVE else 0  # 003's 1980 edition
    # (or during the exchange that play started, before the round ends)
    ends = state.finished or state.exchange_ends_round
    assert lowest <= state.total <= 99 or (ends and state.rules.over_limit is Limit.PLAY_AND_LOSE)
    validate_state(state)


def _check_views(state: GameState, events: list[Event], played_publicly: set[str]) -> None:
    """No viewer ever sees another hand, the pile, the RNG, or the seed before the end.

    The public view is searched as JSON text; each player's view must be that same public
    view plus a hand section naming only the viewer's own cards.
    """
    finished = state.finished
    deck_ids = set(_deck(state))
    hidden = set(state.draw_pile).union(*state.hands.values())
    # the RNG position (its increment is the public stream constant) and, until the end, the seed
    secrets = {str(state.rng.state)}
    if not finished:
        secrets.add(str(state.seed))

    public = public_view(state)
    text = json.dumps(public, ensure_ascii=False)
    # a card once played is public knowledge (recent plays) even after a reshuffle
    assert not (set(_JSON_STRING.findall(text)) & hidden) - played_publicly
    assert not any(secret in text for secret in secrets)
    assert ("seed" in public) == finished
    assert len(public["recentPlays"]) <= HISTORY_LENGTH  # "최근에 낸 카드 몇 장" only
    if finished:
        assert seed_commitment(int(public["seed"])) == state.seed_commitment

    assert player_view(state, None) == {**public, "viewer": None}
    for viewer in state.seats:
        view = player_view(state, viewer)
        own = {key: view.pop(key) for key in ("viewer", "hand", "myTurn", "legalPlays")}
        own["passing"] = view.pop("passing", None)  # the exchange phase: the card the viewer chose
        assert view == public, viewer
        assert _strings(own) & deck_ids <= set(state.hands[viewer]), viewer

    # Events: only the viewer's own deal and draws may name cards, besides the card played.
    # (Those may have moved on inside the same apply, e.g. into a new round's deal.)
    for event in events:
        named = _strings(event.to_dict()) & deck_ids - played_publicly
        if not named:
            continue
        assert event.audience is Audience.ONLY and event.player is not None, event.type
        assert not any(event.visible_to(v) for v in [None, *state.seats] if v != event.player)


def _illegal_exchange_actions(
    state: GameState, rnd: random.Random
) -> Iterator[tuple[str, Action, int | None]]:
    """The exchange phase: a second pass, a card not in hand, a choice field, a stale view."""
    me = state.current
    hand = state.hands[me]
    for p, cid in state.passing.items():
        if cid:
            yield p, Action(state.hands[p][0]), None
    elsewhere = [cid for cid in _all_cards(state) if cid not in hand]
    yield me, Action(rnd.choice(elsewhere)), None
    yield me, Action(rnd.choice(hand)), state.seq + rnd.choice((-1, 1))
    yield me, Action(hand[0], dir="reverse"), None
    yield me, Action(hand[0], pair_card_id=hand[-1]), None


def _illegal_actions(state: GameState, rnd: random.Random) -> Iterator[tuple[str, Action, int | None]]:
    """Actions that must be refused: (player, action, expected_seq)."""
    if state.phase.value == "exchange":
        yield from _illegal_exchange_actions(state, rnd)
        return
    me = state.current
    hand = state.hands[me]
    others = [p for p in state.seats if p != me]
    other = rnd.choice(others)
    yield other, Action(state.hands[other][0] if state.hands[other] else hand[0]), None
    elsewhere = [cid for cid in _all_cards(state) if cid not in hand]
    yield me, Action(rnd.choice(elsewhere)), None
    yield me, Action(rnd.choice(hand)), state.seq + rnd.choice((-1, 1))
    yield me, Action(hand[0], discard=tuple(hand[:1])), None  # one card is never an exchange
    for cid in hand:
        card = card_of(state, cid)
        if not card_choices(state, card):  # a card with no play now (003's ONO 99)
            yield me, Action(cid), None
            continue
        for choice in card_choices(state, card):
            if not choice.legal:
                yield me, choice.action, None  # over 99 / below 0
        kind = card.kind
        needs_choice = kind in (Kind.PLUS_MINUS, Kind.ACE, Kind.JOKER) or (
            kind is Kind.ZERO and state.state_version >= 2
        )
        if needs_choice:
            yield me, Action(cid), None  # the choice is missing
        if kind is Kind.JOKER:
            lo, hi = state.options.joker_bounds()
            yield me, Action(cid, joker_value=rnd.choice((lo - 1, hi + 1, 100))), None
        if kind is not Kind.ZERO:
            legal = card_choices(state, card)[0].action
            yield me, Action(cid, legal.sign, legal.ace_value, legal.joker_value, "reverse"), None
        if kind is not Kind.PLUS_MINUS:
            legal = card_choices(state, card)[0].action
            yield me, Action(cid, "+", legal.ace_value, legal.joker_value, legal.dir), None


def _check_refusals(state: GameState, rnd: random.Random, tries: int) -> None:
    candidates = list(_illegal_actions(state, rnd))
    before = snapshot(state)
    for player, action, expected_seq in rnd.sample(candidates, min(tries, len(candidates))):
        try:
            apply(state, player, action, expected_seq=expected_seq, now_ms=1)
        except RuleError as err:
            assert err.reason is not Reason.INVALID_STATE
        else:
            raise AssertionError(f"illegal action accepted: {player} {action}")
        assert snapshot(state) == before, (player, action)


def _check_end(state: GameState) -> None:
    assert state.finished
    alive = [p for p in state.seats if state.alive[p]]
    assert len(alive) == 1 and state.current == alive[0]
    assert sorted(state.elimination_order) == sorted(p for p in state.seats if p != alive[0])
    result = game_result(state)
    assert result.winner == (alive[0],)
    assert [r.rank for r in result.ranking] == list(range(1, len(state.seats) + 1))
    assert sorted(r.player for r in result.ranking) == sorted(state.seats)
    assert [r.player for r in result.ranking[1:]] == state.elimination_order[::-1]
    assert all(state.hands[p] == [] for p in state.seats if p != alive[0])


def _play_to_end(
    state: GameState, rnd: random.Random, *, full_checks: bool
) -> tuple[GameState, list[tuple[str, Action, int]], list[list[dict[str, Any]]]]:
    deck = Counter(_deck(state))
    log: list[tuple[str, Action, int]] = []
    all_events: list[list[dict[str, Any]]] = []
    played_publicly: set[str] = set()
    for step in range(1, MAX_STEPS + 1):
        if state.finished:
            break
        check_action(state, state.current, timeout_action(state))  # the auto move is always legal
        if full_checks:
            _check_refusals(state, rnd, tries=3)
        player, action = state.current, _random_legal_action(state, rnd)
        state, events = apply(state, player, action, now_ms=step * STEP_MS, expected_seq=state.seq)
        log.append((player, action, step * STEP_MS))
        all_events.append([e.to_dict() | {"@": (e.audience.value, e.player)} for e in events])
        if events[0].type == "cardPlayed":  # not a card passed in an exchange: that one stays secret
            played_publicly.add(action.card_id)
        played_publicly.update(public_cards(events))
        _check_step_invariants(state, deck)
        if full_checks:
            _check_views(state, events, played_publicly)
    assert state.finished, f"no end after {MAX_STEPS} moves"
    return state, log, all_events


@settings(max_examples=50, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(
    options=options_strategy, players=players_strategy, seed=seed_strategy, play_seed=st.integers(0, 2**32)
)
def test_random_games_keep_every_invariant_and_replay_identically(
    options: Options, players: int, seed: int, play_seed: int
) -> None:
    seats = [f"player-{i}" for i in range(players)]
    start, setup_events = setup(seats, options, seed=seed)
    deck = Counter(_deck(start))
    _check_step_invariants(start, deck)
    _check_views(start, setup_events, set())

    end, log, events = _play_to_end(start, random.Random(play_seed), full_checks=True)
    _check_end(end)

    # same seed + same actions -> byte-identical states and events, step by step
    again, _ = setup(seats, options, seed=seed)
    assert snapshot(again) == snapshot(start)
    for (player, action, now_ms), expected in zip(log, events, strict=True):
        again, replay_events = apply(again, player, action, now_ms=now_ms)
        assert [e.to_dict() | {"@": (e.audience.value, e.player)} for e in replay_events] == expected
    assert snapshot(again) == snapshot(end)


@settings(max_examples=300, deadline=None, phases=NO_SHRINK, suppress_health_check=[HealthCheck.too_slow])
@given(
    options=options_strategy, players=players_strategy, seed=seed_strategy, play_seed=st.integers(0, 2**32)
)
def test_random_games_always_finish_with_one_winner(
    options: Options, players: int, seed: int, play_seed: int
) -> None:
    state, _ = setup([f"p{i}" for i in range(players)], options, seed=seed)
    end, _, _ = _play_to_end(state, random.Random(play_seed), full_checks=False)
    _check_end(end)


@settings(max_examples=40, deadline=None)
@given(options=options_strategy, players=players_strategy, seed=seed_strategy)
def test_setup_is_a_function_of_the_seed(options: Options, players: int, seed: int) -> None:
    seats = [f"p{i}" for i in range(players)]
    a, events_a = setup(seats, options, seed=seed)
    b, events_b = setup(seats, options, seed=seed)
    assert snapshot(a) == snapshot(b)
    assert [e.to_dict() for e in events_a] == [e.to_dict() for e in events_b]
    assert Counter(_all_cards(a)) == Counter(_deck(a))
    assert a.total == options.start_total_for(players)
    assert all(len(h) == options.resolved_hand_size() for h in a.hands.values())

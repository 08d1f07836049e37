"""Build rules-engine states from a readable description, for scenario tests.

``make_state(total=95, hands={"A": ["8", "5", "4"], "B": ["1", "2", "3"]}, current="A")``
gives a kr-product game where A holds an 8, a 5 and a 4 and B holds 1, 2, 3. Cards are named
by their face and mapped onto real, unused card ids of the game's deck, so the state is a
real one: every other card of the deck lies in the draw pile (or in the discard, if asked)
and the result passes :func:`validate_state`.

Card names:

* kr-product: ``"1"`` .. ``"8"``, ``"10"``, ``"±9"``, ``"±10"`` (``"+-9"`` works too),
  ``"0"``, ``"JOKER"``.
* classic: the printed face with suit (``"A♠"``, ``"10♥"``) or just the rank (``"A"``,
  ``"4"``, ``"K"``; the first free card of that rank in canonical deck order).
* Any exact card id (``"N8-3"``, ``"KS-2"``) is taken as that very card.

Also here: :func:`snapshot`, a canonical serialization used to prove a state unchanged,
and small helpers to find cards and play by face.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

from ninetynine.engine.rules import (
    CLASSIC,
    KR,
    Action,
    Card,
    Event,
    GameState,
    Options,
    Phase,
    RuleSet,
    build_deck,
    cards_of,
    catalogue_of,
    seed_commitment,
    seed_rng,
    validate_state,
)

_KR_ALIASES = {
    "+-9": "±9",
    "pm9": "±9",
    "+-10": "±10",
    "pm10": "±10",
    "joker": "JOKER",
    "조커": "JOKER",
}


def _normalise(mode: str, name: str) -> str:
    if mode == KR:
        return _KR_ALIASES.get(name.lower(), _KR_ALIASES.get(name, name))
    return name


def _matches(mode: str, card: Card, name: str) -> bool:
    if card.id == name or card.face == name:
        return True
    # classic rank only: "A" matches "A♠", "10" matches "10♥" (the suit is the last character).
    return mode == CLASSIC and card.face[:-1] == name


class CardPicker:
    """Hands out distinct cards of one deck by face, in canonical deck order."""

    def __init__(self, deck: Sequence[Card], mode: str) -> None:
        self.deck = list(deck)
        self.mode = mode
        self.used: set[str] = set()

    def take(self, name: str) -> str:
        wanted = _normalise(self.mode, name)
        for card in self.deck:
            if card.id not in self.used and _matches(self.mode, card, wanted):
                self.used.add(card.id)
                return card.id
        raise ValueError(f"no unused card {name!r} left in the {self.mode} deck")

    def take_all(self, names: Iterable[str]) -> list[str]:
        return [self.take(n) for n in names]

    def rest(self) -> list[str]:
        return [c.id for c in self.deck if c.id not in self.used]


def make_state(
    *,
    mode: str = KR,
    total: int = 0,
    hands: Mapping[str, Sequence[str]],
    current: str | None = None,
    direction: int = 1,
    options: Options | None = None,
    lives_left: Mapping[str, int] | None = None,
    on_board: Iterable[str] = (),
    eliminated: Sequence[str] = (),
    draw: Sequence[str] | None = None,
    discard: Sequence[str] | None = None,
    state_version: int = 2,
    seq: int = 0,
    round: int = 1,
    seed: int = 20240607,
    hand_size: int | None = None,
    deck_count: int | None = None,
    phase: Phase = Phase.PLAYING,
    validate: bool = True,
    rules: RuleSet | None = None,
    score: Mapping[str, int] | None = None,
    turns_taken: Mapping[str, int] | None = None,
    obligation: int = 0,
    **option_overrides: object,
) -> GameState:
    """A state as described; seats are the ``hands`` keys in order.

    ``draw`` lists the draw pile from the top (``draw[0]`` is drawn next); when it is given,
    every card not placed elsewhere goes to the discard. Otherwise unplaced cards form the
    draw pile (below nothing in particular: canonical order, last one on top) after the
    cards named in ``discard`` are put aside. ``eliminated`` players (in elimination order)
    hold no cards. ``lives_left`` defaults to the resolved starting lives for everyone alive.
    ``obligation``: the cards ``current`` owes this turn (003's Play 2).
    ``option_overrides`` are :class:`Options` attributes (``lives=3``, ``floor_at_zero="clamp"``).
    ``rules`` plays a preset (French cards, named like classic ones). ``score`` (game points)
    and ``turns_taken`` (locked cards) default to 0 for everyone where the preset keeps them.
    """
    opts = options if options is not None else Options(mode=CLASSIC if rules else mode)
    if option_overrides:
        opts = opts.with_changes(**option_overrides)
    seats = tuple(hands)
    n = len(seats)
    if rules is not None:
        decks = deck_count if deck_count is not None else rules.deck.deck_count(n)
        picker = CardPicker(cards_of(rules.deck, decks), CLASSIC)
    else:
        decks = deck_count if deck_count is not None else opts.resolved_deck_count(n)
        picker = CardPicker(build_deck(opts.mode, opts.special_counts, decks), opts.mode)

    hand_ids = {p: picker.take_all(hands[p]) for p in seats}
    for p in eliminated:
        if hand_ids[p]:
            raise ValueError(f"eliminated player {p} cannot hold cards")
    discard_ids = picker.take_all(discard or ())
    if draw is not None:
        draw_ids = list(reversed(picker.take_all(draw)))  # the top of the pile is the end
        discard_ids += picker.rest()
    else:
        draw_ids = picker.rest()

    start_lives = rules.tokens.start(n) if rules is not None else opts.resolved_lives()
    alive = {p: p not in eliminated for p in seats}
    lives = {p: (start_lives if alive[p] else 0) for p in seats}
    lives.update(lives_left or {})
    boarded = set(on_board)
    state = GameState(
        state_version=state_version,
        options=opts,
        seats=seats,
        names={},
        hand_size=hand_size
        if hand_size is not None
        else rules.hand.size
        if rules
        else opts.resolved_hand_size(),
        deck_count=decks,
        start_lives=start_lives,
        hands=hand_ids,
        draw_pile=draw_ids,
        discard=discard_ids,
        total=total,
        direction=direction,
        current=current if current is not None else next(p for p in seats if alive[p]),
        alive=alive,
        lives=lives,
        on_board={p: p in boarded for p in seats},
        lives_lost={p: start_lives - lives[p] if alive[p] else start_lives for p in seats},
        eliminated_round={p: round for p in eliminated},
        elimination_order=list(eliminated),
        round=round,
        phase=phase,
        turn_started_at=0,
        seq=seq,
        rng=seed_rng(seed),
        seed=seed,
        seed_commitment=seed_commitment(seed),
        preset=rules,
        round_starter=(current or seats[0]) if rules is not None else "",
        score={p: 0 for p in seats} | dict(score or {}) if rules is not None and rules.scores else {},
        turns_taken={p: 0 for p in seats} | dict(turns_taken or {})
        if rules is not None and rules.locked_turns()
        else {},
        obligation=obligation,
    )
    if validate:
        validate_state(state)
    return state


def _plain(value: object) -> object:
    """JSON fallback: dataclasses (options, RNG state, play records) as their field dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot serialize {type(value).__name__}")


def snapshot(state: GameState) -> str:
    """Canonical, byte-comparable serialization of the whole state (hidden parts included).

    Same content as ``json.dumps(dataclasses.asdict(state), sort_keys=True)`` but without
    asdict's deep copy, which would dominate the property tests' run time.
    """
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    return json.dumps(fields, sort_keys=True, default=_plain, ensure_ascii=False)


def card_ids(state: GameState, player: str, face: str) -> list[str]:
    """The ids of ``player``'s cards with this face (or rank, in classic)."""
    mode = CLASSIC if state.preset else state.options.mode
    wanted = _normalise(mode, face)
    deck = catalogue_of(state.rules.deck, state.deck_count)
    return [cid for cid in state.hands[player] if _matches(mode, deck[cid], wanted)]


def card_id(state: GameState, player: str, face: str) -> str:
    """The first of ``player``'s cards with this face; fails the test if there is none."""
    found = card_ids(state, player, face)
    if not found:
        raise AssertionError(f"{player} holds no {face!r}: {state.hands[player]}")
    return found[0]


def play(state: GameState, player: str, face: str, **choice: object) -> Action:
    """The ``play`` action for ``player``'s first card of this face with the given choices."""
    return Action(card_id(state, player, face), **choice)  # type: ignore[arg-type]


def faces(state: GameState, ids: Iterable[str]) -> list[str]:
    deck = catalogue_of(state.rules.deck, state.deck_count)
    return [deck[cid].face for cid in ids]


def event_types(events: Iterable[Event], viewer: str | None = None, *, everyone: bool = True) -> list[str]:
    """Event types in order; by default the ALL+ONLY stream (EXCEPT twins dropped)."""
    out = []
    for e in events:
        if everyone:
            if e.audience.value == "except":
                continue
        elif not e.visible_to(viewer):
            continue
        out.append(e.type)
    return out

"""House rules over a preset: a short sheet of ``key = value`` pairs (docs/rule-sets.md, "Overrides").

A room picks a preset and may change parts of it, as a house-rules sheet would say "our 8
reverses, our King is just 10, we play with four pennies". :func:`apply_overrides` turns such a
sheet into a new :class:`RuleSet`; every refusal is ``INVALID_OVERRIDE`` naming the key and the
value. The sheet is client input: at most :data:`MAX_OVERRIDES` entries of short keys and values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from .errors import Reason, RuleError
from .options import CHOICES, CLASSIC, KR, Options
from .presets import ESCAPE, HOUSE_RULES, ace, add, hold, minus, plus_minus, reverse, to99, with_house_rules
from .ruleset import CardType, DeckStyle, Effect, EndKind, Kind, Op, Play, Refill, RuleSet, Start

__all__ = ["CARD_EFFECTS", "MAX_OVERRIDES", "MAX_OVERRIDE_TEXT", "OVERRIDE_KEYS", "apply_overrides"]

MAX_OVERRIDES = 32
MAX_OVERRIDE_TEXT = 32
MAX_HAND = 7
MAX_TOKENS = 10
MAX_START = 90
MAX_ROUNDS = 10
CARD_KEY = "card."


def _pip(rank: str) -> int:
    """What a French rank adds as a plain card (A 1; J, Q and K 10)."""
    return {"A": 1, "J": 10, "Q": 10, "K": 10}.get(rank) or int(rank)


# What ``card.<rank>`` may say a rank does.
CARD_EFFECTS: dict[str, Callable[[str], CardType]] = {
    "add": lambda r: add(r, _pip(r)),
    "hold": hold,
    "reverse": reverse,
    "skip": lambda r: add(r, _pip(r), Effect.SKIP),
    "playAgain": lambda r: add(r, _pip(r), Effect.PLAY_AGAIN),
    "to99": to99,
    "zero": lambda r: CardType(r, Kind.SET, 0, (Play(Op.SET, 0),), ESCAPE),
    "plusMinus": lambda r: plus_minus(r, _pip(r)),
    "minus": lambda r: minus(r, _pip(r)),
    "ace": lambda r: replace(ace(11), rank=r),
}


def _number(value: str, lo: int, hi: int) -> int | None:
    if not value.isascii() or not value.isdigit() or len(value) > 3:
        return None
    n = int(value)
    return n if lo <= n <= hi else None


def _tokens(rules: RuleSet, value: str) -> RuleSet | None:
    n = _number(value, 0, MAX_TOKENS)
    return None if n is None else replace(rules, tokens=replace(rules.tokens, start_by_players=((2, n),)))


def _hand_size(rules: RuleSet, value: str) -> RuleSet | None:
    n = _number(value, 1, MAX_HAND)
    if n is None:
        return None
    hand = rules.hand
    refill_to = max(hand.refill_to, n) if hand.refill is Refill.UP_TO else hand.refill_to
    return replace(rules, hand=replace(hand, size=n, refill_to=refill_to))


def _start_total(rules: RuleSet, value: str) -> RuleSet | None:
    n = _number(value, 0, min(MAX_START, rules.limit - 1))
    return None if n is None else replace(rules, start=Start(n))


def _turn_seconds(rules: RuleSet, value: str) -> RuleSet | None:
    n = _number(value, 0, 999)
    return replace(rules, turn_seconds=n) if n is not None and n in CHOICES["turn_seconds"][1] else None


def _on_the_board(rules: RuleSet, value: str) -> RuleSet | None:
    if value not in ("on", "off"):
        return None
    return replace(rules, tokens=replace(rules.tokens, on_the_board=value == "on"))


def _rounds(rules: RuleSet, value: str) -> RuleSet | None:
    """A game of rounds (paranoia): how many rounds are played (004: "сколько раундов будут играть")."""
    n = _number(value, 1, MAX_ROUNDS)
    if n is None or rules.end.kind is not EndKind.ROUNDS:
        return None
    return replace(rules, end=replace(rules.end, target=n))


def _house_rule(attr: str) -> Callable[[RuleSet, str], RuleSet | None]:
    """A §7 house rule switched on or off; the rule set is named after the ones on, as presets are."""

    def change(rules: RuleSet, value: str) -> RuleSet | None:
        if value not in ("on", "off"):
            return None
        return with_house_rules(rules.with_changes(**{attr: value == "on"}))

    return change


# The keys besides ``card.<rank>``, each with how it changes the rule set (docs/rule-sets.md).
OVERRIDE_KEYS: dict[str, Callable[[RuleSet, str], RuleSet | None]] = {
    "tokens": _tokens,
    "handSize": _hand_size,
    "startTotal": _start_total,
    "turnSeconds": _turn_seconds,
    "onTheBoard": _on_the_board,
    "rounds": _rounds,
    **{key: _house_rule(attr) for key, attr in HOUSE_RULES.items()},
}


def _card(rules: RuleSet, rank: str, value: str) -> RuleSet | None:
    make = CARD_EFFECTS.get(value)
    deck = rules.deck
    if make is None or deck.style is not DeckStyle.FRENCH or rank not in {t.rank for t in deck.cards}:
        return None
    cards = tuple(make(rank) if t.rank == rank else t for t in deck.cards)
    return replace(rules, deck=replace(deck, cards=cards))


def apply_overrides(rules: RuleSet, overrides: Mapping[str, str]) -> RuleSet:
    """``rules`` with the sheet ``overrides`` applied, in key order; raises INVALID_OVERRIDE."""
    if len(overrides) > MAX_OVERRIDES:
        raise RuleError(
            Reason.INVALID_OVERRIDE, key=f"({len(overrides)} entries)", value=f"<= {MAX_OVERRIDES}"
        )
    for key, value in sorted(overrides.items()):
        changed: RuleSet | None = None
        if len(key) <= MAX_OVERRIDE_TEXT and len(value) <= MAX_OVERRIDE_TEXT:
            if key.startswith(CARD_KEY):
                changed = _card(rules, key.removeprefix(CARD_KEY), value)
            elif key in OVERRIDE_KEYS:
                changed = OVERRIDE_KEYS[key](rules, value)
        if changed is None:
            raise RuleError(
                Reason.INVALID_OVERRIDE, key=key[:MAX_OVERRIDE_TEXT], value=value[:MAX_OVERRIDE_TEXT]
            )
        rules = changed
    return rules


def label_options(rules: RuleSet) -> Options:
    """The options a preset game is labelled with: the mode whose cards it uses."""
    return Options(mode=CLASSIC if rules.deck.style is DeckStyle.FRENCH else KR)

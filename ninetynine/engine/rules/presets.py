"""The named rule sets (presets) and the registry of games they belong to.

``kr-product`` and ``classic`` are the spec's two modes: :func:`rules_for` builds them from
the §2 options a game carries, so a state keeps meaning what it meant. The other presets
are fixed values from the source documents, each listed in ``docs/rule-sets.md`` with the
sentences it implements and the choices made where a document is silent.
"""

from __future__ import annotations

from functools import lru_cache

from .options import KR, Options
from .ruleset import (
    CardType,
    Deck,
    DeckStyle,
    Effect,
    Floor,
    Hand,
    Kind,
    LossEnds,
    Op,
    Play,
    Refill,
    RuleSet,
    Start,
    Tokens,
)

# §8.5 tie-break classes: no change -> number cards -> ± cards -> K/joker.
NO_CHANGE, NUMBER, PLUS_MINUS, ESCAPE = 0, 1, 2, 3


def add(rank: str, value: int, effect: Effect = Effect.NONE, **kw: object) -> CardType:
    return CardType(rank, Kind.ADD, value, (Play(Op.ADD, value, effect=effect),), NUMBER, **kw)  # type: ignore[arg-type]


def plus_minus(rank: str, value: int, **kw: object) -> CardType:
    plays = (Play(Op.ADD, value, ("sign", "+")), Play(Op.ADD, -value, ("sign", "-")))
    return CardType(rank, Kind.PLUS_MINUS, value, plays, PLUS_MINUS, **kw)  # type: ignore[arg-type]


def ace(high: int) -> CardType:
    plays = (Play(Op.ADD, 1, ("aceValue", 1)), Play(Op.ADD, high, ("aceValue", high)))
    return CardType("A", Kind.ACE, 0, plays, NUMBER)


def reverse(rank: str, two_players: Effect | None = None) -> CardType:
    return CardType(
        rank, Kind.REVERSE, 0, (Play(Op.KEEP, effect=Effect.REVERSE, two_players=two_players),), NO_CHANGE
    )


def hold(rank: str) -> CardType:
    return CardType(rank, Kind.HOLD, 0, (Play(Op.KEEP),), NO_CHANGE)


def minus(rank: str, value: int) -> CardType:
    return CardType(rank, Kind.MINUS, value, (Play(Op.ADD, -value),), PLUS_MINUS)


def to99(rank: str) -> CardType:
    return CardType(rank, Kind.TO99, 0, (Play(Op.SET, 99),), ESCAPE)


def french(*cards: CardType, decks: tuple[tuple[int, int], ...] = ((2, 1),)) -> Deck:
    """A French deck: the ranks not in ``cards`` add their pip value, J and Q add 10."""
    given = {c.rank: c for c in cards}
    plain = {str(v): add(str(v), v) for v in range(2, 11)} | {
        "J": add("J", 10),
        "Q": add("Q", 10),
        "K": add("K", 10),
    }
    ranks = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
    allowed = tuple(sorted({n for _, n in decks} | {1}))
    return Deck(DeckStyle.FRENCH, tuple(given.get(r) or plain[r] for r in ranks), decks, allowed)


# -- the spec's two modes ----------------------------------------------------------------------


def rules_for(options: Options, state_version: int = 2) -> RuleSet:
    """The rule set a game with these §2 options plays (state version 1: the 0 always reverses)."""
    # Looked up for every card the rules read: by the options' identity first (hashing and
    # comparing thirteen fields costs more than the rest of the lookup), then by value.
    hit = _BY_IDENTITY.get((id(options), state_version))
    if hit is not None and hit[0] is options:
        return hit[1]
    rules = _rules_for(options, state_version)
    if len(_BY_IDENTITY) > 4096:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[(id(options), state_version)] = (options, rules)
    return rules


_BY_IDENTITY: dict[tuple[int, int], tuple[Options, RuleSet]] = {}


@lru_cache(maxsize=256)
def _rules_for(o: Options, state_version: int) -> RuleSet:
    kr = o.mode == KR
    lives = o.resolved_lives()
    if kr:
        n = o.special_counts
        lo, hi = o.joker_bounds()
        if state_version == 1:
            zero_plays: tuple[Play, ...] = (Play(Op.KEEP, effect=Effect.REVERSE),)
        else:
            zero_plays = (
                Play(Op.KEEP, select=("dir", "keep")),
                Play(Op.KEEP, select=("dir", "reverse"), effect=Effect.REVERSE),
            )
        types = (
            *(add(str(v), v, id_prefix=f"N{v}", count=7) for v in range(1, 9)),
            add("10", 10, id_prefix="N10", count=21),
            plus_minus("±9", 9, id_prefix="PM9", count=n),
            plus_minus("±10", 10, id_prefix="PM10", count=n),
            CardType("0", Kind.ZERO, 0, zero_plays, NO_CHANGE, id_prefix="Z", count=n),
            CardType(
                "JOKER",
                Kind.JOKER,
                0,
                (Play(Op.PICK, select=("jokerValue", None), lo=lo, hi=hi),),
                ESCAPE,
                id_prefix="J",
                count=2,
            ),
        )
        deck = Deck(DeckStyle.NUMBERED, types)
        start = Start(0, () if o.start_total == "zero" else ((2, 40), (3, 20)))
    else:
        decks = ((2, 1), (7, 2)) if o.deck_count == "auto" else ((2, int(o.deck_count)),)
        deck = french(ace(o.ace_high), reverse("4"), hold("9"), minus("10", 10), to99("K"), decks=decks)
        deck = Deck(deck.style, deck.cards, decks, (1, 2))
        start = Start(0)
    return RuleSet(
        name=o.mode,
        deck=deck,
        hand=Hand(
            int(o.hand_size) if o.hand_size != "auto" else 5 if kr else 3,
            Refill.ONE if o.refill else Refill.NONE,
        ),
        start=start,
        floor=Floor(o.floor_at_zero),
        tokens=Tokens(((2, lives),), on_the_board=o.on_the_board),
        loss_ends=LossEnds.ROUND,
        out_ends=LossEnds.RESET if o.after_elimination == "reset" else LossEnds.NOTHING,
        turn_seconds=o.turn_seconds,
        summary="구십구 제품 규칙 (spec §2-§5)" if kr else "Bicycle classic 99 (spec §3)",
        source="000 §2-§5",
    )


# -- the registry ------------------------------------------------------------------------------

PRESETS: dict[str, RuleSet] = {}


def preset(name: str) -> RuleSet:
    """The preset called ``name`` (``kr-product`` and ``classic`` with their default options)."""
    if name in (KR, "classic"):
        return rules_for(Options(mode=name))
    try:
        return PRESETS[name]
    except KeyError:
        from .errors import Reason, RuleError

        raise RuleError(Reason.INVALID_OPTION, option="rules", value=name) from None

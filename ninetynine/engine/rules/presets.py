"""The named rule sets (presets) and the registry of games they belong to.

``kr-product`` and ``classic`` are the spec's two modes: :func:`rules_for` builds them from
the §2 options a game carries, so a state keeps meaning what it meant. The other presets
are fixed values from the source documents, each listed in ``docs/rule-sets.md`` with the
sentences it implements and the choices made where a document is silent.
"""

from __future__ import annotations

from functools import lru_cache

from .options import KR, Options
from .presets_ono import ONO_PRESETS
from .ruleset import (
    CardType,
    Deck,
    DeckStyle,
    Effect,
    End,
    EndKind,
    Floor,
    Hand,
    Kind,
    Limit,
    LossEnds,
    Op,
    OutWhen,
    Play,
    Reach,
    Refill,
    RuleSet,
    SpecialHand,
    Start,
    Starter,
    StockOut,
    Threshold,
    Tokens,
    When,
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
        summary="구십구 제품 규칙: 1~8, 10, ±9, ±10, 0, 조커"
        if kr
        else "트럼프 52장 클래식 99 (Bicycle 규칙)",
        summary_en="The 구십구 product: 1-8, 10, ±9, ±10, 0 and jokers"
        if kr
        else "Classic 99 with a 52-card deck (Bicycle rules)",
        source="000 §2-§5",
    )


# -- the presets of the source documents -------------------------------------------------------

_CLASSIC_TOKENS = Tokens(((2, 3),))

WIKIPEDIA = RuleSet(
    name="wikipedia",
    deck=french(
        ace(11),
        add("3", 3, Effect.SKIP),
        reverse("4"),
        to99("9"),
        plus_minus("10", 10),
        hold("K"),
        decks=((2, 1), (7, 2)),  # classic's deckCount auto
    ),
    hand=Hand(3),
    tokens=_CLASSIC_TOKENS,
    summary="위키백과 '표준' 변형: 3은 다음 사람 건너뛰기, 9는 99, 10은 ±10, K는 0",
    summary_en="Wikipedia's 'standard' variant: 3 skips the next player, 9 sets 99, 10 is ±10, K is 0",
    source="000 §7",
)

# 002, the standard game: 52 cards (two decks with more than 4 players), 3 cards each,
# 5 pennies (3 with more than 4 players); the deal passes left after each hand.
NA_STANDARD = RuleSet(
    name="na-standard",
    deck=french(
        ace(11),
        reverse("4", two_players=Effect.NONE),
        hold("9"),
        plus_minus("10", 10),
        to99("K"),
        decks=((2, 1), (5, 2)),
    ),
    hand=Hand(3, stock_out=StockOut.KEEP_TOP),
    tokens=Tokens(((2, 5), (5, 3))),
    starter=Starter.ROTATE,
    round_resets_direction=True,
    summary="북미식 99: 동전 5개(5명 이상 3개), 4는 방향 반대, 9는 0, 10은 ±10, K는 99",
    summary_en="North-American 99: 5 pennies (3 with 5+ players), 4 reverses, 9 is 0, 10 is ±10, K sets 99",
    source="002 'Ninety-Nine'",
)


def _na(
    name: str, summary: str, summary_en: str, source: str, *cards: CardType, **changes: object
) -> RuleSet:
    """A variation of 002's standard game: ``cards`` replace the standard game's, ``changes`` its fields."""
    base = {t.rank: t for t in NA_STANDARD.deck.cards}
    given = {t.rank: t for t in cards}
    types = tuple(given.get(r, base[r]) for r in base)
    deck = Deck(
        DeckStyle.FRENCH, types, NA_STANDARD.deck.decks_by_players, NA_STANDARD.deck.allowed_deck_counts
    )
    fields: dict[str, object] = {"deck": deck, "summary": summary, "summary_en": summary_en, "source": source}
    return NA_STANDARD.with_changes(name=name, **fields, **changes)


_V = "002 '99 Variations'"
NA_VARIATIONS = (
    _na(
        "na-nickels",
        "북미식 99, 동전 4개와 손패 5장",
        "North-American 99 with 4 nickels and five cards each",
        _V,
        hand=Hand(5, stock_out=StockOut.KEEP_TOP),
        tokens=Tokens(((2, 4),)),
    ),
    _na(
        "na-seven-cards",
        "북미식 99, 손패 7장, 99를 넘기면 바로 탈락",
        "North-American 99 with seven cards each; going over 99 puts you out",
        _V,
        hand=Hand(7, stock_out=StockOut.KEEP_TOP),
        tokens=Tokens(((2, 1),)),
    ),
    _na(
        "na-corners",
        "북미식 99, 지폐 네 귀퉁이(목숨 4)",
        "North-American 99 with a dollar bill's four corners (4 lives)",
        _V,
        tokens=Tokens(((2, 4),)),
    ),
    _na(
        "na-pile",
        "북미식 99, 진 사람이 나오면 더미만 치우고 손패 그대로 0부터",
        "North-American 99 where a loss only clears the pile: hands are kept, play goes on from zero",
        _V,
        hand=Hand(3),
        loss_ends=LossEnds.PILE,
        starter=Starter.NEXT,
        round_resets_direction=False,
    ),
    _na(
        "na-king-nine",
        "북미식 99, K와 9를 바꿈: K는 0, 9는 99",
        "North-American 99 with King and Nine swapped: K is 0, 9 sets 99",
        _V,
        hold("K"),
        to99("9"),
    ),
    _na(
        "na-four-nine",
        "북미식 99, 4와 9를 바꿈: 9는 방향 반대, 4는 0",
        "North-American 99 with Four and Nine swapped: 9 reverses, 4 is 0",
        _V,
        hold("4"),
        reverse("9", two_players=Effect.NONE),
    ),
    _na(
        "na-ten-minus",
        "북미식 99, 10은 언제나 10을 뺌",
        "North-American 99 where a Ten always takes 10 off",
        _V,
        minus("10", 10),
    ),
    _na(
        "na-two-player-again",
        "북미식 99, 두 명이면 4를 낸 사람이 한 번 더",
        "North-American 99 where, with two players, a Four plays again",
        _V,
        reverse("4", two_players=Effect.PLAY_AGAIN),
    ),
    _na(
        "na-1950s",
        "1950년대 99: 동전 3개 뒤 '명예로' 한 번 더, 7은 방향 반대, 99 만드는 카드 없음",
        "The 1950s 99: 3 pennies then 'on their honor', 7 reverses, no card sets 99",
        "002 '99 Variations', the 1950s version",
        reverse("7", two_players=Effect.NONE),
        add("4", 4),
        add("K", 10),
        tokens=Tokens(((2, 3),), on_the_board=True),
    ),
)


def _online(name: str, summary: str, summary_en: str, two: tuple[Play, Play], *cards: CardType) -> RuleSet:
    """002's online version: 9 tokens, paid at 33, 66 and 99; out when you cannot pay."""
    thresholds = (
        Threshold(33, Reach.EXACT, others_pay=True),
        Threshold(66, Reach.EXACT, others_pay=True),
        Threshold(33, Reach.CROSS),
        Threshold(66, Reach.CROSS),
        Threshold(99, Reach.EXACT, others_pay=True, tokens=2, ends_round=True),
        Threshold(99, Reach.CROSS, tokens=2, ends_round=True),
    )
    return _na(
        name,
        summary,
        summary_en,
        "002 '99 Variations', the online version",
        CardType("2", Kind.DOUBLE_HALVE, 2, two, NUMBER),
        add("K", 10),
        *cards,
        hand=Hand(3, stock_out=StockOut.KEEP_TOP),
        tokens=Tokens(((2, 9),), out_when=OutWhen.CANNOT_PAY),
        over_limit=Limit.PLAY_AND_LOSE,
        thresholds=thresholds,
        starter=Starter.NEXT,
        round_resets_direction=False,
    )


# 002, the game-points version: 8 reverses, K is 10; a point lost at every crossing of 33:34,
# 66:67 and 99:100 either way; over 99 ends the hand; 3 points a hand, banked; first to 15.
NA_POINTS = _na(
    "na-points",
    "북미식 99 게임 점수판: 33·66·99 경계를 넘을 때마다 1점 잃음, 남은 점수를 모아 15점 먼저",
    "North-American 99 for game points: lose a point at every crossing of 33, 66 and 99; first to 15",
    "002 '99 Variations', the game-points version",
    add("4", 4),
    reverse("8", two_players=Effect.NONE),
    add("K", 10),
    tokens=Tokens(((2, 3),), out_when=OutWhen.NEVER),
    thresholds=tuple(
        Threshold(at, Reach.CROSS, from_below_only=False, ends_round=at == 99) for at in (33, 66, 99)
    ),
    over_limit=Limit.PLAY_AND_LOSE,
    end=End(EndKind.POINTS_TARGET, target=15),
)

# 002, the start-card version: a turned-up ordinary card sets the start total; no coins; no
# King in your first five turns; three Kings win at once, three Sixes end it with everyone losing.
NA_START_CARD = _na(
    "na-start-card",
    "북미식 99 시작 카드판: 뒤집은 카드로 시작, 동전 없이 99를 넘기면 탈락, 처음 5번은 K 금지",
    "North-American 99 with a start card: no coins, over 99 is out, no King in your first five turns",
    "002 '99 Variations', the start-card version",
    CardType("K", Kind.TO99, 0, (Play(Op.SET, 99),), ESCAPE, locked_turns=5),
    start=Start(from_card=True),
    tokens=Tokens(((2, 0),)),
    out_ends=LossEnds.NOTHING,
    special_hands=(SpecialHand("K", 3, holder_wins=True), SpecialHand("6", 3, holder_wins=False)),
)

NA_ONLINE = (
    _online(
        "na-online",
        "온라인 33/66/99: 토큰 9개, 33·66·99를 딱 맞히면 남들이, 넘기면 내가 토큰을 냄",
        "Online 33/66/99: 9 tokens; make exactly 33, 66 or 99 and the others pay, cross them and you pay",
        (Play(Op.HALVE, when=When.EVEN_OVER_49), Play(Op.DOUBLE, when=When.NOT_EVEN_OVER_49)),
        CardType(
            "4", Kind.ADD, 4, (Play(Op.ADD, 4, effect=Effect.REVERSE, two_players=Effect.NONE),), NUMBER
        ),
        add("J", 10, Effect.SKIP),
    ),
    _online(
        "na-online-teaching",
        "온라인 33/66/99 입문용: J와 4는 보통 카드, 2는 홀수면 두 배, 짝수면 반",
        "Online 33/66/99 for beginners: J and 4 are plain, a 2 doubles an odd total and halves an even one",
        (Play(Op.HALVE, when=When.EVEN), Play(Op.DOUBLE, when=When.ODD)),
        add("4", 4),
    ),
)


def _ru(name: str, summary: str, summary_en: str, *cards: CardType, **changes: object) -> RuleSet:
    """004 part II: 2-5 players, deal 3 and draw up to 4; over 99 puts a player out."""
    base = (
        ace(11),
        reverse("4"),
        CardType("9", Kind.SET, 0, (Play(Op.SET, 0),), ESCAPE),
        plus_minus("10", 10),
        to99("K"),
    )
    given = {t.rank: t for t in cards}
    deck = french(*(given.pop(t.rank, t) for t in base), *given.values())
    return RuleSet(
        name=name,
        deck=deck,
        hand=Hand(3, Refill.UP_TO, refill_to=4),
        players=(2, 5),
        out_ends=LossEnds.NOTHING,
        summary=summary,
        summary_en=summary_en,
        source="004 part II",
        **changes,  # type: ignore[arg-type]
    )


RU_VARIANTS = (
    _ru(
        "ru-99",
        "러시아 99: 2~5명, 3장 받고 4장까지 보충, 9는 0으로",
        "Russian 99: 2-5 players, deal 3, draw up to 4, 9 sets 0",
    ),
    _ru(
        "ru-99-eight",
        "러시아 99, 4 대신 8이 방향 반대",
        "Russian 99 where the 8 reverses instead of the 4",
        add("4", 4),
        reverse("8"),
    ),
    _ru("ru-99-king-ten", "러시아 99, K는 10", "Russian 99 where the King is just 10", add("K", 10)),
    _ru("ru-99-start-3", "러시아 99, 3에서 시작", "Russian 99 starting from 3", start=Start(3)),
)


# -- the registry ------------------------------------------------------------------------------

from .presets_paranoia import PARANOIA  # noqa: E402  (it builds on the helpers above)

PRESETS: dict[str, RuleSet] = {
    r.name: r
    for r in (
        WIKIPEDIA,
        NA_STANDARD,
        *NA_VARIATIONS,
        NA_POINTS,
        NA_START_CARD,
        *NA_ONLINE,
        *RU_VARIANTS,
        *ONO_PRESETS,
        PARANOIA,
    )
}

# The house rules any rule set can take (the spec's §7 two, and 002's "exactly 69"):
# option key -> RuleSet field.
HOUSE_RULES = {
    "exact99Bonus": "exact_limit_bonus",
    "noSameNumberTwice": "no_same_number_twice",
    "exact69Bonus": "exact_69_bonus",
}


def with_house_rules(rules: RuleSet, *keys: str) -> RuleSet:
    """``rules`` with the §7 house rules ``keys`` switched on, named after them (``classic+exact99Bonus``)."""
    changes: dict[str, object] = {}
    for key in keys:
        attr = HOUSE_RULES.get(key)
        if attr is None:
            from .errors import Reason, RuleError

            raise RuleError(Reason.INVALID_OPTION, option="houseRule", value=str(key)[:64])
        changes[attr] = True
    on = [k for k, attr in HOUSE_RULES.items() if changes.get(attr) or getattr(rules, attr)]
    base = rules.name.split("+")[0]
    return rules.with_changes(name="+".join((base, *on)), **changes)


def preset_names() -> tuple[str, ...]:
    """Every preset, the spec's two modes first."""
    return (KR, "classic", *PRESETS)


def preset(name: str) -> RuleSet:
    """The preset called ``name`` (``kr-product`` and ``classic`` with their default options)."""
    if name in (KR, "classic"):
        return rules_for(Options(mode=name))
    try:
        return PRESETS[name]
    except KeyError:
        from .errors import Reason, RuleError

        raise RuleError(Reason.INVALID_OPTION, option="rules", value=name) from None

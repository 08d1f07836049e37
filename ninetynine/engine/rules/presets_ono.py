"""003's ONO 99: the 2022 Mattel edition and the 1980 International Games one, as rule sets.

Numbered decks of their own (ids ``ON{n}-{i}`` for the numbers, ``OX`` ONO 99, ``OR`` Reverse,
``OP`` Play 2 / Double Play, ``OM`` −10, ``OH`` Hold). The card counts are not in 003; they are
chosen in docs/rule-sets.md (``ono99-2022``: 112 cards, the edition's size; ``ono99-1980``: 54).
Every player starts with four cards and draws one after each play; "keep the total under 99":
the limit is 98. The last player standing wins.
"""

from __future__ import annotations

from .ruleset import (
    CardType,
    Deck,
    DeckStyle,
    Effect,
    End,
    EndKind,
    Floor,
    Hand,
    HandScore,
    Kind,
    LossEnds,
    Op,
    Play,
    RuleSet,
    Starter,
    Tokens,
    When,
)

# §8.5 tie-break classes, as in presets.py: no change -> number cards -> ± cards -> escapes.
NO_CHANGE, NUMBER, PLUS_MINUS, ESCAPE = 0, 1, 2, 3
LIMIT = 98  # 003 '플레이어 제거': the total stays under 99
SOURCE = "003 ONO 99"


def _number(v: int, count: int) -> CardType:
    return CardType(str(v), Kind.ADD, v, (Play(Op.ADD, v),), NUMBER, id_prefix=f"ON{v}", count=count)


def _ono99(count: int, *plays: Play) -> CardType:
    """The ONO 99 card: no plays (never played), or the 1980 optional rule's play on a total ending in 0."""
    return CardType("ONO99", Kind.ONO99, 0, plays, ESCAPE, id_prefix="OX", count=count)


def _reverse(count: int, passes: bool = True) -> CardType:
    # 003 '리버스 카드': with two players a Reverse counts as a zero (and passes no debt on).
    play = Play(Op.KEEP, effect=Effect.REVERSE, two_players=Effect.NONE, passes_obligation=passes)
    return CardType("REV", Kind.REVERSE, 0, (play,), NO_CHANGE, id_prefix="OR", count=count)


def _minus_ten(count: int) -> CardType:
    return CardType("-10", Kind.MINUS, 10, (Play(Op.ADD, -10),), PLUS_MINUS, id_prefix="OM", count=count)


ONO99_2022 = RuleSet(
    name="ono99-2022",
    deck=Deck(
        DeckStyle.NUMBERED,
        (
            *(_number(v, 8) for v in range(0, 11)),
            _ono99(4),
            _reverse(8),
            CardType(
                "PLAY2",
                Kind.PLAY_TWO,
                0,
                (Play(Op.KEEP, effect=Effect.PLAY_TWO, passes_obligation=True),),
                ESCAPE,
                id_prefix="OP",
                count=6,
            ),
            _minus_ten(6),
        ),
    ),
    hand=Hand(4),
    limit=LIMIT,
    floor=Floor.CLAMP,  # 003 '-10 카드': never below 0
    out_ends=LossEnds.NOTHING,  # 003 '플레이어 제거': the next player plays on
    discard_rank="ONO99",
    discard_count=4,
    players=(2, 6),
    summary="ONO 99 (2022): 4장씩, 합계 99 미만, ONO 99는 못 냄(4장 모으면 교환), 리버스·플레이 2·-10",
    summary_en="ONO 99 (2022): four cards, keep under 99, ONO 99s are dead (swap four), Reverse, Play 2, -10",
    source=f"{SOURCE} (2022)",
)

_DOUBLE_PLAY = CardType(
    "DOUBLE",
    Kind.PLAY_TWO,
    0,
    # 003, the 1980 note: a Double Play may not be the first of two owed cards.
    (Play(Op.KEEP, effect=Effect.PLAY_TWO, not_first_of_two=True),),
    ESCAPE,
    id_prefix="OP",
    count=2,
)


def _deck_1980(ono99: CardType) -> Deck:
    return Deck(
        DeckStyle.NUMBERED,
        (
            *(_number(v, 4) for v in range(2, 11)),
            ono99,
            _reverse(4),
            _DOUBLE_PLAY,
            _minus_ten(4),
            CardType(
                "HOLD",
                Kind.HOLD,
                0,
                (Play(Op.KEEP, passes_obligation=True),),  # 1980: a Hold answers a Double Play
                NO_CHANGE,
                id_prefix="OH",
                count=4,
            ),
        ),
    )


ONO99_1980 = RuleSet(
    name="ono99-1980",
    deck=_deck_1980(_ono99(4)),
    hand=Hand(4),
    limit=LIMIT,
    floor=Floor.NEGATIVE,  # 003, the 1980 note: the total may go below 0
    out_ends=LossEnds.NOTHING,
    players=(2, 8),
    summary="O'NO 99 (1980): 54장, 홀드·더블 플레이, -10으로 마이너스 가능, ONO 99는 교환 없음",
    summary_en="O'NO 99 (1980): 54 cards, Hold and Double Play, -10 may go negative, no ONO 99 swap",
    source=f"{SOURCE}, the 1980 notes",
)

# The 1980 optional rule: an ONO 99 may be played on a total ending in 0 and adds 0, one a turn
# (it may not be the first of two owed cards, so no turn holds two of them).
ONO99_1980_ZERO = ONO99_1980.with_changes(
    name="ono99-1980-zero",
    deck=_deck_1980(_ono99(4, Play(Op.KEEP, when=When.ENDS_IN_ZERO, not_first_of_two=True))),
    summary="O'NO 99 (1980) 선택 규칙: 합계가 0으로 끝나면 ONO 99를 낼 수 있음(0점, 한 턴에 한 장)",
    summary_en="O'NO 99 (1980) with the optional rule: an ONO 99 may be played on a total ending in 0",
    source=f"{SOURCE}, the 1980 notes, optional rule",
)

# -- scoring, either edition (003, "1980년대 ONO 99 버전 게임 종료") -------------------------------

POINTS_TARGET = 100  # "플레이할 포인트 수를 선택합니다": the players choose; ours is 100
ROUND_OUT_POINTS = 25


def _hand_scores(rules: RuleSet) -> tuple[HandScore, ...]:
    """Numbers at face value, the ONO 99 20, every special card 15."""

    def points(t: CardType) -> int:
        if t.kind is Kind.ADD:
            return t.value
        return 20 if t.kind is Kind.ONO99 else 15

    return tuple(HandScore(t.rank, points(t)) for t in rules.deck.cards)


def _tokens(rules: RuleSet) -> RuleSet:
    """3 tokens; a loss costs one and a new round is dealt; with none left, one more loss puts the
    player out ("on the board")."""
    edition = rules.name.removeprefix("ono99-")
    return rules.with_changes(
        name=f"{rules.name}-tokens",
        tokens=Tokens(((2, 3),), on_the_board=True),
        loss_ends=LossEnds.ROUND,
        starter=Starter.LOSER,
        summary=f"ONO 99 ({edition}) 토큰 3개: 지면 하나 잃고 새 라운드, 다 잃고 또 지면 탈락",
        summary_en=f"ONO 99 ({edition}) with 3 tokens: a loss costs one, then one more loss puts you out",
        source=f"{SOURCE}, the 1980 tokens",
    )


def _points(rules: RuleSet, *, out_at_target: bool) -> RuleSet:
    """Rounds to one player left; hands counted; out at 100 (last standing) or the game ends at 100
    (lowest score wins)."""
    edition = rules.name.removeprefix("ono99-")
    if out_at_target:
        how = (
            "100점에 닿으면 탈락, 마지막 남은 사람이 승리",
            "reach 100 and you are out, last one left wins",
        )
    else:
        how = (
            "누가 100점에 닿으면 끝, 가장 낮은 점수가 승리",
            "the game ends when someone reaches 100, lowest wins",
        )
    return rules.with_changes(
        name=f"{rules.name}-points" + ("" if out_at_target else "-low"),
        end=End(EndKind.POINTS_TARGET, target=POINTS_TARGET, highest_wins=False, out_at_target=out_at_target),
        hand_scores=_hand_scores(rules),
        round_out_points=ROUND_OUT_POINTS,
        summary=f"ONO 99 ({edition}) 손패 점수: 숫자는 그대로, ONO 99 20, 특수 15, 탈락 25; {how[0]}",
        summary_en=f"ONO 99 ({edition}) hand points (numbers, ONO 99 20, specials 15, out 25); {how[1]}",
        source=f"{SOURCE}, the 1980 points",
    )


ONO_SCORING = tuple(
    v
    for base in (ONO99_2022, ONO99_1980)
    for v in (_tokens(base), _points(base, out_at_target=True), _points(base, out_at_target=False))
)

ONO_PRESETS = (ONO99_2022, ONO99_1980, ONO99_1980_ZERO, *ONO_SCORING)

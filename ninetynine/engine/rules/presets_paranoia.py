"""004 part III, "Девяносто девять (Паранойя)": the Paranoia preset (docs/rule-sets.md, "paranoia").

Rounds run to 99/100; crossing 33/34, 66/67 and 99/100 scores 1, 2 and 3 game points (the last
ends the round); a play is one card or a pair (3-3, 6-6, 9-9, K-K); a 2 or a King makes every
player pass a card to their neighbour; four penalty cards score against their holder at a
round's end; after the agreed number of rounds (``End.target``, the ``rounds`` override; 0: one
round per player, each dealing once) the most points win.
"""

from __future__ import annotations

from dataclasses import replace

from .presets import ace, add, french, hold, plus_minus, reverse
from .ruleset import (
    Effect,
    End,
    EndKind,
    Hand,
    HandScore,
    Limit,
    Op,
    OutWhen,
    Pair,
    Play,
    Reach,
    RuleSet,
    Starter,
    Threshold,
    Tokens,
)


def _set_pair(rank: str, total: int) -> Pair:
    """3-3, 6-6, 9-9: the total becomes ``total``; the player may also reverse the direction."""
    return Pair(
        rank,
        (
            Play(Op.SET, total, ("dir", "keep")),
            Play(Op.SET, total, ("dir", "reverse"), effect=Effect.REVERSE),
        ),
    )


PARANOIA = RuleSet(
    name="paranoia",
    deck=french(
        ace(11),
        replace(add("2", 2), exchange=True),
        reverse("4"),
        hold("8"),
        plus_minus("10", 10),
        replace(add("J", 10), cross_points=-1),
        replace(add("Q", 10), cross_points=-2),
        replace(add("K", 10), exchange=True),
        decks=((2, 1), (4, 2)),
    ),
    hand=Hand(3),
    tokens=Tokens(((2, 0),), out_when=OutWhen.NEVER),
    over_limit=Limit.PLAY_AND_LOSE,
    thresholds=(
        Threshold(33, Reach.CROSS, tokens=0, points=1),
        Threshold(66, Reach.CROSS, tokens=0, points=2),
        Threshold(99, Reach.CROSS, tokens=0, points=3, ends_round=True),
    ),
    end=End(EndKind.ROUNDS, target=0),
    starter=Starter.ROTATE,
    round_resets_direction=True,
    hand_scores=(
        HandScore("J", -3, "S"),
        HandScore("J", -3, "H"),
        HandScore("Q", -5, "S"),
        HandScore("Q", -5, "C"),
    ),
    pairs=(
        _set_pair("3", 33),
        _set_pair("6", 66),
        _set_pair("9", 99),
        Pair("K", (Play(Op.ADD, 10),), cross_take=1),
    ),
    players=(2, 5),
    timeout_forward=True,
    summary="파라노이아: 33·66·99를 넘기면 1·2·3점, 3-3·6-6·9-9·K-K 짝, 2와 K는 모두 카드 한 장씩 넘기기",
    summary_en=(
        "Paranoia: cross 33, 66 and 99 for 1, 2 and 3 points; pairs 3-3, 6-6, 9-9 and K-K; "
        "a 2 or a King makes everyone pass a card on"
    ),
    source="004 part III",
)

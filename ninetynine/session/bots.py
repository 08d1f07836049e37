"""The bot's move: a small heuristic that beats the timeout policy (measured in tests/session/test_bots.py).

The idea of a good human player: spend plain number cards while they fit, as high as they
fit (a high total squeezes the next player), and keep the escape cards (0, ±, joker, K,
4, 9, classic 10) for when nothing else fits. Forced to escape, use the cheapest escape
first; a joker goes to 99 only when we still hold a no-change card to survive the return.
Owing two cards (003's Play 2), answer with a card that passes the debt on when there is one;
holding only dead ONO 99 cards, exchange them. It reads only the bot's own hand and the public
state. A game of rounds (paranoia) has its own heuristic (:func:`rounds_bot_action`).
"""

from __future__ import annotations

from collections import Counter

from ninetynine.engine.rules import Action, Choice, GameState, Kind, card_of, discard_action, legal_choices
from ninetynine.engine.rules.exchange import owes
from ninetynine.engine.rules.game import crossed
from ninetynine.engine.rules.ruleset import EndKind, Op
from ninetynine.engine.rules.scoring import suit_of
from ninetynine.engine.rules.state import Phase

PLAIN = (Kind.ADD, Kind.ACE)
NO_CHANGE = (Kind.ZERO, Kind.REVERSE, Kind.HOLD)
# Cheapest escape first: keeping a joker/K for the worst moment is worth more than a 0.
ESCAPE_COST = {
    Kind.HOLD: 0,
    Kind.ZERO: 0,
    Kind.REVERSE: 1,
    Kind.MINUS: 2,
    Kind.PLUS_MINUS: 2,
    Kind.TO99: 3,
    Kind.JOKER: 4,
}
UNLISTED_ESCAPE_COST = 3  # a card that sets the total (a preset's 9 to 0): spend it late


def _token_balance(state: GameState, result: int) -> int:
    mine = others = 0
    for t in state.rules.thresholds:
        if crossed(t, state.total, result):
            if t.others_pay:
                others += t.tokens
            else:
                mine += t.tokens
    return others - 2 * mine


def _passes(state: GameState, choice: Choice, alive: int) -> bool:
    card = card_of(state, choice.action.card_id)
    return card.type is not None and any(p.passes_for(alive) for p in card.type.plays)


def bot_action(state: GameState, player: str | None = None) -> Action:
    """The bot's move for ``player`` (default: the player to move; in an exchange, any who owes)."""
    me = player or state.current
    if state.rules.end.kind is EndKind.ROUNDS:
        return rounds_bot_action(state, me)
    choices = legal_choices(state, me)
    if not choices:
        exchange = discard_action(state, me)  # 003: four dead ONO 99 cards, swapped for four new ones
        if exchange is not None:
            return exchange
        raise ValueError("the current player has no legal play")
    if state.obligation == 2:
        # Owing two cards (003's Play 2): answering with one card that passes the debt on is cheaper.
        alive = sum(state.alive.values())
        passing = [c for c in choices if _passes(state, c, alive)]
        choices = passing or choices
    # Where a play over the limit is allowed (and loses), keep it for when nothing else is left.
    limit = state.rules.limit
    choices = [c for c in choices if c.result <= limit] or choices
    if state.rules.thresholds:
        # Tokens at stake: keep only the plays with the best balance (others' payments minus ours).
        balance = max(_token_balance(state, c.result) for c in choices)
        choices = [c for c in choices if _token_balance(state, c.result) == balance]
    plain = [c for c in choices if card_of(state, c.action.card_id).kind in PLAIN]
    if plain:
        return max(plain, key=lambda c: (c.result, c.action.card_id)).action

    def escape_key(c: Choice) -> tuple[int, int, str]:
        kind = card_of(state, c.action.card_id).kind
        return (ESCAPE_COST.get(kind, UNLISTED_ESCAPE_COST), c.result, c.action.card_id)

    best = min(choices, key=escape_key)
    card = card_of(state, best.action.card_id)
    pick = next((p for p in card.type.plays if p.op is Op.PICK), None) if card.type else None
    if pick is not None:
        lo, hi = pick.lo, pick.hi
        others = [card_of(state, cid).kind for cid in state.hands[me] if cid != card.id]
        value = hi if any(k in NO_CHANGE for k in others) else lo
        return Action(card.id, joker_value=value)
    if card.kind is Kind.ZERO and best.action.dir is not None:
        return Action(card.id, dir="keep")
    return best.action


# -- a game of rounds (paranoia) --------------------------------------------------------------------
#
# The bot in a game of rounds (``EndKind.ROUNDS``, paranoia): score crossings, leave none to the next player.
#
# A play is worth the points it scores now (a crossing's, a Jack's or Queen's, K-K's taking), plus
# the penalty it takes out of the hand (a J♠ played is 3 points not lost at the round's end), less
# the points it leaves within the next player's reach (a total a few below a border). In an exchange
# the bot passes the card worth least to it: a penalty card first, then a Jack or Queen (a crossing
# with it costs), then a plain number card, keeping what scores (the Ace's 11, a ten's ±10, a card
# that makes a pair with another in the hand). It reads only its own hand and the public state.

# The most one card adds (the Ace's 11): a border closer than this is within the next player's reach.
REACH = 11


def rounds_bot_action(state: GameState, me: str) -> Action:
    if state.phase is Phase.EXCHANGE:
        if not owes(state, me):
            raise ValueError(f"{me} owes no pass")
        return Action(min(state.hands[me], key=lambda cid: (_keep_value(state, me, cid), cid)))
    choices = legal_choices(state, me)
    if not choices:
        raise ValueError("the current player has no legal play")
    return max(choices, key=lambda c: (_worth(state, me, c), -c.result, c.action.card_id)).action


def _penalty(state: GameState, cid: str) -> int:
    t = card_of(state, cid).type
    assert t is not None
    return state.rules.hand_score(t.rank, suit_of(cid))


def _worth(state: GameState, me: str, c: Choice) -> float:
    rules = state.rules
    card = card_of(state, c.action.card_id).type
    assert card is not None
    pair = rules.pair(card.rank) if c.action.pair_card_id else None
    others = sum(1 for p in state.seats if p != me and state.alive[p] and state.score.get(p, 0) > 0)
    gained = 0.0
    for t in rules.thresholds:
        if not t.points or not crossed(t, state.total, c.result):
            continue
        if pair is not None and pair.cross_take:
            gained += others * pair.cross_take * 2  # what they lose counts too
        elif pair is not None and pair.cross_points is not None:
            gained += pair.cross_points
        elif pair is None and card.cross_points is not None:
            gained += card.cross_points
        else:
            gained += t.points
    played = [c.action.card_id] + ([c.action.pair_card_id] if c.action.pair_card_id else [])
    shed = -sum(_penalty(state, cid) for cid in played)
    ends = c.result > rules.limit
    if ends:  # the round ends now: what the hand still holds counts at once
        return gained + shed
    return gained + shed - _left_in_reach(state, c.result)


def _left_in_reach(state: GameState, total: int) -> float:
    """The points a total leaves to the next player: each border just above it."""
    danger = 0.0
    for t in state.rules.thresholds:
        gap = t.at + 1 - total
        if t.points > 0 and 0 < gap <= REACH:
            danger += t.points * (0.9 if gap <= 10 else 0.4)
    return danger


def _keep_value(state: GameState, me: str, cid: str) -> float:
    """How much the bot wants to keep ``cid`` (the lowest is passed)."""
    penalty = _penalty(state, cid)
    if penalty:
        return penalty - 10
    t = card_of(state, cid).type
    assert t is not None
    if t.cross_points is not None and t.cross_points < 0:
        return -1
    ranks = Counter(card_of(state, x).type.rank for x in state.hands[me])  # type: ignore[union-attr]
    if state.rules.pair(t.rank) is not None and ranks[t.rank] >= 2:
        return 10
    return max(p.amount for p in t.plays) / 10 + len(t.plays)

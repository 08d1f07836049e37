"""The bot's move: a small heuristic that beats the timeout policy (measured in tests/session/test_bots.py).

The idea of a good human player: spend plain number cards while they fit, as high as they
fit (a high total squeezes the next player), and keep the escape cards (0, ±, joker, K,
4, 9, classic 10) for when nothing else fits. Forced to escape, use the cheapest escape
first; a joker goes to 99 only when we still hold a no-change card to survive the return.
It reads only the bot's own hand and the public state.
"""

from __future__ import annotations

from ninetynine.engine.rules import Action, Choice, GameState, Kind, card_of, legal_choices
from ninetynine.engine.rules.game import crossed
from ninetynine.engine.rules.ruleset import Op

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


def bot_action(state: GameState) -> Action:
    me = state.current
    choices = legal_choices(state, me)
    if not choices:
        raise ValueError("the current player has no legal play")
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

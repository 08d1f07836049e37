"""The observer (spec §8.3): the only way game data leaves toward a player or spectator.

``public_view`` is what everyone sees; ``player_view`` adds the viewer's own hand with,
per card, every choice, its resulting total and whether (and why) it is refused, plus
the ready-to-send legal plays, pair plays included (``private_view`` is that addition alone).
In the exchange phase a player sees the card they chose to pass, and everyone sees only who
has chosen. Never included: another player's hand, the draw order, the RNG state, an eliminated
player's cards, a card passed in an exchange, or the seed before the game is over.
"""

from __future__ import annotations

from typing import Any

from . import exchange
from .discard import discard_action
from .game import card_choices, card_of, game_result
from .pairs import pair_choices
from .ruleset import Op
from .state import GameState, Phase


def public_view(s: GameState) -> dict[str, Any]:
    finished = s.phase is Phase.FINISHED
    view: dict[str, Any] = {
        "stateVersion": s.state_version,
        "mode": s.options.mode,
        "options": s.options.to_mapping(),
        "seq": s.seq,
        "phase": str(s.phase),
        "round": s.round,
        "total": s.total,
        "direction": s.direction,
        "current": s.current,
        "turnStartedAt": s.turn_started_at,
        "deadline": s.turn_started_at + s.rules.turn_seconds * 1000,
        "players": [
            {
                "id": p,
                "name": s.name(p),
                "seat": i,
                "handCount": len(s.hands[p]),
                "lives": s.lives[p],
                "alive": s.alive[p],
                "onBoard": s.on_board[p],
                "livesLost": s.lives_lost[p],
                "eliminatedAtRound": s.eliminated_round.get(p),
                **({"score": s.score[p]} if s.score else {}),
                # the exchange phase: whether the player has chosen the card to pass, never which
                **({"passed": bool(s.passing[p])} if p in s.passing else {}),
            }
            for i, p in enumerate(s.seats)
        ],
        "eliminationOrder": list(s.elimination_order),
        "drawPileCount": len(s.draw_pile),
        "discardCount": len(s.discard),
        "recentPlays": [r.to_dict() for r in s.history],
        "seedCommitment": s.seed_commitment,
    }
    if s.preset is not None:
        view["rules"] = s.preset.name
    if s.obligation:
        view["obligation"] = s.obligation
    if finished:
        view["seed"] = str(s.seed)
        view["result"] = game_result(s).to_dict()
    return view


def player_view(s: GameState, viewer: str | None) -> dict[str, Any]:
    """``viewer=None`` (or someone not seated) gets the public view only."""
    return {**public_view(s), **private_view(s, viewer)}


def private_view(s: GameState, viewer: str | None) -> dict[str, Any]:
    """What :func:`player_view` adds to the public view for ``viewer``: always ``viewer``, and
    for a seated player ``hand``, ``myTurn`` and ``legalPlays``. Kept apart so that a server
    showing one state to several viewers builds the public part once."""
    view: dict[str, Any] = {"viewer": viewer}
    if viewer is None or viewer not in s.hands:
        return view
    if s.phase is Phase.EXCHANGE:
        return {**view, **_exchange_view(s, viewer)}
    my_turn = s.phase is Phase.PLAYING and s.current == viewer
    hand: list[dict[str, Any]] = []
    legal_plays: list[dict[str, Any]] = []
    for cid in s.hands[viewer]:
        card = card_of(s, cid)
        choices = card_choices(s, card, viewer)
        options = [
            {
                "action": c.action.to_dict(),
                "result": c.result,
                "legal": c.legal,
                "reason": str(c.reason) if c.reason else None,
            }
            for c in choices
        ]
        entry: dict[str, Any] = {
            "card": card.to_dict(),
            "playable": any(c.legal for c in choices),
            "choices": options,
        }
        pick = next((p for p in card.type.plays if p.op is Op.PICK), None) if card.type else None
        if pick is not None:
            entry["jokerRange"] = {"min": pick.lo, "max": pick.hi}
        hand.append(entry)
        if my_turn:
            legal_plays += [{"action": c.action.to_dict(), "result": c.result} for c in choices if c.legal]
    swap = discard_action(s, viewer) if my_turn else None
    if swap is not None:  # 003's exchange of four ONO 99 cards is a legal move too
        legal_plays.append({"action": swap.to_dict(), "result": s.total})
    if my_turn and s.rules.pairs:
        legal_plays += [
            {"action": c.action.to_dict(), "result": c.result}
            for _, _, c in pair_choices(s, viewer)
            if c.legal
        ]
    view["hand"] = hand
    view["myTurn"] = my_turn
    view["legalPlays"] = legal_plays
    return view


def _exchange_view(s: GameState, viewer: str) -> dict[str, Any]:
    """The exchange phase: each card of the hand is a pass while the viewer owes one; the card
    chosen is shown to the viewer alone (``passing``)."""
    owes = exchange.owes(s, viewer)
    hand = []
    for cid in s.hands[viewer]:
        choice = {"action": {"cardId": cid}, "result": s.total, "legal": owes, "reason": None}
        hand.append({"card": card_of(s, cid).to_dict(), "playable": owes, "choices": [choice]})
    view: dict[str, Any] = {
        "hand": hand,
        "myTurn": owes,
        "legalPlays": [{"action": {"cardId": cid}, "result": s.total} for cid in s.hands[viewer]]
        if owes
        else [],
    }
    if s.passing.get(viewer):
        view["passing"] = s.passing[viewer]
    return view

"""The exchange phase (``CardType.exchange``, 004 part III's 2 and King).

The player who played the card draws one more, then every live player holding a card owes one
choice at once (``Phase.EXCHANGE``): the card they pass to their neighbour in the direction of
play (``Action.card_id``, no other field). ``GameState.passing`` holds each choice ("" while
owed) and ``current`` is the first player who still owes one; the views show a player their own
choice and everyone only who has chosen. When the last player has chosen, every card moves at
once: each player gets one ``exchangeDone`` event (seen by them alone) naming the card they gave
and the card they got, so that each passed card is seen only by the two players it went
between. Then the player after the one who played the card moves, or, if that play ended the
round, the round ends.

Timeout: a player who does not choose in time passes the card that would score worst left in
their hand (``RuleSet.hand_scores``), else the first card of their hand.
"""

from __future__ import annotations

from . import game as g
from .cards import catalogue_of
from .errors import Reason, RuleError
from .rng import Rng
from .scoring import suit_of
from .state import Action, Audience, Event, GameState, Phase


def start(s: GameState, player: str, rng: Rng, events: list[Event], now_ms: int) -> bool:
    """``player`` played an exchange card: they draw one more, and the exchange begins.

    False (nothing owed) when fewer than two players hold a card.
    """
    g._draw(s, player, rng, events)
    players = [p for p in g._seat_order_from(s, player) if s.alive[p] and s.hands[p]]
    if len(players) < 2:
        return False
    s.phase = Phase.EXCHANGE
    s.passing = {p: "" for p in s.seats if p in players}  # seat order, as a received state has it
    s.exchange_by = player
    s.current = player
    s.turn_started_at = now_ms
    deadline = now_ms + s.rules.turn_seconds * 1000
    data = {"by": player, "players": players, "direction": s.direction, "deadline": deadline}
    events.append(Event("exchangeStarted", data))
    return True


def owes(s: GameState, player: str) -> bool:
    """``player`` still owes the card to pass."""
    return s.phase is Phase.EXCHANGE and s.passing.get(player) == ""


def check_pass(s: GameState, player: str, action: Action) -> None:
    """Refuse a pass ``player`` may not make now."""
    if player not in s.alive:
        raise RuleError(Reason.UNKNOWN_PLAYER, playerId=player)
    if player not in s.passing:
        raise RuleError(Reason.NOT_YOUR_TURN, playerId=player, current=s.current)
    if s.passing[player]:
        raise RuleError(Reason.ALREADY_PASSED, playerId=player)
    for attr, field in (
        ("sign", "sign"),
        ("ace_value", "aceValue"),
        ("joker_value", "jokerValue"),
        ("dir", "dir"),
        ("pair_card_id", "pairCardId"),
    ):
        if getattr(action, attr) is not None:
            raise RuleError(Reason.CHOICE_NOT_ALLOWED, cardId=action.card_id, field=field)
    if action.card_id not in s.hands[player]:
        raise RuleError(Reason.CARD_NOT_IN_HAND, cardId=action.card_id)


def choose(state: GameState, player: str, action: Action, now_ms: int) -> tuple[GameState, list[Event]]:
    """``player`` chooses the card to pass; the last choice resolves the exchange."""
    check_pass(state, player, action)
    s = state.clone()
    rng = Rng(s.rng)
    events: list[Event] = []
    s.passing[player] = action.card_id
    s.seq += 1
    events.append(Event("passChosen", {"player": player, "seq": s.seq}))
    if all(s.passing.values()):
        _resolve(s, rng, events, now_ms)
    else:
        s.current = first_owing(s)
    s.rng = rng.freeze()
    return s, events


def _resolve(s: GameState, rng: Rng, events: list[Event], now_ms: int) -> None:
    players = [p for p in s.seats if p in s.passing]  # seat order
    n = len(players)
    given = dict(s.passing)
    to = {p: players[(i + s.direction) % n] for i, p in enumerate(players)}
    got_from = {q: p for p, q in to.items()}
    for p in players:
        s.hands[p].remove(given[p])
    for p in players:
        s.hands[to[p]].append(given[p])
    for p in players:
        src = got_from[p]
        data = {
            "player": p,
            "gave": g.card_of(s, given[p]).to_dict(),
            "to": to[p],
            "received": g.card_of(s, given[src]).to_dict(),
            "from": src,
        }
        events.append(Event("exchangeDone", data, Audience.ONLY, p))
    s.passing = {}
    s.phase = Phase.PLAYING
    by = s.exchange_by
    s.exchange_by = ""
    if s.exchange_ends_round:
        s.exchange_ends_round = False
        g._end_round(s, by, rng, events)
    else:
        s.current = g._next_alive(s, by)
    if s.phase is Phase.PLAYING:
        g._start_turn(s, rng, events, now_ms)


def timeout_pass(s: GameState, player: str) -> Action:
    """The card ``player`` passes when their time runs out (module docstring)."""
    rules = s.rules
    cat = catalogue_of(rules.deck, s.deck_count)
    hand = s.hands[player]

    def worth(cid: str) -> int:
        t = cat[cid].type
        assert t is not None
        return rules.hand_score(t.rank, suit_of(cid))

    return Action(min(hand, key=lambda cid: (worth(cid), hand.index(cid))))


def first_owing(s: GameState) -> str:
    """The first player from the one who started the exchange, in seat order, who still owes a card
    (the exchange's ``current``, and the default timeout player)."""
    return next(p for p in g._seat_order_from(s, s.exchange_by) if owes(s, p))

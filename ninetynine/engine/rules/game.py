"""The rules as a pure state machine (spec §4-§6, §8.2, §8.4-§8.6).

``setup`` makes a new game, ``apply`` plays one action and resolves everything that
follows inside the same call (refill, next player, automatic losses at turn start,
chained eliminations, new rounds, the end), ``timeout_action`` is the §8.5 policy and
``legal_choices`` lists what a player may do. Nothing here mutates its input, reads a
clock or uses hidden randomness: the RNG state travels in :class:`GameState`.

Deals (setup, new rounds, reset): cards are taken from the top (end) of the shuffled
pile one at a time, starting with the round's first player and going round the seats in
seat order, until each has ``hand_size`` cards or the pile is empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cards import TIMEOUT_CLASS, Card, Kind, catalogue, deck_for
from .errors import Reason, RuleError
from .options import Options, check_player_count
from .rng import Rng, seed_commitment, seed_rng
from .state import (
    CURRENT_STATE_VERSION,
    HISTORY_LENGTH,
    Action,
    Audience,
    Event,
    GameState,
    Phase,
    PlayRecord,
)

MAX_PLAYER_ID_LENGTH = 64


@dataclass(frozen=True, slots=True)
class Choice:
    """One way to play one card: the action to send, the total it makes, and why it is refused."""

    action: Action
    result: int
    reason: Reason | None = None

    @property
    def legal(self) -> bool:
        return self.reason is None


# -- setup ---------------------------------------------------------------------------------


def _check_player_ids(player_ids: Sequence[str]) -> None:
    check_player_count(len(player_ids))
    seen: set[str] = set()
    for pid in player_ids:
        if not pid or len(pid) > MAX_PLAYER_ID_LENGTH or not pid.isprintable():
            raise RuleError(Reason.INVALID_PLAYER_ID, detail=repr(pid)[:80])
        if pid in seen:
            raise RuleError(Reason.INVALID_PLAYER_ID, detail=f"duplicate {pid!r}")
        seen.add(pid)


def setup(
    player_ids: Sequence[str],
    options: Options | None = None,
    *,
    seed: int,
    now_ms: int = 0,
    names: dict[str, str] | None = None,
) -> tuple[GameState, list[Event]]:
    """Spec §4: shuffle, draw the first player, deal, set the start total and lives.

    RNG order: the canonical deck is shuffled, then the first player is ``below(n)``
    in seat order, then the deal.
    """
    options = options or Options()
    _check_player_ids(player_ids)
    seats = tuple(player_ids)
    n = len(seats)
    deck_count = options.resolved_deck_count(n)
    rng = Rng(seed_rng(seed))
    pile = [c.id for c in deck_for(options, deck_count)]
    rng.shuffle(pile)
    first = seats[rng.below(n)]
    lives = options.resolved_lives()
    state = GameState(
        state_version=CURRENT_STATE_VERSION,
        options=options,
        seats=seats,
        names={p: names[p] for p in seats if names and names.get(p)},
        hand_size=options.resolved_hand_size(),
        deck_count=deck_count,
        start_lives=lives,
        hands={p: [] for p in seats},
        draw_pile=pile,
        discard=[],
        total=options.start_total_for(n),
        direction=1,
        current=first,
        alive={p: True for p in seats},
        lives={p: lives for p in seats},
        on_board={p: False for p in seats},
        lives_lost={p: 0 for p in seats},
        eliminated_round={},
        elimination_order=[],
        round=1,
        phase=Phase.PLAYING,
        turn_started_at=now_ms,
        seq=0,
        rng=seed_rng(seed),  # replaced below
        seed=seed,
        seed_commitment=seed_commitment(seed),
    )
    events = [
        Event(
            "gameStarted",
            {
                "stateVersion": state.state_version,
                "mode": options.mode,
                "options": options.to_mapping(),
                "seats": list(seats),
                "handSize": state.hand_size,
                "lives": lives,
                "deckSize": len(pile),
                "seedCommitment": state.seed_commitment,
            },
        )
    ]
    _deal(state, first, events)
    events.append(_round_started(state, first))
    _start_turn(state, rng, events, now_ms)
    state.rng = rng.freeze()
    return state, events


# -- legality ------------------------------------------------------------------------------


def card_of(state: GameState, card_id: str) -> Card:
    return catalogue(state.options, state.deck_count)[card_id]


def _subtract(state: GameState, amount: int) -> tuple[int, Reason | None]:
    result = state.total - amount
    if result >= 0:
        return result, None
    if state.options.floor_at_zero == "clamp":
        return 0, None
    return result, Reason.BELOW_ZERO


def _over(result: int) -> Reason | None:
    return Reason.OVER_99 if result > 99 else None


def card_choices(state: GameState, card: Card) -> list[Choice]:
    """Every distinct way to play ``card`` now, legal or not, with its resulting total.

    The joker is listed at its range's two ends; every integer between is legal too.
    """
    s = state.total
    cid = card.id
    kind = card.kind
    if kind is Kind.ADD:
        return [Choice(Action(cid), s + card.value, _over(s + card.value))]
    if kind is Kind.PLUS_MINUS:
        minus, why = _subtract(state, card.value)
        return [
            Choice(Action(cid, sign="+"), s + card.value, _over(s + card.value)),
            Choice(Action(cid, sign="-"), minus, why),
        ]
    if kind is Kind.ZERO:
        if state.state_version == 1:
            return [Choice(Action(cid), s)]
        return [Choice(Action(cid, dir="keep"), s), Choice(Action(cid, dir="reverse"), s)]
    if kind is Kind.REVERSE or kind is Kind.HOLD:
        return [Choice(Action(cid), s)]
    if kind is Kind.MINUS:
        result, why = _subtract(state, card.value)
        return [Choice(Action(cid), result, why)]
    if kind is Kind.ACE:
        high = state.options.ace_high
        return [
            Choice(Action(cid, ace_value=1), s + 1, _over(s + 1)),
            Choice(Action(cid, ace_value=high), s + high, _over(s + high)),
        ]
    if kind is Kind.TO99:
        return [Choice(Action(cid), 99)]
    lo, hi = state.options.joker_bounds()
    return [Choice(Action(cid, joker_value=lo), lo), Choice(Action(cid, joker_value=hi), hi)]


def legal_choices(state: GameState, player: str) -> list[Choice]:
    """The legal (card, choice) pairs of ``player``'s hand, in hand order."""
    return [c for cid in state.hands[player] for c in card_choices(state, card_of(state, cid)) if c.legal]


def _card_playable(state: GameState, card: Card) -> bool:
    s = state.total
    kind = card.kind
    if kind is Kind.ADD:
        return s + card.value <= 99
    if kind is Kind.PLUS_MINUS:
        return s + card.value <= 99 or s >= card.value or state.options.floor_at_zero == "clamp"
    if kind is Kind.MINUS:
        return s >= card.value or state.options.floor_at_zero == "clamp"
    if kind is Kind.ACE:
        return s + 1 <= 99
    return True  # zero, reverse, hold, to99, joker


def has_legal_play(state: GameState, player: str) -> bool:
    cat = catalogue(state.options, state.deck_count)
    return any(_card_playable(state, cat[cid]) for cid in state.hands[player])


def _resolve(state: GameState, player: str, action: Action) -> tuple[Card, int, bool, dict[str, object]]:
    """Validate ``action`` (§8.2) and return (card, new total, reverses direction, choice)."""
    if state.phase is Phase.FINISHED:
        raise RuleError(Reason.GAME_FINISHED)
    if player not in state.alive:
        raise RuleError(Reason.UNKNOWN_PLAYER, playerId=player)
    if player != state.current:
        raise RuleError(Reason.NOT_YOUR_TURN, playerId=player, current=state.current)
    cid = action.card_id
    if cid not in state.hands[player]:
        raise RuleError(Reason.CARD_NOT_IN_HAND, cardId=cid)
    card = card_of(state, cid)
    kind = card.kind
    zero_with_dir = kind is Kind.ZERO and state.state_version >= 2
    if action.dir is not None and not zero_with_dir:
        raise RuleError(Reason.DIR_NOT_ALLOWED, cardId=cid)
    for field, value, owner in (
        ("sign", action.sign, Kind.PLUS_MINUS),
        ("aceValue", action.ace_value, Kind.ACE),
        ("jokerValue", action.joker_value, Kind.JOKER),
    ):
        if value is not None and kind is not owner:
            raise RuleError(Reason.CHOICE_NOT_ALLOWED, cardId=cid, field=field)

    s = state.total
    reverse = False
    choice: dict[str, object] = {}
    if kind is Kind.ADD:
        result = s + card.value
    elif kind is Kind.PLUS_MINUS:
        if action.sign not in ("+", "-"):
            raise RuleError(Reason.SIGN_REQUIRED, cardId=cid)
        choice["sign"] = action.sign
        if action.sign == "+":
            result = s + card.value
        else:
            result, why = _subtract(state, card.value)
            if why is not None:
                raise RuleError(why, cardId=cid, total=s, result=result)
    elif kind is Kind.ZERO:
        result = s
        if zero_with_dir:
            if action.dir not in ("keep", "reverse"):
                raise RuleError(Reason.DIR_REQUIRED, cardId=cid)
            choice["dir"] = action.dir
            reverse = action.dir == "reverse"
        else:
            reverse = True  # version 1: the 0 card always reverses
    elif kind is Kind.REVERSE:
        result, reverse = s, True
    elif kind is Kind.HOLD:
        result = s
    elif kind is Kind.MINUS:
        result, why = _subtract(state, card.value)
        if why is not None:
            raise RuleError(why, cardId=cid, total=s, result=result)
    elif kind is Kind.ACE:
        high = state.options.ace_high
        if action.ace_value is None:
            raise RuleError(Reason.ACE_VALUE_REQUIRED, cardId=cid, ace_high=high)
        if action.ace_value not in (1, high):
            raise RuleError(Reason.ACE_VALUE_INVALID, cardId=cid, ace_high=high, value=action.ace_value)
        choice["aceValue"] = action.ace_value
        result = s + action.ace_value
    elif kind is Kind.TO99:
        result = 99
    else:  # joker
        lo, hi = state.options.joker_bounds()
        if action.joker_value is None:
            raise RuleError(Reason.JOKER_VALUE_REQUIRED, cardId=cid, min=lo, max=hi)
        if not lo <= action.joker_value <= hi:
            raise RuleError(Reason.JOKER_OUT_OF_RANGE, cardId=cid, min=lo, max=hi, value=action.joker_value)
        choice["jokerValue"] = action.joker_value
        result = action.joker_value
    if result > 99:
        raise RuleError(Reason.OVER_99, cardId=cid, total=s, result=result)
    return card, result, reverse, choice


def check_action(state: GameState, player: str, action: Action) -> int:
    """Raise :class:`RuleError` if ``action`` is refused; else return the total it would make."""
    return _resolve(state, player, action)[1]


# -- apply ---------------------------------------------------------------------------------


def apply(
    state: GameState,
    player: str,
    action: Action,
    *,
    now_ms: int = 0,
    expected_seq: int | None = None,
) -> tuple[GameState, list[Event]]:
    """Play ``action`` for ``player`` and resolve everything up to the next decision.

    Returns the new state and the ordered events. Raises :class:`RuleError` (and leaves
    ``state`` untouched) if the action is refused.
    """
    if expected_seq is not None and expected_seq != state.seq:
        raise RuleError(Reason.STALE_STATE, expectedSeq=expected_seq, seq=state.seq)
    card, result, reverse, choice = _resolve(state, player, action)
    s = state.clone()
    rng = Rng(s.rng)
    events: list[Event] = []

    s.hands[player].remove(card.id)
    s.discard.append(card.id)
    before = s.total
    s.total = result
    record = PlayRecord(player, card.id, card.face, before, result, choice)
    s.history.append(record)
    if len(s.history) > HISTORY_LENGTH:
        del s.history[0]
    events.append(Event("cardPlayed", {**record.to_dict(), "kind": str(card.kind), "seq": s.seq + 1}))
    if reverse:
        s.direction = -s.direction
        events.append(Event("directionChanged", {"player": player, "direction": s.direction}))
    if s.options.refill:
        _refill(s, player, rng, events)
    s.seq += 1
    s.current = _next_alive(s, player)
    _start_turn(s, rng, events, now_ms)
    s.rng = rng.freeze()
    return s, events


def _refill(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    if not s.draw_pile and s.discard:
        # The discard (including the card just played) becomes the new pile; total unchanged.
        s.draw_pile, s.discard = s.discard, []
        rng.shuffle(s.draw_pile)
        events.append(Event("reshuffled", {"count": len(s.draw_pile), "total": s.total}))
    if not s.draw_pile:
        return
    cid = s.draw_pile.pop()
    s.hands[player].append(cid)
    card = card_of(s, cid)
    events.append(Event("cardDrawn", {"player": player, "card": card.to_dict()}, Audience.ONLY, player))
    events.append(Event("cardDrawn", {"player": player}, Audience.EXCEPT, player))


def _next_alive(s: GameState, player: str) -> str:
    seats = s.seats
    n = len(seats)
    i = seats.index(player)
    for step in range(1, n + 1):
        candidate = seats[(i + step * s.direction) % n]
        if s.alive[candidate]:
            return candidate
    raise RuleError(Reason.INVALID_STATE, detail="no player alive")


def _start_turn(s: GameState, rng: Rng, events: list[Event], now_ms: int) -> None:
    """§5.1 step 1: whoever must move with no legal card loses at once, repeatedly."""
    while s.phase is Phase.PLAYING and not has_legal_play(s, s.current):
        _lose(s, s.current, rng, events)
    if s.phase is Phase.PLAYING:
        s.turn_started_at = now_ms
        events.append(
            Event(
                "turnStarted",
                {
                    "player": s.current,
                    "total": s.total,
                    "direction": s.direction,
                    "turnStartedAt": now_ms,
                    "deadline": now_ms + s.options.turn_seconds * 1000,
                },
            )
        )


def _lose(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    """§5.3 loss handling for ``player``, who cannot play at the start of their turn."""
    if s.start_lives == 0:
        _eliminate(s, player, events, reason="noPlayableCard")
        if s.phase is Phase.FINISHED:
            return
        nxt = _next_alive(s, player)
        if s.options.after_elimination == "reset":
            _new_round(s, nxt, rng, events, everything=False, reason="reset")
        else:
            s.current = nxt
        return
    if s.lives[player] > 0:
        s.lives[player] -= 1
        s.lives_lost[player] += 1
        on_board = s.lives[player] == 0 and s.options.on_the_board
        if on_board:
            s.on_board[player] = True
        events.append(
            Event(
                "lifeLost", {"player": player, "left": s.lives[player], "onBoard": on_board, "total": s.total}
            )
        )
        if s.lives[player] == 0 and not on_board:
            _eliminate(s, player, events, reason="noLivesLeft")
    else:  # already on the board with no lives: this second loss eliminates
        _eliminate(s, player, events, reason="lostOnTheBoard")
    if s.phase is Phase.FINISHED:
        return
    starter = player if s.alive[player] else _next_alive(s, player)
    _new_round(s, starter, rng, events, everything=True, reason="lifeLost")


def _eliminate(s: GameState, player: str, events: list[Event], reason: str) -> None:
    s.alive[player] = False
    hand = s.hands[player]
    s.discard.extend(hand)  # face down: only the count is ever shown
    s.hands[player] = []
    s.on_board[player] = False
    s.elimination_order.append(player)
    s.eliminated_round[player] = s.round
    events.append(
        Event(
            "eliminated",
            {
                "player": player,
                "round": s.round,
                "handCount": len(hand),
                "total": s.total,
                "reason": reason,
                "remaining": sum(s.alive.values()),
            },
        )
    )
    if sum(s.alive.values()) == 1:
        _finish(s, events)


def _new_round(
    s: GameState, starter: str, rng: Rng, events: list[Event], *, everything: bool, reason: str
) -> None:
    """A fresh deal. Lives mode gathers every card; ``reset`` gathers the survivors' hands into the pile.

    The gathered cards are put in canonical deck order before the shuffle, so the new
    pile depends only on which cards were gathered and the RNG.
    """
    deck = deck_for(s.options, s.deck_count)
    if everything:
        pile = [c.id for c in deck]
        s.discard = []
    else:
        gathered = set(s.draw_pile)
        for p in s.seats:
            gathered.update(s.hands[p])
        pile = [c.id for c in deck if c.id in gathered]
    for p in s.seats:
        s.hands[p] = []
    rng.shuffle(pile)
    s.draw_pile = pile
    s.round += 1
    alive = sum(s.alive.values())
    s.total = 0 if s.state_version == 1 else s.options.start_total_for(alive)
    s.current = starter
    s.history = []
    _deal(s, starter, events)
    events.append(_round_started(s, starter, reason))


def _round_started(s: GameState, starter: str, reason: str = "setup") -> Event:
    return Event(
        "roundStarted",
        {
            "round": s.round,
            "starter": starter,
            "total": s.total,
            "reason": reason,
            "handCounts": {p: len(s.hands[p]) for p in s.seats if s.alive[p]},
            "drawPileCount": len(s.draw_pile),
        },
    )


def _deal(s: GameState, starter: str, events: list[Event]) -> None:
    order = [p for p in _seat_order_from(s, starter) if s.alive[p]]
    for _ in range(s.hand_size):
        for p in order:
            if s.draw_pile:
                s.hands[p].append(s.draw_pile.pop())
    for p in order:
        cards = [card_of(s, cid).to_dict() for cid in s.hands[p]]
        events.append(Event("handDealt", {"player": p, "round": s.round, "cards": cards}, Audience.ONLY, p))


def _seat_order_from(s: GameState, first: str) -> list[str]:
    i = s.seats.index(first)
    return [s.seats[(i + k) % len(s.seats)] for k in range(len(s.seats))]


# -- the end -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RankEntry:
    player: str
    rank: int
    lives_lost: int
    eliminated_at_round: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "player": self.player,
            "rank": self.rank,
            "livesLost": self.lives_lost,
            "eliminatedAtRound": self.eliminated_at_round,
        }


@dataclass(frozen=True, slots=True)
class GameResult:
    ranking: tuple[RankEntry, ...]
    winner: tuple[str, ...]
    summary: str  # Korean, as the spec words it
    summary_en: str
    final_total: int

    def to_dict(self) -> dict[str, object]:
        return {
            "ranking": [r.to_dict() for r in self.ranking],
            "winner": list(self.winner),
            "summary": self.summary,
            "summaryEn": self.summary_en,
            "finalTotal": self.final_total,
        }


def game_result(s: GameState) -> GameResult:
    """§6/§8.6: the survivor first, then the later an elimination the better."""
    if s.phase is not Phase.FINISHED:
        raise RuleError(Reason.INVALID_STATE, detail="game not finished")
    winners = [p for p in s.seats if s.alive[p]]
    order = winners + list(reversed(s.elimination_order))
    ranking = tuple(
        RankEntry(p, i + 1, s.lives_lost[p], s.eliminated_round.get(p)) for i, p in enumerate(order)
    )
    name = s.name(winners[0])
    return GameResult(
        ranking=ranking,
        winner=tuple(winners),
        summary=f"끝까지 살아남은 사람은 {name} 님! 마지막 합계 {s.total}",
        summary_en=f"The last one standing is {name}! Final total {s.total}",
        final_total=s.total,
    )


def _finish(s: GameState, events: list[Event]) -> None:
    s.phase = Phase.FINISHED
    winner = next(p for p in s.seats if s.alive[p])
    s.current = winner
    result = game_result(s)
    events.append(Event("gameFinished", {**result.to_dict(), "seed": str(s.seed)}))


# -- §8.5 timeout policy -------------------------------------------------------------------


def timeout_action(state: GameState) -> Action:
    """The automatic move for the current player (spec §8.5).

    Smallest resulting total; ties by class (no-change cards, number cards, ± cards,
    K/joker), then card id; a 0 card keeps the direction, a joker takes its range minimum.
    Uses only the player's own hand and the public total.
    """
    if state.phase is Phase.FINISHED:
        raise RuleError(Reason.GAME_FINISHED)
    best: tuple[int, int, str, int] | None = None
    best_action: Action | None = None
    for cid in state.hands[state.current]:
        card = card_of(state, cid)
        for choice in card_choices(state, card):
            if not choice.legal:
                continue
            key = (choice.result, TIMEOUT_CLASS[card.kind], cid, 1 if choice.action.dir == "reverse" else 0)
            if best is None or key < best:
                best, best_action = key, choice.action
    if best_action is None:
        raise RuleError(Reason.INVALID_STATE, detail="current player has no legal play")
    return best_action


def check_replayable(state: GameState) -> None:
    """Spec §8.2: a game that finished under state version 1 cannot be replayed."""
    if state.state_version == 1 and state.phase is Phase.FINISHED:
        raise RuleError(Reason.REPLAY_UNSUPPORTED)

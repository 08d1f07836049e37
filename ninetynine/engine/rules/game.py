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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from . import discard, exchange, handscore, obligation, pairs, scoring
from .cards import Card, cards_of, catalogue_of
from .errors import Reason, RuleError
from .options import Options, check_player_count
from .presets import rules_for
from .rng import Rng, seed_commitment, seed_rng
from .ruleset import (
    CardType,
    Effect,
    EndKind,
    Floor,
    Limit,
    LossEnds,
    Op,
    OutWhen,
    Pair,
    Play,
    Reach,
    Refill,
    RuleSet,
    Starter,
    StockOut,
    Threshold,
    When,
    unsupported,
)
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
EXACT_69 = 69  # 002's house rule: "making the total exactly 69 has some sort of effect"


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
    rules: RuleSet | None = None,
) -> tuple[GameState, list[Event]]:
    """Spec §4: shuffle, draw the first player, deal, set the start total and lives.

    ``rules`` plays a preset (:mod:`.presets`) instead of the rule set ``options`` describe;
    ``options`` then still names the mode the state is labelled with.
    RNG order: the canonical deck is shuffled, then the first player is ``below(n)``
    in seat order, then the deal.
    """
    options = options or Options()
    _check_player_ids(player_ids)
    resolved = rules or rules_for(options, CURRENT_STATE_VERSION)
    missing = unsupported(resolved)
    if missing:
        raise RuleError(Reason.INVALID_OPTION, option="rules", value=", ".join(missing))
    fewest, most = resolved.players
    if not fewest <= len(player_ids) <= most:
        value = f"{len(player_ids)} ({resolved.name}: {fewest}-{most})"
        raise RuleError(Reason.INVALID_OPTION, option="players", value=value)
    seats = tuple(player_ids)
    n = len(seats)
    deck_count = resolved.deck.deck_count(n)
    rng = Rng(seed_rng(seed))
    pile = [c.id for c in cards_of(resolved.deck, deck_count)]
    rng.shuffle(pile)
    first = seats[rng.below(n)]
    lives = resolved.tokens.start(n)
    state = GameState(
        state_version=CURRENT_STATE_VERSION,
        options=options,
        seats=seats,
        names={p: names[p] for p in seats if names and names.get(p)},
        hand_size=resolved.hand.size,
        deck_count=deck_count,
        start_lives=lives,
        hands={p: [] for p in seats},
        draw_pile=pile,
        discard=[],
        total=resolved.start.for_players(n),
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
        preset=rules,
        round_starter=first if rules is not None else "",
        score={p: 0 for p in seats} if resolved.scores else {},
        turns_taken={p: 0 for p in seats} if resolved.locked_turns() else {},
    )
    started: dict[str, object] = {
        "stateVersion": state.state_version,
        "mode": options.mode,
        "options": options.to_mapping(),
        "seats": list(seats),
        "handSize": state.hand_size,
        "lives": lives,
        "deckSize": len(pile),
        "seedCommitment": state.seed_commitment,
    }
    if rules is not None:
        started["rules"] = rules.name
    events = [Event("gameStarted", started)]
    _deal(state, first, events)
    _turn_start_card(state, events)
    events.append(_round_started(state, first))
    _check_special_hands(state, _seat_order_from(state, first), events)
    _start_turn(state, rng, events, now_ms)
    state.rng = rng.freeze()
    return state, events


# -- legality ------------------------------------------------------------------------------


def card_of(state: GameState, card_id: str) -> Card:
    return catalogue_of(state.rules.deck, state.deck_count)[card_id]


def _applies(play: Play, total: int) -> bool:
    w = play.when
    if w is When.ALWAYS:
        return True
    even = total % 2 == 0
    if w is When.EVEN_OVER_49:
        return even and total > 49
    if w is When.NOT_EVEN_OVER_49:
        return not (even and total > 49)
    if w is When.ENDS_IN_ZERO:
        return total % 10 == 0
    return even if w is When.EVEN else not even


applies = _applies  # whether a play applies at a total, for the checks of a received rule set


def _outcome(rules: RuleSet, total: int, play: Play, picked: int | None = None) -> tuple[int, Reason | None]:
    """The total ``play`` makes from ``total`` and why it is refused (``None``: it is legal).

    A ``PICK`` play makes ``picked`` (its ``lo`` when not given).
    """
    op = play.op
    if op is Op.KEEP:
        return total, None
    if op is Op.ADD:
        result = total + play.amount
    elif op is Op.SET:
        result = play.amount
    elif op is Op.PICK:
        return (play.lo if picked is None else picked), None
    elif op is Op.DOUBLE:
        result = total * 2
    else:
        result = total // 2
    if result < 0 and result < total:
        if rules.floor is Floor.CLAMP:
            return 0, None
        # Floor.NEGATIVE (003's 1980 edition) goes down to -limit, a bound no game reaches.
        if rules.floor is Floor.FORBID or result < -rules.limit:
            return result, Reason.BELOW_ZERO
    if result > rules.limit and rules.over_limit is Limit.REFUSE:
        return result, Reason.OVER_99
    return result, None


# Action fields that select a play, with the action attribute and the refusal when it is missing.
_SELECT_ATTR = {"sign": "sign", "aceValue": "ace_value", "jokerValue": "joker_value", "dir": "dir"}


def _action_for(card_id: str, play: Play, value: object = None) -> Action:
    if play.select is None:
        return Action(card_id)
    key, chosen = play.select
    return Action(card_id, **{_SELECT_ATTR[key]: chosen if value is None else value})  # type: ignore[arg-type]


def _card_refusal(state: GameState, rules: RuleSet, player: str, card: Card) -> RuleError | None:
    """Why ``player`` may not play ``card`` at all now, whatever the total (None: they may).

    Callers skip it unless the card is locked or ``rules`` forbid the same number twice: it runs
    for every card the rules look at.
    """
    assert card.type is not None
    locked = card.type.locked_turns
    if locked and state.turns_taken.get(player, 0) < locked:
        return RuleError(Reason.CARD_TOO_EARLY, cardId=card.id, rank=card.type.rank, turns=locked)
    if rules.no_same_number_twice and state.history:
        last = card_of(state, state.history[-1].card_id).type
        if last is not None and last.rank == card.type.rank:
            return RuleError(Reason.SAME_NUMBER_TWICE, cardId=card.id, rank=card.type.rank)
    return None


def card_choices(state: GameState, card: Card, player: str | None = None) -> list[Choice]:
    """Every distinct way to play ``card`` now, legal or not, with its resulting total.

    ``player`` holds the card (default: the player to move). A play naming a number in a range
    (the joker) is listed at the range's two ends; every integer between is legal too.
    """
    return [c for _, c in _card_plays(state, player or state.current, card)]


def _card_plays(state: GameState, player: str, card: Card) -> list[tuple[Play, Choice]]:
    assert card.type is not None
    rules, s = state.rules, state.total
    refused = (
        _card_refusal(state, rules, player, card)
        if card.type.locked_turns or rules.no_same_number_twice
        else None
    )
    out: list[tuple[Play, Choice]] = []
    for play in card.type.plays:
        if not _applies(play, s):
            continue
        if play.op is Op.PICK:
            why = refused.reason if refused else None
            out.append((play, Choice(_action_for(card.id, play, play.lo), play.lo, why)))
            out.append((play, Choice(_action_for(card.id, play, play.hi), play.hi, why)))
            continue
        result, why = _outcome(rules, s, play)
        why = refused.reason if refused else why or obligation.refusal(state, play)
        out.append((play, Choice(_action_for(card.id, play), result, why)))
    return out


def legal_choices(state: GameState, player: str) -> list[Choice]:
    """The legal (card, choice) pairs of ``player``'s hand, in hand order, then the pair plays.

    In the exchange phase: one choice per card of the hand, if ``player`` still owes a pass.
    """
    if state.phase is Phase.EXCHANGE:
        if not exchange.owes(state, player):
            return []
        return [Choice(Action(cid), state.total) for cid in state.hands[player]]
    cat = catalogue_of(state.rules.deck, state.deck_count)
    out = [c for cid in state.hands[player] for _, c in _card_plays(state, player, cat[cid]) if c.legal]
    if state.rules.pairs:
        out += [c for _, _, c in pairs.pair_choices(state, player) if c.legal]
    return out


def has_legal_play(state: GameState, player: str) -> bool:
    rules = state.rules
    cat = catalogue_of(rules.deck, state.deck_count)
    s = state.total
    for cid in state.hands[player]:
        card = cat[cid]
        t = card.type
        assert t is not None
        if (t.locked_turns or rules.no_same_number_twice) and _card_refusal(state, rules, player, card):
            continue
        plays = t.plays
        if any(
            _applies(p, s) and _outcome(rules, s, p)[1] is None and obligation.refusal(state, p) is None
            for p in plays
        ):
            return True
    return bool(rules.pairs) and any(c.legal for _, _, c in pairs.pair_choices(state, player))


def _require(field: str, card_id: str, play: Play, plays: Sequence[Play]) -> RuleError:
    """The refusal for a missing or unknown choice value of ``field``."""
    values = [p.select[1] for p in plays if p.select is not None and p.select[0] == field]
    if field == "sign":
        return RuleError(Reason.SIGN_REQUIRED, cardId=card_id)
    if field == "dir":
        return RuleError(Reason.DIR_REQUIRED, cardId=card_id)
    if field == "aceValue":
        return RuleError(Reason.ACE_VALUE_REQUIRED, cardId=card_id, ace_high=max(values))  # type: ignore[type-var]
    return RuleError(Reason.JOKER_VALUE_REQUIRED, cardId=card_id, min=play.lo, max=play.hi)


def _select(card: Card, action: Action, total: int) -> tuple[Play, dict[str, object]]:
    """The play ``action`` asks for (§8.2 choice fields), or the refusal."""
    assert card.type is not None
    cid = card.id
    plays = [p for p in card.type.plays if _applies(p, total)]
    if not plays:  # a card with no plays (003's ONO 99), or none at this total
        raise RuleError(Reason.CARD_NOT_PLAYABLE, cardId=cid)
    fields = {p.select[0] for p in plays if p.select is not None}
    if action.dir is not None and "dir" not in fields:
        raise RuleError(Reason.DIR_NOT_ALLOWED, cardId=cid)
    for field in ("sign", "aceValue", "jokerValue"):
        if getattr(action, _SELECT_ATTR[field]) is not None and field not in fields:
            raise RuleError(Reason.CHOICE_NOT_ALLOWED, cardId=cid, field=field)
    if not fields:
        return plays[0], {}
    (field,) = fields  # a card selects its plays by one field
    value = getattr(action, _SELECT_ATTR[field])
    if field == "jokerValue":
        play = plays[0]
        if value is None:
            raise _require(field, cid, play, plays)
        if not play.lo <= value <= play.hi:
            raise RuleError(Reason.JOKER_OUT_OF_RANGE, cardId=cid, min=play.lo, max=play.hi, value=value)
        return play, {field: value}
    for play in plays:
        if play.select is not None and play.select[1] == value:
            return play, {field: value}
    if field == "aceValue" and value is not None:
        high = max(p.select[1] for p in plays if p.select is not None)  # type: ignore[type-var]
        raise RuleError(Reason.ACE_VALUE_INVALID, cardId=cid, ace_high=high, value=value)
    raise _require(field, cid, plays[0], plays)


def _check_mover(state: GameState, player: str) -> None:
    if state.phase is Phase.FINISHED:
        raise RuleError(Reason.GAME_FINISHED)
    if player not in state.alive:
        raise RuleError(Reason.UNKNOWN_PLAYER, playerId=player)
    if player != state.current:
        raise RuleError(Reason.NOT_YOUR_TURN, playerId=player, current=state.current)


def _resolve(state: GameState, player: str, action: Action) -> tuple[Card, int, Play, dict[str, object]]:
    """Validate ``action`` (§8.2) and return (card, new total, the play, choice)."""
    _check_mover(state, player)
    cid = action.card_id
    if cid not in state.hands[player]:
        raise RuleError(Reason.CARD_NOT_IN_HAND, cardId=cid)
    card = card_of(state, cid)
    s = state.total
    play, choice = _select(card, action, s)
    rules = state.rules
    if card.type is not None and (card.type.locked_turns or rules.no_same_number_twice):
        refused = _card_refusal(state, rules, player, card)
        if refused is not None:
            raise refused
    picked = choice.get("jokerValue")
    result, why = _outcome(rules, s, play, picked if isinstance(picked, int) else None)
    if why is not None:
        raise RuleError(why, cardId=cid, total=s, result=result)
    owed = obligation.refusal(state, play)
    if owed is not None:
        raise RuleError(owed, cardId=cid)
    return card, result, play, choice


def check_action(state: GameState, player: str, action: Action) -> int:
    """Raise :class:`RuleError` if ``action`` is refused; else return the total it would make."""
    if state.phase is Phase.EXCHANGE:
        exchange.check_pass(state, player, action)
        return state.total
    if action.discard:
        _check_mover(state, player)
        discard.check(state, player, action)
        return state.total
    if action.pair_card_id is not None:
        _check_mover(state, player)
        return pairs.resolve_pair(state, player, action)[1]
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
    if state.phase is Phase.EXCHANGE:
        return exchange.choose(state, player, action, now_ms)
    if action.discard:
        return _discard(state, player, action, now_ms)
    pair: Pair | None = None
    play: Play | None = None
    if action.pair_card_id is not None:
        _check_mover(state, player)
        played, result, effect, choice, pair = pairs.resolve_pair(state, player, action)
        card = played[0]
    else:
        card, result, play, choice = _resolve(state, player, action)
        effect = play.effect_for(sum(state.alive.values()))
        played = [card]
    s = state.clone()
    rng = Rng(s.rng)
    events: list[Event] = []

    for c in played:
        s.hands[player].remove(c.id)
        s.discard.append(c.id)
    before = s.total
    s.total = result
    record = PlayRecord(player, card.id, card.face, before, result, choice)
    s.history.append(record)
    if len(s.history) > HISTORY_LENGTH:
        del s.history[0]
    events.append(Event("cardPlayed", {**record.to_dict(), "kind": str(card.kind), "seq": s.seq + 1}))
    if pair is not None:
        faces = [c.to_dict() for c in played]
        events.append(
            Event("pairPlayed", {"player": player, "cards": faces, "before": before, "total": result})
        )
    rules = s.rules
    # An exchange card (a single one) makes every player pass a card before the next move, and
    # before the round ends if this play ended it.
    swaps = pair is None and card.type is not None and card.type.exchange
    if player in s.turns_taken and s.turns_taken[player] < rules.locked_turns():
        s.turns_taken[player] += 1
    if rules.exact_limit_bonus and result == rules.limit and before != result:
        _bonus(s, player, events)
    if rules.exact_69_bonus and result == EXACT_69 and before != result:
        _bonus(s, player, events)
    crossing = (rules.thresholds or result > rules.limit) and _thresholds(
        s, player, before, result, rng, events, played=(card.type, pair), defer=swaps
    )
    if crossing and not swaps:
        s.seq += 1
        if s.phase is Phase.PLAYING:
            _start_turn(s, rng, events, now_ms)
        s.rng = rng.freeze()
        return s, events
    if effect is Effect.REVERSE:
        s.direction = -s.direction
        events.append(Event("directionChanged", {"player": player, "direction": s.direction}))
    if s.alive[player]:  # a threshold may have cost the player their last token
        for _ in played:
            _refill(s, player, rng, events)
        if rules.special_hands:
            _check_special_hands(s, [player], events)
    s.seq += 1
    if s.phase is Phase.FINISHED:
        s.rng = rng.freeze()
        return s, events
    if swaps and s.alive[player]:
        s.exchange_ends_round = bool(crossing)
        if exchange.start(s, player, rng, events, now_ms):
            s.rng = rng.freeze()
            return s, events
        s.exchange_ends_round = False
    if swaps and crossing:
        # No exchange began (nobody else holds a card, or the card's player went out paying for this
        # play): the round it ended, whose end waited for the exchange, ends now.
        _end_round(s, player, rng, events)
        if s.phase is Phase.PLAYING:
            _start_turn(s, rng, events, now_ms)
        s.rng = rng.freeze()
        return s, events
    if s.obligation and play is not None and obligation.next_turn(s, player, play, events, _next_alive):
        pass
    elif effect is Effect.PLAY_AGAIN and s.alive[player]:
        events.append(Event("playAgain", {"player": player}))
        s.current = player
    elif effect is Effect.SKIP:
        skipped = _next_alive(s, player)
        events.append(Event("turnSkipped", {"player": skipped, "by": player}))
        s.current = _next_alive(s, skipped)
    else:
        s.current = _next_alive(s, player)
        if effect is Effect.PLAY_TWO:
            obligation.owe(s, player, events)
    _start_turn(s, rng, events, now_ms)
    s.rng = rng.freeze()
    return s, events


def _discard(state: GameState, player: str, action: Action, now_ms: int) -> tuple[GameState, list[Event]]:
    """003's discard of four ONO 99 cards for four new ones (:mod:`.discard`); the turn goes on."""
    _check_mover(state, player)
    discard.check(state, player, action)
    s = state.clone()
    rng = Rng(s.rng)
    events: list[Event] = []
    discard.give_up(s, player, action.discard, events)
    for _ in action.discard:
        _draw(s, player, rng, events)
    s.seq += 1
    _start_turn(s, rng, events, now_ms)
    s.rng = rng.freeze()
    return s, events


def crossed(t: Threshold, before: int, after: int) -> bool:
    """Whether a play from ``before`` to ``after`` reaches or crosses ``t``."""
    if t.reach is Reach.EXACT:
        return after == t.at and (before < t.at or not t.from_below_only)
    # Crossing passes the border between ``at`` and ``at + 1``.
    up = before <= t.at < after
    return up or (not t.from_below_only and after <= t.at < before)


def _thresholds(
    s: GameState,
    player: str,
    before: int,
    after: int,
    rng: Rng,
    events: list[Event],
    played: tuple[CardType | None, Pair | None] = (None, None),
    defer: bool = False,
) -> bool:
    """Pay and score what the play from ``before`` to ``after`` costs; True if it ended the round or the game.

    A total over the limit always ends the round (under ``Limit.PLAY_AND_LOSE``). ``played``:
    the card or pair that made it (for their own points at a crossing); ``defer``: the round's
    end waits (for an exchange), the caller ends it.
    """
    ends = after > s.rules.limit
    for t in s.rules.thresholds:
        if not crossed(t, before, after):
            continue
        ends = ends or t.ends_round
        if t.points:
            scoring.score_crossing(s, player, t, played[0], played[1], events)
        if not t.tokens:
            continue
        payers = (
            [p for p in _seat_order_from(s, player) if s.alive[p] and p != player]
            if t.others_pay
            else [player]
        )
        for p in payers:
            _pay(s, p, t.tokens, {"at": t.at, "reach": str(t.reach), "by": player}, events)
            if s.phase is Phase.FINISHED:
                return True
    if ends and not defer:
        _end_round(s, player, rng, events)
    return ends


def _end_round(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    """``player``'s play ended the round: the next one is dealt (or the game ends)."""
    if s.rules.starter is Starter.ROTATE:
        starter = _next_alive(s, s.round_starter or player, clockwise=True)
    else:
        starter = _next_alive(s, player)
    _new_round(s, starter, rng, events, everything=True, reason="thresholdEnded")


def _pay(s: GameState, player: str, tokens: int, why: dict[str, object], events: list[Event]) -> None:
    """``player`` pays ``tokens``; unable to pay in full, they are out (``OutWhen.CANNOT_PAY``)."""
    if not s.alive[player]:  # out at an earlier border of the same play
        return
    if s.lives[player] < tokens:
        if s.rules.tokens.out_when is not OutWhen.NEVER:
            _eliminate(s, player, events, reason="cannotPay")
            return
        tokens = s.lives[player]  # game points: what is not there is not paid
    s.lives[player] -= tokens
    s.lives_lost[player] += tokens
    events.append(Event("tokensPaid", {"player": player, "tokens": tokens, "left": s.lives[player], **why}))


def _bonus(s: GameState, player: str, events: list[Event]) -> None:
    """§7 house rule: making the total exactly the limit wins back one token the player lost."""
    back = 1 if s.lives[player] < s.start_lives and s.lives_lost[player] > 0 else 0
    s.lives[player] += back
    s.lives_lost[player] -= back
    if back:
        s.on_board[player] = False
    events.append(Event("bonus", {"player": player, "tokens": back, "left": s.lives[player]}))


def _refill(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    hand = s.rules.hand
    if hand.refill is Refill.ONE:
        _draw(s, player, rng, events)
    elif hand.refill is Refill.UP_TO:
        while len(s.hands[player]) < hand.refill_to and _draw(s, player, rng, events):
            pass


def _draw(s: GameState, player: str, rng: Rng, events: list[Event]) -> bool:
    """Draw one card for ``player``, turning the discard into a new stock if needed; False if none."""
    if not s.draw_pile and s.discard:
        # The discard becomes the new pile (total unchanged), all of it or all but its top card.
        keep = s.discard[-1:] if s.rules.hand.stock_out is StockOut.KEEP_TOP else []
        s.draw_pile, s.discard = s.discard[: len(s.discard) - len(keep)], keep
        rng.shuffle(s.draw_pile)
        events.append(Event("reshuffled", {"count": len(s.draw_pile), "total": s.total}))
    if not s.draw_pile:
        return False
    cid = s.draw_pile.pop()
    s.hands[player].append(cid)
    card = card_of(s, cid)
    events.append(Event("cardDrawn", {"player": player, "card": card.to_dict()}, Audience.ONLY, player))
    events.append(Event("cardDrawn", {"player": player}, Audience.EXCEPT, player))
    return True


def _next_alive(s: GameState, player: str, *, clockwise: bool = False) -> str:
    seats = s.seats
    n = len(seats)
    i = seats.index(player)
    direction = 1 if clockwise else s.direction
    for step in range(1, n + 1):
        candidate = seats[(i + step * direction) % n]
        if s.alive[candidate]:
            return candidate
    raise RuleError(Reason.INVALID_STATE, detail="no player alive")


def _start_turn(s: GameState, rng: Rng, events: list[Event], now_ms: int) -> None:
    """§5.1 step 1: whoever must move with no legal card loses at once, repeatedly."""
    while (
        s.phase is Phase.PLAYING
        and not has_legal_play(s, s.current)
        and discard.discard_action(s, s.current) is None
    ):
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
                    "deadline": now_ms + s.rules.turn_seconds * 1000,
                },
            )
        )


def _lose(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    """§5.3 loss handling for ``player``, who cannot play at the start of their turn."""
    obligation.clear(s)
    if s.rules.counts_hands:
        _out_of_round(s, player, rng, events)
        return
    if s.start_lives == 0:
        _eliminate(s, player, events, reason="noPlayableCard")
        if s.phase is Phase.FINISHED:
            return
        nxt = _next_alive(s, player)
        ends = s.rules.out_ends
        if ends is LossEnds.RESET:
            _new_round(s, nxt, rng, events, everything=False, reason="reset")
        elif ends is LossEnds.ROUND:
            _new_round(s, nxt, rng, events, everything=True, reason="eliminated")
        else:
            s.current = nxt
        return
    if s.rules.tokens.out_when is OutWhen.NEVER:  # game points: pay one if there is one, never out
        _pay(s, player, 1, {"reason": "noPlayableCard"}, events)
    elif s.lives[player] > 0:
        s.lives[player] -= 1
        s.lives_lost[player] += 1
        on_board = s.lives[player] == 0 and s.rules.tokens.on_the_board
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
    rules = s.rules
    if rules.starter is Starter.ROTATE:  # the deal passes to the left: seat order, whatever the direction
        starter = _next_alive(s, s.round_starter or player, clockwise=True)
    elif rules.starter is Starter.NEXT or not s.alive[player]:
        starter = _next_alive(s, player)
    else:
        starter = player
    if rules.loss_ends is LossEnds.NOTHING:
        s.current = starter
    elif rules.loss_ends is LossEnds.PILE:
        _clear_pile(s, starter, events)
    else:
        _new_round(s, starter, rng, events, everything=rules.loss_ends is LossEnds.ROUND, reason="lifeLost")


def _out_of_round(s: GameState, player: str, rng: Rng, events: list[Event]) -> None:
    """Hand scores (:mod:`.handscore`): ``player`` is out of this round, their hand counted; with
    one player left the round is scored, and the game ends or a new round is dealt."""
    handscore.count(s, player, events, out=True)
    survivor = _next_alive(s, player)
    _eliminate(s, player, events, reason="noPlayableCard", finish=False)
    if sum(s.alive.values()) > 1:
        s.current = survivor
        return
    handscore.count(s, survivor, events, out=False)
    in_game = handscore.still_in(s)
    # Out of the game: those out before, in order, then whoever reached the target this round.
    gone = [p for p in s.elimination_order if p not in in_game]
    gone += [p for p in s.seats if p not in in_game and p not in gone]
    s.eliminated_round = {p: s.eliminated_round.get(p, s.round) for p in gone}
    s.elimination_order = gone
    for p in s.seats:
        s.alive[p] = p in in_game
        if p in gone:  # the round's survivor who reached the target leaves too: hand face down
            s.discard.extend(s.hands[p])
            s.hands[p] = []
    if handscore.game_over(s, in_game):
        _finish(s, events)
        return
    starter = _next_alive(s, s.round_starter or survivor, clockwise=True)
    _new_round(s, starter, rng, events, everything=True, reason="eliminated")


def _eliminate(s: GameState, player: str, events: list[Event], reason: str, finish: bool = True) -> None:
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
    if finish and sum(s.alive.values()) == 1:
        _finish(s, events)


def _new_round(
    s: GameState, starter: str, rng: Rng, events: list[Event], *, everything: bool, reason: str
) -> None:
    """A fresh deal. Lives mode gathers every card; ``reset`` gathers the survivors' hands into the pile.

    The gathered cards are put in canonical deck order before the shuffle, so the new
    pile depends only on which cards were gathered and the RNG. With game points the round's
    points are banked first, and a score at the target ends the game instead.
    """
    obligation.clear(s)
    if s.rules.points and not s.rules.counts_hands and _bank_points(s, events):
        return
    if s.rules.end.kind is EndKind.ROUNDS:
        scoring.score_hands(s, events)
        if scoring.last_round(s):
            _finish(s, events)
            return
    deck = cards_of(s.rules.deck, s.deck_count)
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
    s.total = 0 if s.state_version == 1 else s.rules.start.for_players(alive)
    s.current = starter
    _note_starter(s, starter)
    if s.rules.round_resets_direction:
        s.direction = 1
    s.history = []
    _deal(s, starter, events)
    _turn_start_card(s, events)
    events.append(_round_started(s, starter, reason))
    if s.rules.special_hands:
        _check_special_hands(s, _seat_order_from(s, starter), events)


def _bank_points(s: GameState, events: list[Event]) -> bool:
    """The points kept this round go to the scores, and the points come back; True if the game ended."""
    kept = {p: s.lives[p] for p in s.seats if s.alive[p]}
    for p, points in kept.items():
        s.score[p] += points
        s.lives[p] = s.start_lives
    events.append(Event("roundScored", {"round": s.round, "kept": kept, "score": dict(s.score)}))
    if max(s.score.values()) >= s.rules.end.target:
        _finish(s, events)
        return True
    return False


def _turn_start_card(s: GameState, events: list[Event]) -> None:
    """``Start.from_card``: turn up stock cards, putting each special one back in the middle of the
    stock, until an ordinary card shows; it starts the pile and sets the total."""
    if not s.rules.start.from_card:
        return
    for returned in range(len(s.draw_pile)):  # a stock of special cards only leaves the start total
        card = card_of(s, s.draw_pile.pop())
        assert card.type is not None
        if card.type.ordinary:
            s.discard.append(card.id)
            s.total = card.type.plays[0].amount
            data = {"card": card.to_dict(), "total": s.total, "returned": returned}
            events.append(Event("startCard", data))
            return
        s.draw_pile.insert(len(s.draw_pile) // 2, card.id)


def _check_special_hands(s: GameState, players: Sequence[str], events: list[Event]) -> None:
    """A special hand (three Kings, three Sixes) held by one of ``players``, in order, ends the game."""
    cat = catalogue_of(s.rules.deck, s.deck_count)
    for p in players:
        if not s.alive[p]:
            continue
        held = Counter(cat[cid].type.rank for cid in s.hands[p])  # type: ignore[union-attr]
        for hand in s.rules.special_hands:
            if held[hand.rank] >= hand.count:
                s.special_end = hand.rank
                events.append(
                    Event(
                        "specialHand",
                        {"player": p, "rank": hand.rank, "count": hand.count, "holderWins": hand.holder_wins},
                    )
                )
                _finish(s, events, p)
                return


def _note_starter(s: GameState, starter: str) -> None:
    # Only a preset game (held by the library) records it: the protobuf State of kr-product and
    # classic games has no such field, and neither rotates the deal.
    if s.preset is not None:
        s.round_starter = starter


def _clear_pile(s: GameState, starter: str, events: list[Event]) -> None:
    """The pile is taken away: everyone keeps their hand, the total goes back to the start."""
    s.round += 1
    s.total = s.rules.start.for_players(sum(s.alive.values()))
    s.current = starter
    _note_starter(s, starter)
    s.history = []
    if s.rules.round_resets_direction:
        s.direction = 1
    events.append(_round_started(s, starter, "pileCleared"))


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
    score: int | None = None  # game points only

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "player": self.player,
            "rank": self.rank,
            "livesLost": self.lives_lost,
            "eliminatedAtRound": self.eliminated_at_round,
        }
        if self.score is not None:
            out["score"] = self.score
        return out


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
    """§6/§8.6: the survivor first, then the later an elimination the better.

    A special hand: its holder wins (the others still in follow, in seat order), or nobody does
    and everyone still in shares the first place. Game points: the best score wins, ties share
    a place (highest first, or lowest with ``End.highest_wins`` off).
    """
    if s.phase is not Phase.FINISHED:
        raise RuleError(Reason.INVALID_STATE, detail="game not finished")
    out = list(reversed(s.elimination_order))
    if s.special_end or s.rules.scores:
        return _special_or_points_result(s, out)
    winners = [p for p in s.seats if s.alive[p]]
    order = winners + out
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


def _special_or_points_result(s: GameState, out: list[str]) -> GameResult:
    in_game = [p for p in _seat_order_from(s, s.current) if s.alive[p]]
    if s.rules.scores:
        sign = -1 if s.rules.end.highest_wins else 1
        in_game.sort(key=lambda p: (sign * s.score[p], s.seats.index(p)))
        places = {p: 1 + sum(sign * s.score[q] < sign * s.score[p] for q in in_game) for p in in_game}
        winners = [p for p in in_game if places[p] == 1]
        names = ", ".join(s.name(p) for p in winners)
        top = s.score[winners[0]]
        summary = (f"{names} 님이 {top}점으로 이겼어요!", f"{names} won with {top} points!")
    else:
        hand = s.rules.special_hand(s.special_end)
        assert hand is not None
        holder = s.name(s.current)
        if hand.holder_wins:
            places = {p: i + 1 for i, p in enumerate(in_game)}
            winners = [s.current]
            summary = (
                f"{holder} 님이 {hand.rank} {hand.count}장으로 바로 이겼어요!",
                f"{holder} wins at once with {hand.count} × {hand.rank}!",
            )
        else:
            places = dict.fromkeys(in_game, 1)
            winners = []
            summary = (
                f"{holder} 님의 {hand.rank} {hand.count}장으로 모두 졌어요",
                f"{holder} holds {hand.count} × {hand.rank}: everyone loses",
            )
    first_out = len(in_game) + 1
    places |= {p: first_out + i for i, p in enumerate(out)}
    score = s.score if s.rules.scores else {}
    ranking = tuple(
        RankEntry(p, places[p], s.lives_lost[p], s.eliminated_round.get(p), score.get(p))
        for p in [*in_game, *out]
    )
    return GameResult(ranking, tuple(winners), summary[0], summary[1], s.total)


def _finish(s: GameState, events: list[Event], holder: str | None = None) -> None:
    """The game ends: ``holder`` holds the special hand that ended it; with game points the
    current player becomes the first of the best scores; else the survivor."""
    s.phase = Phase.FINISHED
    if holder is not None:
        s.current = holder
    elif s.rules.scores:
        sign = -1 if s.rules.end.highest_wins else 1
        s.current = min(s.alive_players(), key=lambda p: (sign * s.score[p], s.seats.index(p)))
    else:
        s.current = next(p for p in s.seats if s.alive[p])
    result = game_result(s)
    events.append(Event("gameFinished", {**result.to_dict(), "seed": str(s.seed)}))


# -- §8.5 timeout policy -------------------------------------------------------------------


def timeout_action(state: GameState, player: str | None = None) -> Action:
    """The automatic move for the current player (spec §8.5).

    Smallest resulting total (with ``RuleSet.timeout_forward``, a play that lowers the total only
    when nothing else is left); ties by class (no-change cards, number cards, ± cards,
    K/joker), then card id, a single card before a pair; a 0 card keeps the direction, a joker
    takes its range minimum. Uses only the player's own hand and the public total.
    In the exchange phase: the pass of ``player`` (default: ``current``, the first who owes one),
    :func:`.exchange.timeout_pass`.
    """
    if state.phase is Phase.FINISHED:
        raise RuleError(Reason.GAME_FINISHED)
    if state.phase is Phase.EXCHANGE:
        who = player or state.current
        if not exchange.owes(state, who):
            raise RuleError(Reason.NOT_YOUR_TURN, playerId=who, current=state.current)
        return exchange.timeout_pass(state, who)
    best: tuple[int, int, int, str, int] | None = None
    best_action: Action | None = None
    cat = catalogue_of(state.rules.deck, state.deck_count)
    forward = state.rules.timeout_forward
    total = state.total
    for cid in state.hands[state.current]:
        card = cat[cid]
        assert card.type is not None
        for play, choice in _card_plays(state, state.current, card):
            if not choice.legal:
                continue
            # A play with a turn effect after one without: the 0 card keeps the direction.
            lowers = int(forward and choice.result < total)
            key = (lowers, choice.result, card.type.timeout_class, cid, int(play.effect is not Effect.NONE))
            if best is None or key < best:
                best, best_action = key, choice.action
    for _, play, choice in pairs.pair_choices(state, state.current) if state.rules.pairs else ():
        if not choice.legal:
            continue
        t = cat[choice.action.card_id].type
        assert t is not None
        lowers = int(forward and choice.result < total)
        key = (
            lowers,
            choice.result,
            t.timeout_class,
            choice.action.card_id,
            2 + int(play.effect is not Effect.NONE),
        )
        if best is None or key < best:
            best, best_action = key, choice.action
    if best_action is None:
        best_action = discard.discard_action(state, state.current)  # four dead cards: exchange them
    if best_action is None:
        raise RuleError(Reason.INVALID_STATE, detail="current player has no legal play")
    return best_action


def check_replayable(state: GameState) -> None:
    """Spec §8.2: a game that finished under state version 1 cannot be replayed."""
    if state.state_version == 1 and state.phase is Phase.FINISHED:
        raise RuleError(Reason.REPLAY_UNSUPPORTED)

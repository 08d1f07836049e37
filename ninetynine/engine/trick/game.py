"""The trick-taking "99" (source 004, part I) as a pure state machine.

``setup`` draws the first dealer and deals; ``apply`` takes one decision and resolves
everything up to the next one (trick winners, revealed bids, the deal's score, the next
deal, the end). Nothing here mutates its input, reads a clock or uses hidden randomness:
the PCG32 state of :mod:`ninetynine.engine.rules.rng` travels in :class:`TrickState`.

RNG order: at setup the canonical deck is shuffled, then the first dealer is
``below(3)`` in seat order ("by lot"); every later deal shuffles the canonical deck
again. Cards are dealt one at a time from the top (end) of the shuffled pile, starting
with the dealer's left and going clockwise, until each player holds 12.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..rules.errors import Reason
from ..rules.rng import Rng, seed_commitment, seed_rng
from ..rules.state import Audience, Event
from .cards import BID_SIZE, BID_VALUE, HAND_SIZE, TRICKS_PER_DEAL, bid_tricks, card, deck
from .errors import TrickError, TrickReason
from .options import TRUMPS_BY_CONTRACTS, TrickOptions
from .state import ActionKind, DealLine, DealRecord, TrickAction, TrickPhase, TrickState

PLAYERS = 3
MAX_PLAYER_ID_LENGTH = 64
# Contract points for each player who made theirs, by how many made one.
CONTRACT_POINTS = {3: 10, 2: 20, 1: 30, 0: 0}
DECLARER_MADE = 30
DECLARER_FAILED = -60
# Parlett's rotation: the trump suit is the one whose bid value is the number of
# contracts made in the previous deal.
TRUMP_FOR_CONTRACTS = {v: s for s, v in BID_VALUE.items()}


# -- setup ---------------------------------------------------------------------------------


def _check_player_ids(player_ids: Sequence[str]) -> None:
    if len(player_ids) != PLAYERS:
        raise TrickError(TrickReason.INVALID_PLAYER_COUNT, count=len(player_ids))
    if len(set(player_ids)) != len(player_ids):
        raise TrickError(Reason.INVALID_PLAYER_ID, detail="duplicate id")
    for pid in player_ids:
        if not pid or len(pid) > MAX_PLAYER_ID_LENGTH or not pid.isprintable():
            raise TrickError(Reason.INVALID_PLAYER_ID, detail=repr(pid)[:80])


def setup(
    player_ids: Sequence[str],
    options: TrickOptions | None = None,
    *,
    seed: int,
    now_ms: int = 0,
    names: dict[str, str] | None = None,
) -> tuple[TrickState, list[Event]]:
    options = options or TrickOptions()
    _check_player_ids(player_ids)
    seats = tuple(player_ids)
    rng = Rng(seed_rng(seed))
    pile = [c.id for c in deck()]
    rng.shuffle(pile)
    dealer = seats[rng.below(PLAYERS)]
    state = TrickState(
        options=options,
        seats=seats,
        names={p: names[p] for p in seats if names and names.get(p)},
        phase=TrickPhase.BIDDING,
        deal=1,
        dealer=dealer,
        trumps=None,
        hands={p: [] for p in seats},
        bids={},
        revealed={p: False for p in seats},
        declarer=None,
        passed=[],
        current=None,
        leader=seats[0],
        trick=[],
        trick_no=1,
        last_trick=(),
        tricks_won={p: 0 for p in seats},
        won_cards={p: [] for p in seats},
        scores={p: 0 for p in seats},
        deals=[],
        winners=(),
        decision_started_at=now_ms,
        seq=0,
        rng=seed_rng(seed),  # replaced below
        seed=seed,
        seed_commitment=seed_commitment(seed),
    )
    events = [
        Event(
            "trickGameStarted",
            {
                "game": "trick",
                "options": options.to_mapping(),
                "seats": list(seats),
                "deckSize": len(pile),
                "firstDealer": dealer,
                "seedCommitment": state.seed_commitment,
            },
        )
    ]
    _start_deal(state, pile, events, now_ms)
    state.rng = rng.freeze()
    return state, events


def _start_deal(s: TrickState, pile: list[str], events: list[Event], now_ms: int) -> None:
    """Deal ``pile`` (already shuffled) and open the bidding of deal ``s.deal``."""
    first = s.left_of(s.dealer)
    order = [first, s.left_of(first), s.left_of(s.left_of(first))]
    for p in s.seats:
        s.hands[p] = []
    for _ in range(HAND_SIZE):
        for p in order:
            s.hands[p].append(pile.pop())
    s.bids = {}
    s.revealed = {p: False for p in s.seats}
    s.declarer = None
    s.passed = []
    s.current = None
    s.leader = first
    s.trick = []
    s.trick_no = 1
    s.last_trick = ()
    s.tricks_won = {p: 0 for p in s.seats}
    s.won_cards = {p: [] for p in s.seats}
    s.phase = TrickPhase.BIDDING
    s.decision_started_at = now_ms
    events.append(
        Event(
            "dealStarted",
            {
                "deal": s.deal,
                "dealer": s.dealer,
                "trumps": s.trumps,
                "handCounts": {p: len(s.hands[p]) for p in s.seats},
            },
        )
    )
    for p in order:
        cards = [card(c).to_dict() for c in s.hands[p]]
        events.append(
            Event("trickHandDealt", {"player": p, "deal": s.deal, "cards": cards}, Audience.ONLY, p)
        )
    events.append(
        Event(
            "biddingStarted",
            {"deal": s.deal, "players": list(s.seats), "deadline": deadline(s)},
        )
    )


# -- decisions and legality ----------------------------------------------------------------


def pending(state: TrickState) -> tuple[str, ...]:
    """The players a decision is awaited from (all who have not bid, while bidding)."""
    if state.phase is TrickPhase.BIDDING:
        return tuple(p for p in state.seats if p not in state.bids)
    if state.phase is TrickPhase.FINISHED or state.current is None:
        return ()
    return (state.current,)


def deadline(state: TrickState) -> int:
    """When the pending decision times out (ms); bidding has its own, longer allowance."""
    seconds = state.options.bid_seconds if state.phase is TrickPhase.BIDDING else state.options.turn_seconds
    return state.decision_started_at + seconds * 1000


def led_suit(state: TrickState) -> str | None:
    return card(state.trick[0][1]).suit if state.trick else None


def play_refusal(state: TrickState, player: str, card_id: str) -> TrickReason | None:
    """Why ``player`` may not play ``card_id`` (from their hand) to the current trick, if so."""
    suit = led_suit(state)
    if suit is None or card(card_id).suit == suit:
        return None
    if any(card(c).suit == suit for c in state.hands[player]):
        return TrickReason.MUST_FOLLOW_SUIT
    return None


def legal_plays(state: TrickState, player: str) -> list[str]:
    """Card ids ``player`` may play now, in hand order (empty when it is not their turn)."""
    if state.phase is not TrickPhase.PLAYING or state.current != player:
        return []
    return [c for c in state.hands[player] if play_refusal(state, player, c) is None]


def legal_actions(state: TrickState, player: str) -> list[TrickAction]:
    """Every action ``player`` may take now. While bidding, any 3 distinct cards of the hand
    make a bid (220 ways): that choice is described, not listed (the view's ``bidChoice``)."""
    if player not in pending(state):
        return []
    if state.phase is TrickPhase.ANNOUNCING:
        return [TrickAction.announce(), TrickAction.pass_()]
    if state.phase is TrickPhase.PLAYING:
        return [TrickAction.play(c) for c in legal_plays(state, player)]
    return []


def _check(state: TrickState, player: str, action: TrickAction) -> None:
    if state.phase is TrickPhase.FINISHED:
        raise TrickError(Reason.GAME_FINISHED)
    if player not in state.hands:
        raise TrickError(Reason.UNKNOWN_PLAYER, playerId=player)
    wanted = {
        ActionKind.BID: TrickPhase.BIDDING,
        ActionKind.ANNOUNCE: TrickPhase.ANNOUNCING,
        ActionKind.PASS: TrickPhase.ANNOUNCING,
        ActionKind.PLAY: TrickPhase.PLAYING,
    }[action.kind]
    if state.phase is not wanted:
        raise TrickError(TrickReason.WRONG_PHASE, action=action.kind, phase=state.phase)
    if action.kind is ActionKind.BID:
        if player in state.bids:
            raise TrickError(TrickReason.BID_ALREADY_PLACED, playerId=player)
        cards = action.cards
        if len(cards) != BID_SIZE or len(set(cards)) != BID_SIZE:
            raise TrickError(TrickReason.BID_CARD_COUNT, count=len(set(cards)))
        for c in cards:
            if c not in state.hands[player]:
                raise TrickError(Reason.CARD_NOT_IN_HAND, cardId=c)
        return
    if player != state.current:
        raise TrickError(Reason.NOT_YOUR_TURN, playerId=player, current=state.current)
    if action.kind is ActionKind.PLAY:
        played = action.card
        if played is None or played not in state.hands[player]:
            raise TrickError(Reason.CARD_NOT_IN_HAND, cardId=played)
        why = play_refusal(state, player, played)
        if why is not None:
            raise TrickError(why, cardId=played, suit=led_suit(state))


def check_action(state: TrickState, player: str, action: TrickAction) -> None:
    """Raise :class:`TrickError` if ``action`` by ``player`` is refused now."""
    _check(state, player, action)


# -- apply ---------------------------------------------------------------------------------


def apply(
    state: TrickState,
    player: str,
    action: TrickAction,
    *,
    now_ms: int = 0,
    expected_seq: int | None = None,
) -> tuple[TrickState, list[Event]]:
    """Take ``player``'s decision; return the new state and the ordered events.

    Raises :class:`TrickError` (``state`` untouched) if the action is refused.
    """
    if expected_seq is not None and expected_seq != state.seq:
        raise TrickError(Reason.STALE_STATE, expectedSeq=expected_seq, seq=state.seq)
    _check(state, player, action)
    s = state.clone()
    events: list[Event] = []
    s.seq += 1
    if action.kind is ActionKind.BID:
        _bid(s, player, action.cards, events, now_ms)
    elif action.kind is ActionKind.ANNOUNCE:
        _announce(s, player, events, now_ms)
    elif action.kind is ActionKind.PASS:
        _pass(s, player, events, now_ms)
    else:
        assert action.card is not None  # checked by _check
        _play(s, player, action.card, events, now_ms)
    return s, events


def _turn(s: TrickState, player: str, decision: str, events: list[Event], now_ms: int) -> None:
    s.current = player
    s.decision_started_at = now_ms
    events.append(
        Event(
            "trickTurnStarted",
            {"player": player, "decision": decision, "deadline": deadline(s), "seq": s.seq},
        )
    )


def _bid(s: TrickState, player: str, cards: tuple[str, ...], events: list[Event], now_ms: int) -> None:
    for c in cards:
        s.hands[player].remove(c)
    s.bids[player] = cards
    shown = {"player": player, "cards": [card(c).to_dict() for c in cards], "tricks": bid_tricks(cards)}
    events.append(Event("bidPlaced", shown, Audience.ONLY, player))
    events.append(Event("bidPlaced", {"player": player}, Audience.EXCEPT, player))
    if len(s.bids) == PLAYERS:
        s.phase = TrickPhase.ANNOUNCING
        _turn(s, s.left_of(s.dealer), "announce", events, now_ms)


def _announce(s: TrickState, player: str, events: list[Event], now_ms: int) -> None:
    s.declarer = player
    s.revealed[player] = True
    cards = s.bids[player]
    events.append(
        Event(
            "announced",
            {"player": player, "cards": [card(c).to_dict() for c in cards], "tricks": bid_tricks(cards)},
        )
    )
    _start_play(s, events, now_ms)


def _pass(s: TrickState, player: str, events: list[Event], now_ms: int) -> None:
    s.passed.append(player)
    events.append(Event("passed", {"player": player}))
    if len(s.passed) == PLAYERS:
        events.append(Event("noDeclarer", {"deal": s.deal}))
        _start_play(s, events, now_ms)
    else:
        _turn(s, s.left_of(player), "announce", events, now_ms)


def _start_play(s: TrickState, events: list[Event], now_ms: int) -> None:
    s.phase = TrickPhase.PLAYING
    s.leader = s.left_of(s.dealer)
    _turn(s, s.leader, "play", events, now_ms)


def trick_winner(trick: Sequence[tuple[str, str]], trumps: str | None) -> str:
    """The highest trump if any was played, else the highest card of the suit led."""
    cards = [(p, card(c)) for p, c in trick]
    suit = cards[0][1].suit
    if trumps is not None and any(c.suit == trumps for _, c in cards):
        suit = trumps
    return max((c.strength, p) for p, c in cards if c.suit == suit)[1]


def _play(s: TrickState, player: str, card_id: str, events: list[Event], now_ms: int) -> None:
    s.hands[player].remove(card_id)
    s.trick.append((player, card_id))
    events.append(
        Event(
            "trickCardPlayed",
            {"player": player, "card": card(card_id).to_dict(), "trick": s.trick_no, "seq": s.seq},
        )
    )
    if not s.hands[player] and not s.revealed[player]:
        # A player's bid cards stay face down until their other nine cards are played.
        s.revealed[player] = True
        cards = s.bids[player]
        events.append(
            Event(
                "bidRevealed",
                {"player": player, "cards": [card(c).to_dict() for c in cards], "tricks": bid_tricks(cards)},
            )
        )
    if len(s.trick) < PLAYERS:
        _turn(s, s.left_of(player), "play", events, now_ms)
        return
    winner = trick_winner(s.trick, s.trumps)
    s.tricks_won[winner] += 1
    s.won_cards[winner].extend(c for _, c in s.trick)
    s.last_trick = tuple(s.trick)
    events.append(
        Event(
            "trickWon",
            {
                "player": winner,
                "trick": s.trick_no,
                "cards": [{"player": p, "card": card(c).to_dict()} for p, c in s.trick],
                "tricksTaken": dict(s.tricks_won),
            },
        )
    )
    s.trick = []
    if s.trick_no < TRICKS_PER_DEAL:
        s.trick_no += 1
        s.leader = winner
        _turn(s, winner, "play", events, now_ms)
        return
    _score_deal(s, events, now_ms)


# -- scoring and the end -------------------------------------------------------------------


def score_lines(
    seats: Sequence[str],
    bids: Mapping[str, tuple[str, ...]],
    tricks: Mapping[str, int],
    declarer: str | None,
    scores: Mapping[str, int],
) -> tuple[int, tuple[DealLine, ...]]:
    """One deal's points: 1 a trick; 10/20/30 to each maker when 3/2/1 contracts are made;
    the declarer +30 for making the contract, -60 for failing it. Returns (contracts made, lines)."""
    made = {p: bid_tricks(bids[p]) == tricks[p] for p in seats}
    count = sum(made.values())
    lines = []
    for p in seats:
        contract = CONTRACT_POINTS[count] if made[p] else 0
        bonus = 0 if p != declarer else (DECLARER_MADE if made[p] else DECLARER_FAILED)
        total = tricks[p] + contract + bonus
        lines.append(
            DealLine(
                player=p,
                bid=bids[p],
                bid_tricks=bid_tricks(bids[p]),
                tricks=tricks[p],
                made=made[p],
                trick_points=tricks[p],
                contract_points=contract,
                declarer_points=bonus,
                total=total,
                score=scores[p] + total,
            )
        )
    return count, tuple(lines)


def _score_deal(s: TrickState, events: list[Event], now_ms: int) -> None:
    count, lines = score_lines(s.seats, s.bids, s.tricks_won, s.declarer, s.scores)
    for ln in lines:
        s.scores[ln.player] = ln.score
    record = DealRecord(s.deal, s.dealer, s.trumps, s.declarer, count, lines)
    s.deals.append(record)
    events.append(Event("dealScored", {**record.to_dict(), "scores": dict(s.scores)}))
    winners = _winners(s)
    if winners:
        s.phase = TrickPhase.FINISHED
        s.current = None
        s.winners = winners
        events.append(Event("trickGameFinished", {**game_result(s).to_dict(), "seed": str(s.seed)}))
        return
    rng = Rng(s.rng)
    pile = [c.id for c in deck()]
    rng.shuffle(pile)
    s.rng = rng.freeze()
    s.deal += 1
    s.dealer = s.left_of(s.dealer)
    s.trumps = TRUMP_FOR_CONTRACTS[count] if s.options.trumps == TRUMPS_BY_CONTRACTS else None
    _start_deal(s, pile, events, now_ms)


def _winners(s: TrickState) -> tuple[str, ...]:
    """Who has won once this deal is scored: nobody until someone reaches the target; then
    the highest score, equal highest sharing the win unless ``ties`` is ``playOn``. After
    ``maxDeals`` deals the highest score wins whatever it is, equal highest sharing."""
    top = max(s.scores.values())
    best = tuple(p for p in s.seats if s.scores[p] == top)
    if len(s.deals) >= s.options.max_deals:
        return best
    if top < s.options.target or (len(best) > 1 and s.options.ties == "playOn"):
        return ()
    return best


@dataclass(frozen=True, slots=True)
class Standing:
    player: str
    rank: int
    score: int

    def to_dict(self) -> dict[str, object]:
        return {"player": self.player, "rank": self.rank, "score": self.score}


@dataclass(frozen=True, slots=True)
class TrickResult:
    ranking: tuple[Standing, ...]
    winner: tuple[str, ...]
    deals: int
    summary: str
    summary_en: str

    def to_dict(self) -> dict[str, object]:
        return {
            "ranking": [r.to_dict() for r in self.ranking],
            "winner": list(self.winner),
            "deals": self.deals,
            "summary": self.summary,
            "summaryEn": self.summary_en,
        }


def game_result(s: TrickState) -> TrickResult:
    """Ranking by score, equal scores sharing a rank (1, 1, 3), seat order within a rank."""
    if s.phase is not TrickPhase.FINISHED:
        raise TrickError(Reason.INVALID_STATE, detail="game not finished")
    order = sorted(s.seats, key=lambda p: (-s.scores[p], s.seats.index(p)))
    ranking = tuple(
        Standing(p, 1 + sum(1 for q in s.seats if s.scores[q] > s.scores[p]), s.scores[p]) for p in order
    )
    names = ", ".join(s.name(p) for p in s.winners)
    top = s.scores[s.winners[0]]
    return TrickResult(
        ranking=ranking,
        winner=s.winners,
        deals=len(s.deals),
        summary=f"{names} 님 승리! {top}점 ({len(s.deals)}판)",
        summary_en=f"{names} won with {top} points ({len(s.deals)} deals)",
    )

"""Checks that a trick state received from outside describes a real match (engine contract).

The engine trusts nothing it is sent: a state that breaks any of these invariants is refused
with ``INVALID_STATE`` (state untouched) instead of being played on. The checks follow from how
:mod:`.game` builds states: every card of the deck exactly once among hands, bids, won tricks
and the trick on the table; hand sizes that match the tricks played; whose decision it is; the
scores as the sum of the recorded deals, each of which re-scores to itself; the trumps and the
dealer rotation the options imply; the winners the scores imply; the seed commitment.
"""

from __future__ import annotations

from collections import Counter

from ..rules.errors import Reason
from ..rules.rng import MASK64, seed_commitment
from ..rules.validate import MAX_SEQ, MAX_TURN_START_MS
from .cards import BID_SIZE, HAND_SIZE, TRICKS_PER_DEAL, deck, is_card
from .errors import TrickError
from .game import MAX_PLAYER_ID_LENGTH, PLAYERS, TRUMP_FOR_CONTRACTS, _winners, score_lines, trick_winner
from .options import TRUMPS_BY_CONTRACTS
from .state import TrickPhase, TrickState

STATE_VERSION = 1
MAX_NAME_LENGTH = 64
_ALL_CARDS = Counter(c.id for c in deck())


def _bad(detail: str) -> TrickError:
    return TrickError(Reason.INVALID_STATE, detail=detail)


def _ok_id(pid: str) -> bool:
    return 0 < len(pid) <= MAX_PLAYER_ID_LENGTH and pid.isprintable()


def validate_state(s: TrickState) -> None:
    """Raise :class:`TrickError` ``INVALID_STATE`` unless ``s`` is a state :mod:`.game` could make."""
    seats = s.seats
    if len(seats) != PLAYERS or len(set(seats)) != PLAYERS or not all(map(_ok_id, seats)):
        raise _bad("seats must be 3 distinct ids of 1..64 printable characters")
    for pid, name in s.names.items():
        if pid not in seats or len(name) > MAX_NAME_LENGTH or not name.isprintable():
            raise _bad(f"display name of {pid[:64]!r}")
    _check_cards(s)
    _check_turn(s)
    _check_deals(s)
    if not 0 <= s.decision_started_at <= MAX_TURN_START_MS:
        raise _bad("decisionStartedAt out of range")
    if not 0 <= s.seq <= MAX_SEQ:
        raise _bad("seq out of range")
    rng = s.rng
    if not (0 <= rng.state <= MASK64 and 0 <= rng.inc <= MASK64 and rng.inc & 1):
        raise _bad("rng")
    if not 0 <= s.seed <= MASK64 or s.seed_commitment != seed_commitment(s.seed):
        raise _bad("seedCommitment does not match the seed")


def _check_cards(s: TrickState) -> None:
    held: Counter[str] = Counter()
    for p in s.seats:
        held.update(s.hands[p])
        held.update(s.bids.get(p, ()))
        held.update(s.won_cards[p])
    held.update(c for _, c in s.trick)
    if held != _ALL_CARDS:
        unknown = sorted(c for c in held if not is_card(c))
        detail = f"unknown card {unknown[0][:16]!r}" if unknown else "every card must be held exactly once"
        raise _bad(detail)
    for p in s.seats:
        bid = s.bids.get(p)
        if bid is not None and len(bid) != BID_SIZE:
            raise _bad(f"bid of {p!r} is not {BID_SIZE} cards")
        if len(s.won_cards[p]) != PLAYERS * s.tricks_won[p]:
            raise _bad(f"won cards of {p!r} do not match the tricks taken")


def _check_turn(s: TrickState) -> None:
    phase = s.phase
    if s.dealer not in s.seats or s.leader not in s.seats:
        raise _bad("dealer and leader must be seats")
    first = s.left_of(s.dealer)
    before_play = phase is TrickPhase.BIDDING or phase is TrickPhase.ANNOUNCING
    played = s.trick or s.last_trick or s.trick_no != 1 or any(s.tricks_won.values())
    if before_play and (played or s.leader != first):
        raise _bad("no trick is played before the announcing ends")
    bid_all = len(s.bids) == PLAYERS
    if phase is TrickPhase.BIDDING:
        if bid_all or s.current is not None or s.passed or s.declarer is not None:
            raise _bad("bidding state")
        for p in s.seats:
            if len(s.hands[p]) != HAND_SIZE - (BID_SIZE if p in s.bids else 0):
                raise _bad(f"hand of {p!r} while bidding")
    elif not bid_all:
        raise _bad("every player has bid once the bidding is over")
    if phase is TrickPhase.ANNOUNCING:
        order = [first, s.left_of(first), s.left_of(s.left_of(first))]
        if s.declarer is not None or s.passed != order[: len(s.passed)] or len(s.passed) == PLAYERS:
            raise _bad("announcing state")
        if s.current != order[len(s.passed)] or any(len(s.hands[p]) != TRICKS_PER_DEAL for p in s.seats):
            raise _bad("announcing turn")
    if phase is TrickPhase.PLAYING:
        _check_play(s, first)
    if phase is TrickPhase.FINISHED:
        if s.current is not None or s.trick or any(s.hands.values()) or s.trick_no != TRICKS_PER_DEAL:
            raise _bad("finished state")
        _check_last_trick(s, needed=True)
    if phase is not TrickPhase.BIDDING:
        for p in s.seats:
            shown = p == s.declarer or not s.hands[p]
            if s.revealed[p] != shown:
                raise _bad(f"bid of {p!r} face up or down wrongly")
    elif any(s.revealed.values()):
        raise _bad("no bid is face up while bidding")


def _check_play(s: TrickState, first: str) -> None:
    order = [first, s.left_of(first), s.left_of(s.left_of(first))]
    if s.passed != order[: len(s.passed)]:
        raise _bad("passes are not in announcing order")
    if s.declarer is None and len(s.passed) != PLAYERS:
        raise _bad("play starts with a declarer or after three passes")
    if s.declarer is not None and (len(s.passed) >= PLAYERS or s.declarer != order[len(s.passed)]):
        raise _bad("the declarer is the first player who did not pass")
    if not 1 <= s.trick_no <= TRICKS_PER_DEAL or sum(s.tricks_won.values()) != s.trick_no - 1:
        raise _bad("trick number and tricks taken disagree")
    players = [p for p, _ in s.trick]
    expected = [s.leader]
    while len(expected) < PLAYERS:
        expected.append(s.left_of(expected[-1]))
    if len(players) >= PLAYERS or players != expected[: len(players)]:
        raise _bad("the trick's cards are not in turn order from its leader")
    if s.current != expected[len(players)]:
        raise _bad("current is not the next to play")
    for p in s.seats:
        played = s.trick_no - 1 + (p in players)
        if len(s.hands[p]) != TRICKS_PER_DEAL - played:
            raise _bad(f"hand of {p!r} does not match the tricks played")
    _check_last_trick(s, needed=s.trick_no > 1)
    if s.leader != (trick_winner(s.last_trick, s.trumps) if s.last_trick else first):
        raise _bad("the trick's leader is not the last trick's winner")


def _check_last_trick(s: TrickState, needed: bool) -> None:
    """The last completed trick: three cards of the won tricks, one per player in turn order,
    among its winner's cards."""
    if bool(s.last_trick) != needed:
        raise _bad("last trick")
    if not needed:
        return
    players = [p for p, _ in s.last_trick]
    cards = [c for _, c in s.last_trick]
    if len(players) != PLAYERS or players[0] not in s.seats or not all(map(is_card, cards)):
        raise _bad("last trick")
    if players != [players[0], s.left_of(players[0]), s.left_of(s.left_of(players[0]))]:
        raise _bad("last trick is not in turn order")
    if not set(cards) <= set(s.won_cards[trick_winner(s.last_trick, s.trumps)]):
        raise _bad("last trick is not among its winner's cards")


def _check_deals(s: TrickState) -> None:
    finished = s.phase is TrickPhase.FINISHED
    if s.deal < 1 or len(s.deals) != s.deal - (0 if finished else 1) or len(s.deals) > s.options.max_deals:
        raise _bad("deal count")
    scores = {p: 0 for p in s.seats}
    dealer = s.deals[0].dealer if s.deals else s.dealer
    contracts: int | None = None
    for number, record in enumerate(s.deals, 1):
        if record.deal != number or record.dealer != dealer or dealer not in s.seats:
            raise _bad(f"deal {number}: number or dealer")
        if record.trumps != _trumps(s, contracts) or tuple(ln.player for ln in record.lines) != s.seats:
            raise _bad(f"deal {number}: trumps or lines")
        if record.declarer is not None and record.declarer not in s.seats:
            raise _bad(f"deal {number}: declarer")
        bids = {ln.player: ln.bid for ln in record.lines}
        if any(len(b) != BID_SIZE or not all(map(is_card, b)) for b in bids.values()):
            raise _bad(f"deal {number}: bids")
        tricks = {ln.player: ln.tricks for ln in record.lines}
        if sum(tricks.values()) != TRICKS_PER_DEAL:
            raise _bad(f"deal {number}: tricks")
        count, lines = score_lines(s.seats, bids, tricks, record.declarer, scores)
        if count != record.contracts_made or lines != record.lines:
            raise _bad(f"deal {number} does not score as recorded")
        scores = {ln.player: ln.score for ln in lines}
        contracts = count
        if number < len(s.deals) or not finished:
            dealer = s.left_of(dealer)
    if finished:
        last = s.deals[-1] if s.deals else None
        if last is None or (s.dealer, s.trumps, s.declarer) != (last.dealer, last.trumps, last.declarer):
            raise _bad("finished deal")
    elif s.dealer != dealer or s.trumps != _trumps(s, contracts):
        raise _bad("dealer or trumps of the current deal")
    if scores != s.scores:
        raise _bad("scores are not the sum of the deals")
    winners = _winners(s) if s.deals else ()
    if finished != bool(winners) or (finished and s.winners != winners) or (not finished and s.winners):
        raise _bad("winners do not follow from the scores")


def _trumps(s: TrickState, last_contracts: int | None) -> str | None:
    if s.options.trumps != TRUMPS_BY_CONTRACTS or last_contracts is None:
        return None
    return TRUMP_FOR_CONTRACTS[last_contracts]

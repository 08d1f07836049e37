"""Checks that a state received from outside describes a real game (engine contract).

The engine is stateless and trusts nothing it is sent: a state that breaks any of these
invariants is refused with ``INVALID_STATE`` instead of being computed on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import KeysView
from functools import lru_cache
from typing import NoReturn

from .cards import catalogue_of
from .discard import discard_action
from .errors import Reason, RuleError
from .game import has_legal_play
from .handscore import most_per_round
from .options import CHOICES, MAX_PLAYERS, MIN_PLAYERS
from .rng import MASK64, seed_commitment
from .ruleset import EndKind, Floor, Limit
from .state import HISTORY_LENGTH, SUPPORTED_STATE_VERSIONS, GameState, Phase

# The latest turn start (ms since epoch) whose deadline, after the longest turn, is still a
# protocol MillisEpoch (at most 2**53 - 1: exact in a JSON client's double) and an int64. About
# the year 287000: no clock reads that, and a caller's later one would end the game in an error.
MAX_TURN_START_MS = 2**53 - 1 - max(s for s in CHOICES["turn_seconds"][1] if isinstance(s, int)) * 1000
# seq is a protocol integer (at most 2**53 - 1) and goes up by one per move; round is a uint32 on
# the wire and a move starts at most a few dozen rounds (each costs a life or a seat). A state at
# these limits can be viewed but not played on (check_room_for_a_move). Real games stay below a
# few thousand of either.
MAX_SEQ = 2**53 - 1
MAX_ROUND_BEFORE_A_MOVE = 2**32 - 1 - 1000
# A game of rounds (EndKind.ROUNDS) scores at most a few dozen points a round, over at most
# MAX_ROUNDS rounds (the ``rounds`` override): the protocol's score bound.
MAX_ROUNDS_SCORE = 200


def _bad(detail: str) -> RuleError:
    return RuleError(Reason.INVALID_STATE, detail=detail)


def validate_state(s: GameState) -> None:
    # Runs on every request the engine gets: set operations and one pass per seat, no copies.
    if s.state_version not in SUPPORTED_STATE_VERSIONS:
        raise _bad(f"unsupported stateVersion {s.state_version}")
    n = len(s.seats)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise _bad(f"{n} seats")
    seats = set(s.seats)
    if len(seats) != n or "" in seats:
        raise _bad("duplicate or empty player id")
    for name, mapping in (
        ("hands", s.hands),
        ("alive", s.alive),
        ("lives", s.lives),
        ("onBoard", s.on_board),
        ("livesLost", s.lives_lost),
    ):
        if mapping.keys() != seats:
            raise _bad(f"{name} does not match the seats")
    rules = s.rules
    if s.deck_count not in (1, 2):
        raise _bad(f"deckCount {s.deck_count}")
    if s.deck_count not in rules.deck.allowed_deck_counts:
        raise _bad(f"{rules.name} uses one deck")
    cat = catalogue_of(rules.deck, s.deck_count)
    if not _holds_each_card_once(s, cat.keys()):
        _explain_bad_cards(s, cat.keys())
    # The recent plays are public, but the rules read them (the same number twice): their cards
    # and players must be this game's.
    if len(s.history) > HISTORY_LENGTH or any(
        r.card_id not in cat or r.player not in s.hands for r in s.history
    ):
        raise _bad("history names a card or player not in this game")
    # A game ended by a play over the limit (Limit.PLAY_AND_LOSE) keeps that play's total.
    # So does an exchange that play started, until it resolves and the round ends.
    over_at_end = (
        (s.phase is Phase.FINISHED or s.exchange_ends_round)
        and rules.over_limit is Limit.PLAY_AND_LOSE
        and s.total > rules.limit
    )
    lowest = -rules.limit if rules.floor is Floor.NEGATIVE else 0
    if not lowest <= s.total <= 99 and not over_at_end:
        raise _bad(f"total {s.total} out of {lowest}..99")
    # 003's Play 2: the cards still owed this turn (none once the game is over).
    if s.obligation not in (0, 1, 2) or (s.obligation and s.phase is Phase.FINISHED):
        raise _bad(f"obligation {s.obligation}")
    if s.direction not in (1, -1):
        raise _bad(f"direction {s.direction}")
    if not 1 <= s.hand_size <= 10:
        raise _bad(f"handSize {s.hand_size}")
    start_lives = s.start_lives
    most_lives = max(5, *(n for _, n in rules.tokens.start_by_players))
    if start_lives < 0 or start_lives > most_lives:
        raise _bad(f"lives {start_lives}")
    lives, alive, on_board, hands = s.lives, s.alive, s.on_board, s.hands
    eliminated = set()
    lives_lost = s.lives_lost
    points = rules.points  # the points come back each round: livesLost counts every round's
    for p in s.seats:
        if not 0 <= lives[p] <= start_lives:
            raise _bad(f"lives of {p}")
        # every life lost was one of the starting lives (game points: of some round's)
        kept_and_lost = lives[p] + lives_lost[p]
        if kept_and_lost != start_lives and not (points and kept_and_lost >= start_lives):
            raise _bad(f"livesLost of {p}")
        if on_board[p] and (lives[p] != 0 or not alive[p]):
            raise _bad(f"onBoard of {p}")
        if not alive[p]:
            if hands[p]:
                raise _bad(f"eliminated {p} holds cards")
            eliminated.add(p)
    order = s.elimination_order
    ordered = set(order)
    if len(ordered) != len(order) or not ordered <= seats or any(alive[p] for p in order):
        raise _bad("eliminationOrder")
    if eliminated != ordered:
        raise _bad("eliminationOrder does not match the eliminated players")
    if s.eliminated_round.keys() != ordered:
        raise _bad("eliminatedRound does not match the eliminated players")
    alive_count = n - len(eliminated)
    if s.current not in seats or not alive[s.current]:
        raise _bad("current player is not a live player")
    _check_rule_set_records(s, seats)
    if s.phase is Phase.PLAYING:
        if alive_count < 2:
            raise _bad("a game in play needs two live players")
        if not has_legal_play(s, s.current) and discard_action(s, s.current) is None:
            raise _bad("current player has no legal play")
    elif s.phase is Phase.EXCHANGE:
        if alive_count < 2:
            raise _bad("a game in play needs two live players")
    elif alive_count != 1 and not (s.special_end or rules.scores):
        raise _bad("a finished game has exactly one survivor")
    if s.round < 1 or s.seq < 0 or s.turn_started_at < 0:
        raise _bad("round, seq and turnStartedAt must be positive")
    if s.turn_started_at > MAX_TURN_START_MS:
        raise _bad(f"turnStartedAt after {MAX_TURN_START_MS}")
    if s.seq > MAX_SEQ:
        raise _bad(f"seq after {MAX_SEQ}")
    if not (0 <= s.rng.state <= MASK64 and 0 <= s.rng.inc <= MASK64 and s.rng.inc & 1):
        raise _bad("rng")
    if not 0 <= s.seed <= MASK64 or _commitment(s.seed) != s.seed_commitment:
        raise _bad("seed does not match its commitment")


def _check_rule_set_records(s: GameState, seats: set[str]) -> None:
    """The score, the turn counts and the special-hand ending agree with the rule set."""
    rules = s.rules
    if rules.scores:
        if s.score.keys() != seats:
            raise _bad("score does not match the seats")
        # a score below the target gains at most one round's points before the game ends
        most = rules.end.target - 1 + (s.start_lives if s.phase is Phase.FINISHED else 0)
        if rules.end.kind is EndKind.ROUNDS:
            most = MAX_ROUNDS_SCORE
        if rules.counts_hands:  # counted hands: a score under the target gains at most one round's
            most = rules.end.target - 1 + most_per_round(rules)
        if not all(0 <= v <= most for v in s.score.values()):
            raise _bad("score out of range")
    elif s.score:
        raise _bad("score without game points")
    _check_exchange(s, seats)
    locked = rules.locked_turns()
    if s.turns_taken.keys() != (seats if locked else set()):
        raise _bad("turnsTaken does not match the seats")
    if not all(0 <= v <= locked for v in s.turns_taken.values()):
        raise _bad("turnsTaken out of range")
    if s.special_end and (s.phase is not Phase.FINISHED or rules.special_hand(s.special_end) is None):
        raise _bad(f"specialEnd {s.special_end[:8]!r}")


def _check_exchange(s: GameState, seats: set[str]) -> None:
    """The exchange phase's choices: live players holding cards, each chosen card in its hand."""
    if s.phase is not Phase.EXCHANGE:
        if s.passing or s.exchange_by or s.exchange_ends_round:
            raise _bad("exchange fields outside the exchange phase")
        return
    if s.exchange_by not in s.passing or not s.passing.keys() <= seats or len(s.passing) < 2:
        raise _bad("exchange players")
    for p, cid in s.passing.items():
        if not s.alive[p] or not s.hands[p] or (cid and cid not in s.hands[p]):
            raise _bad(f"exchange choice of {p}")
    if all(s.passing.values()) or s.current not in s.passing or s.passing[s.current]:
        raise _bad("exchange current")
    if s.rules.end.kind is EndKind.ROUNDS and s.round > (s.rules.end.target or len(s.seats)):
        raise _bad("round after the last")


def check_room_for_a_move(s: GameState) -> None:
    """Refuse (INVALID_STATE) a move whose new state would not fit its counters' wire fields."""
    if s.seq >= MAX_SEQ or s.round > MAX_ROUND_BEFORE_A_MOVE:
        raise _bad(f"no room for another move (seq {s.seq}, round {s.round})")


# A game's seed comes back with every move: hash it once per game, not once per request.
_commitment = lru_cache(maxsize=4096)(seed_commitment)


def _holds_each_card_once(s: GameState, deck: KeysView[str]) -> bool:
    """The fast check (runs on every request): every card of the deck exactly once."""
    seen = set(s.draw_pile)
    seen.update(s.discard, *s.hands.values())
    held = len(s.draw_pile) + len(s.discard) + sum(map(len, s.hands.values()))
    # Same size and no more distinct cards than held: equal to the deck iff no card is foreign.
    return held == len(seen) == len(deck) and deck == seen


def _explain_bad_cards(s: GameState, deck: KeysView[str]) -> NoReturn:
    """The slow path: raise naming the first duplicate, unknown or missing card."""
    everything: list[str] = list(s.draw_pile) + list(s.discard)
    for p in s.seats:
        everything += s.hands[p]
    counts = Counter(everything)
    dupes = [cid for cid, k in counts.items() if k > 1]
    if dupes:
        raise _bad(f"card {dupes[0]} appears twice")
    unknown = [cid for cid in counts if cid not in deck]
    if unknown:
        raise _bad(f"unknown card {unknown[0]!r}")
    if len(counts) != len(deck):
        raise _bad(f"{len(deck) - len(counts)} cards missing")
    raise _bad("the cards do not match the deck")  # not reached: the fast check found a fault above

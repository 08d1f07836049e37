"""Rule sets as data: everything that makes one adding game "99" differ from another.

A :class:`RuleSet` is a frozen value. The engine (:mod:`.game`) reads it instead of asking
which mode it plays: the deck and each card's plays, the hand and its refill, the start
total, the floor and the limit, what a loss costs and ends, who starts next, and the timeout
tie-break. ``kr-product`` and ``classic`` are two rule sets built from the spec's options
(:func:`.presets.rules_for`); the other presets are in :mod:`.presets`.

Room for what comes next, so that it is added here and not as engine special cases:

* ``RuleSet.game`` names the game the rule set belongs to (``adding``, the only one this
  engine plays); a trick-taking game registers its own rule value and engine under another
  name rather than growing this one.
* :class:`Effect` has the turn effects of one card; an obligation such as "the next player
  plays two" is another member, and a card that can never be played is a type with no plays.
* :class:`Threshold`, ``Limit.PLAY_AND_LOSE`` and ``OutWhen.CANNOT_PAY`` are the tokens paid
  at 33/66/99 in 002's online version; with ``OutWhen.NEVER`` and ``End`` a points target they
  are the game points of 002's game-points version; ``EndKind.ROUNDS`` with ``Threshold.points``,
  :class:`Pair` and ``RuleSet.hand_scores`` is 004 part III's Paranoia.
* ``Start.from_card``, ``CardType.locked_turns`` and :class:`SpecialHand` are 002's start-card
  version; ``exact_limit_bonus`` and ``no_same_number_twice`` are the spec's §7 house rules,
  which any rule set can take (:func:`.presets.with_house_rules`).

A rule set is checked when a game starts (:func:`unsupported`): a value this engine does not
play yet is refused with ``INVALID_OPTION`` rather than played as something else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum


class Kind(StrEnum):
    """The class a client draws a card as (the rule set says what it does)."""

    ADD = "add"  # kr 1..8, 10 / classic 2,3,5,6,7,8, J, Q
    PLUS_MINUS = "plusMinus"  # kr ±9, ±10
    REVERSE = "reverse"  # classic 4
    ZERO = "zero"  # kr 0
    HOLD = "hold"  # classic 9
    MINUS = "minus"  # classic 10
    ACE = "ace"  # classic A
    TO99 = "to99"  # classic K
    JOKER = "joker"  # kr joker
    SET = "set"  # sets the total to its value (004 part II's 9 sets 0)
    DOUBLE_HALVE = "doubleHalve"  # doubles or halves the total, depending on it (002's online 2)
    ONO99 = "ono99"  # 003's ONO 99 card: never played (a type with no plays), shown as dead
    PLAY_TWO = "playTwo"  # 003's Play 2 / Double Play: the next player owes two cards


class Effect(StrEnum):
    """What a play does to the turn order, after the total changes."""

    NONE = "none"
    REVERSE = "reverse"  # the direction of play reverses
    SKIP = "skip"  # the next player loses their turn
    PLAY_AGAIN = "playAgain"  # the same player plays again
    PLAY_TWO = "playTwo"  # the next player owes two cards this turn (:mod:`.obligation`)


class Op(StrEnum):
    """How a play changes the total."""

    KEEP = "keep"  # no change
    ADD = "add"  # total + amount (a negative amount subtracts, subject to the floor)
    SET = "set"  # total = amount
    PICK = "pick"  # any total in lo..hi, named by the player
    DOUBLE = "double"
    HALVE = "halve"


class When(StrEnum):
    """The condition on the total under which a play applies (a card's plays never overlap)."""

    ALWAYS = "always"
    EVEN_OVER_49 = "evenOver49"
    NOT_EVEN_OVER_49 = "notEvenOver49"
    EVEN = "even"
    ODD = "odd"
    ENDS_IN_ZERO = "endsInZero"  # 003's 1980 optional rule: the total ends in 0 (0, 10, -20...)


@dataclass(frozen=True, slots=True)
class Play:
    """One way to play a card.

    ``select`` is the action field and value that picks this play when a card has several
    (``("sign", "-")``, ``("aceValue", 11)``, ``("dir", "reverse")``, ``("jokerValue", None)``
    for a number the player names); ``None`` when it is the card's only play.
    ``two_players`` replaces ``effect`` when only two players are left.
    ``passes_obligation``: played as the first of two owed cards (:mod:`.obligation`), it is the
    only card of the turn and the next player owes the two instead; with two players left a play
    that has a ``two_players`` effect does not pass (003: the Reverse is then a zero).
    ``not_first_of_two``: it may not be the first of two owed cards (003's 1980 Double Play).
    """

    op: Op
    amount: int = 0
    select: tuple[str, object] | None = None
    effect: Effect = Effect.NONE
    two_players: Effect | None = None
    when: When = When.ALWAYS
    lo: int = 0
    hi: int = 0
    passes_obligation: bool = False
    not_first_of_two: bool = False

    def passes_for(self, alive: int) -> bool:
        return self.passes_obligation and not (alive == 2 and self.two_players is not None)

    def effect_for(self, alive: int) -> Effect:
        if alive == 2 and self.two_players is not None:
            return self.two_players
        return self.effect


@dataclass(frozen=True, slots=True)
class CardType:
    """A kind of card: its printed face, the class clients draw it as, and its plays.

    ``rank`` is the face for numbered decks and the rank for French decks (``"10"``),
    ``value`` the printed amount clients show (0 where there is none), ``timeout_class`` the
    §8.5 tie-break class (lower is spent first by the timeout policy).
    """

    rank: str
    kind: Kind
    value: int
    plays: tuple[Play, ...]
    timeout_class: int
    id_prefix: str = ""  # numbered decks: card ids are ``{id_prefix}-{i}``
    count: int = 0  # numbered decks: cards of this type in one deck
    locked_turns: int = 0  # it may not be played in the player's first ``locked_turns`` turns
    # Game points a crossing made with this card scores instead of the threshold's ``points``
    # (004 part III's Jack -1, Queen -2); None: the threshold's own.
    cross_points: int | None = None
    # Played, the player draws one more card and every player passes one card to their
    # neighbour in the direction of play (004 part III's 2 and King).
    exchange: bool = False

    @property
    def ordinary(self) -> bool:
        """A card with no special effect: it adds its value, always, and nothing else."""
        if len(self.plays) != 1:
            return False
        (p,) = self.plays
        plain = p.effect is Effect.NONE and p.two_players is None and p.when is When.ALWAYS
        return plain and p.op is Op.ADD and p.amount >= 0 and self.locked_turns == 0


@dataclass(frozen=True, slots=True)
class Pair:
    """Two cards of ``rank`` played together as one play (004 part III's 3-3, 6-6, 9-9, K-K).

    ``plays`` are chosen like a card's (``select``); ``cross_points`` replaces the threshold's
    points at a crossing made with the pair, and ``cross_take`` takes that many points from every
    other player to the player at each crossing (K-K), instead of the threshold's points.
    """

    rank: str
    plays: tuple[Play, ...]
    cross_points: int | None = None
    cross_take: int = 0


@dataclass(frozen=True, slots=True)
class HandScore:
    """What one card of ``rank`` (and ``suit``; ``""``: any suit) left in a hand scores."""

    rank: str
    points: int
    suit: str = ""


class DeckStyle(StrEnum):
    FRENCH = "french"  # 52 cards, ids ``{rank}{suit}-{deck}``, ``cards`` lists the 13 ranks
    NUMBERED = "numbered"  # ``count`` cards of each type, ids ``{id_prefix}-{i}``


@dataclass(frozen=True, slots=True)
class Deck:
    style: DeckStyle
    cards: tuple[CardType, ...]
    # (fewest players, decks): the last row whose player count is reached applies.
    decks_by_players: tuple[tuple[int, int], ...] = ((2, 1),)
    allowed_deck_counts: tuple[int, ...] = (1,)  # what a received state may carry

    def deck_count(self, players: int) -> int:
        return _by_players(self.decks_by_players, players)

    def type_of(self, rank: str) -> CardType:
        return next(c for c in self.cards if c.rank == rank)


class Refill(StrEnum):
    NONE = "none"
    ONE = "one"  # draw one card after playing
    UP_TO = "upTo"  # draw until the hand holds ``Hand.refill_to`` cards


class StockOut(StrEnum):
    RESHUFFLE_ALL = "reshuffleAll"  # the whole discard, the card just played too, becomes the stock
    KEEP_TOP = "keepTop"  # the top discard stays; the rest is shuffled into the stock


@dataclass(frozen=True, slots=True)
class Hand:
    size: int
    refill: Refill = Refill.ONE
    refill_to: int = 0
    stock_out: StockOut = StockOut.RESHUFFLE_ALL


class Floor(StrEnum):
    FORBID = "forbid"  # a play below 0 is refused
    CLAMP = "clamp"  # it makes 0
    NEGATIVE = "negative"  # the total may go below 0


class Limit(StrEnum):
    REFUSE = "refuse"  # a play over the limit is refused; no play at all is a loss
    PLAY_AND_LOSE = "playAndLose"  # it may be played, and the player loses


class LossEnds(StrEnum):
    """What a loss that does not end the game does to the table."""

    NOTHING = "nothing"  # the next player plays on at the same total
    RESET = "reset"  # the survivors' hands and the stock are shuffled and dealt again
    ROUND = "round"  # every card is gathered, shuffled and dealt again
    PILE = "pile"  # the pile is taken away; the others keep their hands, from the start total


class Starter(StrEnum):
    """Who starts after a loss."""

    LOSER = "loser"  # the loser if still in, else the next player
    NEXT = "next"  # the player after the loser
    ROTATE = "rotate"  # the deal passes left: the player after the last round's starter


class OutWhen(StrEnum):
    NO_TOKENS = "noTokens"  # losing the last token puts you out (or "on the board")
    CANNOT_PAY = "cannotPay"  # having to pay a token you do not have puts you out
    NEVER = "never"  # game points: nobody is out; a point owed with none left is not paid


@dataclass(frozen=True, slots=True)
class Tokens:
    """Lives, pennies or points: how many, and what a loss costs.

    ``start_by_players`` rows are (fewest players, tokens), like ``Deck.decks_by_players``.
    0 tokens: a loss puts the player out at once.
    """

    start_by_players: tuple[tuple[int, int], ...] = ((2, 0),)
    per_loss: int = 1
    on_the_board: bool = False  # with none left, one more loss before being out
    out_when: OutWhen = OutWhen.NO_TOKENS

    def start(self, players: int) -> int:
        return _by_players(self.start_by_players, players)


class Reach(StrEnum):
    EXACT = "exact"  # the play makes the total exactly ``at``
    CROSS = "cross"  # the play takes the total past ``at`` (to ``at + 1`` or more)


@dataclass(frozen=True, slots=True)
class Threshold:
    """Tokens paid for reaching or crossing a total; crossing passes the border ``at``:``at + 1``."""

    at: int
    reach: Reach
    from_below_only: bool = True
    others_pay: bool = False  # everyone else pays instead of the player
    tokens: int = 1
    ends_round: bool = False
    points: int = 0  # game points the player who reaches or crosses it scores (``EndKind.ROUNDS``)


class EndKind(StrEnum):
    LAST_STANDING = "lastStanding"
    POINTS_TARGET = "pointsTarget"
    ROUNDS = "rounds"


@dataclass(frozen=True, slots=True)
class End:
    """How the game ends. ``POINTS_TARGET``: the tokens a player keeps at the end of each round
    are added to their score, and once a score reaches ``target`` the best score wins.
    ``ROUNDS``: the game points scored in play (``Threshold.points``) and for the cards left in
    hand (``RuleSet.hand_scores``) go straight to the score; after ``target`` rounds the best
    score wins, a tie sharing the first place."""

    kind: EndKind = EndKind.LAST_STANDING
    target: int = 0
    highest_wins: bool = True
    # With ``hand_scores``: a score reaching ``target`` puts its player out of the game, and the
    # last one left wins (003's first ending); else the game ends there (its second).
    out_at_target: bool = False


@dataclass(frozen=True, slots=True)
class SpecialHand:
    """``count`` cards of ``rank`` in one hand end the game at once: the holder wins, or everyone loses."""

    rank: str
    count: int
    holder_wins: bool


@dataclass(frozen=True, slots=True)
class Start:
    """The total a round starts from: ``by_players`` rows are (players, total), else ``total``.

    ``from_card``: after the deal, cards are turned up from the stock until an ordinary one
    (:attr:`CardType.ordinary`) shows; it starts the pile and its value is the start total.
    """

    total: int = 0
    by_players: tuple[tuple[int, int], ...] = ()
    from_card: bool = False

    def for_players(self, players: int) -> int:
        return dict(self.by_players).get(players, self.total)


@dataclass(frozen=True, slots=True)
class RuleSet:
    name: str
    deck: Deck
    hand: Hand
    start: Start = Start()
    limit: int = 99
    over_limit: Limit = Limit.REFUSE
    floor: Floor = Floor.FORBID
    tokens: Tokens = Tokens()
    loss_ends: LossEnds = LossEnds.ROUND  # a loss while tokens are in play
    out_ends: LossEnds = LossEnds.NOTHING  # a loss that puts a player out in a game without tokens
    starter: Starter = Starter.LOSER  # after ``loss_ends``; after ``out_ends`` the next player starts
    round_resets_direction: bool = False  # each new round starts clockwise
    thresholds: tuple[Threshold, ...] = ()
    end: End = End()
    special_hands: tuple[SpecialHand, ...] = ()
    exact_limit_bonus: bool = False  # making the total exactly ``limit`` wins back a lost token
    no_same_number_twice: bool = False  # a card may not follow one of the same rank
    exact_69_bonus: bool = False  # 002's house rule: making the total exactly 69 wins back a lost token
    # 003 (2022): holding ``discard_count`` cards of ``discard_rank``, a player may discard them for
    # as many new cards, then plays on (:mod:`.discard`); 0 = no such exchange.
    discard_rank: str = ""
    discard_count: int = 0
    # What a card left in a hand scores. ``EndKind.POINTS_TARGET`` (:mod:`.handscore`, 003's points
    # versions): rounds end when one player is left, every hand is counted, ``end`` is on the
    # scores. ``EndKind.ROUNDS`` (:mod:`.scoring`, paranoia): penalty cards at each round's end.
    hand_scores: tuple[HandScore, ...] = ()
    pairs: tuple[Pair, ...] = ()  # the pairs that may be played as one play
    # The timeout policy spends a play that lowers the total only when nothing else is left, so that a
    # game of timeouts moves on (in a game of rounds nobody loses to a high total: it must end).
    timeout_forward: bool = False
    round_out_points: int = 0  # with ``hand_scores``: what going out of a round adds to the hand
    turn_seconds: int = 15
    players: tuple[int, int] = (2, 10)  # fewest and most players
    game: str = "adding"
    summary: str = ""  # one line, Korean
    summary_en: str = ""
    source: str = ""  # the source document and section

    def with_changes(self, **changes: object) -> RuleSet:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def points(self) -> bool:
        """Game points: tokens are banked into a score each round, and a score target ends the game."""
        return self.end.kind is EndKind.POINTS_TARGET

    @property
    def counts_hands(self) -> bool:
        """003's points versions: rounds to one player left, every hand counted into the scores."""
        return bool(self.hand_scores) and self.points

    @property
    def scores(self) -> bool:
        """Each player has a running score (game points banked, or scored in rounds)."""
        return self.end.kind is not EndKind.LAST_STANDING

    def pair(self, rank: str) -> Pair | None:
        return next((p for p in self.pairs if p.rank == rank), None)

    def hand_score(self, rank: str, suit: str) -> int:
        """What one card left in a hand at a round's end scores (0: nothing)."""
        return sum(h.points for h in self.hand_scores if h.rank == rank and h.suit in ("", suit))

    def special_hand(self, rank: str) -> SpecialHand | None:
        return next((h for h in self.special_hands if h.rank == rank), None)

    def locked_turns(self) -> int:
        """The most turns any card is locked for (0: no card is)."""
        return max((t.locked_turns for t in self.deck.cards), default=0)


def _by_players(rows: tuple[tuple[int, int], ...], players: int) -> int:
    value = rows[0][1]
    for fewest, v in rows:
        if players >= fewest:
            value = v
    return value


def unsupported(rules: RuleSet) -> list[str]:
    """The parts of ``rules`` this engine cannot play yet (empty: it can play all of it)."""
    out: list[str] = []
    if rules.game != "adding":
        out.append(f"game {rules.game}")
    rounds = rules.end.kind is EndKind.ROUNDS
    never = rules.tokens.out_when is OutWhen.NEVER
    if rounds and not (never and rules.end.target >= 0):
        out.append("end rounds without outWhen never")
    banked = never and rules.tokens.start(2) > 0 and rules.end.target > 0
    counted = bool(rules.hand_scores) and rules.tokens.start(2) == 0 and rules.end.target > 0
    if rules.points and not (banked or counted):
        out.append("end pointsTarget without tokens and outWhen never, or hand scores without tokens")
    if rules.hand_scores and not rules.scores:
        out.append("hand scores without a points target or end rounds")
    if rules.end.out_at_target and not rules.counts_hands:
        out.append("outAtTarget without hand scores and a points target")
    if any(h.rank not in {t.rank for t in rules.deck.cards} for h in rules.hand_scores):
        out.append("hand scores of a rank the deck lacks")
    if never and not rules.scores:
        out.append("outWhen never without a points target or end rounds")
    if any(t.points for t in rules.thresholds) and not rounds:
        out.append("threshold points without end rounds")
    if any(p.cross_take for p in rules.pairs) and not rounds:
        out.append("pairs taking points without end rounds")
    if rules.thresholds and rules.tokens.out_when is OutWhen.NO_TOKENS:
        out.append("thresholds without outWhen cannotPay")
    if rules.over_limit is Limit.PLAY_AND_LOSE and not rules.thresholds:
        out.append("overLimit playAndLose without thresholds")
    if rules.tokens.per_loss != 1:
        out.append("tokens per loss")
    if rules.out_ends is LossEnds.PILE:
        out.append("outEnds pile")
    if rules.start.from_card and rules.loss_ends is LossEnds.PILE:
        out.append("start fromCard with lossEnds pile")
    if rules.discard_count and (
        rules.discard_count > rules.hand.size or all(t.rank != rules.discard_rank for t in rules.deck.cards)
    ):
        out.append("discard of a rank the deck lacks or more cards than a hand")
    if any(h.count < 1 or h.count > rules.hand.size for h in rules.special_hands):
        out.append("special hands larger than the hand")
    return out

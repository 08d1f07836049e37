"""State, actions and per-deal records of the trick-taking game, as plain values.

The state carries card ids only (:mod:`.cards` maps them to cards) and is never mutated
by the rules: :meth:`TrickState.clone` copies what they change. Events reuse
:class:`ninetynine.engine.rules.state.Event` and its audiences.

Conventions: seat order is clockwise, so the player "to the dealer's left" is the next
seat; times are integer milliseconds supplied by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..rules.rng import RngState
from .options import TrickOptions


class TrickPhase(StrEnum):
    BIDDING = "bidding"  # everyone lays aside 3 cards, in any order
    ANNOUNCING = "announcing"  # clockwise from the dealer's left: announce or pass
    PLAYING = "playing"
    FINISHED = "finished"


class ActionKind(StrEnum):
    BID = "bid"
    ANNOUNCE = "announce"
    PASS = "pass"
    PLAY = "play"


@dataclass(frozen=True, slots=True)
class TrickAction:
    """One decision: ``bid`` (``cards``: 3 ids), ``announce``, ``pass`` or ``play`` (``card``)."""

    kind: ActionKind
    cards: tuple[str, ...] = ()
    card: str | None = None

    @classmethod
    def bid(cls, *cards: str) -> TrickAction:
        return cls(ActionKind.BID, cards=tuple(cards))

    @classmethod
    def announce(cls) -> TrickAction:
        return cls(ActionKind.ANNOUNCE)

    @classmethod
    def pass_(cls) -> TrickAction:
        return cls(ActionKind.PASS)

    @classmethod
    def play(cls, card: str) -> TrickAction:
        return cls(ActionKind.PLAY, card=card)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": str(self.kind)}
        if self.kind is ActionKind.BID:
            out["cards"] = list(self.cards)
        if self.card is not None:
            out["card"] = self.card
        return out


@dataclass(frozen=True, slots=True)
class DealLine:
    """One player's line in a scored deal."""

    player: str
    bid: tuple[str, ...]
    bid_tricks: int
    tricks: int
    made: bool
    trick_points: int
    contract_points: int
    declarer_points: int
    total: int  # this deal's points
    score: int  # running score after the deal

    def to_dict(self) -> dict[str, object]:
        return {
            "player": self.player,
            "bid": list(self.bid),
            "bidTricks": self.bid_tricks,
            "tricks": self.tricks,
            "made": self.made,
            "trickPoints": self.trick_points,
            "contractPoints": self.contract_points,
            "declarerPoints": self.declarer_points,
            "total": self.total,
            "score": self.score,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DealLine:
        """The inverse of :meth:`to_dict`."""
        return cls(
            player=d["player"],
            bid=tuple(d["bid"]),
            bid_tricks=d["bidTricks"],
            tricks=d["tricks"],
            made=d["made"],
            trick_points=d["trickPoints"],
            contract_points=d["contractPoints"],
            declarer_points=d["declarerPoints"],
            total=d["total"],
            score=d["score"],
        )


@dataclass(frozen=True, slots=True)
class DealRecord:
    deal: int
    dealer: str
    trumps: str | None
    declarer: str | None
    contracts_made: int
    lines: tuple[DealLine, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "deal": self.deal,
            "dealer": self.dealer,
            "trumps": self.trumps,
            "declarer": self.declarer,
            "contractsMade": self.contracts_made,
            "lines": [ln.to_dict() for ln in self.lines],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DealRecord:
        """The inverse of :meth:`to_dict`."""
        lines = tuple(DealLine.from_dict(ln) for ln in d["lines"])
        return cls(d["deal"], d["dealer"], d["trumps"], d["declarer"], d["contractsMade"], lines)


@dataclass(slots=True)
class TrickState:
    options: TrickOptions
    seats: tuple[str, ...]
    names: dict[str, str]
    phase: TrickPhase
    deal: int  # 1-based number of the current deal
    dealer: str
    trumps: str | None  # suit letter, or None for no trump
    hands: dict[str, list[str]]
    bids: dict[str, tuple[str, ...]]  # only players who have laid their bid cards
    revealed: dict[str, bool]  # bid cards face up
    declarer: str | None
    passed: list[str]
    current: str | None  # whose decision it is (None while bidding: everyone's)
    leader: str  # who led (or leads) the current trick
    trick: list[tuple[str, str]]  # (player, card id) in play order
    trick_no: int  # 1..9
    last_trick: tuple[tuple[str, str], ...]
    tricks_won: dict[str, int]
    won_cards: dict[str, list[str]]
    scores: dict[str, int]
    deals: list[DealRecord]
    winners: tuple[str, ...]
    decision_started_at: int
    seq: int
    rng: RngState
    seed: int
    seed_commitment: str

    def clone(self) -> TrickState:
        return TrickState(
            options=self.options,
            seats=self.seats,
            names=self.names,
            phase=self.phase,
            deal=self.deal,
            dealer=self.dealer,
            trumps=self.trumps,
            hands={p: h[:] for p, h in self.hands.items()},
            bids=dict(self.bids),
            revealed=dict(self.revealed),
            declarer=self.declarer,
            passed=self.passed[:],
            current=self.current,
            leader=self.leader,
            trick=self.trick[:],
            trick_no=self.trick_no,
            last_trick=self.last_trick,
            tricks_won=dict(self.tricks_won),
            won_cards={p: w[:] for p, w in self.won_cards.items()},
            scores=dict(self.scores),
            deals=self.deals[:],
            winners=self.winners,
            decision_started_at=self.decision_started_at,
            seq=self.seq,
            rng=self.rng,
            seed=self.seed,
            seed_commitment=self.seed_commitment,
        )

    @property
    def finished(self) -> bool:
        return self.phase is TrickPhase.FINISHED

    def name(self, player: str) -> str:
        return self.names.get(player) or player

    def left_of(self, player: str) -> str:
        """The next seat clockwise."""
        return self.seats[(self.seats.index(player) + 1) % len(self.seats)]

"""The trick game's stored state (``State.trick``) as the rules core's :class:`TrickState`.

The session builds views and the bot's moves from the committed state (as it does for the adding
game with ``engine.convert.state_from_proto``); the engine validates every state it is sent, so
this reads a state the engine wrote and checks nothing. Options cross as their JSON mapping (the
codec from the descriptors), which is the rules' own camelCase mapping.
"""

from __future__ import annotations

from ninetynine.common.codec import Codec, enum_json
from ninetynine.engine.rules.rng import RngState
from ninetynine.engine.trick import DealLine, DealRecord, TrickOptions, TrickPhase, TrickState
from ninetynine.engine.v1 import trick_pb2

_CODEC = Codec()
_PHASE = enum_json(trick_pb2.TrickPhase.DESCRIPTOR)


def options_from_proto(msg: trick_pb2.TrickOptions) -> TrickOptions:
    """The rules' options of ``msg`` (unset fields: the defaults); TrickError for a value refused."""
    return TrickOptions.from_mapping(_CODEC.encode(msg))


def options_to_proto(options: TrickOptions) -> trick_pb2.TrickOptions:
    out = trick_pb2.TrickOptions()
    _CODEC.decode(options.to_mapping(), out)
    return out


def _none(value: str) -> str | None:
    return value or None


def state_from_proto(msg: trick_pb2.TrickState) -> TrickState:
    """The rules' state of a committed ``State.trick``."""
    seats = tuple(s.id for s in msg.seats)
    deals = [
        DealRecord(
            deal=d.deal,
            dealer=d.dealer,
            trumps=_none(d.trumps),
            declarer=_none(d.declarer),
            contracts_made=d.contracts_made,
            lines=tuple(
                DealLine(
                    player=ln.player_id,
                    bid=tuple(ln.bid),
                    bid_tricks=ln.bid_tricks,
                    tricks=ln.tricks,
                    made=ln.made,
                    trick_points=ln.trick_points,
                    contract_points=ln.contract_points,
                    declarer_points=ln.declarer_points,
                    total=ln.total,
                    score=ln.score,
                )
                for ln in d.lines
            ),
        )
        for d in msg.deals
    ]
    return TrickState(
        options=options_from_proto(msg.options),
        seats=seats,
        names={s.id: s.name for s in msg.seats if s.name},
        phase=TrickPhase(str(_PHASE[msg.phase])),
        deal=msg.deal,
        dealer=msg.dealer,
        trumps=_none(msg.trumps),
        hands={s.id: list(s.hand) for s in msg.seats},
        bids={s.id: tuple(s.bid) for s in msg.seats if s.bid},
        revealed={s.id: s.revealed for s in msg.seats},
        declarer=_none(msg.declarer),
        passed=list(msg.passed),
        current=_none(msg.current),
        leader=msg.leader,
        trick=[(r.player_id, r.card_id) for r in msg.trick],
        trick_no=msg.trick_number,
        last_trick=tuple((r.player_id, r.card_id) for r in msg.last_trick),
        tricks_won={s.id: s.tricks_won for s in msg.seats},
        won_cards={s.id: list(s.won_cards) for s in msg.seats},
        scores={s.id: s.score for s in msg.seats},
        deals=deals,
        winners=tuple(msg.winners),
        decision_started_at=msg.decision_started_at_ms,
        seq=msg.seq,
        rng=RngState(msg.rng_state, msg.rng_inc),
        seed=msg.seed,
        seed_commitment=msg.seed_commitment,
    )

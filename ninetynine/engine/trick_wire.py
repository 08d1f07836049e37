"""The trick game's protobuf messages <-> its rules values (``trick.proto`` <-> :mod:`.trick`).

Views, events, actions and options go through the descriptor-driven codec
(:class:`ninetynine.common.codec.Codec`): the rules core's dicts are the messages' client JSON,
so the codec's compiled readers (the exact inverse of its encoders) fill a message from one and
its encoders read one back, with no per-field code here. The state, which has no dict form, is
converted by :func:`state_from_proto` (decoded once per request, bounded first, then validated)
and :func:`state_into` (encoded once).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ninetynine.common.codec import Codec, enum_numbers
from ninetynine.engine.rules.errors import Reason
from ninetynine.engine.rules.rng import RngState
from ninetynine.engine.rules.state import Event
from ninetynine.engine.trick import (
    ActionKind,
    DealRecord,
    TrickAction,
    TrickError,
    TrickOptions,
    TrickPhase,
    TrickReason,
    TrickState,
)
from ninetynine.engine.trick.cards import HAND_SIZE
from ninetynine.engine.trick.validate import MAX_NAME_LENGTH, STATE_VERSION, validate_state
from ninetynine.engine.v1 import events_pb2, game_pb2, trick_pb2

__all__ = [
    "CODEC",
    "action_from_proto",
    "action_into",
    "events_into",
    "options_from_proto",
    "options_into",
    "state_from_proto",
    "state_into",
    "trick_action_into",
    "view_into",
]

CODEC = Codec()
_EVENT_MEMBERS = CODEC.member_readers(events_pb2.Event.DESCRIPTOR, "payload")
_read_view = CODEC.reader(trick_pb2.TrickView.DESCRIPTOR)
_read_options = CODEC.reader(trick_pb2.TrickOptions.DESCRIPTOR)
_read_action = CODEC.reader(trick_pb2.TrickAction.DESCRIPTOR)
_read_deal = CODEC.reader(trick_pb2.TrickDeal.DESCRIPTOR)
_AUDIENCE = enum_numbers(events_pb2.Audience.DESCRIPTOR)
_PHASES: dict[TrickPhase, Any] = {
    TrickPhase(str(name)): number for name, number in enum_numbers(trick_pb2.TrickPhase.DESCRIPTOR).items()
}
_PHASE_OF = {number: phase for phase, number in _PHASES.items()}
_ENUM_FIELDS = [f for f in trick_pb2.TrickOptions.DESCRIPTOR.fields if f.enum_type is not None]
# Bounds checked before anything is built from a received state: no list longer than a real
# match makes it (60 deals at most: the largest maxDeals).
MAX_DEALS = 60
MAX_ID = 64


def _bad(detail: str) -> TrickError:
    return TrickError(Reason.INVALID_STATE, detail=detail)


def options_from_proto(msg: trick_pb2.TrickOptions) -> TrickOptions:
    """The options a message names (unset = default); ``INVALID_OPTION`` for a value not offered."""
    for field in _ENUM_FIELDS:
        number = getattr(msg, field.name)
        assert field.enum_type is not None
        if number not in field.enum_type.values_by_number:
            raise TrickError(Reason.INVALID_OPTION, option=field.name, value=number)
    return TrickOptions.from_mapping(CODEC.encode(msg))


def options_into(options: TrickOptions, out: trick_pb2.TrickOptions) -> None:
    out.SetInParent()
    _read_options(options.to_mapping(), out)


def action_from_proto(msg: game_pb2.Action) -> TrickAction:
    """The trick decision of ``Action.trick``; ``INVALID_ACTION`` without one."""
    if not msg.HasField("trick") or msg.trick.kind == trick_pb2.TRICK_ACTION_KIND_UNSPECIFIED:
        raise TrickError(TrickReason.INVALID_ACTION, detail="Action.trick.kind is required")
    raw: dict[str, Any] = CODEC.encode(msg.trick)
    try:
        kind = ActionKind(raw["kind"])
    except ValueError:
        raise TrickError(TrickReason.INVALID_ACTION, detail=f"kind {msg.trick.kind}") from None
    return TrickAction(kind, cards=tuple(raw.get("cards", ())), card=raw.get("card"))


def action_into(action: TrickAction, out: game_pb2.Action) -> None:
    """``action`` as ``Action.trick``."""
    trick_action_into(action, out.trick)


def trick_action_into(action: TrickAction, out: trick_pb2.TrickAction) -> None:
    out.SetInParent()
    _read_action(action.to_dict(), out)


def events_into(events: Iterable[Event], out: Any) -> None:
    """Append ``events`` to a repeated ``Event`` field: audience, player, and the payload read
    from the event's data (its ``type`` names the ``payload`` member)."""
    for event in events:
        ev = out.add(audience=_AUDIENCE[event.audience.value])
        if event.player is not None:
            ev.player_id = event.player
        field, read = _EVENT_MEMBERS[event.type]
        payload = getattr(ev, field)
        payload.SetInParent()
        read(event.data, payload)


def view_into(view: dict[str, Any], out: trick_pb2.TrickView) -> None:
    _read_view(view, out)


# -- state -----------------------------------------------------------------------------------


def _bound(msg: trick_pb2.TrickState) -> None:
    """Sizes first: nothing unbounded is copied out of a received message."""
    if len(msg.seats) != 3:
        raise _bad(f"{len(msg.seats)} seats")
    for seat in msg.seats:
        if len(seat.id) > MAX_ID or len(seat.name) > MAX_NAME_LENGTH:
            raise _bad("seat id or name too long")
        if len(seat.hand) > HAND_SIZE or len(seat.bid) > 3 or len(seat.won_cards) > 36:
            raise _bad(f"cards of {seat.id!r}")
    if len(msg.trick) > 3 or len(msg.last_trick) > 3 or len(msg.passed) > 3 or len(msg.winners) > 3:
        raise _bad("trick, passes or winners")
    if len(msg.deals) > MAX_DEALS or any(len(d.lines) != 3 for d in msg.deals):
        raise _bad("deals")
    for text in (msg.dealer, msg.declarer, msg.current, msg.leader, msg.trumps, *msg.passed, *msg.winners):
        if len(text) > MAX_ID:
            raise _bad("id too long")


def state_from_proto(msg: trick_pb2.TrickState, *, validate: bool = True) -> TrickState:
    """The rules state of a received message, refused with ``INVALID_STATE`` unless it is one
    :mod:`ninetynine.engine.trick.game` could have made. ``validate=False`` is for a state this
    service committed from an engine's answer (the session's views and bots): read, not checked."""
    if msg.state_version != STATE_VERSION:
        raise _bad(f"unsupported stateVersion {msg.state_version}")
    if validate:
        _bound(msg)
    phase = _PHASE_OF.get(msg.phase)
    if phase is None:
        raise _bad(f"phase {msg.phase}")
    try:
        options = options_from_proto(msg.options)
    except TrickError as err:
        raise _bad(f"options: {err.meta.get('option', '')}") from None
    seats = tuple(seat.id for seat in msg.seats)
    state = TrickState(
        options=options,
        seats=seats,
        names={seat.id: seat.name for seat in msg.seats if seat.name},
        phase=phase,
        deal=msg.deal,
        dealer=msg.dealer,
        trumps=msg.trumps or None,
        hands={seat.id: list(seat.hand) for seat in msg.seats},
        bids={seat.id: tuple(seat.bid) for seat in msg.seats if seat.bid},
        revealed={seat.id: seat.revealed for seat in msg.seats},
        declarer=msg.declarer or None,
        passed=list(msg.passed),
        current=msg.current or None,
        leader=msg.leader,
        trick=[(r.player_id, r.card_id) for r in msg.trick],
        trick_no=msg.trick_number,
        last_trick=tuple((r.player_id, r.card_id) for r in msg.last_trick),
        tricks_won={seat.id: seat.tricks_won for seat in msg.seats},
        won_cards={seat.id: list(seat.won_cards) for seat in msg.seats},
        scores={seat.id: seat.score for seat in msg.seats},
        deals=[_deal(d) for d in msg.deals],
        winners=tuple(msg.winners),
        decision_started_at=msg.decision_started_at_ms,
        seq=msg.seq,
        rng=RngState(msg.rng_state, msg.rng_inc),
        seed=msg.seed,
        seed_commitment=msg.seed_commitment,
    )
    if validate:
        if len(set(seats)) != len(seats):
            raise _bad("duplicate player id")
        validate_state(state)
    return state


def _deal(msg: trick_pb2.TrickDeal) -> DealRecord:
    return DealRecord.from_dict(CODEC.encode(msg))


def state_into(s: TrickState, out: trick_pb2.TrickState) -> None:
    out.state_version = STATE_VERSION
    options_into(s.options, out.options)
    for p in s.seats:
        out.seats.add(
            id=p,
            name=s.names.get(p, ""),
            hand=s.hands[p],
            bid=s.bids.get(p, ()),
            revealed=s.revealed[p],
            tricks_won=s.tricks_won[p],
            won_cards=s.won_cards[p],
            score=s.scores[p],
        )
    out.phase = _PHASES[s.phase]
    out.deal = s.deal
    out.dealer = s.dealer
    out.trumps = s.trumps or ""
    out.declarer = s.declarer or ""
    out.passed.extend(s.passed)
    out.current = s.current or ""
    out.leader = s.leader
    for p, c in s.trick:
        out.trick.add(player_id=p, card_id=c)
    out.trick_number = s.trick_no
    for p, c in s.last_trick:
        out.last_trick.add(player_id=p, card_id=c)
    for record in s.deals:
        _read_deal(record.to_dict(), out.deals.add())
    out.winners.extend(s.winners)
    out.decision_started_at_ms = s.decision_started_at
    out.seq = s.seq
    out.rng_state = s.rng.state
    out.rng_inc = s.rng.inc
    out.seed = s.seed
    out.seed_commitment = s.seed_commitment

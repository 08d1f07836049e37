"""Requests no honest client builds, for the engine's tests of how it reads them."""

from __future__ import annotations

from ninetynine.common.wire import length_delimited
from ninetynine.engine import convert
from ninetynine.engine.rules import timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import state_pb2

STATE_FIELD = pb.ApplyRequest.DESCRIPTOR.fields_by_name["state"].number


def move_with_state_in_two_parts(answered: state_pb2.State, now_ms: int) -> bytes:
    """An ``ApplyRequest`` for the next move on ``answered`` whose state field is sent twice: first
    ``answered``, then a part that makes the merge invalid (a total past any limit)."""
    game = convert.state_from_proto(answered)
    request = pb.ApplyRequest(player_id=game.current, now_ms=now_ms)
    convert.action_into(timeout_action(game), request.action)
    return (
        request.SerializeToString()
        + length_delimited(STATE_FIELD, answered.SerializeToString())
        + length_delimited(STATE_FIELD, state_pb2.State(total=500).SerializeToString())
    )

"""The unary Apply and Timeout of a real engine server keep the states they answered with: a
caller that sends the answered state back, byte for byte, has it reused, and every answer is byte
for byte what an engine without the memo answers."""

from __future__ import annotations

import grpc
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.errors import error_info
from ninetynine.engine import convert
from ninetynine.engine.handlers import EngineHandlers, RulesMetrics
from ninetynine.engine.recent import RecentStates
from ninetynine.engine.rules import timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from tests.engine.forged import move_with_state_in_two_parts
from tests.engine.service_fixtures import RunningEngine

SERVICE = "/ninetynine.engine.v1.EngineService/"
STATES = "ninetynine_engine_states_received_total"


def _forgetful() -> EngineHandlers:
    """The engine's handlers without a memo: every state decoded."""
    return EngineHandlers(RulesMetrics.create(CollectorRegistry()), log_fields=False, recent=RecentStates(0))


def _counts(engine: RunningEngine) -> tuple[float, float]:
    return engine.metric(STATES, how="reused"), engine.metric(STATES, how="decoded")


@pytest.mark.parametrize("rules", ["kr-product", "classic", "ono99-2022", "na-points"])
def test_a_game_played_by_unary_calls_reuses_each_state_it_answered(
    engine: RunningEngine, rules: str
) -> None:
    """Half the moves by Apply, half by Timeout, each carrying the state the previous answer went
    out with: the server answers byte for byte as an engine without the memo, and decodes only the
    first state (Setup's)."""
    forgetful = _forgetful()
    before = _counts(engine)
    moves = 0
    with grpc.insecure_channel(engine.target) as channel:
        apply, timeout = (
            channel.unary_unary(SERVICE + name, request_serializer=None, response_deserializer=None)
            for name in ("Apply", "Timeout")
        )
        setup = pb.SetupRequest(player_ids=["a", "b", "c"], seed=5, now_ms=1_000, rules=rules)
        state = forgetful.setup(setup).state
        while not (game := convert.state_from_proto(state)).finished:
            if moves % 2 == 0:
                request = pb.ApplyRequest(state=state, player_id=game.current, now_ms=2_000 + moves)
                convert.action_into(timeout_action(game), request.action)
                expected = forgetful.apply(request)
                answer = pb.ApplyResponse.FromString(apply(request.SerializeToString(), timeout=10))
            else:
                timed = pb.TimeoutRequest(state=state, now_ms=2_000 + moves)
                expected = forgetful.timeout(timed)  # type: ignore[assignment]
                answer = pb.TimeoutResponse.FromString(timeout(timed.SerializeToString(), timeout=10))  # type: ignore[assignment]
            assert answer.SerializeToString() == expected.SerializeToString(), f"move {moves}"
            state = answer.state
            moves += 1
    after = _counts(engine)
    assert moves > 10
    assert (after[0] - before[0], after[1] - before[1]) == (moves - 1, 1)


def test_a_unary_state_sent_in_two_parts_is_read_as_their_merge(engine: RunningEngine) -> None:
    """The first part is a state the server answered with; the merge is invalid and refused."""
    forgetful = _forgetful()
    with grpc.insecure_channel(engine.target) as channel:
        apply = channel.unary_unary(SERVICE + "Apply", request_serializer=None, response_deserializer=None)
        state = forgetful.setup(pb.SetupRequest(player_ids=["a", "b"], seed=9, now_ms=1_000)).state
        game = convert.state_from_proto(state)
        first = pb.ApplyRequest(state=state, player_id=game.current, now_ms=2_000)
        convert.action_into(timeout_action(game), first.action)
        answered = pb.ApplyResponse.FromString(apply(first.SerializeToString(), timeout=10)).state
        forged = move_with_state_in_two_parts(answered, now_ms=3_000)
        before = _counts(engine)
        with pytest.raises(grpc.RpcError) as caught:
            apply(forged, timeout=10)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    info = error_info(caught.value)
    assert info is not None and info.reason == "INVALID_STATE"
    after = _counts(engine)
    assert (after[0] - before[0], after[1] - before[1]) == (0, 1)

"""Every refusal of the engine service: status code, exactly one ErrorInfo, language, state untouched."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Any

import grpc
import pytest

from ninetynine.engine import convert
from ninetynine.engine.rules import CLASSIC, GameState, Options, Phase, setup
from ninetynine.engine.rules.errors import TEXTS, Reason
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.engine.v1 import game_pb2, state_pb2
from tests.engine.rules.builders import card_id, make_state
from tests.engine.service_fixtures import RunningEngine, only_error_info

C = grpc.StatusCode
EN = (("accept-language", "en"),)


def _refused(call: object, request: object, metadata: tuple[tuple[str, str], ...] = ()) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=5, metadata=metadata)  # type: ignore[operator]
    return caught.value


def _apply(state: GameState, player: str, **action: object) -> pb.ApplyRequest:
    request = pb.ApplyRequest(state=convert.state_to_proto(state), player_id=player)
    request.action.CopyFrom(game_pb2.Action(**action))  # type: ignore[arg-type]
    return request


def _kr(**kw: object) -> GameState:
    return make_state(**kw)  # type: ignore[arg-type]


def _cases() -> list[tuple[str, C, GameState, str, dict[str, object], dict[str, str]]]:
    """(reason, code, state, player, action fields, expected metadata subset)."""
    over = _kr(total=95, hands={"A": ["8", "1"], "B": ["2"]}, current="A")
    below = _kr(total=5, hands={"A": ["±9", "1"], "B": ["2"]}, current="A")
    pm = card_id(below, "A", "±9")
    zero = _kr(total=10, hands={"A": ["0"], "B": ["2"]}, current="A")
    joker = _kr(total=10, hands={"A": ["JOKER"], "B": ["2"]}, current="A")
    ace = make_state(mode=CLASSIC, total=10, hands={"A": ["A"], "B": ["2"]}, current="A")
    return [
        (
            "OVER_99",
            C.FAILED_PRECONDITION,
            over,
            "A",
            {"card_id": card_id(over, "A", "8")},
            {"total": "95", "result": "103"},
        ),
        (
            "BELOW_ZERO",
            C.FAILED_PRECONDITION,
            below,
            "A",
            {"card_id": pm, "sign": game_pb2.SIGN_MINUS},
            {"total": "5", "result": "-4", "cardId": pm},
        ),
        ("NOT_YOUR_TURN", C.FAILED_PRECONDITION, over, "B", {"card_id": card_id(over, "B", "2")}, {}),
        ("CARD_NOT_IN_HAND", C.FAILED_PRECONDITION, over, "A", {"card_id": card_id(over, "B", "2")}, {}),
        ("UNKNOWN_PLAYER", C.FAILED_PRECONDITION, over, "Z", {"card_id": "N1-1"}, {}),
        ("SIGN_REQUIRED", C.INVALID_ARGUMENT, below, "A", {"card_id": pm}, {"cardId": pm}),
        ("SIGN_REQUIRED", C.INVALID_ARGUMENT, below, "A", {"card_id": pm, "sign": 7}, {}),
        ("DIR_REQUIRED", C.INVALID_ARGUMENT, zero, "A", {"card_id": card_id(zero, "A", "0")}, {}),
        (
            "DIR_NOT_ALLOWED",
            C.INVALID_ARGUMENT,
            over,
            "A",
            {"card_id": card_id(over, "A", "1"), "dir": game_pb2.DIRECTION_CHOICE_KEEP},
            {},
        ),
        (
            "CHOICE_NOT_ALLOWED",
            C.INVALID_ARGUMENT,
            over,
            "A",
            {"card_id": card_id(over, "A", "1"), "joker_value": 70},
            {"field": "jokerValue"},
        ),
        (
            "JOKER_VALUE_REQUIRED",
            C.INVALID_ARGUMENT,
            joker,
            "A",
            {"card_id": card_id(joker, "A", "JOKER")},
            {},
        ),
        (
            "JOKER_OUT_OF_RANGE",
            C.INVALID_ARGUMENT,
            joker,
            "A",
            {"card_id": card_id(joker, "A", "JOKER"), "joker_value": 0},
            {"min": "60", "max": "99"},
        ),
        ("ACE_VALUE_REQUIRED", C.INVALID_ARGUMENT, ace, "A", {"card_id": card_id(ace, "A", "A")}, {}),
        (
            "ACE_VALUE_INVALID",
            C.INVALID_ARGUMENT,
            ace,
            "A",
            {"card_id": card_id(ace, "A", "A"), "ace_value": 5},
            {"value": "5"},
        ),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_every_rule_refusal_has_its_code_one_error_info_and_both_languages(
    stub: pb_grpc.EngineServiceStub, engine: RunningEngine, case: tuple[Any, ...]
) -> None:
    reason, code, state, player, action, meta = case
    request = _apply(state, player, **action)
    sent = request.SerializeToString()
    before = engine.metric("ninetynine_engine_refusals_total", reason=reason)

    err = _refused(stub.Apply, request)
    assert err.code() is code  # type: ignore[attr-defined]
    info = only_error_info(err)
    assert info.reason == reason
    assert meta.items() <= dict(info.metadata).items()
    ko_template, en_template = TEXTS[Reason(reason)]
    assert (err.details() or "").startswith(ko_template.split("{")[0])  # type: ignore[attr-defined]

    err_en = _refused(stub.Apply, request, EN)
    assert only_error_info(err_en).reason == reason
    assert (err_en.details() or "").startswith(en_template.split("{")[0])  # type: ignore[attr-defined]

    # The engine keeps nothing: the caller's state is as it was and still playable as before.
    assert request.SerializeToString() == sent
    assert engine.metric("ninetynine_engine_refusals_total", reason=reason) == before + 2


def test_stale_state_is_aborted(stub: pb_grpc.EngineServiceStub) -> None:
    state, _ = setup(["a", "b"], seed=3)
    view = stub.View(pb.ViewRequest(state=convert.state_to_proto(state), viewer_id=state.current), timeout=5)
    request = pb.ApplyRequest(
        state=convert.state_to_proto(state), player_id=state.current, action=view.view.legal_plays[0].action
    )
    request.expected_seq = state.seq + 1
    err = _refused(stub.Apply, request)
    assert err.code() is C.ABORTED  # type: ignore[attr-defined]
    info = only_error_info(err)
    assert info.reason == "STALE_STATE" and info.metadata["seq"] == "0"

    timeout = pb.TimeoutRequest(state=convert.state_to_proto(state), expected_seq=5)
    assert only_error_info(_refused(stub.Timeout, timeout)).reason == "STALE_STATE"

    request.expected_seq = state.seq  # the right seq goes through
    assert stub.Apply(request, timeout=5).state.seq == 1


def test_finished_game_refuses_moves(stub: pb_grpc.EngineServiceStub) -> None:
    state = make_state(
        total=10, hands={"A": ["1"], "B": []}, current="A", eliminated=["B"], phase=Phase.FINISHED
    )
    proto = convert.state_to_proto(state)
    for call, request in (
        (stub.Apply, pb.ApplyRequest(state=proto, player_id="A", action=game_pb2.Action(card_id="x"))),
        (stub.Timeout, pb.TimeoutRequest(state=proto)),
    ):
        err = _refused(call, request)
        assert err.code() is C.FAILED_PRECONDITION  # type: ignore[attr-defined]
        assert only_error_info(err).reason == "GAME_FINISHED"


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (pb.SetupRequest(player_ids=["solo"]), "INVALID_PLAYER_COUNT"),
        (pb.SetupRequest(player_ids=["a", "a"]), "INVALID_PLAYER_ID"),
        (pb.SetupRequest(player_ids=["a", ""]), "INVALID_PLAYER_ID"),
        (pb.SetupRequest(player_ids=["a", "b"], display_names={"zed": "Zed"}), "INVALID_PLAYER_ID"),
        (pb.SetupRequest(player_ids=["a", "b"], options=game_pb2.Options(hand_size=9)), "INVALID_OPTION"),
        (pb.SetupRequest(player_ids=["a", "b"], options=game_pb2.Options(mode=42)), "INVALID_OPTION"),  # type: ignore[arg-type]
        (pb.SetupRequest(player_ids=["a", "b"], options=game_pb2.Options(lives=4)), "INVALID_OPTION"),
    ],
)
def test_bad_setup_is_invalid_argument(
    stub: pb_grpc.EngineServiceStub, request_: pb.SetupRequest, reason: str
) -> None:
    err = _refused(stub.Setup, request_)
    assert err.code() is C.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert only_error_info(err).reason == reason


def _broken_states() -> list[tuple[str, state_pb2.State]]:
    good, _ = setup(["a", "b", "c"], Options(), seed=8)
    cases: list[tuple[str, state_pb2.State]] = []

    def variant(name: str, **changes: Any) -> None:
        cases.append((name, convert.state_to_proto(dataclasses.replace(good.clone(), **changes))))

    variant("unknown current player", current="zed")
    hands = {p: list(h) for p, h in good.hands.items()}
    hands["b"][0] = hands["a"][0]
    variant("duplicate card id", hands=hands)
    variant("current not alive", alive={**good.alive, good.current: False})
    variant("total out of range", total=140)
    variant("negative total", total=-3)
    variant("wrong version", state_version=7)
    variant("rng inc even", rng=dataclasses.replace(good.rng, inc=4))
    variant("seed does not match commitment", seed=good.seed + 1)
    # Found by tests/fuzz/engine.py: the next move overflowed a wire field, and the call failed
    # UNKNOWN (the deadline past int64, seq past uint64, livesLost past uint32).
    variant("turn started past the last deadline", turn_started_at=2**63 - 1)
    variant("seq past a protocol integer", seq=2**64 - 1)
    variant("more lives lost than there were", lives_lost={**good.lives_lost, "b": 2**32 - 1})
    # Lives left and lives lost that do not add up to the starting lives: the next loss gave a
    # state the engine itself refused (found by the fuzz harness's "accepts its own output" check).
    variant("lives lost and left disagree", lives_lost={**good.lives_lost, "b": 1})
    proto = convert.state_to_proto(good)
    proto.direction = 9  # type: ignore[assignment]
    cases.append(("unknown direction enum", proto))
    proto = convert.state_to_proto(good)
    proto.phase = state_pb2.PHASE_UNSPECIFIED
    cases.append(("phase unset", proto))
    proto = convert.state_to_proto(good)
    proto.ClearField("rng")
    cases.append(("rng missing", proto))
    proto = convert.state_to_proto(good)
    proto.options.joker_range = 12  # type: ignore[assignment]
    cases.append(("unknown option enum", proto))
    proto = convert.state_to_proto(good)
    proto.seats[1].id = "a"
    cases.append(("duplicate seat", proto))
    cases.append(("empty state", state_pb2.State()))
    return cases


@pytest.mark.parametrize(("name", "state"), _broken_states(), ids=lambda v: v if isinstance(v, str) else "")
def test_invalid_states_are_refused_by_every_rpc(
    stub: pb_grpc.EngineServiceStub, name: str, state: state_pb2.State
) -> None:
    for call, request in (
        (stub.Apply, pb.ApplyRequest(state=state, player_id="a", action=game_pb2.Action(card_id="N1-1"))),
        (stub.View, pb.ViewRequest(state=state, viewer_id="a")),
        (stub.Timeout, pb.TimeoutRequest(state=state)),
    ):
        err = _refused(call, request, EN)
        assert err.code() is C.INVALID_ARGUMENT, name  # type: ignore[attr-defined]
        assert only_error_info(err).reason == "INVALID_STATE", name
        assert (err.details() or "").startswith("Invalid game state"), name  # type: ignore[attr-defined]


def test_a_clock_past_the_last_deadline_is_refused_not_unknown(stub: pb_grpc.EngineServiceStub) -> None:
    # Found by the atheris harness tests/fuzz/engine.py: now_ms near 2**63 made the turn's deadline
    # overflow the TurnStarted event's int64, and the call failed UNKNOWN with a Python ValueError.
    late = 2**63 - 1
    state, _ = setup(["a", "b"], Options(), seed=3, now_ms=1_000)
    proto = convert.state_to_proto(state)
    play = pb.ApplyRequest(state=proto, player_id=state.current, now_ms=late)
    play.action.card_id = state.hands[state.current][0]
    for call, request in (
        (stub.Setup, pb.SetupRequest(player_ids=["a", "b"], now_ms=late)),
        (stub.Setup, pb.SetupRequest(player_ids=["a", "b"], now_ms=2**53)),
        (stub.Apply, play),
        (stub.Timeout, pb.TimeoutRequest(state=proto, now_ms=late)),
    ):
        err = _refused(call, request, EN)
        assert err.code() is C.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert only_error_info(err).reason == "INVALID_STATE"
        assert "nowMs" in only_error_info(err).metadata["detail"]
    # The latest clock that is still accepted gives a deadline a JSON client reads exactly.
    started = stub.Setup(pb.SetupRequest(player_ids=["a", "b"], now_ms=2**53 - 1 - 30_000), timeout=5)
    deadlines = [e.turn_started.deadline_ms for e in started.events if e.HasField("turn_started")]
    assert deadlines and max(deadlines) <= 2**53 - 1


@pytest.mark.parametrize(("field", "last"), [("seq", 2**53 - 1), ("round", 2**32 - 1)])
def test_a_state_at_a_counters_limit_is_viewed_but_not_played_on(
    stub: pb_grpc.EngineServiceStub, field: str, last: int
) -> None:
    # The move would overflow the field (a Timeout on round 2**32 - 1 failed UNKNOWN; found with
    # tests/fuzz/engine.py, whose own-output check also rules out refusing the state itself: the
    # move before it must give a state the engine accepts).
    state, _ = setup(["a", "b"], Options(), seed=3, now_ms=1_000)
    proto = convert.state_to_proto(state)
    setattr(proto, field, last)
    assert stub.View(pb.ViewRequest(state=proto, viewer_id="a"), timeout=5).view.seq == proto.seq
    play = pb.ApplyRequest(state=proto, player_id=state.current)
    play.action.card_id = state.hands[state.current][0]
    for call, request in ((stub.Apply, play), (stub.Timeout, pb.TimeoutRequest(state=proto))):
        err = _refused(call, request, EN)
        assert err.code() is C.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert "no room for another move" in only_error_info(err).metadata["detail"]


@pytest.mark.parametrize("method", ["Apply", "Timeout", "View", "Setup"])
def test_unparsable_request_is_invalid_argument_not_internal(engine: RunningEngine, method: str) -> None:
    with grpc.insecure_channel(engine.target) as channel:
        raw = channel.unary_unary(
            f"/ninetynine.engine.v1.EngineService/{method}",
            request_serializer=None,
            response_deserializer=None,
        )
        with pytest.raises(grpc.RpcError) as caught:
            raw(b"\x0a\xff\xff\xff\xff\x0f", timeout=5)  # a length prefix far past the end
    assert caught.value.code() is C.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert only_error_info(caught.value).reason == "MALFORMED_REQUEST"


def test_long_client_strings_are_cut_in_error_metadata(stub: pb_grpc.EngineServiceStub) -> None:
    state = make_state(total=10, hands={"A": ["1"], "B": ["2"]}, current="A")
    err = _refused(stub.Apply, _apply(state, "A", card_id="X" * 100_000))
    info = only_error_info(err)
    assert info.reason == "CARD_NOT_IN_HAND"
    assert len(info.metadata["cardId"]) <= 100


_SETUP_WITH_BAD_NAMES = """
from ninetynine.engine.v1 import engine_service_pb2 as pb
from prometheus_client import CollectorRegistry
from ninetynine.common.errors import ServiceError
from ninetynine.engine.handlers import EngineHandlers, rules_metrics
request = pb.SetupRequest(player_ids=["A", "B"], seed=1)
for pid in ["Z9", "Y8", "X7", "W6", "V5", "U4"]:
    request.display_names[pid] = "n"
try:
    EngineHandlers(rules_metrics(CollectorRegistry())).setup(request)
except ServiceError as err:
    print(err.metadata.get("detail", ""))
"""


def test_a_setup_with_several_bad_display_names_names_the_same_one_in_every_process() -> None:
    """A refusal is a function of the request: with several unknown players among the display names,
    every engine process names the first by id, whatever order its map walk takes."""
    details = {
        subprocess.run(
            [sys.executable, "-c", _SETUP_WITH_BAD_NAMES],
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        for hash_seed in range(6)
    }
    assert details == {"display name for unknown player 'U4'"}

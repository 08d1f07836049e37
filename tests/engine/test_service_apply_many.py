"""ApplyMany: Apply and Timeout on one stream answer exactly what the unary calls answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2, status_pb2

from ninetynine.common.errors import ServiceError
from ninetynine.engine import convert
from ninetynine.engine.client import EngineClient
from ninetynine.engine.rules import timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from tests.engine.service_fixtures import RunningEngine, start_engine, stop_engine

NOW_MS = 1_767_000_000_000


async def _stream(
    target: str, requests: list[pb.ApplyManyRequest], lang: str = ""
) -> list[pb.ApplyManyResponse]:
    async def items() -> AsyncIterator[pb.ApplyManyRequest]:
        for request in requests:
            yield request

    metadata = (("accept-language", lang),) if lang else None
    async with grpc.aio.insecure_channel(target) as channel:
        call = pb_grpc.EngineServiceStub(channel).ApplyMany(items(), metadata=metadata)
        return [answer async for answer in call]


def _setup(stub_target: str) -> pb.SetupResponse:
    with grpc.insecure_channel(stub_target) as channel:
        setup: pb.SetupResponse = pb_grpc.EngineServiceStub(channel).Setup(
            pb.SetupRequest(player_ids=["a", "b", "c"], seed=11, now_ms=NOW_MS)
        )
        return setup


def _move(state: pb.SetupResponse | pb.ApplyResponse) -> pb.ApplyRequest:
    game = convert.state_from_proto(state.state)
    action = convert.action_to_proto(timeout_action(game))
    return pb.ApplyRequest(state=state.state, player_id=game.current, action=action, now_ms=NOW_MS + 1000)


async def test_each_call_is_answered_with_what_the_unary_call_returns(engine: RunningEngine) -> None:
    setup = _setup(engine.target)
    apply = _move(setup)
    timeout = pb.TimeoutRequest(state=setup.state, now_ms=NOW_MS + 2000)
    answers = await _stream(
        engine.target,
        [pb.ApplyManyRequest(call_id=7, apply=apply), pb.ApplyManyRequest(call_id=9, timeout=timeout)],
    )
    with grpc.insecure_channel(engine.target) as channel:
        stub = pb_grpc.EngineServiceStub(channel)
        unary_apply, unary_timeout = stub.Apply(apply), stub.Timeout(timeout)
    assert [a.call_id for a in answers] == [7, 9]
    assert answers[0].applied == unary_apply
    assert answers[1].timed_out == unary_timeout


async def test_a_refusal_is_answered_with_the_unary_status_and_the_stream_goes_on(
    engine: RunningEngine,
) -> None:
    setup = _setup(engine.target)
    wrong = _move(setup)
    game = convert.state_from_proto(setup.state)
    wrong.player_id = next(p for p in game.seats if p != game.current)  # not their turn
    right = _move(setup)
    answers = await _stream(
        engine.target,
        [pb.ApplyManyRequest(call_id=1, apply=wrong), pb.ApplyManyRequest(call_id=2, apply=right)],
        lang="en",
    )
    with grpc.insecure_channel(engine.target) as channel, pytest.raises(grpc.RpcError) as unary:
        pb_grpc.EngineServiceStub(channel).Apply(wrong, metadata=(("accept-language", "en"),))
    failure = answers[0].failure
    assert failure.code == unary.value.code().value[0]  # type: ignore[attr-defined]
    assert failure.message == unary.value.details()  # type: ignore[attr-defined]
    raw: Any = unary.value.trailing_metadata()  # type: ignore[attr-defined]
    trailers = dict(raw)
    assert status_pb2.Status.FromString(failure.status_details) == status_pb2.Status.FromString(
        trailers["grpc-status-details-bin"]
    )
    assert answers[1].WhichOneof("result") == "applied"


async def test_a_call_without_an_id_or_without_a_call_is_refused_in_band(engine: RunningEngine) -> None:
    setup = _setup(engine.target)
    answers = await _stream(
        engine.target,
        [pb.ApplyManyRequest(apply=_move(setup)), pb.ApplyManyRequest(call_id=3)],
        lang="en",
    )
    reasons = []
    for answer in answers:
        status = status_pb2.Status.FromString(answer.failure.status_details)
        info = status.details[0]
        unpacked = error_details_pb2.ErrorInfo()
        assert info.Unpack(unpacked)
        reasons.append((answer.failure.code, unpacked.reason, unpacked.domain))
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert reasons == [
        (invalid, "INVALID_CALL_ID", "engine.ninetynine"),
        (invalid, "MISSING_CALL", "engine.ninetynine"),
    ]


async def test_every_call_on_the_stream_gets_its_own_canonical_line(engine: RunningEngine) -> None:
    setup = _setup(engine.target)
    await _stream(
        engine.target,
        [
            pb.ApplyManyRequest(call_id=1, apply=_move(setup), request_id="apply-many-line-1"),
            pb.ApplyManyRequest(call_id=2, apply=_move(setup), request_id="apply-many-line-2"),
        ],
    )
    await asyncio.sleep(0.2)  # the server's log line is written after the answer
    lines = [
        line for line in engine.log_lines() if str(line.get("request_id", "")).startswith("apply-many-line")
    ]
    assert sorted(line["request_id"] for line in lines) == ["apply-many-line-1", "apply-many-line-2"]
    assert {line["method"] for line in lines} == {"ApplyMany/Apply"}
    assert all(line["code"] == "OK" and line["mode"] == "kr-product" for line in lines)


async def test_the_client_moves_over_the_stream_and_refusals_keep_their_reason(engine: RunningEngine) -> None:
    before = engine.metric(
        "ninetynine_engine_rpc_duration_seconds_count", method="ApplyMany/Apply", code="OK", mode="kr-product"
    )
    async with EngineClient(engine.target, lang="en") as client:
        setup = await client.setup(["a", "b"], seed=3, now_ms=NOW_MS)
        request = _move(setup)
        applied = await client.apply(
            setup.state,
            request.player_id,
            request.action,
            now_ms=request.now_ms,
            state_wire=setup.state.SerializeToString(),
        )
        assert applied.state.seq == 1
        with pytest.raises(ServiceError) as stale:
            await client.apply(
                applied.state,
                request.player_id,
                request.action,
                expected_seq=0,
                state_wire=applied.state.SerializeToString(),
            )
    assert stale.value.reason == "STALE_STATE" and stale.value.code is grpc.StatusCode.ABORTED
    after = engine.metric(
        "ninetynine_engine_rpc_duration_seconds_count", method="ApplyMany/Apply", code="OK", mode="kr-product"
    )
    assert after == before + 1


async def test_a_move_in_flight_when_the_engine_restarts_is_sent_again(tmp_path: Path) -> None:
    """The engine is stateless, so a move whose stream broke is sent again on a new one."""
    first = start_engine(tmp_path)
    port = first.port
    client = EngineClient(f"127.0.0.1:{port}", timeout=20.0)
    try:
        setup = await client.setup(["a", "b"], seed=5, now_ms=NOW_MS)
        request = _move(setup)
        await client.apply(
            setup.state,
            request.player_id,
            request.action,
            now_ms=request.now_ms,
            state_wire=setup.state.SerializeToString(),
        )
        stop_engine(first)  # the open ApplyMany stream breaks
        second = start_engine(tmp_path, "--port", str(port))
        try:
            again = await client.apply(
                setup.state,
                request.player_id,
                request.action,
                now_ms=request.now_ms,
                state_wire=setup.state.SerializeToString(),
            )
            assert again.state.seq == 1
        finally:
            stop_engine(second)
    finally:
        await client.close()

"""Operating the engine: health, reflection, logs, metrics, SIGTERM, the client, generated code."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ninetynine.common.errors import ServiceError
from ninetynine.engine.client import EngineClient
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from ninetynine.launch import free_port
from tests.engine.service_fixtures import ROOT, RunningEngine, start_engine, stop_engine

SERVICE = "ninetynine.engine.v1.EngineService"


def test_health_reports_serving_for_the_engine(engine: RunningEngine) -> None:
    with grpc.insecure_channel(engine.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_is_off_by_default(engine: RunningEngine) -> None:
    with grpc.insecure_channel(engine.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        # No request is written, so the refusal arrives as the status and never as a failed write.
        with pytest.raises(grpc.RpcError) as refused:
            list(stub.ServerReflectionInfo(iter([]), timeout=5))
    assert refused.value.code() is grpc.StatusCode.UNIMPLEMENTED


def test_reflection_lists_and_describes_the_service(tmp_path: Path) -> None:
    engine = start_engine(tmp_path, "--reflection")
    try:
        replies = _reflect(engine)
    finally:
        stop_engine(engine)
    names = {s.name for s in replies[0].list_services_response.service}
    assert {SERVICE, "grpc.health.v1.Health"} <= names
    files = replies[1].file_descriptor_response.file_descriptor_proto
    assert files, "the engine's descriptors are served"


def _reflect(engine: RunningEngine) -> list[reflection_pb2.ServerReflectionResponse]:
    with grpc.insecure_channel(engine.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE),
        ]
        return list(stub.ServerReflectionInfo(iter(requests), timeout=5))


def test_canonical_log_line_per_rpc_with_request_id(engine: RunningEngine) -> None:
    with grpc.insecure_channel(engine.target) as channel:
        stub = pb_grpc.EngineServiceStub(channel)
        setup = stub.Setup(
            pb.SetupRequest(player_ids=["a", "b"], seed=1), metadata=(("x-request-id", "req-42"),)
        )
        stub.View(pb.ViewRequest(state=setup.state, viewer_id="a"), timeout=5)
    lines = [line for line in engine.log_lines() if line.get("event") == "rpc"]
    mine = [line for line in lines if line.get("request_id") == "req-42"]
    assert len(mine) == 1
    line = mine[0]
    assert line["method"] == f"/{SERVICE}/Setup" and line["code"] == "OK"
    assert line["mode"] == "kr-product" and line["seq"] == 0 and line["duration_ms"] >= 0
    # Without an id the engine makes one.
    assert all(line.get("request_id") for line in lines)


def test_metrics_endpoint_has_the_engine_histogram(engine: RunningEngine) -> None:
    with grpc.insecure_channel(engine.target) as channel:
        pb_grpc.EngineServiceStub(channel).Setup(pb.SetupRequest(player_ids=["a", "b"]), timeout=5)
    count = engine.metric(
        "ninetynine_engine_rpc_duration_seconds_count",
        method=f"/{SERVICE}/Setup",
        code="OK",
        mode="kr-product",
    )
    assert count >= 1


def test_sigterm_reports_not_serving_then_exits_zero(tmp_path: Path) -> None:
    engine = start_engine(tmp_path, "--grace", "1")
    try:
        with grpc.insecure_channel(engine.target) as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=SERVICE), timeout=20
            )
            statuses = [next(watch).status]
            assert statuses == [health_pb2.HealthCheckResponse.SERVING]
            engine.process.send_signal(signal.SIGTERM)
            statuses.append(next(watch).status)
            assert statuses[-1] == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()
        assert engine.process.wait(20) == 0
    finally:
        stop_engine(engine)
    events = [line.get("event") for line in engine.log_lines()]
    assert "shutting down" in events and "server stopped" in events


def test_port_in_use_fails_with_exit_code_one(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "ninetynine.cli",
                "engine",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--metrics-port",
                "0",
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert b"engine failed to start" in result.stdout + result.stderr


async def test_client_raises_service_errors_with_reason(engine: RunningEngine) -> None:
    async with EngineClient(engine.target, lang="en") as client:
        with pytest.raises(ServiceError) as caught:
            await client.setup(["only-one"])
    assert caught.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.reason == "INVALID_PLAYER_COUNT"
    assert "2 to 10 players" in caught.value.message("en")


async def test_client_gives_up_on_unavailable_after_bounded_retries() -> None:
    port = free_port()  # closed again: nothing listens there
    async with EngineClient(f"127.0.0.1:{port}", timeout=0.5, attempts=3, backoff=0.01) as client:
        with pytest.raises(ServiceError) as caught:
            await client.setup(["a", "b"])
    assert caught.value.code is grpc.StatusCode.UNAVAILABLE


async def test_client_retries_until_the_engine_is_up(tmp_path: Path) -> None:
    # The engine starts while the client is backing off; the retry reaches it.
    port = free_port()
    started: list[RunningEngine] = []

    def boot() -> None:
        started.append(start_engine(tmp_path, "--port", str(port)))

    booting = threading.Thread(target=boot)
    booting.start()
    try:
        async with EngineClient(f"127.0.0.1:{port}", timeout=2.0, attempts=12, backoff=0.1) as client:
            reply = await client.setup(["a", "b"], seed=4)
        assert reply.state.seq == 0
    finally:
        booting.join(60)
        for engine in started:
            stop_engine(engine)


def test_generated_code_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/gen_protos.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr

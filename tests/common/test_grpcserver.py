"""create_server / serve: health, reflection, graceful shutdown in-process and on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ninetynine.common.grpcserver import HEALTH_SERVICE_NAME, create_server, serve
from ninetynine.common.interceptors import CanonicalLogInterceptor
from tests.common import probe
from tests.common.conftest import LogCapture, StartProbe

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
REPO_ROOT = Path(__file__).resolve().parents[2]


async def list_services(channel: grpc.aio.Channel) -> list[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names: list[str] = []
    async for response in call:
        names.extend(s.name for s in response.list_services_response.service)
    return names


async def test_reflection_is_off_unless_asked_for(start_probe: StartProbe, channel_to) -> None:
    port, _ = await start_probe()
    # No request is written: the refusal then arrives as the status, never as a failed write racing it.
    call = reflection_pb2_grpc.ServerReflectionStub(channel_to(port)).ServerReflectionInfo()
    assert await call.code() is grpc.StatusCode.UNIMPLEMENTED


async def test_reflection_lists_the_services_and_describes_health(
    start_probe: StartProbe, channel_to
) -> None:
    port, _ = await start_probe(reflection=True)
    channel = channel_to(port)
    names = await list_services(channel)
    assert sorted(names) == sorted(
        [probe.SERVICE, HEALTH_SERVICE_NAME, "grpc.reflection.v1alpha.ServerReflection"]
    )
    # Names are resolvable through the descriptor pool (health's descriptor is real).
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=HEALTH_SERVICE_NAME)
    responses = [r async for r in stub.ServerReflectionInfo(iter([request]))]
    assert responses[0].file_descriptor_response.file_descriptor_proto


def test_service_names_must_be_fully_qualified() -> None:
    with pytest.raises(ValueError, match="fully-qualified"):
        create_server("127.0.0.1:0", service_names=["/pkg.Svc/Method"])


async def test_binding_a_taken_port_fails_loudly(start_probe: StartProbe) -> None:
    port, _ = await start_probe()
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}"):
        create_server(f"127.0.0.1:{port}", service_names=[probe.SERVICE])


async def test_serve_reports_serving_then_not_serving_and_finishes_in_flight_calls(logs: LogCapture) -> None:
    server, port, health = create_server(
        "127.0.0.1:0", service_names=[probe.SERVICE], interceptors=[CanonicalLogInterceptor("probe")]
    )
    server.add_generic_rpc_handlers([probe.handler()])
    stop = asyncio.Event()
    shutdown_ran: list[str] = []

    async def on_shutdown() -> None:
        shutdown_ran.append("yes")

    serving = asyncio.create_task(
        serve(server, health, grace=10.0, service_names=[probe.SERVICE], on_shutdown=on_shutdown, stop=stop)
    )
    async with asyncio.timeout(60), grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        health_stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", probe.SERVICE):
            reply = await health_stub.Check(health_pb2.HealthCheckRequest(service=name), wait_for_ready=True)
            assert reply.status == SERVING
        watch = health_stub.Watch(health_pb2.HealthCheckRequest(service=probe.SERVICE))
        assert (await watch.read()).status == SERVING
        slow = channel.unary_stream(probe.SLOW, None, None)(b"0.3")
        assert await slow.read() == b"started"

        stop.set()
        assert (await watch.read()).status == NOT_SERVING
        watch.cancel()  # otherwise the watch itself would hold the server for the whole grace
        # The call that was running when shutdown began still completes normally.
        assert await slow.read() == b"done"
        assert await slow.code() is grpc.StatusCode.OK
        await serving

        assert shutdown_ran == ["yes"]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await health_stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    events = [line["event"] for line in logs.lines]
    assert events.index("server started") < events.index("shutting down") < events.index("server stopped")


async def test_on_draining_runs_once_new_calls_are_refused_while_running_calls_go_on() -> None:
    server, port, health = create_server("127.0.0.1:0", service_names=[probe.SERVICE])
    server.add_generic_rpc_handlers([probe.handler()])
    stop = asyncio.Event()
    ran: list[str] = []
    async with asyncio.timeout(60), grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        slow = channel.unary_stream(probe.SLOW, None, None)(b"0.5")

        async def on_draining() -> None:
            # A service ends its long-lived streams here: their callers' next call must not land
            # on this server again, so by now a new call is refused. Asked with a blocking call,
            # before this hook yields to the loop even once: only what stop() did before the hook
            # ran counts (a call the server took would wait for the blocked loop: DEADLINE_EXCEEDED).
            with grpc.insecure_channel(f"127.0.0.1:{port}") as fresh:
                try:
                    fresh.unary_unary(probe.UNARY, None, None)(b"late", timeout=2)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as refused:
                    code = refused.code()  # type: ignore[attr-defined]
            ran.append(f"draining: new call {code.name}, slow call done={slow.done()}")

        async def on_shutdown() -> None:
            ran.append("shutdown")

        serving = asyncio.create_task(
            serve(
                server,
                health,
                grace=10.0,
                service_names=[probe.SERVICE],
                on_draining=on_draining,
                on_shutdown=on_shutdown,
                stop=stop,
            )
        )
        assert await slow.read() == b"started"
        stop.set()
        # ...while the call that was running goes on to its end within the grace period.
        assert await slow.read() == b"done"
        assert await slow.code() is grpc.StatusCode.OK
        await serving
    assert ran == ["draining: new call UNAVAILABLE, slow call done=False", "shutdown"]


async def test_sigterm_stops_a_serving_process_gracefully_with_exit_code_0() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.common.serve_probe",
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        async with asyncio.timeout(30):
            first = (await process.stdout.readline()).decode()
        assert first.startswith("PORT "), first
        port = int(first.split()[1])
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health_stub = health_pb2_grpc.HealthStub(channel)
            watch = health_stub.Watch(health_pb2.HealthCheckRequest(service=""), wait_for_ready=True)
            async with asyncio.timeout(30):
                # "" may read SERVING before serve() has set it; wait for the named service too.
                check = await health_stub.Check(
                    health_pb2.HealthCheckRequest(service=probe.SERVICE), wait_for_ready=True
                )
                assert check.status == SERVING
                assert (await watch.read()).status == SERVING
                slow = channel.unary_stream(probe.SLOW, None, None)(b"1.0")
                assert await slow.read() == b"started"

                process.send_signal(signal.SIGTERM)
                assert (await watch.read()).status == NOT_SERVING
                watch.cancel()
                assert await slow.read() == b"done"
                assert await slow.code() is grpc.StatusCode.OK
                code = await process.wait()
        assert code == 0
        lines = [json.loads(line) for line in (await process.stderr.read()).decode().splitlines()]
        events = [line["event"] for line in lines]
        assert "shutting down" in events
        assert events.index("on_shutdown ran") < events.index("server stopped")
        slow_lines = [line for line in lines if line.get("method") == probe.SLOW and line["event"] == "rpc"]
        assert [line["code"] for line in slow_lines] == ["OK"]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

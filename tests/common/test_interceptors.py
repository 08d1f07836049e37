"""Canonical log lines, latency histogram and request-id propagation, observed on real servers."""

from __future__ import annotations

import re

import grpc
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.context import request_scope
from ninetynine.common.grpcclient import create_channel
from ninetynine.common.interceptors import CanonicalLogInterceptor, bind_rpc_fields, request_id
from ninetynine.common.metrics import histogram, rpc_histogram
from ninetynine.common.reasons import SERVICE_TEXTS
from tests.common import probe
from tests.common.conftest import LogCapture, StartProbe
from tests.common.errorinfo import only_error_info

HEX32 = re.compile(r"[0-9a-f]{32}")


async def test_ok_call_logs_one_canonical_line(start_probe: StartProbe, channel_to, logs: LogCapture) -> None:
    port, _ = await start_probe()
    reply = await channel_to(port).unary_unary(probe.UNARY)(b"fields", metadata=(("x-request-id", "req-42"),))
    assert reply == b"ok"
    line = await logs.rpc_line(probe.UNARY)
    assert line["request_id"] == "req-42"
    assert line["method"] == probe.UNARY
    assert line["code"] == "OK"
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert (line["mode"], line["seq"]) == ("kr-product", 7)
    assert (line["service"], line["level"]) == ("probe", "info")
    assert "timestamp" in line
    assert len(logs.rpc_lines()) == 1


async def test_request_id_is_generated_when_absent_or_unusable(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    call = channel_to(port).unary_unary(probe.UNARY)
    generated = (await call(b"whoami")).decode()
    assert HEX32.fullmatch(generated)
    replaced = (await call(b"whoami", metadata=(("x-request-id", "a b;c" * 50),))).decode()
    assert HEX32.fullmatch(replaced) and replaced != generated
    await logs.wait_for(lambda _: len(logs.rpc_lines()) == 2)
    assert [line["request_id"] for line in logs.rpc_lines()] == [generated, replaced]


async def test_abort_is_logged_with_its_final_code(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    with pytest.raises(grpc.aio.AioRpcError):
        await channel_to(port).unary_unary(probe.UNARY)(b"not-in-hand")
    line = await logs.rpc_line(probe.UNARY)
    assert line["code"] == "FAILED_PRECONDITION"
    assert line["level"] == "info"  # a refused request is not a server fault


async def test_an_unexpected_exception_is_logged_with_its_traceback_and_not_told_to_the_caller(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    for lang, text in (("ko", SERVICE_TEXTS["INTERNAL"][0]), ("en", SERVICE_TEXTS["INTERNAL"][1])):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel_to(port).unary_unary(probe.UNARY)(b"crash", metadata=(("accept-language", lang),))
        err = caught.value
        assert err.code() is grpc.StatusCode.UNKNOWN
        assert err.details() == text and "crashed" not in (err.details() or "")
        assert only_error_info(err, ("probe.ninetynine",)).reason == "INTERNAL"
    line = await logs.rpc_line(probe.UNARY)
    assert (line["code"], line["level"]) == ("UNKNOWN", "error")
    assert line["exception"][0]["exc_value"] == "probe crashed on purpose"


async def test_streaming_calls_get_one_line_each_at_the_end(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    channel = channel_to(port)
    received = [m async for m in channel.unary_stream(probe.SERVER_STREAM)(b"3")]
    assert received == [b"0", b"1", b"2"]
    line = await logs.rpc_line(probe.SERVER_STREAM)
    assert (line["code"], line["count"]) == ("OK", 3)

    # A stream that aborts after its first message.
    call = channel.unary_stream(probe.SERVER_STREAM)(b"1")
    assert await call.read() == b"0"
    assert await call.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (await logs.rpc_line(probe.SERVER_STREAM, 1))["code"] == "RESOURCE_EXHAUSTED"

    bidi = channel.stream_stream(probe.BIDI)(iter([b"a", b"b"]), metadata=(("x-request-id", "bidi-1"),))
    assert [m async for m in bidi] == [b"A", b"B"]
    line = await logs.rpc_line(probe.BIDI)
    assert (line["code"], line["request_id"]) == ("OK", "bidi-1")

    assert await channel.stream_unary(probe.COUNT)(iter([b"x"] * 4)) == b"4"
    line = await logs.rpc_line(probe.COUNT)
    assert (line["code"], line["messages"]) == ("OK", 4)


async def test_cancelled_stream_is_logged_as_cancelled(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    call = channel_to(port).unary_stream(probe.SLOW)(b"30")
    assert await call.read() == b"started"
    call.cancel()
    assert (await logs.rpc_line(probe.SLOW))["code"] == "CANCELLED"


async def test_deadline_exceeded_is_logged_as_such(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    call = channel_to(port).unary_stream(probe.SLOW)(b"30", timeout=0.5)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _ = [m async for m in call]
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert (await logs.rpc_line(probe.SLOW))["code"] == "DEADLINE_EXCEEDED"


async def test_histogram_is_observed_by_method_code_and_bound_mode(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    registry = CollectorRegistry()
    latency = rpc_histogram("probe", extra_labels=("mode",), registry=registry)
    port, _ = await start_probe(
        interceptors=[CanonicalLogInterceptor("probe", latency, label_fields=("mode",))]
    )
    call = channel_to(port).unary_unary(probe.UNARY)
    await call(b"fields")
    await call(b"echo")
    with pytest.raises(grpc.aio.AioRpcError):
        await call(b"not-in-hand")
    await logs.wait_for(lambda _: len(logs.rpc_lines()) == 3)

    def count(code: str, mode: str) -> float | None:
        return registry.get_sample_value(
            "ninetynine_probe_rpc_duration_seconds_count", {"method": probe.UNARY, "code": code, "mode": mode}
        )

    assert count("OK", "kr-product") == 1
    assert count("OK", "") == 1
    assert count("FAILED_PRECONDITION", "") == 1


def test_histogram_with_wrong_labels_is_refused() -> None:
    wrong = histogram("ninetynine_probe_wrong_seconds", "x", ("method",), registry=CollectorRegistry())
    with pytest.raises(ValueError, match="labels must be"):
        CanonicalLogInterceptor("probe", wrong)


async def test_request_id_is_shared_by_both_hops(
    start_probe: StartProbe, channel_to, logs: LogCapture
) -> None:
    front, _ = await start_probe()
    back, _ = await start_probe()
    call = channel_to(front).unary_unary(probe.UNARY)
    relayed = f"relay:127.0.0.1_{back}:whoami".encode()

    seen_by_back = await call(relayed, metadata=(("x-request-id", "trace-7"),))
    assert seen_by_back == b"trace-7"

    seen_by_back = await call(relayed)  # none sent: the front's generated id travels on
    await logs.wait_for(lambda _: len(logs.rpc_lines(probe.UNARY)) == 4)
    ids = [line["request_id"] for line in logs.rpc_lines(probe.UNARY)]
    # Lines are written inner call first: back, front, back, front.
    assert ids[:2] == ["trace-7", "trace-7"]
    assert ids[2] == ids[3] == seen_by_back.decode()
    assert HEX32.fullmatch(ids[3])


async def test_request_scope_feeds_outgoing_calls_from_non_grpc_code(
    start_probe: StartProbe, logs: LogCapture
) -> None:
    port, _ = await start_probe()
    async with create_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(probe.UNARY, None, None)
        with request_scope("ws-123"):
            assert request_id() == "ws-123"
            assert await call(b"whoami") == b"ws-123"
            streamed = [m async for m in channel.unary_stream(probe.SERVER_STREAM, None, None)(b"2")]
            assert streamed == [b"0", b"1"]
        assert request_id() == ""
        # An explicit header wins over the scope's id.
        with request_scope("ws-124"):
            assert await call(b"whoami", metadata=(("x-request-id", "explicit"),)) == b"explicit"
    assert (await logs.rpc_line(probe.SERVER_STREAM))["request_id"] == "ws-123"


def test_bind_rpc_fields_outside_an_rpc_is_harmless() -> None:
    bind_rpc_fields(mode="x")
    with request_scope() as fields:
        bind_rpc_fields(seq=1)
        bind_rpc_fields(seq=2, room_id="r")
        assert fields == {"seq": 2, "room_id": "r"}
        assert HEX32.fullmatch(request_id())

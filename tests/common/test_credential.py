"""The service credential: who may call a server behind ServiceCredentialInterceptor, and how a
channel presents it on every kind of call."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ninetynine.common.credential import (
    TOKEN_ENV,
    CredentialError,
    bearer_metadata,
    generate_token,
    is_loopback,
    load_service_token,
)
from ninetynine.common.errors import error_info
from ninetynine.common.grpcclient import create_channel
from ninetynine.common.interceptors import CanonicalLogInterceptor, ServiceCredentialInterceptor
from ninetynine.session.errors import DOMAIN as SESSION_DOMAIN
from ninetynine.session.errors import session_error
from tests.common import probe
from tests.common.conftest import LogCapture, StartProbe

TOKEN = "probe-secret-" + "x" * 20


def _identity(data: bytes) -> bytes:
    return data


async def start_guarded(start_probe: StartProbe) -> int:
    interceptors = [CanonicalLogInterceptor("probe"), ServiceCredentialInterceptor(TOKEN, session_error)]
    port, _ = await start_probe(interceptors=interceptors)
    return int(port)


async def call_all_kinds(channel: grpc.aio.Channel) -> list[bytes]:
    """One call of each kind: unary, server stream, bidi stream, client stream."""
    unary = await channel.unary_unary(probe.UNARY, _identity, _identity)(b"hi", timeout=5)
    streamed = [
        m async for m in channel.unary_stream(probe.SERVER_STREAM, _identity, _identity)(b"2", timeout=5)
    ]
    bidi = [
        m
        async for m in channel.stream_stream(probe.BIDI, _identity, _identity)(iter([b"a", b"b"]), timeout=5)
    ]
    counted = await channel.stream_unary(probe.COUNT, _identity, _identity)(
        iter([b"1", b"2", b"3"]), timeout=5
    )
    return [unary, *streamed, *bidi, counted]


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ((), "SERVICE_CREDENTIAL_REQUIRED"),
        (bearer_metadata("wrong-secret-" + "y" * 20), "INVALID_SERVICE_CREDENTIAL"),
        ((("authorization", TOKEN),), "INVALID_SERVICE_CREDENTIAL"),  # the secret without "Bearer "
    ],
)
async def test_a_call_without_the_right_credential_is_refused_with_one_error_info(
    start_probe: StartProbe, logs: LogCapture, metadata: tuple[tuple[str, str], ...], reason: str
) -> None:
    port = await start_guarded(start_probe)
    async with create_channel(f"127.0.0.1:{port}", metadata=metadata) as channel:
        for call in (
            lambda: channel.unary_unary(probe.UNARY, _identity, _identity)(b"hi", timeout=5),
            lambda: channel.stream_unary(probe.COUNT, _identity, _identity)(iter([b"1"]), timeout=5),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call()
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
            info = error_info(refused.value)
            assert info is not None and (info.reason, info.domain) == (reason, SESSION_DOMAIN)
            assert refused.value.details()  # the human message (Korean by default)
        stream = channel.stream_stream(probe.BIDI, _identity, _identity)(iter([b"a"]), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as refused_stream:
            _ = [m async for m in stream]
        assert refused_stream.value.code() is grpc.StatusCode.UNAUTHENTICATED
    line = await logs.rpc_line(probe.UNARY)
    assert (line["code"], line["reason"]) == ("UNAUTHENTICATED", reason)


async def test_the_right_credential_is_presented_on_every_kind_of_call(
    start_probe: StartProbe, logs: LogCapture
) -> None:
    port = await start_guarded(start_probe)
    async with create_channel(f"127.0.0.1:{port}", metadata=bearer_metadata(TOKEN)) as channel:
        assert await call_all_kinds(channel) == [b"hi", b"0", b"1", b"A", b"B", b"3"]
    await logs.wait_for(lambda _: len(logs.rpc_lines()) >= 4)
    assert {line["code"] for line in logs.rpc_lines()} == {"OK"}
    assert TOKEN not in json.dumps(logs.lines), "the secret reached a log line"


async def test_health_answers_without_the_credential(start_probe: StartProbe) -> None:
    port = await start_guarded(start_probe)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_the_secret_comes_from_the_file_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert load_service_token(None) is None
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert load_service_token(None) == TOKEN
    path = tmp_path / "token"
    path.write_text("from-the-file-" + "z" * 20 + "\n")  # a trailing newline, as `kubectl create` leaves
    assert load_service_token(str(path)) == "from-the-file-" + "z" * 20
    assert len(generate_token()) >= 32 and generate_token() != generate_token()


@pytest.mark.parametrize("content", ["short", "with a space in the middle!", "ünïcödé-" * 4])
def test_a_weak_or_unusable_secret_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CredentialError):
        load_service_token(str(path))
    with pytest.raises(CredentialError, match="cannot read"):
        load_service_token(str(tmp_path / "missing"))


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("", "0.0.0.0", "::", "192.0.2.2", "session.example"))

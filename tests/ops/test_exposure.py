"""What the network sees: ``serve --host 0.0.0.0`` exposes the gateway and nothing else, the
session admits only holders of the service credential, reflection is off, the secret stays out
of logs and command lines; a session on a public address refuses to start without one."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from ninetynine.common.credential import TOKEN_ENV, bearer_metadata
from ninetynine.common.errors import error_info
from ninetynine.launch import free_port, start, wait_serving
from ninetynine.session.errors import DOMAIN as SESSION_DOMAIN
from ninetynine.session.v1 import session_service_pb2 as spb
from ninetynine.session.v1 import session_service_pb2_grpc as spb_grpc
from tests.ops.stack import Serve, open_table

pytestmark = pytest.mark.timeout(120)

LISTEN = "0A"


@pytest.fixture
def serve_public(tmp_path: Path) -> Iterator[Serve]:
    serve = Serve.start("--host=0.0.0.0", "--bot-think-ms=20", "--turn-time-scale=0.05", cwd=tmp_path)
    try:
        serve.wait_ready()
        yield serve
    finally:
        if serve.proc.poll() is None:
            serve.kill()


def listening_addresses() -> dict[int, set[str]]:
    """Port -> the addresses something listens on, from the kernel's socket tables."""
    found: dict[int, set[str]] = {}
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with contextlib.suppress(FileNotFoundError):
            for row in Path(table).read_text().splitlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                if state != LISTEN:
                    continue
                hex_address, hex_port = local.split(":")
                packed = bytes.fromhex(hex_address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                packed = b"".join(packed[i : i + 4][::-1] for i in range(0, len(packed), 4))
                family = socket.AF_INET if size == 4 else socket.AF_INET6
                found.setdefault(int(hex_port, 16), set()).add(_ipv4_view(socket.inet_ntop(family, packed)))
    return found


def _ipv4_view(address: str) -> str:
    """gRPC listens on IPv4 through IPv6 sockets: ``::ffff:127.0.0.1`` is 127.0.0.1, ``::`` every
    interface, like 0.0.0.0."""
    return "0.0.0.0" if address == "::" else address.removeprefix("::ffff:")


def public_address() -> str | None:
    """An IPv4 address of this machine other than loopback, if it has one."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        for address in out.split():
            if "." in address and not address.startswith("127."):
                return address
    return None


def reachable(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def ports_from_banner(serve: Serve) -> tuple[dict[str, int], dict[str, int]]:
    """(internal ports by name, gateway ports by name) as printed."""
    internal = {
        name: int(serve.banner_value(f"grpc {name}").rsplit(":", 1)[1]) for name in ("engine", "session")
    }
    for name, url in serve.metrics_urls().items():
        internal[f"metrics {name}"] = int(url.rsplit(":", 1)[1].split("/")[0])
    gateway = {
        "grpc": int(serve.banner_value("grpc gateway").rsplit(":", 1)[1]),
        "http": int(serve.web_url.rstrip("/").rsplit(":", 1)[1]),
    }
    return internal, gateway


async def test_serve_on_all_interfaces_exposes_only_the_gateway(serve_public: Serve) -> None:
    serve = serve_public
    internal, gateway = ports_from_banner(serve)
    listening = listening_addresses()
    for name, port in internal.items():
        assert listening.get(port) == {"127.0.0.1"}, f"{name} listens on {listening.get(port)}"
    for name, port in gateway.items():
        assert listening.get(port) == {"0.0.0.0"}, f"gateway {name} listens on {listening.get(port)}"
    # The banner says where each listens.
    listens = {
        m[1]: m[2] for m in (re.match(r"^\s+listens (\S+):\s+(.*)$", line) for line in serve.lines) if m
    }
    assert f"http 0.0.0.0:{gateway['http']}" in listens["gateway"]
    assert f"grpc 127.0.0.1:{internal['session']}" in listens["session"]

    address = public_address()
    if address is not None:  # what another machine (a phone) can reach
        for name, port in internal.items():
            assert not reachable(address, port), f"{name} is reachable on {address}:{port}"
        url = f"http://{address}:{gateway['http']}/healthz"
        async with aiohttp.ClientSession() as http, http.get(url) as response:
            assert response.status == 200


async def test_the_session_admits_only_holders_of_the_credential(serve_public: Serve) -> None:
    serve = serve_public
    token = serve.service_token()
    target = serve.banner_value("grpc session")
    async with grpc.aio.insecure_channel(target) as channel:
        stub = spb_grpc.SessionServiceStub(channel)
        for metadata, reason in (
            ((), "SERVICE_CREDENTIAL_REQUIRED"),
            (bearer_metadata(token[::-1]), "INVALID_SERVICE_CREDENTIAL"),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.ListRooms(spb.ListRoomsRequest(), timeout=5, metadata=metadata)
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
            info = error_info(refused.value)
            assert info is not None and (info.reason, info.domain) == (reason, SESSION_DOMAIN)
        # A shared stream, as the gateway opens it, is refused before any request is read.
        with pytest.raises(grpc.aio.AioRpcError) as refused_stream:
            _ = [m async for m in stub.SubscribeMany(iter([]), timeout=5)]
        assert refused_stream.value.code() is grpc.StatusCode.UNAUTHENTICATED

        await stub.ListRooms(spb.ListRoomsRequest(), timeout=5, metadata=bearer_metadata(token))
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING

    # The gateway presents it on its unary calls and its shared streams: a game plays.
    async with aiohttp.ClientSession() as http:
        table = await open_table(http, serve.web_url)
        await table.create_room_with_bots(2)
        played, over = await table.play_moves(2)
        assert played == 2 or over, table.seen
        await table.ws.close()

    # Reflection is off everywhere (the session's asked with the credential, so it is not that). A
    # server routes by method path alone, so a unary call to the reflection path tells the same: it
    # avoids the old grpcio client's race of writing a stream request to an already-closed call.
    service = reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"].full_name
    reflection = f"/{service}/ServerReflectionInfo"
    request = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
    for name in ("engine", "session", "gateway"):
        async with grpc.aio.insecure_channel(serve.banner_value(f"grpc {name}")) as channel:
            probe = channel.unary_unary(reflection, request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.aio.AioRpcError) as unimplemented:
                await probe(request, timeout=5, metadata=bearer_metadata(token))
            assert unimplemented.value.code() is grpc.StatusCode.UNIMPLEMENTED, name

    pids = serve.child_pids()
    assert serve.terminate() == 0, serve.output()
    assert token not in serve.output(), "the secret reached the output"
    assert set(pids) == {"engine", "session", "gateway"}


def test_the_secret_is_in_no_command_line(serve_public: Serve) -> None:
    serve = serve_public
    token = serve.service_token()
    assert serve.child_env("gateway")[TOKEN_ENV] == token
    assert TOKEN_ENV not in serve.child_env("engine")
    for name, pid in {**serve.child_pids(), "supervisor": serve.proc.pid}.items():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert token.encode() not in cmdline, f"{name}'s command line shows the secret"


def test_a_session_on_a_public_address_needs_a_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    port = free_port()
    args = ["session", "--host=0.0.0.0", f"--port={port}", "--metrics-port=0", "--engine=local"]
    args.append(f"--store=sqlite:///{tmp_path}/rooms.db")
    refused = subprocess.run(
        [sys.executable, "-m", "ninetynine.cli", *args], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    (line,) = [
        json.loads(x) for x in refused.stdout.splitlines() + refused.stderr.splitlines() if "refused" in x
    ]
    assert "NINETYNINE_SERVICE_TOKEN" in line["error"] and "--service-token-file" in line["error"]

    token_file = tmp_path / "token"
    token_file.write_text("k8s-mounted-secret-0123456789\n")
    token_file.chmod(0o600)
    log = tmp_path / "session.log"
    proc = start([*args, f"--service-token-file={token_file}"], log)
    try:
        wait_serving(port)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = spb_grpc.SessionServiceStub(channel)
            stub.ListRooms(
                spb.ListRoomsRequest(), timeout=5, metadata=bearer_metadata("k8s-mounted-secret-0123456789")
            )
            with pytest.raises(grpc.RpcError) as refused_call:
                stub.ListRooms(spb.ListRoomsRequest(), timeout=5)
            assert refused_call.value.code() is grpc.StatusCode.UNAUTHENTICATED
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    assert "k8s-mounted-secret" not in log.read_text()

"""The HTTP/WebSocket edge under attack from outside, on real sockets against a real gateway.

Headers that never end, sockets that never speak, one address opening many sockets, creating
rooms or guessing tokens from many sockets, pages of other sites driving the WebSocket, request
lines that are too long: each is closed or refused with its reason, another address is not
affected, and the server's log calls none of it a server error.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import grpc.aio
import pytest

from ninetynine.common.logging import configure_logging
from ninetynine.gateway.admission import Budgets, parse_networks
from ninetynine.gateway.edge import SOCKET_SLACK
from ninetynine.gateway.limits import Limits
from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from tests.common.conftest import LogCapture
from tests.gateway.conftest import READ_TIMEOUT_S, GatewayFactory, WsClient
from tests.gateway.test_grpc_contract import _open as open_stream

OTHER_ADDRESS = "127.0.0.2"  # a second loopback address (Linux answers the whole 127/8)


@pytest.fixture
async def clients() -> AsyncIterator[Any]:
    """``connect(gateway, source="127.0.0.1", headers=None)``: a schema-checked WebSocket client
    whose connection comes from ``source``."""
    sessions: list[aiohttp.ClientSession] = []

    async def connect(
        running: RunningGateway, source: str = "127.0.0.1", headers: dict[str, str] | None = None
    ) -> WsClient:
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))
        sessions.append(http)
        ws = await http.ws_connect(
            f"http://127.0.0.1:{running.http_port}/ws", autoclose=False, headers=headers or {}
        )
        return WsClient(ws)

    yield connect
    for http in sessions:
        await http.close()


async def _refused_with(client: WsClient) -> dict[str, Any]:
    """The fatal error a refused connection gets; its goodbye and close code are checked too."""
    error = await client.recv()
    goodbye = await client.recv()
    assert error["type"] == "error" and error["fatal"] is True, error
    assert goodbye["type"] == "goodbye" and goodbye["reason"] == "abuse", goodbye
    assert await client.close_code() == 1008
    return error


async def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) before READ_TIMEOUT_S; reads anything it sends."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            while True:
                data = await loop.sock_recv(sock, 4096)
                if not data:
                    return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _refusals(running: RunningGateway, reason: str) -> float:
    """``ninetynine_gateway_refusals_total{reason}`` of this gateway."""
    (family,) = running.gateway.metrics.refusals.collect()
    return sum(s.value for s in family.samples if s.name.endswith("_total") and s.labels["reason"] == reason)


async def _raw_socket(running: RunningGateway, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.bind((source, 0))
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", running.http_port))
    return sock


# -- headers that never end, sockets that never speak ---------------------------------------------


async def test_a_request_whose_headers_never_end_is_closed_after_the_header_timeout(
    make_gateway: GatewayFactory,
) -> None:
    running = await make_gateway(header_timeout=0.5)
    loop = asyncio.get_running_loop()
    sock = await _raw_socket(running)
    try:
        await loop.sock_sendall(sock, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")

        async def trickle() -> None:  # a byte now and then must not keep it open (slowloris)
            for _ in range(100):
                await asyncio.sleep(0.1)
                await loop.sock_sendall(sock, b"X")

        trickling = asyncio.create_task(trickle())
        try:
            assert await _closed_by_server(sock), "the half-sent request is still open"
        finally:
            trickling.cancel()
    finally:
        sock.close()
    # A request that completes in time is served as before.
    healthz = f"http://127.0.0.1:{running.http_port}/healthz"
    async with aiohttp.ClientSession() as http, http.get(healthz) as response:
        assert response.status == 200


async def test_a_websocket_that_never_sends_its_first_message_is_closed_idle(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    running = await make_gateway(Limits(hello_timeout_seconds=0.5))
    silent = await clients(running)
    goodbye = await silent.recv()
    assert goodbye == {"type": "goodbye", "reason": "idle", "retryAfterMs": 0}
    assert await silent.close_code() == 4000
    # One that speaks at once is not cut off by the first-message timeout.
    talker = await clients(running)
    assert (await talker.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
    await asyncio.sleep(1.0)
    assert (await talker.request({"type": "ping", "id": 2}))["type"] == "pong"


# -- per-address connection budgets ----------------------------------------------------------------


async def test_connections_beyond_the_per_address_cap_are_refused_and_other_addresses_are_not(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    running = await make_gateway(budgets=Budgets(max_connections_per_address=3))
    held = [await clients(running) for _ in range(3)]
    for client in held:
        assert (await client.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
    refused = await _refused_with(await clients(running))
    assert refused["reason"] == "TOO_MANY_CONNECTIONS" and refused["metadata"]["limit"] == "3"
    assert _refusals(running, "TOO_MANY_CONNECTIONS") == 1

    other = await clients(running, OTHER_ADDRESS)
    assert (await other.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"

    await held[0].ws.close()
    await asyncio.sleep(0.2)  # the gateway sees the close
    again = await clients(running)
    assert (await again.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"


async def test_new_connections_per_second_from_one_address_are_bounded(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    budgets = Budgets(connection_rate_per_address=0.01, connection_burst_per_address=2)
    running = await make_gateway(budgets=budgets)
    for _ in range(2):
        client = await clients(running)
        assert (await client.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
        await client.ws.close()
    refused = await _refused_with(await clients(running))
    assert refused["reason"] == "TOO_MANY_CONNECTIONS" and refused["metadata"]["limit"] == "0.01/s"
    assert int(refused["metadata"]["retryAfterMs"]) > 1000
    other = await clients(running, OTHER_ADDRESS)
    assert (await other.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"


async def test_grpc_connect_streams_count_against_the_same_cap(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    running = await make_gateway(budgets=Budgets(max_connections_per_address=2))
    held = await clients(running)
    assert (await held.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        first = open_stream(channel)
        assert (await first.request(gw.ClientMessage(id="1", ping=gw.Ping()))).WhichOneof("kind") == "pong"
        second = open_stream(channel)
        await second.send(gw.ClientMessage(id="1", ping=gw.Ping()))
        error, goodbye = await second.recv(), await second.recv()
        assert error.error.reason == "TOO_MANY_CONNECTIONS" and error.error.fatal, error
        assert goodbye.goodbye.reason == "abuse"
        first.call.cancel()


async def test_idle_sockets_beyond_the_cap_are_dropped_at_accept(make_gateway: GatewayFactory) -> None:
    running = await make_gateway(budgets=Budgets(max_connections_per_address=2))
    held = [await _raw_socket(running) for _ in range(2 + SOCKET_SLACK)]
    extra = await _raw_socket(running)
    other = await _raw_socket(running, OTHER_ADDRESS)
    try:
        assert await _closed_by_server(extra)
        assert _refusals(running, "SOCKET_LIMIT") == 1
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(other, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := await asyncio.wait_for(loop.sock_recv(other, 4096), READ_TIMEOUT_S):
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 200"), reply[:100]
    finally:
        for sock in (*held, extra, other):
            sock.close()


async def test_x_forwarded_for_names_the_client_only_behind_a_trusted_proxy(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    budgets = Budgets(max_connections_per_address=1)
    proxied = await make_gateway(budgets=budgets, trusted_proxies=parse_networks("127.0.0.1/32"))
    a = await clients(proxied, headers={"X-Forwarded-For": "203.0.113.5"})
    b = await clients(proxied, headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.6"})
    for client in (a, b):
        assert (await client.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
    # The client wrote the left part itself: only the address the proxy appended counts.
    same = await clients(proxied, headers={"X-Forwarded-For": "192.0.2.99, 203.0.113.5"})
    assert (await _refused_with(same))["reason"] == "TOO_MANY_CONNECTIONS"

    direct = await make_gateway(budgets=budgets)  # no trusted proxy: the header is the client's word
    first = await clients(direct, headers={"X-Forwarded-For": "203.0.113.5"})
    assert (await first.request({"type": "hello", "id": 1, "lang": "en"}))["type"] == "welcome"
    spoofed = await clients(direct, headers={"X-Forwarded-For": "203.0.113.7"})
    assert (await _refused_with(spoofed))["reason"] == "TOO_MANY_CONNECTIONS"


# -- room creation and token guessing across sockets ------------------------------------------------


async def _create(client: WsClient) -> dict[str, Any]:
    return await client.request({"type": "createRoom", "id": "c", "name": "A", "seats": 2})


async def test_room_creation_is_budgeted_per_address_across_sockets(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    running = await make_gateway(budgets=Budgets(rooms_per_minute_per_address=2))
    for _ in range(2):
        assert (await _create(await clients(running)))["type"] == "joined"
    refused = await _create(await clients(running))
    assert refused["type"] == "error" and refused["reason"] == "TOO_MANY_ROOMS", refused
    assert refused["fatal"] is False and int(refused["metadata"]["retryAfterMs"]) > 0
    assert refused["id"] == "c"
    assert (await _create(await clients(running, OTHER_ADDRESS)))["type"] == "joined"


async def _resume(client: WsClient, token: str) -> dict[str, Any]:
    return await client.request({"type": "resume", "id": "r", "token": token, "afterSeq": 0})


async def test_failed_tokens_are_budgeted_per_address_and_a_good_token_elsewhere_still_works(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    budgets = Budgets(auth_failures_per_minute_per_address=3, auth_failures_per_minute_per_room=100)
    running = await make_gateway(budgets=budgets)
    host = await clients(running, OTHER_ADDRESS)
    joined = await _create(host)
    room, token = joined["roomId"], joined["token"]
    guesses = [f"{room}.{'A' * 40}{i}" for i in range(5)]
    # One socket per guess: opening more sockets buys no more guesses.
    for guess in guesses[:3]:
        assert (await _resume(await clients(running), guess))["reason"] == "INVALID_TOKEN"
    for guess in (guesses[3], token):  # once over the budget, not even a right token is tried
        refused = await _resume(await clients(running), guess)
        assert refused["reason"] == "TOO_MANY_AUTH_FAILURES" and refused["fatal"] is False, refused
        assert refused["metadata"]["limit"] == "3/min"
    await host.ws.close()
    back = await _resume(await clients(running, OTHER_ADDRESS), token)
    assert back["type"] == "joined" and back["roomId"] == room


async def test_failed_tokens_against_one_room_are_budgeted_across_addresses(
    make_gateway: GatewayFactory, clients: Any
) -> None:
    budgets = Budgets(auth_failures_per_minute_per_address=100, auth_failures_per_minute_per_room=3)
    running = await make_gateway(budgets=budgets)
    target = (await _create(await clients(running, "127.0.0.9")))["roomId"]
    other_room = (await _create(await clients(running, "127.0.0.9")))["roomId"]
    for source in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
        guess = f"{target}.{'B' * 43}"
        assert (await _resume(await clients(running, source), guess))["reason"] == "INVALID_TOKEN"
    refused = await _resume(await clients(running, "127.0.0.4"), f"{target}.{'C' * 43}")
    assert refused["reason"] == "TOO_MANY_AUTH_FAILURES", refused
    # Another room's budget is its own.
    elsewhere = await _resume(await clients(running, "127.0.0.4"), f"{other_room}.{'C' * 43}")
    assert elsewhere["reason"] == "INVALID_TOKEN"


# -- the WebSocket's Origin -------------------------------------------------------------------------


async def _upgrade_status(running: RunningGateway, origin: str | None) -> int:
    headers = {} if origin is None else {"Origin": origin}
    async with aiohttp.ClientSession() as http:
        try:
            ws = await http.ws_connect(f"http://127.0.0.1:{running.http_port}/ws", headers=headers)
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
        await ws.close()
        return 101


async def test_websocket_origins_other_than_its_own_or_the_allowed_ones_are_refused(
    make_gateway: GatewayFactory,
) -> None:
    running = await make_gateway(allowed_origins=("https://table.example",))
    own = f"http://127.0.0.1:{running.http_port}"
    assert await _upgrade_status(running, "https://evil.example") == 403
    assert await _upgrade_status(running, "http://127.0.0.1:1") == 403  # same host, other port
    assert await _upgrade_status(running, "null") == 403
    assert await _upgrade_status(running, own) == 101
    assert await _upgrade_status(running, "https://table.example") == 101
    assert await _upgrade_status(running, None) == 101  # native clients send no Origin


# -- security headers ---------------------------------------------------------------------------------


async def test_every_http_response_carries_the_security_headers_and_no_server_version(
    gateway: RunningGateway,
) -> None:
    base = f"http://127.0.0.1:{gateway.http_port}"
    async with aiohttp.ClientSession() as http:
        for path, status in (("/", 200), ("/js/app.js", 200), ("/healthz", 200), ("/nothing-here", 404)):
            async with http.get(base + path) as response:
                assert response.status == status, path
                headers = response.headers
                csp = {d.split()[0]: d.split()[1:] for d in headers["Content-Security-Policy"].split("; ")}
                assert csp["connect-src"] == ["'self'"], path
                assert csp["script-src"] == ["'self'"] and csp["frame-ancestors"] == ["'none'"], path
                assert headers["X-Content-Type-Options"] == "nosniff", path
                assert headers["X-Frame-Options"] == "DENY", path
                assert headers["Referrer-Policy"] == "no-referrer", path
                assert "aiohttp" not in headers.get("Server", "").lower(), path
                assert not any(ch.isdigit() for ch in headers.get("Server", "")), path


# -- client faults in the log -------------------------------------------------------------------------


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    capture = LogCapture()
    configure_logging("gateway", json_logs=True, stream=capture)  # type: ignore[arg-type]
    yield capture
    configure_logging("gateway", json_logs=True)


async def test_a_request_line_too_long_is_a_warning_without_a_stack(
    gateway: RunningGateway, logs: LogCapture
) -> None:
    sock = await _raw_socket(gateway)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(sock, b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = await asyncio.wait_for(loop.sock_recv(sock, 4096), READ_TIMEOUT_S)
        assert reply.split(b" ")[1] == b"400", reply[:100]
    finally:
        sock.close()
    await logs.wait_for(lambda lines: any("LineTooLong" in json.dumps(line) for line in lines))
    faults = [line for line in logs.lines if "LineTooLong" in json.dumps(line)]
    assert all(line["level"] == "warning" for line in faults), faults
    assert not [line for line in logs.lines if line["level"] in ("error", "critical")], logs.lines
    assert not [line for line in logs.lines if "exception" in line or "Traceback" in json.dumps(line)]


def test_a_server_fault_in_aiohttp_stays_an_error_with_its_stack(logs: LogCapture) -> None:
    import logging

    try:
        raise RuntimeError("a bug in a handler")
    except RuntimeError:
        logging.getLogger("aiohttp.server").exception("Error handling request from %s", "127.0.0.1")
    (line,) = [line for line in logs.lines if line.get("logger") == "aiohttp.server"]
    assert line["level"] == "error" and "RuntimeError" in json.dumps(line["exception"])

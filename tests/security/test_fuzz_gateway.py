"""Fuzz the gateway: every WebSocket client message type (schema-derived, then mutated) and the gRPC
Connect stream (messages built from the descriptors).

Invariants: every server message is schema-valid, every refusal is an ``error`` with an
UPPER_SNAKE reason (never fatal for these small frames), and the connection keeps serving: a
``ping`` after each message is answered.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, cast

import grpc.aio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninetynine.gateway.admission import Budgets
from ninetynine.gateway.convert import server_json
from ninetynine.gateway.limits import Limits
from ninetynine.gateway.protocol import server_validator
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.gateway.v1 import gateway_service_pb2_grpc as gw_grpc
from tests.gateway.conftest import GatewayFactory, WsClient, WsFactory
from tests.security.schema_strategies import (
    CLIENT_TYPES,
    build_message,
    client_message,
    from_descriptor,
    mutated,
)

REASON = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
# Fuzzing is many messages fast: the rate limit and the abuse meter would (rightly) close us.
LAX = Limits(rate_per_second=1e6, burst=1_000_000, abuse_refusals=1_000_000_000)
EXAMPLES = 60


def examples(strategy: st.SearchStrategy[Any], count: int = EXAMPLES) -> list[Any]:
    """Draw ``count`` examples with hypothesis (derandomized: a failure reproduces exactly).

    Hypothesis cannot drive an async test itself, so the examples are drawn first and then sent
    through the real connection; a failing one is in the assertion message.
    """
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(example: Any) -> None:
        drawn.append(example)

    draw()
    return drawn


async def _still_serving(client: WsClient, marker: int) -> list[dict[str, Any]]:
    """Ping with a fresh id; returns what arrived before the pong (schema-checked by ``recv``)."""
    start = len(client.seen)
    await client.send({"type": "ping", "id": marker})
    await client.until(lambda m: m["type"] == "pong" and m.get("id") == marker)
    return client.seen[start:-1]


def _check_errors(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        if message["type"] == "error":
            assert REASON.match(message["reason"]) and message["message"], message
            assert message["fatal"] is False, message


@pytest.mark.parametrize("kind", CLIENT_TYPES)
async def test_each_websocket_message_type_valid_and_mutated(
    kind: str, make_gateway: GatewayFactory, ws_client: WsFactory
) -> None:
    running = await make_gateway(LAX)
    counter = iter(range(10**9, 2 * 10**9))
    clients: list[WsClient] = []

    for message in examples(st.one_of(client_message(kind), mutated(client_message(kind)))):
        if not clients or len(clients[-1].seen) > 200:
            clients.append(await ws_client(running))  # a fresh connection now and then: unbound again
        client = clients[-1]
        await client.ws.send_str(json.dumps(message))
        _check_errors(await _still_serving(client, next(counter)))
    assert clients and all(not c.ws.closed for c in clients)


async def test_raw_garbage_frames(make_gateway: GatewayFactory, ws_client: WsFactory) -> None:
    running = await make_gateway(LAX)
    client = await ws_client(running)
    counter = iter(range(10**9, 2 * 10**9))

    for frame in examples(st.text(max_size=300) | st.binary(max_size=300)):
        if isinstance(frame, bytes):
            await client.ws.send_bytes(frame)
        else:
            await client.ws.send_str(frame)
        _check_errors(await _still_serving(client, next(counter)))


async def test_grpc_connect_with_descriptor_built_messages(make_gateway: GatewayFactory) -> None:
    # A new stream after every message that binds: more than the per-address connection rate allows,
    # which is not what this test is about (tests/security/test_http_edge.py holds the rate).
    running = await make_gateway(
        LAX, budgets=Budgets(connection_rate_per_address=1e6, connection_burst_per_address=10**6)
    )
    counter = iter(range(10**9, 2 * 10**9))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        streams: list[Any] = []

        async def read_until_pong(call: Any, marker: str) -> None:
            while True:
                response = await asyncio.wait_for(call.read(), 20)
                assert isinstance(response, gw.ConnectResponse), "the stream ended"
                message = response.message
                as_json = server_json(message, message.id or None)
                errors = list(server_validator().iter_errors(cast(Any, as_json)))
                assert not errors, f"{as_json!r}: {errors[0].message}"
                if message.WhichOneof("kind") == "error":
                    assert REASON.match(message.error.reason) and not message.error.fatal, as_json
                if message.WhichOneof("kind") == "pong" and message.id == marker:
                    return

        for fields in examples(from_descriptor(gw.ClientMessage.DESCRIPTOR), 150):
            if not streams:
                streams.append(gw_grpc.GatewayServiceStub(channel).Connect())  # type: ignore[call-arg]
            call = streams[-1]
            message = cast(gw.ClientMessage, build_message(gw.ClientMessage, fields))
            await call.write(gw.ConnectRequest(message=message))
            marker = f"ping-{next(counter)}"
            await call.write(gw.ConnectRequest(message=gw.ClientMessage(id=marker, ping=gw.Ping())))
            await read_until_pong(call, marker)
            if message.WhichOneof("kind") in ("create_room", "join_room", "spectate", "resume"):
                call.cancel()  # start unbound again
                streams.clear()
        for call in streams:
            call.cancel()

"""Real servers for the gateway tests: engine, session (SQLite in tmp) and gateway, all on port 0.

``ws_client`` opens WebSocket connections whose every received frame is checked against the
protocol's JSON Schema, so a test that reads a message also proves it is a valid server message.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.engine.server import EngineMetrics, create_engine_server
from ninetynine.gateway.limits import Limits
from ninetynine.gateway.protocol import server_validator
from ninetynine.gateway.server import RunningGateway, start_gateway
from ninetynine.session.server import close_room_service, create_session_server

READ_TIMEOUT_S = 20.0


@dataclass
class Backend:
    session_target: str


@pytest.fixture
async def backend(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    # Turns are compressed (0.02: 15 s last 0.3 s) unless a test marks its own scale, e.g.
    # @pytest.mark.turn_time_scale(1.0) for tests that must not see a timeout move meanwhile.
    marker = request.node.get_closest_marker("turn_time_scale")
    time_scale = float(marker.args[0]) if marker else 0.02
    engine, engine_port, _ = create_engine_server(
        "127.0.0.1:0", metrics=EngineMetrics.create(CollectorRegistry())
    )
    await engine.start()
    session, session_port, _, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=f"sqlite:///{tmp_path}/rooms.db",
        bot_think_ms=10,
        time_scale=time_scale,
        registry=CollectorRegistry(),
    )
    await session.start()
    rooms.start()
    try:
        yield Backend(f"127.0.0.1:{session_port}")
    finally:
        await session.stop(None)
        await close_room_service(rooms)
        await engine.stop(None)


GatewayFactory = Callable[..., Awaitable[RunningGateway]]


@pytest.fixture
async def make_gateway(backend: Backend) -> AsyncIterator[GatewayFactory]:
    started: list[RunningGateway] = []

    async def start(limits: Limits | None = None, **options: Any) -> RunningGateway:
        running = await start_gateway(
            session_target=backend.session_target, limits=limits, registry=CollectorRegistry(), **options
        )
        started.append(running)
        return running

    yield start
    for running in started:
        await running.stop(grace=0.5)


@pytest.fixture
async def gateway(make_gateway: GatewayFactory) -> RunningGateway:
    return await make_gateway()


class SchemaError(AssertionError):
    pass


@dataclass
class WsClient:
    """One WebSocket client; ``seen`` keeps every message received, in order.

    ``passed`` holds what :meth:`request` read on its way to the reply: the room stream may bring
    a message (a view, an event) before the reply of the request that caused it, and the next
    :meth:`until` must still find it there instead of waiting for another one.
    """

    ws: aiohttp.ClientWebSocketResponse
    seen: list[dict[str, Any]] = field(default_factory=list)
    passed: deque[dict[str, Any]] = field(default_factory=deque)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_str(json.dumps(message, ensure_ascii=False))

    async def recv(self) -> dict[str, Any]:
        frame = await self.ws.receive(timeout=READ_TIMEOUT_S)
        if frame.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"expected a text frame, got {frame.type!r} {frame.data!r}")
        message: dict[str, Any] = json.loads(frame.data)
        errors = sorted(server_validator().iter_errors(message), key=lambda e: list(e.absolute_path))
        if errors:
            raise SchemaError(f"invalid server message {message!r}: {errors[0].message}")
        self.seen.append(message)
        return message

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first message matching ``predicate``: among those :meth:`request` passed over, else
        read on; every message checked on the way is consumed."""
        while self.passed:
            message = self.passed.popleft()
            if predicate(message):
                return message
        while True:
            message = await self.recv()
            if predicate(message):
                return message

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a message with an ``id`` and return the direct reply carrying that id."""
        await self.send(message)
        while True:
            reply = await self.recv()
            if reply.get("id") == message["id"]:
                return reply
            self.passed.append(reply)

    async def close_code(self) -> int | None:
        """Read to the end of the connection; the close code the server sent."""
        while True:
            frame = await self.ws.receive(timeout=READ_TIMEOUT_S)
            if frame.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                return self.ws.close_code
            if frame.type == aiohttp.WSMsgType.TEXT:
                message = json.loads(frame.data)
                assert not list(server_validator().iter_errors(message)), message
                self.seen.append(message)


WsFactory = Callable[[RunningGateway], Awaitable[WsClient]]


@pytest.fixture
async def ws_client() -> AsyncIterator[WsFactory]:
    http = aiohttp.ClientSession()

    async def connect(running: RunningGateway) -> WsClient:
        ws = await http.ws_connect(
            f"http://127.0.0.1:{running.http_port}/ws", autoclose=False, max_msg_size=0
        )
        return WsClient(ws)

    yield connect
    await http.close()

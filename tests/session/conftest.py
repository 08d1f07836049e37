"""Real servers for session tests: an engine and a session on port 0, SQLite or Redis storage."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc.aio
import pytest
import redis
from prometheus_client import CollectorRegistry

from ninetynine.common.grpcclient import create_channel
from ninetynine.engine.server import create_engine_server
from ninetynine.session.server import close_room_service, create_session_server
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc

REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class Stack:
    engine_port: int
    session_port: int
    rooms: RoomService
    stub: pb_grpc.SessionServiceAsyncStub
    channel: grpc.aio.Channel
    registry: CollectorRegistry
    closed: bool = False

    async def close(self) -> None:
        """Stop this session like a shutdown would (tests then restart one on the same store)."""
        if self.closed:
            return
        self.closed = True
        await self.channel.close(None)
        await self._server.stop(None)  # type: ignore[attr-defined]
        await close_room_service(self.rooms)


@pytest.fixture
async def engine_port() -> AsyncIterator[int]:
    server, port, _ = create_engine_server("127.0.0.1:0")
    await server.start()
    yield port
    await server.stop(None)


def _cleanup_redis(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A fresh store URL per test (the same URL for every replica a test starts)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/rooms.db"
    else:
        prefix = f"nn-test-{secrets.token_hex(4)}:"
        url = f"{REDIS_URL}?prefix={prefix}"
        request.addfinalizer(lambda: _cleanup_redis(prefix))
    return lambda: url


@pytest.fixture
async def make_stack(engine_port: int, store_url: Callable[[], str]) -> AsyncIterator[Callable[..., object]]:
    started: list[Stack] = []

    async def start(
        *,
        bot_think_ms: int = 20,
        time_scale: float = 0.02,
        engine_target: str | None = None,
        **server_options: Any,
    ) -> Stack:
        """A session on the fixture's engine (``engine_target="local"``: the in-process one)."""
        registry = CollectorRegistry()
        server, port, _, rooms = create_session_server(
            "127.0.0.1:0",
            engine_target=engine_target or f"127.0.0.1:{engine_port}",
            store_url=store_url(),
            bot_think_ms=bot_think_ms,
            time_scale=time_scale,
            stream_heartbeat_s=0.5,
            registry=registry,
            **server_options,
        )
        await server.start()
        rooms.start()
        channel = create_channel(f"127.0.0.1:{port}")
        stack = Stack(engine_port, port, rooms, pb_grpc.SessionServiceStub(channel), channel, registry)
        stack._server = server  # type: ignore[attr-defined]
        started.append(stack)
        return stack

    yield start
    for stack in started:
        await stack.close()

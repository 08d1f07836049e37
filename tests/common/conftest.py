"""Fixtures: captured JSON log lines and real probe servers on port 0."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

import grpc.aio
import pytest

from ninetynine.common.grpcserver import HealthServicer, create_server
from ninetynine.common.interceptors import CanonicalLogInterceptor
from ninetynine.common.logging import configure_logging
from tests.common import probe


class LogCapture:
    """A text stream for configure_logging that keeps every JSON line and wakes waiters."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._buffer = ""
        self._changed: asyncio.Event | None = None

    def write(self, text: str) -> int:
        self._buffer += text
        *complete, self._buffer = self._buffer.split("\n")
        self.lines.extend(json.loads(line) for line in complete if line)
        if self._changed is not None:
            self._changed.set()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def rpc_lines(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines
            if line.get("event") == "rpc" and (method is None or line.get("method") == method)
        ]

    async def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool]) -> None:
        """Wait (at most 10 s) until ``predicate(lines)`` holds.

        The canonical line of an aborted call is written right after the status is sent, so
        the client may see the error a moment before the line exists.
        """
        self._changed = self._changed or asyncio.Event()
        async with asyncio.timeout(10):
            while not predicate(self.lines):
                self._changed.clear()
                await self._changed.wait()

    async def rpc_line(self, method: str, index: int = 0) -> dict[str, Any]:
        await self.wait_for(lambda _: len(self.rpc_lines(method)) > index)
        return self.rpc_lines(method)[index]


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    capture = LogCapture()
    configure_logging("probe", level="debug", json_logs=True, stream=capture)  # type: ignore[arg-type]
    yield capture
    configure_logging("probe", json_logs=True)


StartProbe = Callable[..., Any]


@pytest.fixture
async def start_probe() -> AsyncIterator[StartProbe]:
    """``await start_probe(interceptors=[...], reflection=False)`` → (port, health) of a started probe."""
    async with AsyncExitStack() as stack:

        async def start(
            interceptors: Sequence[Any] | None = None,
            service_names: Sequence[str] = (probe.SERVICE,),
            reflection: bool = False,
        ) -> tuple[int, HealthServicer]:
            chosen = [CanonicalLogInterceptor("probe")] if interceptors is None else list(interceptors)
            server, port, health = create_server(
                "127.0.0.1:0", service_names=service_names, interceptors=chosen, reflection=reflection
            )
            server.add_generic_rpc_handlers([probe.handler()])
            await server.start()
            stack.push_async_callback(server.stop, None)
            return port, health

        yield start


@pytest.fixture
async def channel_to() -> AsyncIterator[Callable[[int], grpc.aio.Channel]]:
    """Plain (interceptor-free) client channels to 127.0.0.1:<port>, closed after the test."""
    channels: list[grpc.aio.Channel] = []

    def open_channel(port: int) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        channels.append(channel)
        return channel

    yield open_channel
    for channel in channels:
        await channel.close(None)

"""Several queued messages go out in one socket write as separate WebSocket text frames: every
frame length class (7-bit, 16-bit, 64-bit), in order, equal to what one-by-one sending gives, and
still right when the client negotiated permessage-deflate (then aiohttp builds each frame)."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest
import uvloop
from aiohttp import web

from ninetynine.gateway.convert import JsonId, server_bytes
from ninetynine.gateway.outbox import Outgoing
from ninetynine.gateway.server import WebSocketTransport, _socket_of
from ninetynine.gateway.v1 import gateway_service_pb2 as gw


def _messages() -> list[tuple[gw.ServerMessage, JsonId | None]]:
    def error(size: int) -> gw.ServerMessage:
        return gw.ServerMessage(error=gw.Error(reason="X", message="구" * size))

    # Payload sizes straddle 125/126 and 65535/65536 bytes of frame payload.
    return [
        (gw.ServerMessage(pong=gw.Pong()), "a"),
        (error(10), None),
        (error(40), "b"),
        (error(2_000), None),
        (error(30_000), None),
        (gw.ServerMessage(pong=gw.Pong()), None),
    ]


async def _scenario(compress: int) -> None:
    items = _messages()
    sizes = [len(server_bytes(msg, reply_id)) for msg, reply_id in items]
    assert min(sizes) < 126 and any(126 <= s < 65536 for s in sizes) and max(sizes) >= 65536

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        socket = _socket_of(request)
        assert socket is not None, f"no batched writes on {type(request.transport).__name__}"
        transport = WebSocketTransport(ws, None, socket)
        outs = [Outgoing(msg, reply_id) for msg, reply_id in items]
        await transport.send_many(outs)
        await transport.send_many(outs[:2])
        await ws.receive()  # the client closes
        return ws

    app = web.Application()
    app.router.add_get("/ws", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(f"http://127.0.0.1:{port}/ws", compress=compress) as ws,
        ):
            received = [await asyncio.wait_for(ws.receive_str(), 10) for _ in range(len(items) + 2)]
    finally:
        await runner.cleanup()
    expected = [server_bytes(msg, reply_id).decode() for msg, reply_id in items + items[:2]]
    assert received == expected
    assert orjson.loads(received[0]) == {"type": "pong", "id": "a"}


@pytest.mark.parametrize("compress", [0, 15])
async def test_a_batch_arrives_as_the_frames_of_its_messages(compress: int) -> None:
    await _scenario(compress)


def test_batched_writes_work_on_uvloop_transports_too() -> None:
    # The services run on uvloop, whose transports are not asyncio.Transport subclasses.
    uvloop.run(_scenario(0))

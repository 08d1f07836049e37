"""bench.load's WebSocket client against real servers: aiohttp's WebSocket server for the ordinary
traffic (lengths of every header size, ping, close, a refused upgrade), and a raw TCP server that
writes hand-made frames in small pieces for the parser's edge cases (split frames, fragments
with a ping between them, a masked server frame)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import WSMsgType, web

from bench.load import wsclient

TIMEOUT_S = 10.0


class Received:
    """What the client got: text messages in order, and whether (and how often) it saw the end."""

    def __init__(self) -> None:
        self.texts: list[bytes] = []
        self.closed = 0
        self.arrived = asyncio.Event()
        self.gone = asyncio.Event()

    def on_text(self, data: bytes) -> None:
        self.texts.append(data)
        self.arrived.set()

    def on_closed(self, _ws: wsclient.WsProtocol) -> None:
        self.closed += 1
        self.gone.set()

    async def next_text(self) -> bytes:
        while not self.texts:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), TIMEOUT_S)
        return self.texts.pop(0)


ServerFactory = Callable[[Callable[[web.WebSocketResponse], Awaitable[None]]], Awaitable[str]]


@pytest.fixture
async def ws_server() -> AsyncIterator[ServerFactory]:
    """Start an aiohttp app whose /ws runs the given handler; returns the ws:// URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Callable[[web.WebSocketResponse], Awaitable[None]]) -> str:
        async def endpoint(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse(autoping=False, max_msg_size=0)
            await ws.prepare(request)
            await handler(ws)
            return ws

        app = web.Application()
        app.router.add_get("/ws", endpoint)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"ws://127.0.0.1:{port}/ws"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_text_of_every_length_class_round_trips(ws_server: ServerFactory) -> None:
    async def echo(ws: web.WebSocketResponse) -> None:
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                await ws.send_str(msg.data)

    url = await ws_server(echo)
    got = Received()
    ws = await wsclient.connect(url, got.on_text, got.on_closed)
    # 7-bit, 16-bit and 64-bit payload lengths, both ways (the client's frames are masked).
    for size in (0, 1, 125, 126, 127, 65535, 65536, 300_000):
        text = ("é" * (size // 2) + "x" * (size % 2)).encode()
        assert ws.send_text(text)
        assert await got.next_text() == text
    ws.close()
    await asyncio.wait_for(got.gone.wait(), TIMEOUT_S)
    assert got.closed == 1
    assert not ws.send_text(b"late")


async def test_a_server_ping_is_answered_and_a_server_close_ends_the_connection(
    ws_server: ServerFactory,
) -> None:
    pongs: list[bytes] = []

    async def pinger(ws: web.WebSocketResponse) -> None:
        await ws.ping(b"are you there")
        msg = await ws.receive(TIMEOUT_S)
        if msg.type == WSMsgType.PONG:
            pongs.append(msg.data)
        await ws.send_str('{"type":"goodbye"}')
        await ws.close(code=4001)

    url = await ws_server(pinger)
    got = Received()
    ws = await wsclient.connect(url, got.on_text, got.on_closed)
    await asyncio.wait_for(got.gone.wait(), TIMEOUT_S)
    assert pongs == [b"are you there"]
    assert got.texts == [b'{"type":"goodbye"}']
    assert ws.close_code == 4001
    assert got.closed == 1


async def test_a_refused_upgrade_raises(ws_server: ServerFactory) -> None:
    async def unused(ws: web.WebSocketResponse) -> None:
        return

    url = await ws_server(unused)
    got = Received()
    with pytest.raises(wsclient.HandshakeError, match="404"):
        await wsclient.connect(url.replace("/ws", "/nowhere"), got.on_text, got.on_closed)


# -- a raw server: exact bytes, written in pieces ------------------------------------------------


def server_frame(opcode: int, payload: bytes, *, fin: bool = True, masked: bool = False) -> bytes:
    first = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", first, n | (0x80 if masked else 0))
    elif n < 1 << 16:
        header = struct.pack("!BBH", first, 126 | (0x80 if masked else 0), n)
    else:
        header = struct.pack("!BBQ", first, 127 | (0x80 if masked else 0), n)
    if masked:
        key = b"\x01\x02\x03\x04"
        return header + key + wsclient.mask(key, payload)
    return header + payload


def read_client_frame(data: bytes) -> tuple[int, bytes, bytes]:
    """(opcode, unmasked payload, rest) of the first client frame in ``data``."""
    opcode, n = data[0] & 0x0F, data[1] & 0x7F
    assert data[1] & 0x80, "client frames are masked"
    pos = 2
    if n == 126:
        (n,) = struct.unpack_from("!H", data, 2)
        pos = 4
    elif n == 127:
        (n,) = struct.unpack_from("!Q", data, 2)
        pos = 10
    key = data[pos : pos + 4]
    payload = wsclient.mask(key, data[pos + 4 : pos + 4 + n])
    return opcode, payload, data[pos + 4 + n :]


RawServer = Callable[[bytes, int], Awaitable[tuple[str, asyncio.Future[bytes]]]]


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    """A TCP server that upgrades, then writes ``stream`` ``piece`` bytes at a time (each piece
    its own write, with a pause; past the first KiB all at once) and keeps what the client sent
    until it closed."""
    servers: list[asyncio.Server] = []

    async def start(stream: bytes, piece: int) -> tuple[str, asyncio.Future[bytes]]:
        received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            key = next(
                line.split(b":", 1)[1].strip()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key:")
            )
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            writer.write(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
            )
            # Piece by piece over the first KiB (every header and small frame), then the rest.
            for at in range(0, min(len(stream), 1024), piece):
                writer.write(stream[at : min(at + piece, 1024)])
                await writer.drain()
                await asyncio.sleep(0.001)
            writer.write(stream[1024:])
            received.set_result(await reader.read())
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/ws", received

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("piece", [1, 3, 200, 1 << 20])
async def test_frames_split_anywhere_and_fragments_with_a_ping_between(
    raw_server: RawServer, piece: int
) -> None:
    big = b'{"type":"view","seq":3,"view":{"pad":"' + b"y" * 70_000 + b'"}}'
    stream = b"".join(
        [
            server_frame(wsclient.OP_TEXT, b'{"type":"event","seq":1}'),
            server_frame(wsclient.OP_TEXT, b"x" * 200),  # 16-bit length
            server_frame(wsclient.OP_TEXT, b'{"a":', fin=False),
            server_frame(wsclient.OP_PING, b"p1"),  # control frames may come between fragments
            server_frame(wsclient.OP_CONT, b"1", fin=False),
            server_frame(wsclient.OP_CONT, b"}"),
            server_frame(wsclient.OP_TEXT, big),  # 64-bit length
            server_frame(wsclient.OP_CLOSE, struct.pack("!H", 1000)),
        ]
    )
    url, received = await raw_server(stream, piece)
    got = Received()
    ws = await wsclient.connect(url, got.on_text, got.on_closed)
    sent = await asyncio.wait_for(received, TIMEOUT_S)
    await asyncio.wait_for(got.gone.wait(), TIMEOUT_S)
    assert got.texts == [b'{"type":"event","seq":1}', b"x" * 200, b'{"a":1}', big]
    assert ws.close_code == 1000
    # The client answered the ping, then the close (echoing its code), and nothing else.
    opcode, payload, rest = read_client_frame(sent)
    assert (opcode, payload) == (wsclient.OP_PONG, b"p1")
    opcode, payload, rest = read_client_frame(rest)
    assert (opcode, payload, rest) == (wsclient.OP_CLOSE, struct.pack("!H", 1000), b"")


async def test_a_masked_server_frame_ends_the_connection(raw_server: RawServer) -> None:
    stream = server_frame(wsclient.OP_TEXT, b"ok") + server_frame(wsclient.OP_TEXT, b"bad", masked=True)
    url, received = await raw_server(stream, 1 << 20)
    got = Received()
    await wsclient.connect(url, got.on_text, got.on_closed)
    sent = await asyncio.wait_for(received, TIMEOUT_S)
    await asyncio.wait_for(got.gone.wait(), TIMEOUT_S)
    assert got.texts == [b"ok"]
    opcode, payload, _ = read_client_frame(sent)
    assert (opcode, payload) == (wsclient.OP_CLOSE, struct.pack("!H", wsclient.CLOSE_PROTOCOL_ERROR))


def test_mask_is_its_own_inverse_and_matches_the_bytewise_definition() -> None:
    key = b"\x9a\x00\xff\x11"
    for payload in (b"", b"a", b"abcd", b"abcde", bytes(range(256)) * 3):
        masked = wsclient.mask(key, payload)
        assert masked == bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        assert wsclient.mask(key, masked) == payload

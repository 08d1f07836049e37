"""A minimal WebSocket client (RFC 6455) on an asyncio ``Protocol``, for the load generator.

Why not aiohttp's client: there every received frame becomes a message object on a per-connection
queue whose future wakes that connection's reader task, which then decodes the text -- a task
wake-up and several allocations per frame, for ~20 frames per move per room. Driving 10,000
clients from the box under test needs less: :class:`WsProtocol` hands each complete text frame's
payload (``bytes``, undecoded) to a callback straight from ``data_received``, so a frame costs
one slice and one call.

It speaks what the gateway speaks and nothing more: the HTTP/1.1 upgrade (the accept key is
checked), unmasked server frames, text frames (fragmented ones are joined), ping (answered with
pong), pong (ignored), close (answered, then the socket is closed); a binary or masked server
frame ends the connection. It sends masked frames with a fresh key each. No extensions
(permessage-deflate is not offered) and no subprotocols.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import random
from collections.abc import Callable
from typing import cast
from urllib.parse import urlsplit

__all__ = ["HandshakeError", "WsProtocol", "client_frame", "connect", "mask"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_FIN_TEXT = 0x80 | OP_TEXT
MAX_HEAD_BYTES = 16 * 1024
CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_UNSUPPORTED = 1003


def _mask_key() -> bytes:
    # The key only has to vary per frame (RFC 6455 §5.3: against proxy cache poisoning); a PRNG
    # is enough on loopback and, unlike os.urandom, is not a system call per frame.
    return random.getrandbits(32).to_bytes(4, "little")


class HandshakeError(ConnectionError):
    """The server did not upgrade the connection (status line or accept key wrong)."""


def mask(key: bytes, payload: bytes) -> bytes:
    """``payload`` XOR the repeated 4-byte ``key`` (one big-int XOR instead of a per-byte loop)."""
    n = len(payload)
    if not n:
        return payload
    stream = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(stream, "little")).to_bytes(n, "little")


def client_frame(opcode: int, payload: bytes, key: bytes) -> bytes:
    """One final client frame: header, mask key, masked payload."""
    n = len(payload)
    if n < 126:
        header = bytes((0x80 | opcode, 0x80 | n))
    elif n < 1 << 16:
        header = bytes((0x80 | opcode, 0x80 | 126)) + n.to_bytes(2, "big")
    else:
        header = bytes((0x80 | opcode, 0x80 | 127)) + n.to_bytes(8, "big")
    return header + key + mask(key, payload)


class WsProtocol(asyncio.Protocol):
    """One client connection. ``on_text(payload)`` gets every text message, ``on_closed(self)`` runs
    once when the socket is gone (after a close either way, a reset or a protocol error)."""

    def __init__(
        self,
        host: str,
        path: str,
        on_text: Callable[[bytes], None],
        on_closed: Callable[[WsProtocol], None],
    ) -> None:
        self.host = host
        self.path = path
        self.on_text = on_text
        self.on_closed = on_closed
        self.transport: asyncio.Transport | None = None
        self.open = False  # upgraded and not closed: frames may be sent
        self.close_code: int | None = None  # the server's close code, when it sent one
        self.handshake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._key = base64.b64encode(os.urandom(16))
        self._head = b""
        self._partial = b""  # the start of a frame not yet complete
        self._fragments: list[bytes] | None = None
        self._gone = False

    # -- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCP transport is not an asyncio.Transport subclass, but it is one in behaviour.
        self.transport = transport = cast(asyncio.Transport, transport)
        transport.write(
            b"GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
            % (self.path.encode(), self.host.encode(), self._key)
        )

    def data_received(self, data: bytes) -> None:
        if not self.open:
            if self.handshake.done():
                return  # closing: nothing more is read
            data = self._upgrade(data)
            if not data:
                return
        self._frames(data)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if not self.handshake.done():
            self.handshake.set_exception(exc or ConnectionResetError("closed during the upgrade"))
        if not self._gone:
            self._gone = True
            self.on_closed(self)

    # -- sending ---------------------------------------------------------------------------------

    def send_text(self, payload: bytes) -> bool:
        """Send one text message (UTF-8 ``payload``); False when the connection is not open."""
        transport = self.transport
        if not self.open or transport is None or transport.is_closing():
            return False
        transport.write(client_frame(OP_TEXT, payload, _mask_key()))
        return True

    def close(self, code: int = CLOSE_NORMAL) -> None:
        """Send a close frame (when open) and close the socket without waiting for the answer."""
        transport = self.transport
        if transport is None:
            return
        if self.open and not transport.is_closing():
            transport.write(client_frame(OP_CLOSE, code.to_bytes(2, "big"), _mask_key()))
        self.open = False
        transport.close()

    # -- receiving -------------------------------------------------------------------------------

    def _upgrade(self, data: bytes) -> bytes:
        """Read the 101 response; what follows it (frames already sent) is returned."""
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > MAX_HEAD_BYTES:
                self._fail_handshake("response head too long")
            self._head = head
            return b""
        self._head = b""
        lines = head[:end].split(b"\r\n")
        status = lines[0].split(b" ", 2)
        if len(status) < 2 or status[1] != b"101":
            self._fail_handshake(f"no upgrade: {lines[0].decode('latin-1')}")
            return b""
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        expected = base64.b64encode(hashlib.sha1(self._key + _GUID).digest())
        if headers.get(b"sec-websocket-accept") != expected:
            self._fail_handshake("wrong Sec-WebSocket-Accept")
            return b""
        self.open = True
        self.handshake.set_result(None)
        return head[end + 4 :]

    def _fail_handshake(self, why: str) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(HandshakeError(why))
        if self.transport is not None:
            self.transport.close()

    def _frames(self, data: bytes) -> None:
        size = len(data)
        if self._partial:
            data = self._partial + data
            self._partial = b""
            size = len(data)
        elif size >= 2 and data[0] == _FIN_TEXT:
            # Most reads hold exactly one whole text frame (~1.2 frames per read at 1000 clients).
            n = data[1]
            if n < 126 and size == n + 2:
                self.on_text(data[2:])
                return
            if n == 126 and size >= 4 and size == ((data[2] << 8) | data[3]) + 4:
                self.on_text(data[4:])
                return
        pos = 0
        while size - pos >= 2:
            b0, n = data[pos], data[pos + 1]
            if n & 0x80:
                self.close(CLOSE_PROTOCOL_ERROR)  # a server never masks
                return
            start = pos + 2
            if n == 126:
                if size - pos < 4:
                    break
                n, start = (data[pos + 2] << 8) | data[pos + 3], pos + 4
            elif n == 127:
                if size - pos < 10:
                    break
                n, start = int.from_bytes(data[pos + 2 : pos + 10], "big"), pos + 10
            end = start + n
            if end > size:
                break
            pos = end
            if b0 == _FIN_TEXT:  # the common case: a whole text message in one frame
                self.on_text(data[start:end])
            else:
                self._other(b0, data[start:end])
            if not self.open:
                return
        if pos < size:
            self._partial = data[pos:]

    def _other(self, b0: int, payload: bytes) -> None:
        opcode, fin = b0 & 0x0F, b0 & 0x80
        if opcode == OP_PING:
            if self.transport is not None and not self.transport.is_closing():
                self.transport.write(client_frame(OP_PONG, payload, _mask_key()))
        elif opcode == OP_PONG:
            pass
        elif opcode == OP_CLOSE:
            self.close_code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
            self.close(self.close_code if self.close_code is not None else CLOSE_NORMAL)
        elif opcode == OP_TEXT and self._fragments is None:
            self._fragments = [payload]
        elif opcode == OP_CONT and self._fragments is not None:
            self._fragments.append(payload)
            if fin:
                text, self._fragments = b"".join(self._fragments), None
                self.on_text(text)
        else:
            self.close(CLOSE_UNSUPPORTED)  # binary frames (the gateway never sends them) or bad framing


async def connect(
    url: str,
    on_text: Callable[[bytes], None],
    on_closed: Callable[[WsProtocol], None],
    timeout_s: float = 30.0,
) -> WsProtocol:
    """Open ``ws://host:port/path`` and upgrade it; raises on refusal, failure or timeout."""
    parts = urlsplit(url)
    if parts.scheme != "ws" or parts.hostname is None:
        raise ValueError(f"only ws://host:port/path URLs are supported: {url!r}")
    port = parts.port or 80
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    loop = asyncio.get_running_loop()
    protocol = WsProtocol(parts.netloc, path, on_text, on_closed)
    transport, _ = await loop.create_connection(lambda: protocol, parts.hostname, port)
    try:
        await asyncio.wait_for(protocol.handshake, timeout_s)
    except BaseException:
        transport.abort()
        raise
    return protocol

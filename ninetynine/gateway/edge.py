"""The gateway's HTTP edge: security headers, the WebSocket Origin check, the per-peer socket cap.

* Every HTTP response carries a Content-Security-Policy that lets the web table load only its own
  files and connect only to its own origin (so a seat token cannot be sent anywhere else even if
  a script tried), ``X-Content-Type-Options``, ``X-Frame-Options``/``frame-ancestors`` and
  ``Referrer-Policy``; the ``Server`` header names no version.
* A WebSocket upgrade with an ``Origin`` is accepted only from the request's own host or from
  ``--allowed-origins``; one without (native clients, the load generator) is accepted.
* :class:`SocketGuard` aborts a TCP connection at once when its peer already holds more sockets
  than the per-address cap allows (plus a little room for the page's own HTTP requests); requests
  whose headers never end are closed by the header timeout (aiohttp's keep-alive timer, which
  also runs from the moment a connection is accepted). Trusted proxies are exempt here: their
  clients are counted by address at the WebSocket (:mod:`ninetynine.gateway.admission`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from ninetynine.common.logging import get_logger
from ninetynine.gateway.admission import Network, address_key, is_trusted

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "SOCKET_SLACK",
    "SocketGuard",
    "add_security_headers",
    "origin_allowed",
    "parse_origins",
]

log = get_logger(__name__)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Server": "ninety-nine",
}
# Sockets a peer may hold above its WebSocket cap: the page, its scripts and styles, /healthz.
SOCKET_SLACK = 16


async def add_security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: runs before aiohttp adds its own ``Server`` (it keeps ours)."""
    response.headers.update(SECURITY_HEADERS)


def parse_origins(text: str) -> tuple[str, ...]:
    """``"https://a.example, https://b.example:8443"`` as normalised origins; ValueError on a bad one."""
    origins = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts = urlsplit(item)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError(f"not an origin (scheme://host[:port]): {item!r}")
        origins.append(f"{parts.scheme}://{parts.netloc.lower()}")
    return tuple(origins)


def origin_allowed(request: web.Request, allowed: tuple[str, ...]) -> bool:
    """No Origin (not a browser), the request's own host, or one of ``allowed``."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    origin = origin.strip().lower()
    if origin in allowed:
        return True
    parts = urlsplit(origin)
    host = request.headers.get("Host", "").lower()
    # The scheme is not compared: behind a TLS-terminating proxy the request itself is plain http.
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc == host


@dataclass
class SocketGuard:
    """Counts open sockets per peer address; aborts a new one beyond ``limit``."""

    limit: int
    trusted_proxies: tuple[Network, ...] = ()
    on_refused: Callable[[], None] = lambda: None

    def __post_init__(self) -> None:
        self._open: dict[str, int] = {}
        self._peers: dict[object, str] = {}
        self._warned: set[str] = set()

    def open_sockets(self, peer: str) -> int:
        return self._open.get(peer, 0)

    def install(self, server: web.Server) -> None:
        """Hook ``server``'s per-connection callbacks (aiohttp calls them for every socket)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.Transport) -> None:
            made(handler, transport)
            self._made(handler, transport)

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            lost(handler, exc)
            self._lost(handler)

        # Instance attributes: aiohttp offers no public accept hook, and these two it always calls.
        setattr(server, "connection_made", connection_made)  # noqa: B010
        setattr(server, "connection_lost", connection_lost)  # noqa: B010

    def _made(self, handler: object, transport: asyncio.Transport) -> None:
        peername = transport.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else ""
        if not peer or is_trusted(peer, self.trusted_proxies):
            return
        peer = address_key(peer)  # IPv6 per /64, as the budgets count
        count = self._open.get(peer, 0)
        if count >= self.limit:
            self.on_refused()
            if peer not in self._warned:  # one line per address and flood, not one per socket
                self._warned.add(peer)
                log.warning("too many sockets from one address; refusing more", peer=peer, limit=self.limit)
            transport.abort()
            return
        self._open[peer] = count + 1
        self._peers[handler] = peer

    def _lost(self, handler: object) -> None:
        peer = self._peers.pop(handler, None)
        if peer is None:
            return
        left = self._open.get(peer, 0) - 1
        if left > 0:
            self._open[peer] = left
        else:
            self._open.pop(peer, None)
            self._warned.discard(peer)

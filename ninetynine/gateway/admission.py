"""Per-client budgets across connections: who may connect, create rooms and try tokens, how often.

The per-connection limits (:mod:`ninetynine.gateway.limits`) bound what one socket does; these bound
what one *client address* does over all its sockets, and what everyone together does against one
room's tokens, so opening more sockets buys nothing:

* concurrent connections per address (WebSocket and gRPC ``Connect`` alike) and new connections
  per second per address → ``TOO_MANY_CONNECTIONS`` (fatal; ``metadata.limit`` says which);
* room creation per address → ``TOO_MANY_ROOMS``;
* failed authentications (a ``resume`` whose token the session refuses) per address, and per
  targeted room whatever the address → ``TOO_MANY_AUTH_FAILURES``.

Every budget is a token bucket keyed by address or room in an LRU of bounded size, so a client
cycling through addresses cannot grow the gateway's memory. IPv6 addresses count by their /64
(one host usually owns a whole /64). The clock is a parameter, as in :mod:`ninetynine.gateway.limits`.

The client address is the TCP peer; ``X-Forwarded-For`` is believed only from ``trusted_proxies``
(the ingress), and then its right-most address not itself a trusted proxy is the client.
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ninetynine.gateway.limits import TokenBucket

__all__ = [
    "Admission",
    "Budgets",
    "KeyedBuckets",
    "Network",
    "Refusal",
    "address_key",
    "client_address",
    "is_trusted",
    "parse_networks",
    "peer_of_grpc",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Budgets:
    """The per-address and per-room budgets (flags of ``ninety-nine gateway``)."""

    # Concurrent client connections (WebSocket + gRPC Connect) from one address.
    max_connections_per_address: int = 100
    # New client connections per second from one address, and the burst allowed on top.
    connection_rate_per_address: float = 10.0
    connection_burst_per_address: int = 50
    # Rooms created per minute from one address (the burst is the same number).
    rooms_per_minute_per_address: int = 30
    # Failed authentications per minute from one address, and against one room (burst = rate).
    auth_failures_per_minute_per_address: int = 10
    auth_failures_per_minute_per_room: int = 30
    # Keys (addresses, rooms) remembered per budget; the least recently used is forgotten first.
    max_keys: int = 100_000


@dataclass(frozen=True)
class Refusal:
    """A budget said no: the protocol's error reason and its metadata."""

    reason: str
    retry_after_ms: int
    limit: str

    @property
    def metadata(self) -> dict[str, str]:
        return {"retryAfterMs": str(self.retry_after_ms), "limit": self.limit}


class KeyedBuckets:
    """One :class:`TokenBucket` per key, at most ``max_keys`` of them (least recently used dropped).

    A dropped bucket comes back full, which is what an idle key's bucket would be anyway: only a
    key unseen for longer than ``max_keys`` other keys were seen loses its debt.
    """

    def __init__(self, rate: float, burst: int, max_keys: int) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be >= 1")
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def _bucket(self, key: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(self.rate, self.burst, now)
            self._buckets[key] = bucket
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def take(self, key: str, now: float) -> int:
        """Take one token for ``key``: 0 when granted, else the milliseconds until one is due."""
        bucket = self._bucket(key, now)
        return 0 if bucket.take(now) else bucket.retry_after_ms(now)

    def wait_ms(self, key: str, now: float) -> int:
        """0 when ``key`` has a token left (none is taken), else the milliseconds until it has."""
        bucket = self._buckets.get(key)
        return 0 if bucket is None else bucket.wait_ms(now)


class Admission:
    """The gateway's budgets, shared by all its connections."""

    def __init__(self, budgets: Budgets | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        b = self.budgets = budgets or Budgets()
        self.clock = clock
        self._open: dict[str, int] = {}
        self._connects = KeyedBuckets(
            b.connection_rate_per_address, b.connection_burst_per_address, b.max_keys
        )
        self._rooms = KeyedBuckets(
            b.rooms_per_minute_per_address / 60, b.rooms_per_minute_per_address, b.max_keys
        )
        per_address = b.auth_failures_per_minute_per_address
        per_room = b.auth_failures_per_minute_per_room
        self._auth_by_address = KeyedBuckets(per_address / 60, per_address, b.max_keys)
        self._auth_by_room = KeyedBuckets(per_room / 60, per_room, b.max_keys)

    def open_connections(self, address: str) -> int:
        return self._open.get(address_key(address), 0)

    def connect(self, address: str) -> Refusal | None:
        """A new client connection from ``address``; when granted, :meth:`disconnect` must follow."""
        key = address_key(address)
        b = self.budgets
        if self._open.get(key, 0) >= b.max_connections_per_address:
            return Refusal("TOO_MANY_CONNECTIONS", 1000, str(b.max_connections_per_address))
        wait = self._connects.take(key, self.clock())
        if wait:
            return Refusal("TOO_MANY_CONNECTIONS", wait, f"{b.connection_rate_per_address:g}/s")
        self._open[key] = self._open.get(key, 0) + 1
        return None

    def disconnect(self, address: str) -> None:
        key = address_key(address)
        left = self._open.get(key, 0) - 1
        if left > 0:
            self._open[key] = left
        else:
            self._open.pop(key, None)

    def create_room(self, address: str) -> Refusal | None:
        wait = self._rooms.take(address_key(address), self.clock())
        if wait:
            return Refusal("TOO_MANY_ROOMS", wait, f"{self.budgets.rooms_per_minute_per_address}/min")
        return None

    def may_authenticate(self, address: str, room_id: str | None) -> Refusal | None:
        """Whether a token may be tried now (the budgets of failures are not spent)."""
        now = self.clock()
        wait = self._auth_by_address.wait_ms(address_key(address), now)
        limit = f"{self.budgets.auth_failures_per_minute_per_address}/min"
        if not wait and room_id is not None:
            wait = self._auth_by_room.wait_ms(room_id, now)
            limit = f"{self.budgets.auth_failures_per_minute_per_room}/min"
        return Refusal("TOO_MANY_AUTH_FAILURES", wait, limit) if wait else None

    def authentication_failed(self, address: str, room_id: str | None) -> None:
        now = self.clock()
        self._auth_by_address.take(address_key(address), now)
        if room_id is not None:
            self._auth_by_room.take(room_id, now)


def address_key(address: str) -> str:
    """The budget key of an address: IPv4 as is, IPv6 by its /64, anything else verbatim."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def parse_networks(text: str) -> tuple[Network, ...]:
    """``"10.0.0.0/8, 192.168.1.7"`` as networks; raises ValueError on a bad entry."""
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in text.split(",") if item.strip())


def is_trusted(address: str, proxies: Iterable[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(peer: str, forwarded_for: Iterable[str], proxies: tuple[Network, ...]) -> str:
    """The client behind ``peer``: ``peer`` itself unless it is a trusted proxy, else the right-most
    ``X-Forwarded-For`` address that is not one (the left part is whatever the client wrote)."""
    if not proxies or not is_trusted(peer, proxies):
        return peer
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop, proxies):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a proxy that writes garbage: count the proxy
    return peer


def peer_of_grpc(peer: str) -> str:
    """The address in grpc's ``context.peer()``: ``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``, ``unix:...``."""
    scheme, _, rest = peer.partition(":")
    if scheme == "ipv4":
        return rest.rpartition(":")[0]
    if scheme == "ipv6":
        host = rest.rpartition(":")[0]
        return host.strip("[]").split("%")[0]
    return peer

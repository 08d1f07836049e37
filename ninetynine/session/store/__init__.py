"""Durable room storage for the session service: one interface, an SQLite and a Redis implementation.

``open_store(url)`` picks the implementation from the URL:

- ``sqlite:///abs/path/rooms.db`` (absolute path, like ``file:///``) or ``sqlite:relative/rooms.db``;
  options ``?synchronous=full|normal|extra`` and ``?busy_timeout_ms=N``.  Missing directories are created.
- ``redis://host:port/db`` (or ``rediss://``, ``unix://``); options ``?prefix=KEYPREFIX`` and
  ``?maxlen=N`` (events kept per room) plus redis-py's own URL options.

See ``base`` for the contract and the two modules for their data layout.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

from ninetynine.session.store.base import (
    EventsTrimmed,
    InvalidStoreInput,
    RoomAlreadyExists,
    RoomNotFound,
    RoomRecord,
    RoomStore,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from ninetynine.session.store.redis_store import RedisRoomStore
from ninetynine.session.store.sqlite_store import SqliteRoomStore

__all__ = [
    "EventsTrimmed",
    "InvalidStoreInput",
    "RedisRoomStore",
    "RoomAlreadyExists",
    "RoomNotFound",
    "RoomRecord",
    "RoomStore",
    "SqliteRoomStore",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "VersionConflict",
    "open_store",
]

_SQLITE_OPTIONS = frozenset({"synchronous", "busy_timeout_ms"})


def _open_sqlite(url: str) -> SqliteRoomStore:
    parts = urlsplit(url)
    if parts.netloc:
        raise InvalidStoreInput(
            f"SQLite URL {url!r} has a host part; use sqlite:///absolute/path.db or sqlite:relative/path.db"
        )
    path = unquote(parts.path)
    if not path or path.endswith("/"):
        raise InvalidStoreInput(f"SQLite URL {url!r} names no database file")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = set(options) - _SQLITE_OPTIONS
    if unknown:
        raise InvalidStoreInput(
            f"unknown SQLite store options {sorted(unknown)}; known: {sorted(_SQLITE_OPTIONS)}"
        )
    try:
        busy_timeout_ms = int(options.get("busy_timeout_ms", "5000"))
    except ValueError as exc:
        raise InvalidStoreInput(f"busy_timeout_ms in {url!r} is not an integer") from exc
    return SqliteRoomStore(
        path, synchronous=options.get("synchronous", "full"), busy_timeout_ms=busy_timeout_ms
    )


def open_store(url: str) -> RoomStore:
    """Open the store named by ``url`` (see the module docstring); ``InvalidStoreInput`` if malformed."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        return _open_sqlite(url)
    if scheme in ("redis", "rediss", "unix"):
        return RedisRoomStore.from_url(url)
    # Only the scheme is echoed: a Redis URL may carry a password.
    raise InvalidStoreInput(
        f"unsupported store URL scheme {scheme!r}: expected sqlite:///path or redis://host:port/db"
    )

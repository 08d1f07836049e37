"""Fixtures that run the same store tests against a real SQLite file and the real Redis.

``backend`` is parametrized over both implementations.  ``backend.open()`` opens one more store object on
the same data (the same SQLite file, the same Redis key prefix): for Redis that is what a second session
replica sees.  Redis tests use a unique key prefix and delete their keys afterwards (SCAN + DEL).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from ninetynine.session.store import RoomStore, open_store

REDIS_URL = "redis://127.0.0.1:6379/0"


class Backend:
    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self._opened: list[RoomStore] = []

    @property
    def live_across_instances(self) -> bool:
        """Whether a second store object sees another's commits live (Redis replicas do)."""
        return self.kind == "redis"

    def open(self, url_suffix: str = "") -> RoomStore:
        store = open_store(self.url + url_suffix)
        self._opened.append(store)
        return store

    async def close_all(self) -> None:
        for store in self._opened:
            await store.close()


async def delete_prefix(prefix: str) -> None:
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture(params=["sqlite", "redis"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        yield_backend = Backend("sqlite", f"sqlite://{tmp_path}/db/rooms.db")
        yield yield_backend
        await yield_backend.close_all()
        return
    prefix = f"test:store:{uuid.uuid4().hex}:"
    redis_backend = Backend("redis", f"{REDIS_URL}?prefix={prefix}")
    try:
        yield redis_backend
    finally:
        await redis_backend.close_all()
        await delete_prefix(prefix)


@pytest.fixture
async def store(backend: Backend) -> RoomStore:
    return backend.open()


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    prefix = f"test:store:{uuid.uuid4().hex}:"
    yield prefix
    await delete_prefix(prefix)

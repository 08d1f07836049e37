"""Expiry: abandoned waiting rooms and finished rooms past their retention leave the store.

A waiting (lobby) room expires once nothing happened in it for ``lobby_idle_ms`` and no player is
connected to it (a closed browser tab disconnects its seat, which is itself a change, so the room
goes ``lobby_idle_ms`` after the last tab closed). A seat still marked connected after
``STALE_PRESENCE_MS`` without any change is taken for a mark left by a replica that died, and the
room expires too. A finished room, its event log and so its replay, are deleted ``retention_ms``
after its last change (the end of the game, or the lobby closing when everyone left).

Every replica sweeps every ``every_s``; each sweep reads at most ``batch`` candidates per kind from
the store's idle index (least recently changed first) and deletes them one by one, each with a
compare-and-set on the version it checked: exactly one replica deletes a room, and a room that
changed meanwhile (someone joined) stays. Lobby rooms that are idle but connected are skipped, and
the next sweep starts after them, so many of them cannot starve the rest. A sweep never holds the
store for more than one room's delete, so moves interleave with it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from prometheus_client import Counter

from ninetynine.common.logging import get_logger
from ninetynine.session.store.base import RoomRecord, RoomStore, StoreUnavailable, list_key
from ninetynine.session.v1 import room_document_pb2 as doc_pb

log = get_logger(__name__)

LOBBY_IDLE: Final = "lobby_idle"
FINISHED_RETENTION: Final = "finished_retention"
REASONS: Final = (LOBBY_IDLE, FINISHED_RETENTION)
DEFAULT_LOBBY_IDLE_S: Final = 15 * 60
DEFAULT_FINISHED_RETENTION_S: Final = 7 * 24 * 3600
# A lobby seat marked connected with nothing changing for this long: the mark is a dead replica's.
STALE_PRESENCE_MS: Final = 24 * 3600 * 1000
DEFAULT_BATCH: Final = 100
# How often a replica sweeps: a quarter of the shortest window, within these bounds.
MIN_SWEEP_S: Final = 0.05
MAX_SWEEP_S: Final = 30.0


@dataclass(frozen=True)
class ExpiryPolicy:
    """How long rooms are kept; 0 keeps that kind forever."""

    lobby_idle_ms: int = DEFAULT_LOBBY_IDLE_S * 1000
    retention_ms: int = DEFAULT_FINISHED_RETENTION_S * 1000
    batch: int = DEFAULT_BATCH

    @classmethod
    def from_seconds(cls, lobby_idle_s: float, retention_s: float) -> ExpiryPolicy:
        if lobby_idle_s < 0 or retention_s < 0:
            raise ValueError("expiry periods must be >= 0 (0 = never)")
        return cls(round(lobby_idle_s * 1000), round(retention_s * 1000))

    @property
    def every_s(self) -> float:
        windows = [ms for ms in (self.lobby_idle_ms, self.retention_ms) if ms > 0]
        if not windows:
            return MAX_SWEEP_S
        return min(MAX_SWEEP_S, max(MIN_SWEEP_S, min(windows) / 4000))


def _someone_connected(record: RoomRecord) -> bool:
    doc = doc_pb.RoomDocument.FromString(record.data)
    return any(seat.connected and not seat.bot for seat in doc.seats)


class RoomExpiry:
    """Sweeps one store. ``delete(room_id, version)`` deletes a room the way its owner wants (the
    session takes the room's lock and forgets its cached copies) and tells whether it did."""

    def __init__(
        self,
        store: RoomStore,
        policy: ExpiryPolicy,
        expired: Counter,
        delete: Callable[[str, int], Awaitable[bool]],
        *,
        clock: Callable[[], int],
        on_store_error: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.policy = policy
        self._expired = expired
        self._delete = delete
        self._clock = clock
        self._on_store_error = on_store_error
        self._lobby_cursor = ""  # past the idle-but-connected lobby rooms the last sweep skipped

    async def sweep(self) -> int:
        """One bounded pass over both kinds; how many rooms this replica deleted."""
        deleted = 0
        now = self._clock()
        if self.policy.lobby_idle_ms:
            deleted += await self._sweep_lobby(now)
        if self.policy.retention_ms:
            candidates = await self.store.idle_rooms(
                phase="finished",
                updated_before_ms=max(0, now - self.policy.retention_ms),
                after="",
                limit=self.policy.batch,
            )
            for record in candidates:
                deleted += await self._expire(record, FINISHED_RETENTION)
        return deleted

    async def _sweep_lobby(self, now: int) -> int:
        candidates = await self.store.idle_rooms(
            phase="lobby",
            updated_before_ms=max(0, now - self.policy.lobby_idle_ms),
            after=self._lobby_cursor,
            limit=self.policy.batch,
        )
        if len(candidates) < self.policy.batch:
            self._lobby_cursor = ""  # the end of the candidates: start over next time
        else:
            last = candidates[-1]
            self._lobby_cursor = list_key(last.updated_at_ms, last.room_id)
        deleted = 0
        for record in candidates:
            if record.updated_at_ms > now - STALE_PRESENCE_MS and _someone_connected(record):
                continue  # a player waits in it
            deleted += await self._expire(record, LOBBY_IDLE)
        return deleted

    async def _expire(self, record: RoomRecord, reason: str) -> int:
        if not await self._delete(record.room_id, record.version):
            return 0  # another replica took it, or the room changed since it was read
        self._expired.labels(reason).inc()
        log.info("room expired", room_id=record.room_id, reason=reason, phase=record.phase)
        return 1

    async def run(self, stopping: asyncio.Event) -> None:
        """Sweep every ``policy.every_s`` until ``stopping`` is set; survives store outages."""
        prepared = False
        while not stopping.is_set():
            try:
                if not prepared:
                    indexed = await self.store.prepare_expiry()
                    prepared = True
                    if indexed:
                        log.info("rooms indexed for expiry", rooms=indexed)
                await self.sweep()
            except StoreUnavailable as err:
                self._on_store_error()
                log.warning("expiry sweep failed", error=str(err))
            except Exception:
                log.exception("expiry sweep failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.policy.every_s)

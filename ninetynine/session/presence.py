"""Presence: whether a seat's client (or a spectator place's) is connected, as its subscriptions say.

A seat is connected while at least one subscription of its token is open on this replica; the
first one opening and the last one closing are recorded in the room (a ``presence_changed`` event
for seats; the place's presence, without an event, for spectators, so that a place left for a
while may be given to a new spectator). Recording presence is best effort: the game never waits
for it.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from ninetynine.common.errors import ServiceError
from ninetynine.common.logging import get_logger
from ninetynine.session import rooms
from ninetynine.session.roomcache import RoomCache, Step
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

log = get_logger(__name__)


class Presence:
    """Open subscriptions per seat or spectator place on this replica, and their record in the room."""

    def __init__(self, cache: RoomCache) -> None:
        self.cache = cache
        self._open: Counter[tuple[str, str]] = Counter()
        self._closing: set[asyncio.Task[None]] = set()

    @staticmethod
    def key(room_id: str, viewer: str | None, digest: bytes) -> tuple[str, str]:
        """A seat's key, or a spectator place's (its slot is held while somebody watches)."""
        return (room_id, viewer if viewer is not None else "~" + digest.hex())

    async def opened(self, room_id: str, viewer: str | None, digest: bytes) -> None:
        key = self.key(room_id, viewer, digest)
        self._open[key] += 1
        if self._open[key] == 1:
            await self.record(room_id, viewer, digest, True)

    async def closed(self, room_id: str, viewer: str | None, digest: bytes, *, record: bool) -> None:
        """One subscription closed; ``record=False`` (shutting down) leaves the room as it is."""
        key = self.key(room_id, viewer, digest)
        self._open[key] -= 1
        if self._open[key] <= 0:
            del self._open[key]
            if record:
                task = asyncio.create_task(self.record(room_id, viewer, digest, False))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
                await asyncio.shield(task)

    async def settle(self) -> None:
        """Wait for the closing records still being written (before the store closes)."""
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def record(self, room_id: str, player_id: str | None, digest: bytes, connected: bool) -> None:
        if player_id is not None:
            await self._set_seat(room_id, player_id, connected)
            return

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            # No event: a spectator's coming and going is nobody's news, only its slot's.
            return Step() if rooms.set_spectator_presence(doc, digest, connected, now) else None

        try:
            await self.cache.mutate(room_id, step)
        except ServiceError as err:  # best effort, as for seats
            log.warning("spectator presence not recorded", room_id=room_id, reason=err.reason)

    async def _set_seat(self, room_id: str, player_id: str, connected: bool) -> None:
        async def step(doc: doc_pb.RoomDocument, now: int) -> Step | None:
            seat = next((s for s in doc.seats if s.player_id == player_id), None)
            if seat is None or seat.bot or seat.left or seat.connected == connected:
                return None  # (no seat: it was given up in the lobby)
            seat.connected = connected
            out = Step()
            out.add(
                pb.RoomEvent(presence_changed=pb.PresenceChanged(player_id=player_id, connected=connected))
            )
            return out

        try:
            await self.cache.mutate(room_id, step)
        except ServiceError as err:  # presence is best effort; the game never waits for it
            log.warning("presence not recorded", room_id=room_id, player_id=player_id, reason=err.reason)

"""The session service's logic, wired together: one :class:`RoomService` per replica.

Each concern has its module, and :class:`RoomService` holds one of each over the same store,
engine and metrics; :mod:`ninetynine.session.server` exposes them over gRPC.

- :mod:`~ninetynine.session.roomcache`: rooms in memory and the commit pipeline (every change);
- :mod:`~ninetynine.session.lobby`: rooms, seats, spectators, bots, the start of a game;
- :mod:`~ninetynine.session.play`: a seat's play;
- :mod:`~ninetynine.session.deadlines`: turn deadlines and the scheduler that fires them;
- :mod:`~ninetynine.session.views` and :mod:`~ninetynine.session.subscriptions`: what subscribers get;
- :mod:`~ninetynine.session.presence`: who is connected;
- :mod:`~ninetynine.session.results`: results and replays;
- :mod:`~ninetynine.session.metrics`: the ``ninetynine_session_*`` metrics.
"""

from __future__ import annotations

import asyncio
import secrets

from ninetynine.engine.client import EngineClient
from ninetynine.session import expiry
from ninetynine.session.deadlines import DEFAULT_BOT_THINK_MS, DEFAULT_LEASE_MS, Deadlines, TurnClock
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.lobby import Lobby
from ninetynine.session.metrics import SessionMetrics, run_room_gauge
from ninetynine.session.play import Plays
from ninetynine.session.presence import Presence
from ninetynine.session.results import Results
from ninetynine.session.roomcache import RoomCache, now_ms
from ninetynine.session.store.base import RoomStore
from ninetynine.session.subscriptions import Subscriptions
from ninetynine.session.views import Views


class RoomService:
    """One replica's session logic: its parts, and the background tasks :meth:`start` runs."""

    def __init__(
        self,
        store: RoomStore,
        engine: EngineClient,
        *,
        store_kind: str = "sqlite",
        bot_think_ms: int = DEFAULT_BOT_THINK_MS,
        lease_ms: int = DEFAULT_LEASE_MS,
        poll_ms: int = 50,
        metrics: SessionMetrics | None = None,
        owner: str | None = None,
        time_scale: float = 1.0,
        stream_heartbeat_s: float = 15.0,
        expiry_policy: expiry.ExpiryPolicy | None = None,
    ) -> None:
        self.store = store
        self.engine = engine
        self.store_kind = store_kind
        # Turn timers are multiplied by time_scale (1.0 in production; load and fault tests compress time).
        self.time_scale = time_scale
        self.stream_heartbeat_s = stream_heartbeat_s
        self.metrics = metrics or SessionMetrics()
        self._stopping = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []
        calls = EngineCalls(engine, self.metrics)
        self.cache = RoomCache(store, store_kind, self.metrics, TurnClock(bot_think_ms, time_scale))
        self.lobby = Lobby(self.cache, calls, time_scale=time_scale)
        self.plays = Plays(self.cache, calls)
        self.deadlines = Deadlines(
            self.cache,
            calls,
            owner=owner or f"replica-{secrets.token_hex(6)}",
            lease_ms=lease_ms,
            poll_ms=poll_ms,
            stopping=self._stopping,
        )
        self.views = Views(self.cache)
        self.presence = Presence(self.cache)
        self.subscriptions = Subscriptions(
            self.cache, self.views, self.presence, heartbeat_s=stream_heartbeat_s, stopping=self._stopping
        )
        self.results = Results(self.cache)
        self.expiry = expiry.RoomExpiry(
            store,
            expiry_policy or expiry.ExpiryPolicy(),
            self.metrics.rooms_expired,
            self.cache.delete,
            clock=now_ms,
            on_store_error=lambda: self.metrics.store_errors.labels(self.store_kind, "expire").inc(),
        )

    async def run_room_gauge(self, every_s: float = 10.0) -> None:
        """Keep ``ninetynine_session_rooms{phase}`` current until :meth:`stop`."""
        await run_room_gauge(self.store, self.metrics, self.store_kind, self._stopping, every_s)

    def start(self) -> None:
        """Start the deadline scheduler, the rooms gauge and the expiry sweep; :meth:`stop` ends them."""
        if not self._background:
            self._background = [
                asyncio.create_task(self.deadlines.run()),
                asyncio.create_task(self.run_room_gauge()),
                asyncio.create_task(self.expiry.run(self._stopping)),
            ]

    async def stop(self) -> None:
        self._stopping.set()
        self.cache.changed.set()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await self.deadlines.finish()
        await self.presence.settle()

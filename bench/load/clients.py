"""Simulated people at the table: WebSocket clients speaking docs/client-protocol.md.

A :class:`Client` is one WebSocket connection (aiohttp). It answers nothing by itself except
its own turn: when a ``view`` says ``myTurn``, it waits a jittered think time and plays a
random entry of ``legalPlays`` (or, with a small probability, sits out the turn so the
session's timeout fires). A :class:`Table` is one room's worth of clients -- a host who
creates the room, players who join, optionally a bot seat and spectators -- that plays games
back to back until the run stops. Everything a run reports is counted in :class:`Tally`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

REQUEST_TIMEOUT_S = 30.0

Json = dict[str, Any]


class RequestFailed(Exception):
    """An ``error`` reply (``code`` is its reason) or a connection that went away meanwhile."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Tally:
    """Counters shared by every client; the reporter reads and resets the per-interval parts."""

    move_latencies: list[float] = field(default_factory=list)  # play sent -> played received (s)
    moves: int = 0  # cardPlayed events, once per room (players, bots and timeouts)
    errors: Counter[str] = field(default_factory=Counter)
    games_finished: int = 0
    reconnects: int = 0
    duplicate_events: int = 0
    rooms: dict[str, Table] = field(default_factory=dict)  # room id -> table, while playing

    def take_interval(self) -> tuple[list[float], int, Counter[str]]:
        latencies, moves, errors = self.move_latencies, self.moves, self.errors
        self.move_latencies, self.moves, self.errors = [], 0, Counter()
        return latencies, moves, errors


@dataclass
class Behaviour:
    think_s: tuple[float, float] = (1.5, 4.0)  # uniform think time before each play
    afk_probability: float = 0.02  # a turn left to the timeout policy
    reconnects_per_minute: float = 0.02  # per seated client: drop the socket and resume


class Client:
    """One WebSocket connection and the identity it is bound to."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        name: str,
        tally: Tally,
        behaviour: Behaviour,
        rng: random.Random,
    ) -> None:
        self.http = http
        self.url = url
        self.name = name
        self.tally = tally
        self.behaviour = behaviour
        self.rng = rng
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.table: Table | None = None
        self.token = ""
        self.player_id: str | None = None
        self.last_seq = 0
        self.client_seq = 0
        self.last_sent = 0.0
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Json]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._planned_move: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # -- transport ---------------------------------------------------------------------------

    async def connect(self) -> None:
        self.ws = await self.http.ws_connect(self.url, autoping=True, max_msg_size=1 << 20)
        self._reader = asyncio.create_task(self._read_loop(self.ws))
        await self.request("hello", lang="en", client="bench.load")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    async def request(self, kind: str, **fields: object) -> Json:
        ws = self.ws
        if ws is None or ws.closed:
            raise RequestFailed("disconnected")
        self._next_id += 1
        msg_id = self._next_id
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            self.last_sent = time.monotonic()
            await ws.send_str(json.dumps({"type": kind, "id": msg_id, **fields}))
            reply = await asyncio.wait_for(future, REQUEST_TIMEOUT_S)
        except TimeoutError:
            raise RequestFailed("timeout") from None
        except (ConnectionError, aiohttp.ClientError):
            raise RequestFailed("disconnected") from None
        finally:
            self._pending.pop(msg_id, None)
        if reply["type"] == "error":
            raise RequestFailed(str(reply.get("reason", "error")))
        return reply

    async def _read_loop(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        try:
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    break
                message: Json = json.loads(frame.data)
                reply_to = message.get("id")
                if isinstance(reply_to, int) and reply_to in self._pending:
                    future = self._pending[reply_to]
                    if not future.done():
                        future.set_result(message)
                    continue
                self._on_push(message)
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionResetError("socket closed"))

    # -- pushed messages -----------------------------------------------------------------------

    def _on_push(self, message: Json) -> None:
        kind = message["type"]
        table = self.table
        if kind == "event":
            seq = int(message["seq"])
            if seq <= self.last_seq:
                self.tally.duplicate_events += 1  # the server must send only seq > afterSeq
                return
            self.last_seq = seq
            if table is not None:
                table.saw_event(seq, message["event"])
        elif kind == "view":
            self.last_seq = max(self.last_seq, int(message["seq"]))
            self._on_view(message["view"])
        elif kind == "snapshot":
            self.last_seq = int(message["seq"])
        elif kind == "goodbye":
            self.tally.errors[f"goodbye:{message.get('reason')}"] += 1

    def _on_view(self, view: Json) -> None:
        if view.get("phase") != "playing" or not view.get("myTurn"):
            return
        move = int(view["seq"])
        if self._planned_move == move:
            return
        self._planned_move = move
        if self.rng.random() < self.behaviour.afk_probability:
            return  # away from the keyboard: the session's timeout plays for us
        plays = view.get("legalPlays") or []
        if not plays:
            return
        action = self.rng.choice(plays)["action"]
        self._spawn(self._play_later(move, action))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _play_later(self, move: int, action: Json) -> None:
        await asyncio.sleep(self.rng.uniform(*self.behaviour.think_s))
        if self._planned_move != move:
            return
        self.client_seq += 1
        sent = time.perf_counter()
        try:
            await self.request("play", clientSeq=self.client_seq, action=action)
        except RequestFailed as failed:
            if failed.code != "disconnected":
                self.tally.errors[f"play:{failed.code}"] += 1
            return
        self.tally.move_latencies.append(time.perf_counter() - sent)

    # -- binding -------------------------------------------------------------------------------

    def bind(self, table: Table, reply: Json) -> None:
        self.table = table
        self.token = str(reply["token"])
        self.player_id = reply.get("playerId")
        self.last_seq = 0
        self._planned_move = None

    async def leave(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        try:
            await self.request("leaveRoom")
        except RequestFailed as failed:
            if failed.code not in ("disconnected", "NOT_IN_ROOM"):
                self.tally.errors[f"leaveRoom:{failed.code}"] += 1
        self.table = None
        self.token = ""

    async def reconnect(self) -> None:
        """Drop the socket without a goodbye and resume from the last seq seen."""
        await self.close()
        self.tally.reconnects += 1
        self._planned_move = None
        try:
            await self.connect()
            if self.token:
                await self.request("resume", token=self.token, afterSeq=self.last_seq)
        except (RequestFailed, aiohttp.ClientError, OSError) as exc:
            self.tally.errors[f"resume:{getattr(exc, 'code', type(exc).__name__)}"] += 1

    async def keepalive(self) -> None:
        """A ping when nothing was sent for a while, so the gateway's idle timer never fires."""
        if time.monotonic() - self.last_sent > 10:
            try:
                await self.request("ping")
            except RequestFailed as failed:
                if failed.code != "disconnected":
                    self.tally.errors[f"ping:{failed.code}"] += 1


class Table:
    """One room's people: a host, 2-3 joiners (a bot takes the 4th seat when there are 2), spectators."""

    def __init__(
        self,
        index: int,
        host: Client,
        joiners: list[Client],
        spectators: list[Client],
        tally: Tally,
        turn_seconds: int,
    ) -> None:
        self.index = index
        self.host = host
        self.joiners = joiners
        self.spectators = spectators
        self.tally = tally
        self.turn_seconds = turn_seconds
        self.room_id = ""
        self.counted_seq = 0
        self.last_event_at = time.monotonic()
        self.playing = False
        self.finished = asyncio.Event()

    @property
    def clients(self) -> list[Client]:
        return [self.host, *self.joiners, *self.spectators]

    @property
    def seated(self) -> list[Client]:
        return [self.host, *self.joiners]

    def saw_event(self, seq: int, event: Json) -> None:
        self.last_event_at = time.monotonic()
        if seq <= self.counted_seq:
            return  # another client of this table already counted it
        self.counted_seq = seq
        kind = event.get("type")
        if kind == "cardPlayed":
            self.tally.moves += 1
        elif kind == "gameFinished":
            self.tally.games_finished += 1
            self.finished.set()

    async def play_games(self, stop: asyncio.Event) -> None:
        """Create, fill, start and play rooms until ``stop``; a failed setup is counted and retried."""
        while not stop.is_set():
            try:
                await self._one_game(stop)
            except RequestFailed as failed:
                self.tally.errors[f"setup:{failed.code}"] += 1
                await _sleep_unless(stop, 1.0)
            finally:
                self.playing = False
                self.tally.rooms.pop(self.room_id, None)

    async def _one_game(self, stop: asyncio.Event) -> None:
        self.finished.clear()
        self.counted_seq = 0
        created = await self.host.request(
            "createRoom", name=f"h{self.index}", seats=4, options={"turnSeconds": self.turn_seconds}
        )
        self.room_id = str(created["roomId"])
        self.host.bind(self, created)
        for n, joiner in enumerate(self.joiners):
            joiner.bind(
                self, await joiner.request("joinRoom", roomId=self.room_id, name=f"p{self.index}-{n}")
            )
        if len(self.joiners) < 3:
            await self.host.request("addBot")
        for spectator in self.spectators:
            spectator.bind(self, await spectator.request("spectate", roomId=self.room_id))
        self.last_event_at = time.monotonic()
        self.playing = True
        self.tally.rooms[self.room_id] = self
        await self.host.request("startGame")
        stopped = asyncio.create_task(stop.wait())
        finished = asyncio.create_task(self.finished.wait())
        try:
            await asyncio.wait({stopped, finished}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            finished.cancel()
        self.playing = False
        if not stop.is_set():
            await asyncio.gather(*(c.leave() for c in self.clients))


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)

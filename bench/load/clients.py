"""Simulated people at the table: WebSocket clients speaking docs/client-protocol.md.

A :class:`Client` is one WebSocket connection (:mod:`bench.load.wsclient`). It answers nothing by
itself except its own turn: when a ``view`` says ``myTurn``, it waits a jittered think time and
plays a random entry of ``legalPlays`` (or, with a small probability, sits out the turn so the
session's timeout fires). A :class:`Table` is one room's worth of clients -- a host who creates
the room, players who join, optionally a bot seat and spectators -- that plays games back to back
until the run stops. Everything a run reports is counted in :class:`Tally`.

Cheap per frame, so that one process can drive 10,000 clients on the box under test: frames are
handled in the socket's ``data_received`` callback (no reader task per client); ``event`` and
``view`` frames, ~95 % of the traffic, are recognised by their prefix as the gateway writes them
(``{"type":"event","seq":N,"event":{"type":"...``), so only their seq and event type are read, and
a ``view`` is parsed in full only when it may be this client's turn; anything else (replies, room
updates, a frame written differently) is parsed in full with orjson. A planned play is a timer
(``loop.call_later``), not a sleeping task, and plays and keepalive pings are answered through
callbacks instead of awaited futures.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.load import wsclient

REQUEST_TIMEOUT_S = 30.0
# docs/client-protocol.md §6: a client pings when it sent nothing for heartbeatSeconds (announced in
# welcome; the gateway drops a connection silent for 3 × that).
DEFAULT_HEARTBEAT_S = 20.0

Json = dict[str, Any]
OnReply = Callable[[Json], None]

# Stand-in replies for requests that got no answer, so every waiter is settled the same way.
DISCONNECTED: Json = {"type": "error", "reason": "disconnected"}
TIMED_OUT: Json = {"type": "error", "reason": "timeout"}

# Prefixes of the pushed frames as the gateway writes them (compact JSON, "type" then "seq").
_EVENT = b'{"type":"event","seq":'
_EVENT_TYPE = b',"event":{"type":"'
_VIEW = b'{"type":"view","seq":'
_MY_TURN = b'"myTurn":true'
_ROOM_PUSH = b'{"type":"room","room":'  # a pushed room update (a reply has its "id" before "room")
# Event type names as they start at the offset peek_event gives (closing quote included).
CARD_PLAYED = b'cardPlayed"'
GAME_FINISHED = b'gameFinished"'


def peek_event(data: bytes) -> tuple[int, int] | None:
    """``(seq, offset of the event's type name)`` of an ``event`` frame, the rest unparsed; None
    when ``data`` is not an event frame in the gateway's compact form (it is then parsed in full)."""
    if not data.startswith(_EVENT):
        return None
    comma = data.find(b",", len(_EVENT))
    digits = data[len(_EVENT) : comma]
    if comma < 0 or not digits.isdigit() or not data.startswith(_EVENT_TYPE, comma):
        return None
    return int(digits), comma + len(_EVENT_TYPE)


def peek_view(data: bytes) -> tuple[int, bool] | None:
    """``(seq, may be my turn)`` of a ``view`` frame without parsing it; None as for :func:`peek_event`.
    "May be": the text contains ``"myTurn":true``, the full parse then decides."""
    if not data.startswith(_VIEW):
        return None
    comma = data.find(b",", len(_VIEW))
    digits = data[len(_VIEW) : comma]
    if comma < 0 or not digits.isdigit():
        return None
    return int(digits), _MY_TURN in data


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
    # Plays whose socket closed before their answer: they may have landed, without a latency.
    plays_cut_off: int = 0
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


def _settle(future: asyncio.Future[Json], reply: Json) -> None:
    if not future.done():
        future.set_result(reply)


class Client:
    """One WebSocket connection and the identity it is bound to."""

    __slots__ = (
        "_loop",
        "_next_id",
        "_pending",
        "_planned_move",
        "_play_timer",
        "_resuming",
        "behaviour",
        "client_seq",
        "heartbeat_s",
        "last_sent",
        "last_seq",
        "name",
        "player_id",
        "rng",
        "table",
        "tally",
        "token",
        "url",
        "ws",
    )

    def __init__(self, url: str, name: str, tally: Tally, behaviour: Behaviour, rng: random.Random) -> None:
        self.url = url
        self.name = name
        self.tally = tally
        self.behaviour = behaviour
        self.rng = rng
        self.ws: wsclient.WsProtocol | None = None
        self.table: Table | None = None
        self.token = ""
        self.player_id: str | None = None
        self.last_seq = 0
        self.client_seq = 0
        self.last_sent = 0.0
        self.heartbeat_s = DEFAULT_HEARTBEAT_S
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_id = 0
        # message id -> (what to do with the reply, monotonic deadline for keepalive() to expire it)
        self._pending: dict[int, tuple[OnReply, float]] = {}
        self._planned_move: int | None = None
        self._play_timer: asyncio.TimerHandle | None = None
        self._resuming: asyncio.Future[None] | None = None  # set while reconnect() runs

    # -- transport ---------------------------------------------------------------------------

    async def connect(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.ws = await wsclient.connect(self.url, self._on_text, self._lost, REQUEST_TIMEOUT_S)
        welcome = await self.request("hello", lang="en", client="bench.load")
        self.heartbeat_s = float(welcome.get("heartbeatSeconds") or DEFAULT_HEARTBEAT_S)

    def close(self) -> None:
        """Close the socket (if any); every request still waiting is settled as disconnected."""
        self._cancel_play()
        ws, self.ws = self.ws, None
        if ws is not None:
            ws.close()
        self._fail_pending()

    def _lost(self, ws: wsclient.WsProtocol) -> None:
        if ws is self.ws:  # an older socket, replaced by reconnect(), was settled by close()
            self.ws = None
            self._fail_pending()

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for on_reply, _ in pending.values():
            on_reply(DISCONNECTED)

    def _send(self, kind: str, on_reply: OnReply, timeout_s: float, **fields: object) -> int | None:
        """Send one request whose reply goes to ``on_reply``; its id, or None when not connected."""
        ws = self.ws
        if ws is None or not ws.open:
            return None
        self._next_id += 1
        msg_id = self._next_id
        now = time.monotonic()
        self._pending[msg_id] = (on_reply, now + timeout_s)
        self.last_sent = now
        if not ws.send_text(orjson.dumps({"type": kind, "id": msg_id, **fields})):
            del self._pending[msg_id]
            return None
        return msg_id

    async def request(self, kind: str, **fields: object) -> Json:
        """Send and wait for the reply; raises :class:`RequestFailed` on an error or no answer."""
        loop = self._loop or asyncio.get_running_loop()
        future: asyncio.Future[Json] = loop.create_future()
        # No deadline in _pending: wait_for bounds this one and removes it.
        msg_id = self._send(kind, functools.partial(_settle, future), float("inf"), **fields)
        if msg_id is None:
            raise RequestFailed("disconnected")
        try:
            reply = await asyncio.wait_for(future, REQUEST_TIMEOUT_S)
        except TimeoutError:
            raise RequestFailed("timeout") from None
        finally:
            self._pending.pop(msg_id, None)
        if reply["type"] == "error":
            raise RequestFailed(str(reply.get("reason", "error")))
        return reply

    # -- received frames -----------------------------------------------------------------------

    def _on_text(self, data: bytes) -> None:
        try:
            event = peek_event(data)
            if event is not None:
                self._on_event(event[0], data, event[1])
                return
            view = peek_view(data)
            if view is not None:
                seq, maybe_mine = view
                if seq > self.last_seq:
                    self.last_seq = seq
                if maybe_mine:
                    self._on_view(orjson.loads(data)["view"])
                return
            if data.startswith(_ROOM_PUSH):
                return  # seats and presence: nothing here depends on them
            self._on_message(orjson.loads(data))
        except (ValueError, KeyError, TypeError):
            self.tally.errors["frame:unreadable"] += 1

    def _on_message(self, message: Json) -> None:
        """A frame parsed in full: a reply to one of our requests, or a push."""
        reply_to = message.get("id")
        if isinstance(reply_to, int):
            waiter = self._pending.pop(reply_to, None)
            if waiter is not None:
                waiter[0](message)
                return
        kind = message.get("type")
        if kind == "event":
            name = str(message["event"].get("type", "")).encode() + b'"'
            self._on_event(int(message["seq"]), name, 0)
        elif kind == "view":
            self.last_seq = max(self.last_seq, int(message["seq"]))
            self._on_view(message["view"])
        elif kind == "snapshot":
            self.last_seq = int(message["seq"])
        elif kind == "goodbye":
            self.tally.errors[f"goodbye:{message.get('reason')}"] += 1

    def _on_event(self, seq: int, text: bytes, name_at: int) -> None:
        """An event with room seq ``seq`` whose type name starts at ``text[name_at:]``."""
        if seq <= self.last_seq:
            self.tally.duplicate_events += 1  # the server must send only seq > afterSeq
            return
        self.last_seq = seq
        table = self.table
        if table is not None and seq > table.counted_seq:  # else another client counted it
            played = text.startswith(CARD_PLAYED, name_at)
            table.count(seq, played, not played and text.startswith(GAME_FINISHED, name_at))

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
        self._cancel_play()
        loop = self._loop or asyncio.get_running_loop()
        think = self.rng.uniform(*self.behaviour.think_s)
        self._play_timer = loop.call_later(think, self._play, move, action)

    # -- playing -------------------------------------------------------------------------------

    def _cancel_play(self) -> None:
        if self._play_timer is not None:
            self._play_timer.cancel()
            self._play_timer = None

    def _play(self, move: int, action: Json) -> None:
        self._play_timer = None
        if self._planned_move != move:
            return
        self.client_seq += 1
        sent = time.perf_counter()
        on_reply = functools.partial(self._on_played, sent)
        # moveSeq: a play that arrives after a timeout moved the game is refused (VIEW_OUTDATED,
        # counted as play:VIEW_OUTDATED) rather than applied at a total this player never saw.
        self._send(
            "play", on_reply, REQUEST_TIMEOUT_S, clientSeq=self.client_seq, moveSeq=move, action=action
        )

    def _on_played(self, sent: float, reply: Json) -> None:
        if reply["type"] == "error":
            if reply.get("reason") == "disconnected":
                self.tally.plays_cut_off += 1
            else:
                self.tally.errors[f"play:{reply.get('reason')}"] += 1
            return
        self.tally.move_latencies.append(time.perf_counter() - sent)

    def _on_pong(self, reply: Json) -> None:
        if reply["type"] == "error" and reply.get("reason") != "disconnected":
            self.tally.errors[f"ping:{reply.get('reason')}"] += 1

    # -- binding -------------------------------------------------------------------------------

    def bind(self, table: Table, reply: Json) -> None:
        self.table = table
        self.token = str(reply["token"])
        self.player_id = reply.get("playerId")
        self.last_seq = 0
        self._planned_move = None

    async def leave(self) -> None:
        self._cancel_play()
        if self._resuming is not None:
            # A reconnect is under way: leave after its resume, or the resume would bind the seat
            # again and the next game's create/join would fail with ALREADY_IN_ROOM.
            await asyncio.shield(self._resuming)
        try:
            await self.request("leaveRoom")
        except RequestFailed as failed:
            if failed.code not in ("disconnected", "NOT_IN_ROOM"):
                self.tally.errors[f"leaveRoom:{failed.code}"] += 1
        self.table = None
        self.token = ""

    async def reconnect(self) -> None:
        """Drop the socket without a goodbye and resume from the last seq seen."""
        if self._play_timer is not None:
            # Still thinking: close() cancels the play, so the resumed view's move is planned again.
            # A move whose play was already sent stays planned: the resume's view may come from
            # before that play landed, and a second play of the move would be refused VIEW_OUTDATED.
            self._planned_move = None
        self.close()
        self.tally.reconnects += 1
        resuming = self._resuming = (self._loop or asyncio.get_running_loop()).create_future()
        try:
            await self.connect()
            if self.token:
                await self.request("resume", token=self.token, afterSeq=self.last_seq)
        except (RequestFailed, OSError) as exc:
            self.tally.errors[f"resume:{getattr(exc, 'code', type(exc).__name__)}"] += 1
        finally:
            resuming.set_result(None)
            if self._resuming is resuming:
                self._resuming = None

    def keepalive(self, now: float) -> None:
        """Once a second: expire unanswered plays and pings, and ping when nothing was sent for a
        while so the gateway's idle timer never fires."""
        if self._pending:
            expired = [msg_id for msg_id, (_, deadline) in self._pending.items() if deadline < now]
            for msg_id in expired:
                self._pending.pop(msg_id)[0](TIMED_OUT)
        if now - self.last_sent > self.heartbeat_s:
            self._send("ping", self._on_pong, REQUEST_TIMEOUT_S)


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

    def count(self, seq: int, card_played: bool, game_finished: bool) -> None:
        """A room event seen for the first time by any of this table's clients."""
        self.last_event_at = time.monotonic()
        self.counted_seq = seq
        if card_played:
            self.tally.moves += 1
        elif game_finished:
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

    async def seat(self, *, bot: bool = True) -> None:
        """Create the room and bind everyone to it: the host, the joiners, a bot in the 4th seat
        when there are only 2 joiners (``bot``), then the spectators. No game is started."""
        created = await self.host.request(
            "createRoom", name=f"h{self.index}", seats=4, options={"turnSeconds": self.turn_seconds}
        )
        self.room_id = str(created["roomId"])
        self.host.bind(self, created)
        for n, joiner in enumerate(self.joiners):
            joiner.bind(
                self, await joiner.request("joinRoom", roomId=self.room_id, name=f"p{self.index}-{n}")
            )
        if bot and len(self.joiners) < 3:
            await self.host.request("addBot")
        for spectator in self.spectators:
            spectator.bind(self, await spectator.request("spectate", roomId=self.room_id))

    async def _one_game(self, stop: asyncio.Event) -> None:
        self.finished.clear()
        self.counted_seq = 0
        await self.seat()
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

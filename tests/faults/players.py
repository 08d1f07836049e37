"""A WebSocket player that behaves like the web table: plays its turns, reconnects, resumes.

It keeps ``last_seq`` and ignores nothing silently: every event seq it is sent is recorded, so a
test can prove that a reconnect neither lost nor repeated an event. A play that was sent but not
answered is re-sent with the same ``clientSeq`` after a reconnect (docs/client-protocol.md §6).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.faults.stack import ws_connect
from tests.gateway.conftest import WsClient

# Refusals a player retries with the same clientSeq: the service was briefly missing.
TRANSIENT = frozenset({"ENGINE_UNAVAILABLE", "STORE_UNAVAILABLE", "UNAVAILABLE", "ROOM_BUSY"})
# Refusals that only mean the turn moved on while our play was on its way (a timeout move); with
# moveSeq the session says so itself (VIEW_OUTDATED) before the rules are asked.
TURN_MOVED_ON = frozenset({"NOT_YOUR_TURN", "CARD_NOT_IN_HAND", "GAME_FINISHED", "STALE", "VIEW_OUTDATED"})
# A play chosen from a view can meet another total when it arrives: the turn timed out (turns are
# short here, the box is loaded), went round and came back; or it was sent again after a reconnect.
# Refusals that depend on the total are expected then -- and only then: when the refusal names a
# total other than the view's, or the play was re-sent. The same total means a rules/view bug.
OUT_OF_DATE_RESEND = frozenset({"OVER_99", "BELOW_ZERO", "JOKER_OUT_OF_RANGE", "CHOICE_NOT_ALLOWED"})


@dataclass
class WsPlayer:
    http: aiohttp.ClientSession
    port_of_gateway: Callable[[], int]  # asked again at every reconnect: the gateway may be new
    token: str = ""
    player_id: str | None = None
    last_seq: int = 0
    client_seq: int = 0
    pending: dict[str, Any] | None = None
    pending_resent: bool = False  # the pending play went out more than once
    pending_total: int | None = None  # the total of the view the pending play was chosen from
    event_seqs: list[int] = field(default_factory=list)
    repeated: list[int] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)  # played.seq of every acknowledged play
    messages: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    reconnects: int = 0
    client: WsClient | None = None
    retry_delay_s: float = 0.1
    drop_probability: float = 0.0  # per message read: close the socket without a word, then resume
    think_s: float = 0.0  # pause before each play, so that a game lasts long enough for its faults
    pending_since: float = 0.0  # monotonic time the pending play was first sent
    longest_wait_s: float = 0.0  # the longest any play waited for its 'played'

    async def connect(self) -> WsClient:
        self.client = await ws_connect(self.http, self.port_of_gateway())
        return self.client

    async def resume(self) -> None:
        """Reconnect (retrying while no gateway answers) and resume after ``last_seq``."""
        while True:
            try:
                client = await self.connect()
                joined = await client.request(
                    {"type": "resume", "id": "resume", "token": self.token, "afterSeq": self.last_seq}
                )
                break
            except (aiohttp.ClientError, ConnectionError, OSError, TimeoutError):
                await asyncio.sleep(0.1)
        assert joined["type"] == "joined", joined
        self.reconnects += 1
        if self.pending is not None:
            self.pending_resent = True
            await client.send(self.pending)

    def take(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        kind = message["type"]
        if kind == "event":
            if message["seq"] <= self.last_seq:
                self.repeated.append(message["seq"])
            else:
                self.event_seqs.append(message["seq"])
                self.last_seq = message["seq"]
            if message["event"]["type"] == "gameFinished":
                self.finished = True
        elif kind in ("view", "snapshot"):
            self.last_seq = max(self.last_seq, message["seq"])

    async def step(self) -> None:
        """Read one message and react to it like a player would."""
        assert self.client is not None
        message = await self.client.recv()
        self.take(message)
        await self.react(message)

    async def react(self, message: dict[str, Any]) -> None:
        assert self.client is not None
        kind = message["type"]
        if kind == "view":
            view = message["view"]
            if self.acked and message["seq"] < self.acked[-1]:
                # The reply to our play can overtake the stream: a view from before our own move
                # (e.g. of a presence change) still says myTurn. A client ignores it.
                return
            if view.get("myTurn") and view["legalPlays"] and self.pending is None:
                if self.think_s:
                    await asyncio.sleep(self.think_s)
                self.client_seq += 1
                action = random.choice(view["legalPlays"])["action"]
                self.pending = {
                    "type": "play",
                    "id": f"p{self.client_seq}",
                    "clientSeq": self.client_seq,
                    "moveSeq": view["seq"],
                    "action": action,
                }
                self.pending_resent = False
                self.pending_total = view["total"]
                self.pending_since = time.monotonic()
                await self.client.send(self.pending)
        elif kind == "played" and self.pending and message["clientSeq"] == self.pending["clientSeq"]:
            self.acked.append(message["seq"])
            self.longest_wait_s = max(self.longest_wait_s, time.monotonic() - self.pending_since)
            self.pending = None
        elif kind == "error":
            self.errors.append(message)
            if self.pending is None or message.get("id") != self.pending["id"]:
                return
            if message["reason"] in TRANSIENT:
                await asyncio.sleep(self.retry_delay_s)
                self.pending_resent = True
                await self.client.send(self.pending)
            else:
                moved = message.get("metadata", {}).get("total") != str(self.pending_total)
                out_of_date = self.pending_resent or moved
                expected = TURN_MOVED_ON | (OUT_OF_DATE_RESEND if out_of_date else frozenset())
                assert message["reason"] in expected, (message, self.pending_resent, self.pending_total)
                self.pending = None

    async def play_to_the_end(self, *, reconnect: bool = True) -> None:
        """Play until gameFinished; a dropped connection is resumed (when ``reconnect``)."""
        while not self.finished:
            if self.drop_probability and self.client and random.random() < self.drop_probability:
                await self.client.ws.close()
            try:
                await self.step()
            except (ConnectionError, aiohttp.ClientError, TimeoutError):
                if not reconnect:
                    raise
                await self.resume()

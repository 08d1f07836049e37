"""bench.load's simulated players against the real engine, session and gateway (in-process, fast
turns): one table plays a game to the end with a reconnect in the middle, and what the load run
reports (moves once per room, duplicates, errors, play latencies) matches the frames received.

The generator reads ``event`` and ``view`` frames by their prefix instead of parsing them; these
tests hold that shortcut to the gateway's actual frames, and to a full parse of the same frames
written differently (which takes the generator's full-parse path)."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter

import orjson
import pytest

from bench.load.clients import Behaviour, Client, Table, Tally, peek_event, peek_view
from ninetynine.gateway.server import RunningGateway
from tests.gateway.conftest import backend, gateway, make_gateway

__all__ = ["backend", "gateway", "make_gateway"]  # fixtures of the real stack

GAME_TIMEOUT_S = 90.0
FAST = Behaviour(think_s=(0.005, 0.02), afk_probability=0.0, reconnects_per_minute=0.0)


class RecordingClient(Client):
    """A load-run client that also keeps every frame it received, as received."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.frames: list[bytes] = []

    def _on_text(self, data: bytes) -> None:
        self.frames.append(data)
        super()._on_text(data)


class OneGameTable(Table):
    """Stops the run when its first game finishes, so no second game starts."""

    stop: asyncio.Event  # set by the fixture, in its event loop

    def count(self, seq: int, card_played: bool, game_finished: bool) -> None:
        super().count(seq, card_played, game_finished)
        if game_finished:
            self.stop.set()


async def _until(predicate: object, timeout_s: float = GAME_TIMEOUT_S) -> None:
    assert callable(predicate)
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.01)


@pytest.fixture
async def played(gateway: RunningGateway) -> tuple[Tally, list[RecordingClient]]:
    """One game of 3 people, a bot and a spectator, one player dropping and resuming mid-game."""
    url = f"ws://127.0.0.1:{gateway.http_port}/ws"
    tally = Tally()
    clients = [RecordingClient(url, f"c{n}", tally, FAST, random.Random(n)) for n in range(4)]
    for client in clients:
        await client.connect()
    people: list[Client] = list(clients)
    table = OneGameTable(0, people[0], people[1:3], people[3:], tally, turn_seconds=10)
    table.stop = asyncio.Event()
    games = asyncio.create_task(table.play_games(table.stop))
    try:
        await _until(lambda: tally.moves >= 3 or table.stop.is_set())
        if not table.stop.is_set():
            await clients[1].reconnect()
        await asyncio.wait_for(games, GAME_TIMEOUT_S)
    finally:
        games.cancel()
        for client in clients:
            client.close()
    return tally, clients


async def test_a_table_plays_a_game_and_reports_what_it_received(
    played: tuple[Tally, list[RecordingClient]],
) -> None:
    tally, clients = played
    spectator = clients[3]
    assert tally.games_finished == 1
    assert tally.errors == Counter()
    assert tally.duplicate_events == 0
    # Every card played in the room, counted once: the spectator sees each public event once.
    spectated = [orjson.loads(f) for f in spectator.frames]
    card_seqs = {m["seq"] for m in spectated if m["type"] == "event" and m["event"]["type"] == "cardPlayed"}
    assert tally.moves == len(card_seqs) > 0
    # Each accepted play got its latency, but for one the reconnect cut off before its answer came
    # (it may have landed); the bot's and timeouts' moves have none.
    sources = Counter(
        m["event"].get("source")
        for m in spectated
        if m["type"] == "event" and m["event"]["type"] == "cardPlayed"
    )
    answered = len(tally.move_latencies)
    assert 0 < answered <= sources["player"] <= answered + tally.plays_cut_off
    if tally.reconnects:  # the game may end before the reconnect
        assert tally.reconnects == 1


async def test_the_prefix_reading_matches_the_gateways_frames(
    played: tuple[Tally, list[RecordingClient]],
) -> None:
    _, clients = played
    kinds: Counter[str] = Counter()
    my_turns = 0
    for data in (f for c in clients for f in c.frames):
        message = orjson.loads(data)
        kinds[message["type"]] += 1
        if message["type"] == "event":
            peeked = peek_event(data)
            assert peeked is not None, data[:80]
            seq, name_at = peeked
            assert seq == message["seq"]
            assert data.startswith(message["event"]["type"].encode() + b'"', name_at)
        elif message["type"] == "view":
            view_peek = peek_view(data)
            assert view_peek == (message["seq"], message["view"].get("myTurn") is True), data[:80]
            my_turns += message["view"].get("myTurn") is True
        else:
            assert peek_event(data) is None and peek_view(data) is None
    assert kinds["event"] > 0 and kinds["view"] > 0 and my_turns > 0


async def test_frames_written_differently_count_the_same(
    played: tuple[Tally, list[RecordingClient]],
) -> None:
    """A player's frames replayed twice into two fresh clients: as received (prefix reading) and
    re-encoded with spaces (full parse). Both count the same moves, finish and duplicates."""
    _, clients = played
    player = clients[2]
    outcomes = []
    for encode in (lambda d: d, lambda d: json.dumps(orjson.loads(d)).encode()):
        tally = Tally()
        client = Client("ws://unused", "replay", tally, FAST, random.Random(0))
        client.table = Table(0, client, [], [], tally, turn_seconds=10)
        for data in player.frames * 2:  # the second pass is all duplicates
            client._on_text(encode(data))
        client.close()  # drops the plays it planned
        outcomes.append(
            (tally.moves, tally.games_finished, tally.duplicate_events, client.last_seq, tally.errors)
        )
    assert outcomes[0] == outcomes[1]
    moves, finished, duplicates, _, errors = outcomes[0]
    assert moves > 0 and finished == 1 and duplicates > 0 and not errors


async def test_a_leave_during_a_reconnect_waits_for_the_resume(gateway: RunningGateway) -> None:
    """The chaos pass may drop a player just as its game ends: the leave must come after the
    resume, or the resume binds the seat again and the next game fails with ALREADY_IN_ROOM."""
    url = f"ws://127.0.0.1:{gateway.http_port}/ws"
    tally = Tally()
    host, player = (Client(url, f"c{n}", tally, FAST, random.Random(n)) for n in range(2))
    for client in (host, player):
        await client.connect()
    table = Table(0, host, [player], [], tally, turn_seconds=10)
    try:
        await table.seat(bot=False)
        first_socket = player.ws
        reconnect = asyncio.create_task(player.reconnect())
        # Leave as soon as the new socket is up (checked every loop pass, not every 10 ms): its
        # hello is sent, the resume not yet.
        async with asyncio.timeout(10.0):
            while player.ws is None or player.ws is first_socket:
                await asyncio.sleep(0)
        await player.leave()
        await reconnect
        again = await player.request("createRoom", name="again", seats=2)
        assert again["type"] == "joined"
        assert tally.errors == Counter() and tally.reconnects == 1
    finally:
        for client in (host, player):
            client.close()

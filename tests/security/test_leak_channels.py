"""Secret hunting on every channel a client can read, through the real engine, session and gateway.

Each game (every mode, every option value, from the engine's own table) has a host on the
WebSocket, a guest on the gRPC ``Connect`` stream and a bot; spectators on both gateway channels
and on the session's ``Subscribe`` and ``SubscribeMany``; a poller calling ``GetView`` (every
seat's token and a spectator's), ``GetRoom``, ``ListRooms``, ``GetResult`` and ``GetReplay``
during and after the game. The humans play random legal choices and drop their connection
mid-game, then ``resume`` from an older ``lastSeq`` (on the other channel or the same) so the
catch-up replays events; a spectator resumes too. After the game every gateway reader asks for
the replay and the room list. Every message any of them reads is searched, raw, for what
:mod:`tests.security.hunt` says that reader must not see at that seq. One game per combination in
CI; ``LEAK_CHANNELS_SLOW_RUNS`` (default 5) games each, with other plans, in ``make test-slow``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

import aiohttp
import grpc
import grpc.aio
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from hypothesis import strategies as st

from ninetynine.common.logging import configure_logging
from ninetynine.engine.convert import options_from_proto, options_to_proto
from ninetynine.engine.rules import Options
from ninetynine.engine.rules.options import CHOICES
from ninetynine.engine.v1 import game_pb2
from ninetynine.gateway.convert import client_from_json, server_json
from ninetynine.gateway.server import RunningGateway
from ninetynine.gateway.v1 import gateway_service_pb2 as gw
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.common.conftest import LogCapture
from tests.gateway.conftest import READ_TIMEOUT_S, Backend, WsClient, WsFactory
from tests.security.hunt import Hunt, Reader
from tests.security.test_fuzz_gateway import examples

EOF: Any = cast(Any, grpc.aio).EOF  # the end of a stream read with read(); untyped in grpc
SESSION = "/ninetynine.session.v1.SessionService/"
CONNECT = "/ninetynine.gateway.v1.GatewayService/Connect"
GAME_TIMEOUT_S = 90.0
POLL_EVERY_S = 0.1
SLOW_RUNS = int(os.environ.get("LEAK_CHANNELS_SLOW_RUNS", "5"))  # games per combination, make test-slow
MODES: tuple[str, ...] = tuple(cast(tuple[str, ...], CHOICES["mode"][1]))


def _combos() -> Iterator[Any]:
    """Per mode, as many games as the longest option list: game ``i`` takes every option's
    ``i``-th value (wrapping), so each value of each option is played in each mode."""
    rows = max(len(allowed) for attr, (_, allowed) in CHOICES.items() if attr != "mode")
    for mode in MODES:
        for i in range(rows):
            chosen = {attr: allowed[i % len(allowed)] for attr, (_, allowed) in CHOICES.items()}
            options = Options().with_changes(**{**chosen, "mode": mode})
            yield pytest.param(options, id=f"{mode}-{i}")


COMBOS = list(_combos())


@dataclass(frozen=True)
class Plan:
    """A game's random parts, drawn by hypothesis."""

    play_seed: int
    drop_after: int  # the humans drop their connection after reading this many messages …
    lag: float  # … and resume from the lastSeq they had after this fraction of them
    host_back_over: str  # the channel each comes back on
    guest_back_over: str
    watcher_drop_after: int


PLANS = st.builds(
    Plan,
    play_seed=st.integers(0, 2**32 - 1),
    drop_after=st.integers(4, 14),
    lag=st.floats(0.0, 0.9),
    host_back_over=st.sampled_from(["ws", "connect"]),
    guest_back_over=st.sampled_from(["ws", "connect"]),
    watcher_drop_after=st.integers(3, 14),
)


@cache
def _plans(count: int) -> list[Plan]:
    return cast(list[Plan], examples(PLANS, count))


# -- channels: every one keeps its reader, checks every message it reads --------------------------


class Channel(ABC):
    """A gateway connection (WebSocket or Connect) speaking the protocol's JSON messages."""

    def __init__(self, hunt: Hunt, reader: Reader) -> None:
        self.hunt, self.reader = hunt, reader
        self.backlog: deque[dict[str, Any]] = deque()
        self.last_seq = 0

    @abstractmethod
    async def send(self, message: dict[str, Any]) -> None: ...

    @abstractmethod
    async def _read(self) -> tuple[bytes | str, str, dict[str, Any]]:
        """(raw as received, its JSON text, the protocol JSON object)."""

    @abstractmethod
    async def close(self) -> None: ...

    async def _next(self) -> dict[str, Any]:
        raw, text, message = await self._read()
        seq = message["seq"] if message["type"] in ("event", "view", "snapshot") else None
        await self.hunt.check(self.reader, raw, text, seq)
        if seq is not None:
            self.last_seq = max(self.last_seq, seq)
        return message

    async def recv(self) -> dict[str, Any]:
        return self.backlog.popleft() if self.backlog else await self._next()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.send(message)
        while True:
            reply = await self._next()
            if reply.get("id") == message["id"]:
                return reply
            if reply["type"] == "error" and reply["reason"] == "RATE_LIMITED":
                # The seats play as fast as the server answers, past the connection's budget; a
                # frame over it is refused unread, so the refusal names no id. As a client should:
                # wait as told, then send again (a repeat of an answered request is answered again).
                await asyncio.sleep(int(reply["metadata"]["retryAfterMs"]) / 1000)
                await self.send(message)
                continue
            self.backlog.append(reply)

    async def bind(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["type"] == "resume":
            self.reader.tokens.add(message["token"])  # a token its holder sends is its own
        joined = await self.request(message)
        assert joined["type"] == "joined", joined
        self.reader.player_id = joined["playerId"]
        self.reader.tokens.add(self.hunt.token(joined["token"]))
        self.hunt.room_id = joined["roomId"]
        return joined


class WsChannel(Channel):
    """Frames read straight off the socket (the schema is other tests' business; here it would
    cost more than the whole game)."""

    def __init__(self, hunt: Hunt, reader: Reader, client: WsClient) -> None:
        super().__init__(hunt, reader)
        self.client = client

    async def send(self, message: dict[str, Any]) -> None:
        await self.client.send(message)

    async def _read(self) -> tuple[bytes | str, str, dict[str, Any]]:
        frame = await self.client.ws.receive(timeout=READ_TIMEOUT_S)
        if frame.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"expected a text frame, got {frame.type!r} {frame.data!r}")
        text = cast(str, frame.data)
        return text, text, json.loads(text)

    async def close(self) -> None:
        await self.client.ws.close()


class ConnectChannel(Channel):
    """The gRPC ``Connect`` stream, read without a deserializer: the bytes as they came, then
    parsed and rendered as the protocol's JSON (for the driver and the text search)."""

    def __init__(self, hunt: Hunt, reader: Reader, channel: grpc.aio.Channel) -> None:
        super().__init__(hunt, reader)
        method = channel.stream_stream(
            CONNECT, request_serializer=gw.ConnectRequest.SerializeToString, response_deserializer=None
        )
        self.call: Any = cast(Any, method)()

    async def send(self, message: dict[str, Any]) -> None:
        msg = client_from_json(message)
        if "id" in message:
            msg.id = str(message["id"])
        await self.call.write(gw.ConnectRequest(message=msg))

    async def _read(self) -> tuple[bytes | str, str, dict[str, Any]]:
        raw = await asyncio.wait_for(self.call.read(), READ_TIMEOUT_S)
        if raw is EOF:
            raise ConnectionError("the Connect stream ended")
        msg = gw.ConnectResponse.FromString(raw).message
        as_json = server_json(msg, msg.id or None)
        text = json.dumps(as_json, ensure_ascii=False) + json_format.MessageToJson(msg)
        return cast(bytes, raw), text, as_json

    async def close(self) -> None:
        self.call.cancel()


# -- the game --------------------------------------------------------------------------------------


def _finished(message: dict[str, Any]) -> bool:
    if message["type"] == "view":
        return bool(message["view"]["phase"] == "finished")
    return message["type"] == "event" and bool(message["event"]["type"] == "gameFinished")


def _choose(view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A random legal play; for the joker any number of its range."""
    action: dict[str, Any] = dict(rng.choice(view["legalPlays"])["action"])
    if "jokerValue" in action:
        joker = next(h for h in view["hand"] if h["card"]["id"] == action["cardId"])
        action["jokerValue"] = rng.randint(joker["jokerRange"]["min"], joker["jokerRange"]["max"])
    return action


@dataclass
class Table:
    """Everything one game needs: the servers, the hunt, a way to open either channel."""

    hunt: Hunt
    gateway: RunningGateway
    ws_client: WsFactory
    grpc_gateway: grpc.aio.Channel
    grpc_session: grpc.aio.Channel
    resumed_with_catch_up: list[str] = field(default_factory=list)

    async def open(self, kind: str, reader: Reader) -> Channel:
        if kind == "ws":
            return WsChannel(self.hunt, on_channel(reader, "ws"), await self.ws_client(self.gateway))
        return ConnectChannel(self.hunt, on_channel(reader, "connect"), self.grpc_gateway)

    async def resume(self, kind: str, old: Channel, token: str, after_seq: int) -> Channel:
        await old.close()
        channel = await self.open(kind, old.reader)
        await channel.bind({"type": "resume", "id": "resume", "token": token, "afterSeq": after_seq})
        channel.last_seq = after_seq
        return channel

    async def session_call(self, reader: Reader, name: str, request: Message, reply: type[Message]) -> None:
        """One unary session call, its raw reply (or refusal) checked for ``reader``."""
        method = self.grpc_session.unary_unary(
            SESSION + name, request_serializer=type(request).SerializeToString, response_deserializer=None
        )
        try:
            raw = cast(bytes, await method(request))
        except grpc.aio.AioRpcError as err:
            trailers: Any = err.trailing_metadata() or ()
            blob = b"".join(v if isinstance(v, bytes) else str(v).encode() for _, v in trailers)
            await self.hunt.check(reader, blob, f"{err.details()} {trailers!r}", None)
            return
        parsed = reply.FromString(raw)
        seq = getattr(parsed, "seq", None) if name == "GetView" else None
        await self.hunt.check(reader, raw, json_format.MessageToJson(parsed), seq)


def on_channel(reader: Reader, channel: str) -> Reader:
    """The same reader (its tokens kept) now reading ``channel``: the counts are per channel."""
    reader.channel = channel
    return reader


async def _seat(table: Table, channel: Channel, plan: Plan, rng: random.Random, back_over: str) -> None:
    """A human: plays random legal choices, drops once and resumes from an older lastSeq."""
    token = next(iter(channel.reader.tokens))
    room_id = table.hunt.room_id
    await channel.send({"type": "getReplay", "id": "early-replay", "roomId": room_id})  # not yet
    await channel.send({"type": "listRooms", "id": "early-list"})
    read, client_seq, acked, old_seq, dropped = 0, 0, 0, 0, False
    while True:
        message = await channel.recv()
        read += 1
        if _finished(message):
            break
        if read == max(1, int(plan.drop_after * plan.lag)):
            old_seq = channel.last_seq
        if message["type"] == "played":
            acked = max(acked, message["seq"])
        # Dropped once the seq moved past the one kept: which of the first reads are replies to
        # the early requests (no seq) depends on how the gateway's writes interleave them.
        if not dropped and read >= plan.drop_after and channel.last_seq > old_seq:
            dropped = True
            before = channel.last_seq
            channel = await table.resume(back_over, channel, token, old_seq)
            if old_seq < before:
                table.resumed_with_catch_up.append(channel.reader.name)
            continue
        view: dict[str, Any] = message.get("view", {})
        if message["type"] == "view" and view["myTurn"] and view["legalPlays"] and message["seq"] >= acked:
            client_seq += 1
            play = {"type": "play", "id": f"p{client_seq}", "clientSeq": client_seq, "moveSeq": view["seq"]}
            await channel.send({**play, "action": _choose(view, rng)})
    await _after_the_game(channel, room_id)


async def _after_the_game(channel: Channel, room_id: str) -> None:
    replay = await channel.request({"type": "getReplay", "id": "replay", "roomId": room_id})
    assert replay["type"] == "replay", replay
    rooms = await channel.request({"type": "listRooms", "id": "list"})
    assert rooms["type"] == "rooms", rooms
    await channel.close()


async def _watcher(table: Table, channel: Channel, plan: Plan) -> None:
    """A gateway spectator: reads to the end, drops and resumes once (from the start)."""
    token = next(iter(channel.reader.tokens))
    read = 0
    while not _finished(await channel.recv()):
        read += 1
        if read == plan.watcher_drop_after:
            kind = "connect" if isinstance(channel, WsChannel) else "ws"
            channel = await table.resume(kind, channel, token, 0)
    await _after_the_game(channel, table.hunt.room_id)


async def _subscriber(table: Table, reader: Reader, token: str) -> None:
    """A session ``Subscribe`` stream (unbatched), read to its end."""
    method = table.grpc_session.unary_stream(
        SESSION + "Subscribe",
        request_serializer=pb.SubscribeRequest.SerializeToString,
        response_deserializer=None,
    )
    async for raw in method(pb.SubscribeRequest(token=token, after_seq=0)):
        item = pb.SubscribeResponse.FromString(cast(bytes, raw))
        kind = item.WhichOneof("item")
        seq = getattr(item, kind).seq if kind in ("event", "view", "snapshot") else None
        await table.hunt.check(reader, cast(bytes, raw), json_format.MessageToJson(item), seq)
        if kind == "event" and item.event.game.WhichOneof("payload") == "game_finished":
            return


async def _subscriber_many(table: Table, reader: Reader, token: str) -> None:
    """One subscription on a session ``SubscribeMany`` stream, read to its end."""
    method = table.grpc_session.stream_stream(
        SESSION + "SubscribeMany",
        request_serializer=pb.SubscribeManyRequest.SerializeToString,
        response_deserializer=None,
    )
    call: Any = cast(Any, method)()
    opening = pb.OpenSubscription(id=7, request=pb.SubscribeRequest(token=token), accept_language="ko")
    await call.write(pb.SubscribeManyRequest(open=opening))
    try:
        while True:
            raw = await asyncio.wait_for(call.read(), READ_TIMEOUT_S)
            assert raw is not EOF, "SubscribeMany ended before its subscription"
            message = pb.SubscribeManyResponse.FromString(raw)
            seqs = [
                s
                for item in message.items
                if item.HasField("response")
                for s in [e.seq for e in item.response.batch.events] + [item.response.batch.view.seq]
            ]
            seq = max(seqs) if seqs else None
            await table.hunt.check(reader, raw, json_format.MessageToJson(message), seq)
            if any(item.HasField("end") for item in message.items) or table.hunt.finished_at <= (seq or 0):
                return
    finally:
        call.cancel()


async def _poller(table: Table, seats: list[Reader], watcher: Reader, done: asyncio.Event) -> None:
    """GetView for each token, GetRoom, ListRooms, GetResult, GetReplay: during the game and after."""
    anonymous = Reader("anonymous", "")
    room = pb.GetRoomRequest(room_id=table.hunt.room_id)
    while True:
        final = done.is_set()
        for reader in [*seats, watcher]:
            reader.channel = "getView"
            token = next(iter(reader.tokens))
            await table.session_call(reader, "GetView", pb.GetViewRequest(token=token), pb.GetViewResponse)
        for name, request, reply in (
            ("GetRoom", room, pb.GetRoomResponse),
            ("ListRooms", pb.ListRoomsRequest(page_size=100), pb.ListRoomsResponse),
            ("GetResult", pb.GetResultRequest(room_id=table.hunt.room_id), pb.GetResultResponse),
            ("GetReplay", pb.GetReplayRequest(room_id=table.hunt.room_id), pb.GetReplayResponse),
        ):
            anonymous.channel = name[0].lower() + name[1:]
            await table.session_call(anonymous, name, request, reply)
        if final:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), POLL_EVERY_S)


@pytest.fixture
async def table(
    backend: Backend, gateway: RunningGateway, ws_client: WsFactory, tmp_path: Path
) -> AsyncIterator[Table]:
    hunt = Hunt(f"sqlite:///{tmp_path}/rooms.db")  # the backend fixture's store
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as to_gateway,
        grpc.aio.insecure_channel(backend.session_target) as to_session,
    ):
        yield Table(hunt, gateway, ws_client, to_gateway, to_session)
    await hunt.close()


async def _play_game(table: Table, options: Options, plan: Plan) -> None:
    hunt = table.hunt
    rng = random.Random(plan.play_seed)
    host = await table.open("ws", Reader("host", "ws"))
    options_json = options.to_mapping()
    await host.bind({"type": "createRoom", "id": "c", "name": "호스트", "seats": 2, "options": options_json})
    room_id = hunt.room_id
    guest = await table.open("connect", Reader("guest", "connect"))
    await guest.bind({"type": "joinRoom", "id": "j", "roomId": room_id, "name": "Guest"})

    watchers = [
        await table.open("ws", Reader("ws spectator", "ws")),
        await table.open("connect", Reader("connect spectator", "connect")),
    ]
    for watcher in watchers:
        await watcher.bind({"type": "spectate", "id": "s", "roomId": room_id})
    spectated = pb.SpectateResponse.FromString(
        await table.grpc_session.unary_unary(
            SESSION + "Spectate",
            request_serializer=pb.SpectateRequest.SerializeToString,
            response_deserializer=None,
        )(pb.SpectateRequest(room_id=room_id))
    )
    spectator_token = hunt.token(spectated.spectator_token)
    session_watcher = Reader("session spectator", "subscribe", tokens={spectator_token})
    many_watcher = Reader("session spectator", "subscribeMany", tokens={spectator_token})
    host_token = next(iter(host.reader.tokens))
    many_seat = Reader(
        "host's SubscribeMany", "subscribeMany", player_id=host.reader.player_id, tokens={host_token}
    )
    seats_polled = [
        Reader("host", "getView", host.reader.player_id, set(host.reader.tokens)),
        Reader("guest", "getView", guest.reader.player_id, set(guest.reader.tokens)),
    ]
    watcher_polled = Reader("session spectator", "getView", tokens={spectator_token})

    started = await host.request({"type": "startGame", "id": "g"})
    assert started["type"] == "room" and started["room"]["phase"] == "playing", started
    done = asyncio.Event()
    poller = asyncio.create_task(_poller(table, seats_polled, watcher_polled, done))
    try:
        await asyncio.wait_for(
            asyncio.gather(
                _seat(table, host, plan, random.Random(rng.random()), plan.host_back_over),
                _seat(table, guest, plan, random.Random(rng.random()), plan.guest_back_over),
                *(_watcher(table, w, plan) for w in watchers),
                _subscriber(table, session_watcher, spectator_token),
                _subscriber_many(table, many_watcher, spectator_token),
                _subscriber_many(table, many_seat, host_token),
            ),
            GAME_TIMEOUT_S,
        )
    except TimeoutError:
        pytest.fail(
            f"the game stalled (a read waited {READ_TIMEOUT_S} s, or the game {GAME_TIMEOUT_S} s)"
            f" at room seq {hunt.max_seq}; the last messages each reader read:\n{_last_read(hunt)}"
        )
    finally:
        done.set()
        await poller
    await hunt.refresh()
    assert hunt.finished_at <= hunt.max_seq, "the game was played to its end"
    hunt.recheck_tokens()
    _the_hunt_bites(hunt)


def _last_read(hunt: Hunt, per_reader: int = 4) -> str:
    """The last few messages each reader read (shortened), for a stalled game's report."""
    last: dict[str, deque[str]] = {}
    for seen in hunt.seen:
        if seen.reader.channel in ("ws", "connect", "subscribe", "subscribeMany"):
            # The channel a reader reads now (a seat that resumed shows the one it came back on).
            kept = last.setdefault(f"{seen.reader.name} ({seen.reader.channel})", deque(maxlen=per_reader))
            kept.append(f"  seq {seen.seq}: {' '.join(seen.text.split())[:300]}")
    return "\n".join(f"{name}:\n" + "\n".join(lines) for name, lines in last.items())


def _the_hunt_bites(hunt: Hunt) -> None:
    """The seats' own messages, as if a spectator had read them, show hands and tokens."""
    stranger = Reader("stranger", "check")
    found = set()
    for seen in hunt.seen:
        if seen.reader.player_id is not None and seen.reader.channel in ("ws", "connect"):
            found |= {leak.split()[0] for leak in hunt.leaks(stranger, seen.raw, seen.text, seen.seq)}
    assert found >= {"card", "token"}, found


CHANNELS = (
    "ws",
    "connect",
    "subscribe",
    "subscribeMany",
    "getView",
    "getRoom",
    "listRooms",
    "getResult",
    "getReplay",
)


@pytest.mark.parametrize(
    "rerun", [0, *(pytest.param(r, marks=pytest.mark.slow, id=f"again{r}") for r in range(1, SLOW_RUNS))]
)
@pytest.mark.parametrize(
    ("options", "index"), [pytest.param(*p.values, i, id=p.id) for i, p in enumerate(COMBOS)]
)
async def test_no_channel_shows_a_reader_what_is_hidden_from_it(
    table: Table, options: Options, index: int, rerun: int
) -> None:
    plans = _plans(len(COMBOS) * (SLOW_RUNS if rerun else 1))
    await _play_game(table, options, plans[(index + rerun * len(COMBOS)) % len(plans)])
    assert table.resumed_with_catch_up, "a seat resumed from an older lastSeq"
    counts = table.hunt.checked
    assert all(counts[c] > 0 for c in CHANNELS), f"every channel was read: {dict(counts)}"
    assert counts["ws"] + counts["connect"] > 50, dict(counts)


def test_every_mode_of_the_protocol_is_played_by_the_hunt() -> None:
    """The games above come from the engine's option table; every ``Mode`` of the protocol must be
    one of them (a mode added to the proto but not to the engine's table fails here)."""
    numbers = [v.number for v in game_pb2.Mode.DESCRIPTOR.values if v.number != game_pb2.MODE_UNSPECIFIED]
    engine_modes = {options_from_proto(game_pb2.Options(mode=cast(Any, n))).mode for n in numbers}
    assert engine_modes == set(MODES), (engine_modes, MODES)
    assert sorted(int(options_to_proto(Options(mode=m)).mode) for m in MODES) == sorted(numbers)
    assert {p.values[0].mode for p in COMBOS} == set(MODES)
    for attr, (_, allowed) in CHOICES.items():
        for mode in MODES:
            played = {getattr(p.values[0], attr) for p in COMBOS if p.values[0].mode == mode}
            assert attr == "mode" or played == set(allowed), (mode, attr, played)


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    """Every service's log lines (they run in this process), at debug level."""
    capture = LogCapture()
    configure_logging("services", level="debug", json_logs=True, stream=capture)  # type: ignore[arg-type]
    yield capture
    configure_logging("gateway", json_logs=True)


async def test_a_revoked_seat_reads_no_more_of_its_hand_on_any_stream(
    table: Table, logs: LogCapture, capfd: pytest.CaptureFixture[str]
) -> None:
    """The host leaves a running game on one connection (its token is revoked, the seat is
    auto-played): its other streams — a Connect stream resumed with the same token, session
    Subscribe and SubscribeMany streams — are a spectator's from that ``playerLeft`` on."""
    hunt = table.hunt
    host = await table.open("ws", Reader("host", "ws"))
    await host.bind({"type": "createRoom", "id": "c", "name": "호스트", "seats": 2})
    assert (await host.request({"type": "addBot", "id": "b"}))["type"] == "room"
    token = next(iter(host.reader.tokens))
    twin = await table.open("connect", Reader("host's other device", "connect"))
    await twin.bind({"type": "resume", "id": "r", "token": token, "afterSeq": 0})
    subscribe = Reader("host's Subscribe", "subscribe", host.reader.player_id, {token})
    many = Reader("host's SubscribeMany", "subscribeMany", host.reader.player_id, {token})
    started = await host.request({"type": "startGame", "id": "g"})
    assert started["type"] == "room", started

    async def read_on(channel: Channel) -> None:
        while not _finished(await channel.recv()):
            pass

    async def until_closed(reading: Awaitable[None]) -> None:
        """Reads until the game ends or the server ends the stream (either is fine here)."""
        with contextlib.suppress(ConnectionError, TimeoutError, grpc.aio.AioRpcError):
            await reading

    streams = [
        asyncio.create_task(until_closed(_subscriber(table, subscribe, token))),
        asyncio.create_task(until_closed(_subscriber_many(table, many, token))),
        asyncio.create_task(until_closed(read_on(twin))),
    ]
    while (await host.recv())["type"] != "view":
        pass  # the host has seen its hand
    assert (await host.request({"type": "leaveRoom", "id": "l"}))["type"] == "left"
    await asyncio.wait_for(asyncio.gather(*streams), GAME_TIMEOUT_S)
    after = pb.GetViewRequest(token=token)
    await table.session_call(
        Reader("host, revoked", "getView", host.reader.player_id, {token}),
        "GetView",
        after,
        pb.GetViewResponse,
    )
    await hunt.refresh()
    assert host.reader.player_id in hunt.left, "the seat left the running game"
    assert not hunt.in_logs(logs.lines), "a token in a log line"
    out, err = capfd.readouterr()
    assert not hunt.in_logs([{"text": out + err}]), "a token in the output"


async def test_no_token_in_any_log_line(
    table: Table, logs: LogCapture, capfd: pytest.CaptureFixture[str]
) -> None:
    """A whole game on every channel (joins, resumes by token, spectators, GetView by token): no
    service log line names a token's secret or its hash."""
    await _play_game(table, Options(hand_size=3, refill=False), _plans(len(COMBOS))[0])  # a short game
    await table.hunt.refresh()
    assert len(table.hunt.tokens) >= 5 and len(logs.lines) > 100, (table.hunt.tokens, len(logs.lines))
    leaked = table.hunt.in_logs(logs.lines)
    assert not leaked, leaked[:3]
    out, err = capfd.readouterr()
    assert not table.hunt.in_logs([{"text": out + err}]), "a token in the output"


async def test_the_search_finds_each_encoding_and_only_whole_ids(tmp_path: Path) -> None:
    """The hunt's search on its own: card ids as JSON runs and as protobuf strings (``N10-1`` is
    not ``N10-12``), the seed as decimal, varint and fixed64, tokens but the reader's own."""
    hunt = Hunt(f"sqlite:///{tmp_path}/unused.db")
    hunt.deck, hunt.words = {"N10-1", "N10-12", "AS-2"}, {8812734412}
    hunt.tokens = {"R1.mine-secret-0123456789", "R1.theirs_secret-987654321"}
    me = Reader("me", "check", "p1", {"R1.mine-secret-0123456789"})
    hunt.held = {"p1": {"AS-2": 1}}
    view = gw.ServerMessage(view=gw.ViewPush(seq=5))
    view.view.view.hand.add().card.id = "N10-12"
    raw = view.SerializeToString()
    assert hunt.leaks(me, raw, "", 5) == {"card N10-12 (bytes)"}
    assert hunt.leaks(me, "", '{"cardId": "N10-12", "x": "AS-2"}', 5) == {"card N10-12"}
    assert hunt.leaks(me, "", "카드N10-1을 R1.mine-secret-0123456789", 5) == {"card N10-1"}
    seed = pb.GetResultResponse(seed=8812734412).SerializeToString()
    assert hunt.leaks(me, seed, '"seed": "8812734412"', 5) == {
        "seed/rng 8812734412",
        "seed/rng 8812734412 (bytes)",
    }
    assert hunt.leaks(me, (8812734412).to_bytes(8, "little"), "", 5) == {"seed/rng 8812734412 (bytes)"}
    assert hunt.leaks(me, b"", "theirs_secret-987654321", 5) == {"token theirs_s…"}
    hunt.finished_at = 5
    assert hunt.leaks(me, seed + raw, "N10-12 8812734412", 5) == set(), "all is revealed at the end"
    await hunt.close()

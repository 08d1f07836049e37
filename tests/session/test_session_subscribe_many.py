"""SubscribeMany: many subscriptions on one stream carry what their own batched Subscribe streams
would, each in order; one failing subscription ends alone with its status; closing one (or the
whole stream) ends its presence like a hung-up Subscribe does."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from ninetynine.session import rooms
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.helpers import eventually, is_korean, sample, wait_finished


class Many:
    """A SubscribeMany call: open/close subscriptions, collect items per subscription id."""

    def __init__(self, stub: object) -> None:
        self.requests: asyncio.Queue[pb.SubscribeManyRequest | None] = asyncio.Queue()
        self.items: dict[int, list[pb.SubscribeResponse]] = defaultdict(list)
        self.ends: dict[int, pb.SubscriptionEnd] = {}
        self.messages = 0
        self.empty = 0  # heartbeats of the call
        self.item_heartbeats = 0
        self.call = stub.SubscribeMany(self._requests())  # type: ignore[attr-defined]
        self.reader = asyncio.create_task(self._read())

    async def _requests(self) -> AsyncIterator[pb.SubscribeManyRequest]:
        while (request := await self.requests.get()) is not None:
            yield request

    async def _read(self) -> None:
        async for message in self.call:
            self.messages += 1
            self.empty += not message.items
            for item in message.items:
                if item.WhichOneof("item") == "end":
                    self.ends[item.id] = item.end
                elif item.response.WhichOneof("item") == "heartbeat":
                    self.item_heartbeats += 1
                else:
                    self.items[item.id].append(item.response)

    def open(self, sub_id: int, token: str, after_seq: int = 0, lang: str = "") -> None:
        request = pb.SubscribeRequest(token=token, after_seq=after_seq, batched=True)
        spec = pb.OpenSubscription(id=sub_id, request=request, accept_language=lang)
        self.requests.put_nowait(pb.SubscribeManyRequest(open=spec))

    def close(self, sub_id: int) -> None:
        self.requests.put_nowait(pb.SubscribeManyRequest(close=sub_id))

    def cancel(self) -> None:
        self.call.cancel()
        self.reader.cancel()


async def _one_stream(stub: object, token: str, into: list[pb.SubscribeResponse]) -> None:
    stream = stub.Subscribe(pb.SubscribeRequest(token=token, batched=True))  # type: ignore[attr-defined]
    try:
        async for item in stream:
            if item.WhichOneof("item") != "heartbeat":
                into.append(item)
    finally:
        stream.cancel()


def _events(items: list[pb.SubscribeResponse]) -> list[pb.RoomEvent]:
    return [event for item in items if item.WhichOneof("item") == "batch" for event in item.batch.events]


def _views(items: list[pb.SubscribeResponse]) -> dict[int, pb.ViewUpdate]:
    return {
        item.batch.view.seq: item.batch.view
        for item in items
        if item.WhichOneof("item") == "batch" and item.batch.HasField("view")
    }


async def test_one_stream_carries_what_each_subscribe_would(make_stack) -> None:
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    c = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="C"))
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    tokens = [a.seat_token, b.seat_token, c.seat_token, spectator.spectator_token]
    many = Many(stack.stub)
    single: dict[int, list[pb.SubscribeResponse]] = {}
    tasks = []
    for sub_id, token in enumerate(tokens, start=1):
        many.open(sub_id, token, lang="en" if sub_id == 2 else "")
        single[sub_id] = []
        # The plain streams use each subscription's language too, so their views compare equal.
        tasks.append(asyncio.create_task(_one_stream(stack.stub, token, single[sub_id])))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    room = await wait_finished(stack.stub, a.room.room_id)

    async def caught_up() -> bool:
        return all((_events(many.items[i]) or [pb.RoomEvent()])[-1].seq >= room.last_seq for i in range(1, 5))

    await eventually(caught_up, timeout=30)
    await asyncio.sleep(0.2)
    for task in tasks:
        task.cancel()
    many.cancel()

    moves = 0
    for sub_id in range(1, 5):
        got = many.items[sub_id]
        events = _events(got)
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), "contiguous, in order"
        # The plain streams opened a moment later and see the same room from then on; compare the
        # events both have (presence changes of the other streams differ by timing, not content).
        plain = {e.seq: e for e in _events(single[sub_id])}
        both = [e for e in events if e.seq in plain and e.WhichOneof("kind") != "presence_changed"]
        assert both and all(e == plain[e.seq] for e in both), f"subscription {sub_id} differs"
        views = _views(got)
        assert room.last_seq in views, "the final view arrives"
        if sub_id != 2:  # the English subscription's views are built in another language
            plain_views = _views(single[sub_id])
            common = [seq for seq in views if seq in plain_views]
            assert common and all(views[s] == plain_views[s] for s in common)
        moves = max(moves, sum(1 for e in events if e.WhichOneof("kind") == "game"))
    assert not many.ends, "nothing ended: the game is over but subscriptions stay open"
    # Several subscriptions' items shared messages (4 subscribers of each move, fewer messages).
    items = sum(len(v) for v in many.items.values())
    assert many.messages < items, (many.messages, items)
    assert moves > 0


async def test_a_bad_subscription_ends_alone_with_its_status(make_stack) -> None:
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    many = Many(stack.stub)
    many.open(7, a.room.room_id + ".not-a-real-secret")
    many.open(8, a.seat_token)
    many.open(0, a.seat_token)  # ids start at 1

    async def ended() -> bool:
        return 7 in many.ends and 0 in many.ends and bool(many.items[8])

    await eventually(ended)
    end = many.ends[7]
    assert end.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    assert is_korean(end.message)
    status = status_pb2.Status.FromString(end.status_details)
    assert status.code == end.code and len(status.details) == 1
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("INVALID_TOKEN", "session.ninetynine")
    zero = status_pb2.Status.FromString(many.ends[0].status_details)
    zero.details[0].Unpack(info)
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert (many.ends[0].code, info.reason) == (invalid, "INVALID_SUBSCRIPTION")

    # The good subscription goes on: a join shows up on it.
    await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))

    async def joined() -> bool:
        return any(e.WhichOneof("kind") == "player_joined" and e.seq > 1 for e in _events(many.items[8]))

    await eventually(joined)
    assert 8 not in many.ends
    many.cancel()


async def test_closing_a_subscription_or_the_stream_ends_presence(make_stack) -> None:
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    c = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="C"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    watcher = Many(stack.stub)
    watcher.open(1, a.seat_token)
    many = Many(stack.stub)
    many.open(1, b.seat_token)
    many.open(2, c.seat_token)

    def presence() -> dict[str, bool]:
        seen: dict[str, bool] = {}
        for e in _events(watcher.items[1]):
            if e.WhichOneof("kind") == "presence_changed":
                seen[e.presence_changed.player_id] = e.presence_changed.connected
        return seen

    async def both_connected() -> bool:
        return presence().get(b.player_id) is True and presence().get(c.player_id) is True

    await eventually(both_connected)
    many.close(1)

    async def b_gone() -> bool:
        return presence().get(b.player_id) is False

    await eventually(b_gone)
    assert presence()[c.player_id] is True, "closing one subscription leaves the others"
    many.cancel()

    async def c_gone() -> bool:
        return presence().get(c.player_id) is False

    await eventually(c_gone)
    watcher.cancel()


async def test_a_seat_shows_as_gone_even_when_its_closing_stream_is_cancelled_again(make_stack) -> None:
    """A client's cancel reaches the server twice (its requests end, its handler is cancelled);
    the second must not cut short the record that tells the table the seat is gone."""
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    watcher = Many(stack.stub)
    watcher.open(1, a.seat_token)
    room_id, digest = a.room.room_id, rooms.token_digest(b.seat_token)
    presence = stack.rooms.presence
    await presence.opened(room_id, b.player_id, digest)

    def b_connected() -> bool | None:
        seen = None
        for e in _events(watcher.items[1]):
            if e.WhichOneof("kind") == "presence_changed" and e.presence_changed.player_id == b.player_id:
                seen = e.presence_changed.connected
        return seen

    async def b_here() -> bool:
        return b_connected() is True

    await eventually(b_here)
    async with stack.rooms.cache.lock(room_id):  # the room is busy: the closing record waits
        closing = asyncio.create_task(presence.closed(room_id, b.player_id, digest, record=True))
        await asyncio.sleep(0.05)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing

    async def b_gone() -> bool:
        return b_connected() is False

    await eventually(b_gone)
    watcher.cancel()


async def test_an_idle_call_gets_one_heartbeat_not_one_per_subscription(make_stack) -> None:
    stack = await make_stack(time_scale=1.0)  # heartbeats every 0.5 s in test stacks
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=4))
    tokens = [a.seat_token]
    for name in ("B", "C"):
        joined = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name=name))
        tokens.append(joined.seat_token)
    many = Many(stack.stub)
    for sub_id, token in enumerate(tokens, start=1):
        many.open(sub_id, token)

    async def beating() -> bool:
        return many.empty >= 3

    await eventually(beating, timeout=10)
    assert many.item_heartbeats == 0, "subscriptions on a shared call send no heartbeats of their own"
    assert all(many.items[i] for i in (1, 2, 3)), "the subscriptions are live"
    many.cancel()


async def test_moves_watched_only_through_shared_calls_are_timed_to_fan_out(make_stack) -> None:
    # Subscriptions on a shared call read the store's tail directly, so they may see a move's
    # events before the committing coroutine runs again; the fan-out clock must already run.
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    many = Many(stack.stub)
    many.open(1, a.seat_token)
    many.open(2, b.seat_token)
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    room = await wait_finished(stack.stub, a.room.room_id)

    async def caught_up() -> bool:
        return bool(many.items[1]) and _events(many.items[1])[-1].seq >= room.last_seq

    await eventually(caught_up, timeout=30)
    many.cancel()
    name = "ninetynine_session_move_duration_seconds_count"
    durable = sum(
        sample(stack.registry, name, {"mode": "kr-product", "source": s, "stage": "durable"})
        for s in ("player", "timeout", "bot")
    )
    fanout = sum(
        sample(stack.registry, name, {"mode": "kr-product", "source": s, "stage": "fanout"})
        for s in ("player", "timeout", "bot")
    )
    assert durable > 0 and fanout == durable, (durable, fanout)

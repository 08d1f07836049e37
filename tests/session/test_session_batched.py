"""A batched Subscribe (one ``batch`` item per move, assembled from pre-serialized parts) carries
exactly what the unbatched stream does: the same filtered events in the same order, each move's
view after it, for players (own hand, hidden stand-ins for others' private events) and spectators,
live and when catching up from ``after_seq``."""

from __future__ import annotations

import asyncio

from ninetynine.session.subscriptions import batch_end
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.helpers import eventually, wait_finished


def _flatten(items: list[pb.SubscribeResponse]) -> tuple[list[pb.RoomEvent], list[pb.ViewUpdate]]:
    """Events and views of an unbatched stream, or of a batched one taken apart."""
    events: list[pb.RoomEvent] = []
    views: list[pb.ViewUpdate] = []
    for item in items:
        which = item.WhichOneof("item")
        if which == "batch":
            events.extend(item.batch.events)
            if item.batch.HasField("view"):
                views.append(item.batch.view)
        elif which == "event":
            events.append(item.event)
        elif which == "view":
            views.append(item.view)
    return events, views


async def _collect(
    stub: object, token: str, after_seq: int, batched: bool, into: list[pb.SubscribeResponse]
) -> None:
    request = pb.SubscribeRequest(token=token, after_seq=after_seq, batched=batched)
    stream = stub.Subscribe(request)  # type: ignore[attr-defined]
    try:
        async for item in stream:
            if item.WhichOneof("item") != "heartbeat":
                into.append(item)
    finally:
        stream.cancel()


def _last_seq(items: list[pb.SubscribeResponse]) -> int:
    events, _ = _flatten(items)
    return events[-1].seq if events else 0


async def test_batched_stream_carries_the_same_events_and_views(make_stack) -> None:
    # Every turn times out fast (time_scale 0.02), so a whole game plays itself out.
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    c = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="C"))
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    tokens = [a.seat_token, b.seat_token, c.seat_token, spectator.spectator_token]
    streams: dict[tuple[str, bool], list[pb.SubscribeResponse]] = {}
    tasks = []
    for token in tokens:
        for batched in (False, True):
            items = streams[token, batched] = []
            tasks.append(asyncio.create_task(_collect(stack.stub, token, 0, batched, items)))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    room = await wait_finished(stack.stub, a.room.room_id)

    async def all_caught_up() -> bool:
        return all(_last_seq(items) >= room.last_seq for items in streams.values())

    await eventually(all_caught_up, timeout=30)
    await asyncio.sleep(0.2)  # the view after the last event
    for task in tasks:
        task.cancel()

    private_seen = 0
    for token in tokens:
        plain_events, plain_views = _flatten(streams[token, False])
        batched_items = streams[token, True]
        batch_events, batch_views = _flatten(batched_items)
        assert batch_events == plain_events, f"events differ for {token[:12]}"
        assert [e.seq for e in batch_events] == list(range(1, len(batch_events) + 1))
        # A view is skipped when a newer move is already stored by the time it is built, so
        # which versions get one is timing; the ones both streams got must be equal, and both
        # end with the final one.
        plain_by_seq = {view.seq: view for view in plain_views}
        common = [view for view in batch_views if view.seq in plain_by_seq]
        assert common and all(view == plain_by_seq[view.seq] for view in common), (
            f"views differ for {token[:12]}"
        )
        assert batch_views[-1] == plain_views[-1] and batch_views[-1].seq == room.last_seq
        for item in batched_items:
            assert item.WhichOneof("item") == "batch"
            ends = [event.batch_end for event in item.batch.events]
            assert ends[-1] and not any(ends[:-1]), "one move per batch, ending at its batch_end"
            if item.batch.HasField("view"):
                assert item.batch.view.seq == item.batch.events[-1].seq, "the view is of its own move"
        private_seen += sum(1 for e in plain_events if e.WhichOneof("kind") == "hidden")
    assert private_seen > 0, "some events were private to one player: others got hidden stand-ins"

    # Catching up after the end gives the same events in batches, and views only from the end on.
    for token in tokens:
        replayed: list[pb.SubscribeResponse] = []
        task = asyncio.create_task(_collect(stack.stub, token, 0, True, replayed))

        async def replay_done(items: list[pb.SubscribeResponse] = replayed) -> bool:
            return _last_seq(items) >= room.last_seq

        await eventually(replay_done, timeout=10)
        await asyncio.sleep(0.1)
        task.cancel()
        events, views = _flatten(replayed)
        live = _flatten(streams[token, True])[0]
        # Afterwards come only presence changes (the live streams were closed, this one opened).
        assert events[: len(live)] == live
        assert all(e.WhichOneof("kind") == "presence_changed" for e in events[len(live) :])
        assert views and all(v.seq >= room.last_seq for v in views), "no views for moves caught up on"


async def test_batched_resume_after_a_gap_starts_with_a_snapshot_and_a_view(make_stack) -> None:
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    items: list[pb.SubscribeResponse] = []
    task = asyncio.create_task(_collect(stack.stub, a.seat_token, 10_000, True, items))

    async def two_items() -> bool:
        return len(items) >= 2

    await eventually(two_items)
    task.cancel()
    assert items[0].WhichOneof("item") == "snapshot"
    assert items[1].WhichOneof("item") == "batch"
    assert not items[1].batch.events and items[1].batch.view.view.hand


def test_batch_end_is_read_from_the_serialized_event() -> None:
    for end in (False, True):
        for event in (
            pb.RoomEvent(seq=1, at_ms=5, batch_end=end),
            pb.RoomEvent(seq=300, at_ms=1_800_000_000_000, batch_end=end, hidden=pb.Hidden()),
            pb.RoomEvent(seq=2**40, batch_end=end, player_left=pb.PlayerLeft(player_id="p" * 200)),
        ):
            assert batch_end(event.SerializeToString()) is end

"""Whole games through the real session service: humans, bots and timeouts mixed."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from ninetynine.common.errors import error_info
from ninetynine.engine.v1 import game_pb2, state_pb2
from ninetynine.session.v1 import session_service_pb2 as pb


async def _next_view(stream, until_seq: int = 0) -> pb.ViewUpdate:
    async for item in stream:
        if item.HasField("view") and item.view.seq >= until_seq:
            view: pb.ViewUpdate = item.view
            return view
    raise AssertionError("stream ended")


async def test_human_plays_a_full_game_against_two_bots(make_stack) -> None:
    stack = await make_stack()
    created = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(
            name="지호", options=game_pb2.Options(mode=game_pb2.MODE_KR_PRODUCT), max_seats=3
        )
    )
    token = created.seat_token
    room_id = created.room.room_id
    for _ in range(2):
        await stack.stub.AddBot(pb.AddBotRequest(token=token))
    started = await stack.stub.StartGame(pb.StartGameRequest(token=token))
    assert started.room.phase == pb.ROOM_PHASE_PLAYING

    stream = stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0))
    seen: list[int] = []
    client_seq = 0
    finished = False
    async for item in stream:
        if item.HasField("event"):
            seen.append(item.event.seq)
            continue
        if not item.HasField("view") or not item.view.HasField("view"):
            continue
        view = item.view.view
        if view.phase == state_pb2.PHASE_FINISHED:
            finished = True
            break
        if view.my_turn and view.legal_plays:
            client_seq += 1
            reply = await stack.stub.Play(
                pb.PlayRequest(token=token, client_seq=client_seq, action=view.legal_plays[0].action)
            )
            assert reply.seq >= item.view.seq
    stream.cancel()
    assert finished
    assert seen == list(range(1, len(seen) + 1)), "events arrive contiguous, without gaps or repeats"
    result = await stack.stub.GetResult(pb.GetResultRequest(room_id=room_id))
    assert len(result.result.ranking) == 3
    assert result.result.summary.startswith("끝까지 살아남은 사람은")


async def test_timeouts_play_for_an_absent_player_and_the_game_ends(make_stack) -> None:
    stack = await make_stack(time_scale=0.005)  # 15 s turns become 75 ms
    # Two lives each: the game lasts long enough for three timeouts in a row, whatever the deal.
    a = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=3, options=game_pb2.Options(lives=2))
    )
    await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.AddBot(pb.AddBotRequest(token=a.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    # Nobody human acts: every human turn runs on the deadline, the bot plays its own.
    for _ in range(400):
        room = (await stack.stub.GetRoom(pb.GetRoomRequest(room_id=a.room.room_id))).room
        if room.phase == pb.ROOM_PHASE_FINISHED:
            break
        await asyncio.sleep(0.05)
    assert room.phase == pb.ROOM_PHASE_FINISHED
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=a.room.room_id))
    sources = {m.source for m in replay.moves}
    assert sources == {"timeout", "bot"}
    timeouts = [e.timeout_applied for e in replay.events if e.HasField("timeout_applied")]
    assert timeouts and max(t.consecutive for t in timeouts) >= 3


async def test_duplicate_client_seq_applies_once_and_older_is_refused(make_stack) -> None:
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = {}
    for token in (a.seat_token, b.seat_token):
        views[token] = (await stack.stub.GetView(pb.GetViewRequest(token=token))).view
    mover = next(t for t, v in views.items() if v.my_turn)
    action = views[mover].legal_plays[0].action
    first = await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=5, action=action))
    again = await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=5, action=action))
    assert again.duplicate and not first.duplicate
    assert (again.seq, again.total) == (first.seq, first.total)
    after = (await stack.stub.GetView(pb.GetViewRequest(token=mover))).view
    assert after.seq == views[mover].seq + 1, "the second request applied nothing"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.stub.Play(pb.PlayRequest(token=mover, client_seq=4, action=action))
    assert err.value.code() == grpc.StatusCode.ABORTED
    info = error_info(err.value)
    assert info is not None and info.reason == "STALE"


async def test_reconnect_replays_exactly_the_missed_events(make_stack) -> None:
    stack = await make_stack(bot_think_ms=5)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=4))
    for _ in range(3):
        await stack.stub.AddBot(pb.AddBotRequest(token=a.seat_token))
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    await asyncio.sleep(0.3)
    first = stack.stub.Subscribe(pb.SubscribeRequest(token=spectator.spectator_token, after_seq=0))
    got: list[int] = []
    async for item in first:
        if item.HasField("event"):
            got.append(item.event.seq)
            if len(got) == 10:
                break
    first.cancel()
    await asyncio.sleep(0.2)
    second = stack.stub.Subscribe(pb.SubscribeRequest(token=spectator.spectator_token, after_seq=got[-1]))
    async for item in second:
        if item.HasField("event"):
            got.append(item.event.seq)
            if len(got) == 25:
                break
    second.cancel()
    assert got == list(range(1, 26))


async def test_spectator_cannot_act_and_never_sees_a_hand(make_stack) -> None:
    stack = await make_stack()
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    spectator = await stack.stub.Spectate(pb.SpectateRequest(room_id=a.room.room_id))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    view = (await stack.stub.GetView(pb.GetViewRequest(token=spectator.spectator_token))).view
    assert not view.hand and not view.legal_plays and not view.HasField("seed")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.stub.Play(
            pb.PlayRequest(
                token=spectator.spectator_token, client_seq=1, action=game_pb2.Action(card_id="N1-1")
            )
        )
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # A's hand never reaches B's or the spectator's stream.
    a_hand = {c.card.id for c in (await stack.stub.GetView(pb.GetViewRequest(token=a.seat_token))).view.hand}
    for token in (b.seat_token, spectator.spectator_token):
        stream = stack.stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0))
        async for item in stream:
            text = str(item)
            assert not any(f'"{cid}"' in text and "hand_dealt" in text for cid in a_hand)
            if item.HasField("event") and item.event.HasField("game"):
                game = item.event.game
                assert not (game.HasField("hand_dealt") and game.player_id == "p1")
            if item.HasField("view"):
                assert {c.card.id for c in item.view.view.hand}.isdisjoint(a_hand)
                break
        stream.cancel()
    # Another seat's token or a made-up one cannot act for A.
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.stub.Play(
            pb.PlayRequest(
                token=f"{a.room.room_id}.{'x' * 43}", client_seq=1, action=game_pb2.Action(card_id="N1-1")
            )
        )
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_rooms_gauge_counts_the_store_by_phase(make_stack) -> None:
    stack = await make_stack()
    for _ in range(3):
        await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    started = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="B", max_seats=2))
    await stack.stub.AddBot(pb.AddBotRequest(token=started.seat_token))
    await stack.stub.StartGame(pb.StartGameRequest(token=started.seat_token))
    gauge = asyncio.create_task(stack.rooms.run_room_gauge(every_s=0.05))
    await asyncio.sleep(0.3)
    gauge.cancel()

    def value(phase: str) -> float:
        sample = stack.registry.get_sample_value("ninetynine_session_rooms", {"phase": phase})
        return float(sample or 0)

    assert value("lobby") == 3
    assert value("playing") + value("finished") == 1

"""Crash safety and replicas with real processes: SIGKILL mid-game, two replicas on one Redis."""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path

import grpc
import pytest

from ninetynine.engine.v1 import state_pb2
from ninetynine.launch import free_port
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.session.procs import start_session


def _channel(port: int) -> grpc.aio.Channel:
    # A private subchannel pool: a new channel must not inherit the dead server's backoff.
    return grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)])


async def _play_some(
    stub: pb_grpc.SessionServiceAsyncStub, token: str, seqs: dict[str, int], acked: list[tuple[str, int]]
) -> None:
    """Play the human's turns for a while; remember every acknowledged move."""
    for _ in range(200):
        try:
            view = (await stub.GetView(pb.GetViewRequest(token=token), timeout=2)).view
        except grpc.aio.AioRpcError:
            return
        if view.phase == state_pb2.PHASE_FINISHED:
            return
        if view.my_turn and view.legal_plays:
            seqs[token] = seqs.get(token, 0) + 1
            try:
                reply = await stub.Play(
                    pb.PlayRequest(token=token, client_seq=seqs[token], action=view.legal_plays[-1].action),
                    timeout=2,
                )
            except grpc.aio.AioRpcError:
                return  # the server died under us: this move was never acknowledged
            acked.append((token, reply.seq))
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_sigkill_mid_game_loses_no_acknowledged_move_and_games_finish(
    kind: str, engine_port: int, store_url, tmp_path: Path
) -> None:
    if not store_url().startswith(kind):
        pytest.skip("one store per parametrization")
    store = store_url()
    port = free_port()
    proc = start_session(port, engine_port, store, tmp_path / "session.log")
    channel = _channel(port)
    stub = pb_grpc.SessionServiceStub(channel)
    rooms: list[tuple[str, str]] = []
    for _ in range(4):
        created = await stub.CreateRoom(pb.CreateRoomRequest(name="사람", max_seats=4))
        for _ in range(3):
            await stub.AddBot(pb.AddBotRequest(token=created.seat_token))
        await stub.StartGame(pb.StartGameRequest(token=created.seat_token))
        rooms.append((created.room.room_id, created.seat_token))
    seqs: dict[str, int] = {}
    acked: list[tuple[str, int]] = []
    rng = random.Random(7)
    for _ in range(3):
        players = [asyncio.create_task(_play_some(stub, token, seqs, acked)) for _, token in rooms]
        await asyncio.sleep(rng.uniform(0.2, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        await asyncio.gather(*players)
        proc = start_session(port, engine_port, store, tmp_path / "session.log")
        await channel.close(None)
        channel = _channel(port)
        stub = pb_grpc.SessionServiceStub(channel)
    try:
        for room_id, token in rooms:
            await _play_some(stub, token, seqs, acked)
            for _ in range(600):
                room = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id), wait_for_ready=True)).room
                if room.phase == pb.ROOM_PHASE_FINISHED:
                    break
                await asyncio.sleep(0.05)
            assert room.phase == pb.ROOM_PHASE_FINISHED, f"room {room_id} never finished after the crashes"
            replay = await stub.GetReplay(pb.GetReplayRequest(room_id=room_id))
            assert [e.seq for e in replay.events] == list(range(1, len(replay.events) + 1))
            human_moves = [m for m in replay.moves if m.source == "player"]
            acked_here = [seq for t, seq in acked if t == token]
            assert len(human_moves) >= len(acked_here), "every acknowledged move is in the replay"
            for seq in acked_here:
                assert seq <= replay.events[-1].seq
        assert acked, "the test played at least one acknowledged move"
    finally:
        await channel.close(None)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


async def test_two_redis_replicas_share_rooms_and_fire_each_deadline_once(
    engine_port: int, store_url, tmp_path: Path
) -> None:
    store = store_url()
    if not store.startswith("redis"):
        pytest.skip("replicas need the shared Redis store")
    ports = [free_port(), free_port()]
    procs = [
        start_session(p, engine_port, store, tmp_path / f"s{i}.log", scale=0.004) for i, p in enumerate(ports)
    ]
    channels = [_channel(p) for p in ports]
    stubs = [pb_grpc.SessionServiceStub(c) for c in channels]
    try:
        room_ids = []
        for i in range(6):
            host = await stubs[i % 2].CreateRoom(pb.CreateRoomRequest(name="A", max_seats=3))
            # The second seat joins through the other replica; bots fill up; nobody human acts.
            await stubs[(i + 1) % 2].JoinRoom(pb.JoinRoomRequest(room_id=host.room.room_id, name="B"))
            await stubs[(i + 1) % 2].AddBot(pb.AddBotRequest(token=host.seat_token))
            await stubs[i % 2].StartGame(pb.StartGameRequest(token=host.seat_token))
            room_ids.append(host.room.room_id)
        # Both replicas see the same room and the same events.
        spectator = await stubs[1].Spectate(pb.SpectateRequest(room_id=room_ids[0]))
        seen: list[list[int]] = [[], []]
        for i, stub in enumerate(stubs):
            stream = stub.Subscribe(pb.SubscribeRequest(token=spectator.spectator_token))
            async for item in stream:
                if item.HasField("event"):
                    seen[i].append(item.event.seq)
                    if len(seen[i]) == 12:
                        break
            stream.cancel()
        assert seen[0] == seen[1] == list(range(1, 13))
        # Kill one replica mid-game: the other fires its deadlines.
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        for room_id in room_ids:
            for _ in range(800):
                room = (await stubs[1].GetRoom(pb.GetRoomRequest(room_id=room_id))).room
                if room.phase == pb.ROOM_PHASE_FINISHED:
                    break
                await asyncio.sleep(0.05)
            assert room.phase == pb.ROOM_PHASE_FINISHED
            replay = await stubs[1].GetReplay(pb.GetReplayRequest(room_id=room_id))
            played = [e for e in replay.events if e.HasField("game") and e.game.HasField("card_played")]
            # Each deadline fired once: one stored move per card played, seqs contiguous.
            assert len(played) == len(replay.moves)
            assert [e.seq for e in replay.events] == list(range(1, len(replay.events) + 1))
            state_seqs = [e.game.card_played.seq for e in played]
            assert state_seqs == list(range(1, len(played) + 1))
    finally:
        for c in channels:
            await c.close(None)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=30)

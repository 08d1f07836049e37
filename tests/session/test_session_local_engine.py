"""``--engine local``: a session that runs the rules in its own process, with no engine server at all.

Whole games (human and bots, then deadlines only) end as they do with the engine service, the
engine's refusals reach the player exactly as the remote engine's do, and the rules counters
show up on the session's /metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.errors import error_info
from ninetynine.common.grpcclient import create_channel
from ninetynine.engine.local import LocalEngine
from ninetynine.engine.v1 import game_pb2, state_pb2
from ninetynine.session.server import close_room_service, create_session_server
from ninetynine.session.service import RoomService
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.session.helpers import ENGLISH, is_english, is_korean


@dataclass
class Session:
    stub: pb_grpc.SessionServiceAsyncStub
    rooms: RoomService
    registry: CollectorRegistry


@asynccontextmanager
async def running_session(
    engine_target: str, store_url: str, *, time_scale: float = 0.02
) -> AsyncIterator[Session]:
    registry = CollectorRegistry()
    server, port, _, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=engine_target,
        store_url=store_url,
        bot_think_ms=20,
        time_scale=time_scale,
        stream_heartbeat_s=0.5,
        registry=registry,
    )
    await server.start()
    rooms.start()
    channel = create_channel(f"127.0.0.1:{port}")
    try:
        yield Session(pb_grpc.SessionServiceStub(channel), rooms, registry)
    finally:
        await channel.close(None)
        await server.stop(None)
        await close_room_service(rooms)


def _sample(session: Session, name: str, **labels: str) -> float:
    return session.registry.get_sample_value(name, labels) or 0.0


async def test_a_local_engine_session_plays_a_whole_game(store_url: Callable[[], str]) -> None:
    async with running_session("local", store_url()) as session:
        assert isinstance(session.rooms.engine, LocalEngine)
        stub = session.stub
        created = await stub.CreateRoom(pb.CreateRoomRequest(name="지호", max_seats=3))
        token = created.seat_token
        for _ in range(2):
            await stub.AddBot(pb.AddBotRequest(token=token))
        await stub.StartGame(pb.StartGameRequest(token=token))
        stream = stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0))
        client_seq = 0
        finished = False
        async for item in stream:
            if not item.HasField("view") or not item.view.HasField("view"):
                continue
            view = item.view.view
            if view.phase == state_pb2.PHASE_FINISHED:
                finished = True
                break
            if view.my_turn and view.legal_plays:
                client_seq += 1
                await stub.Play(
                    pb.PlayRequest(token=token, client_seq=client_seq, action=view.legal_plays[0].action)
                )
        stream.cancel()
        assert finished
        result = await stub.GetResult(pb.GetResultRequest(room_id=created.room.room_id))
        assert len(result.result.ranking) == 3
        assert client_seq > 0, "the human played at least once"
        # The rules counters are the session's now; there is no engine RPC to time.
        assert _sample(session, "ninetynine_engine_games_setup_total", mode="kr-product") == 1
        assert _sample(session, "ninetynine_engine_games_finished_total", mode="kr-product") == 1
        assert (
            _sample(session, "ninetynine_engine_moves_applied_total", mode="kr-product", source="player") > 0
        )
        assert _sample(session, "ninetynine_engine_rpc_duration_seconds_count") == 0
        assert (
            _sample(
                session, "ninetynine_session_engine_call_duration_seconds_count", method="Apply", code="OK"
            )
            > 0
        )


async def test_a_local_engine_session_plays_timeouts_to_the_end(store_url: Callable[[], str]) -> None:
    async with running_session("local", store_url(), time_scale=0.005) as session:
        stub = session.stub
        a = await stub.CreateRoom(
            pb.CreateRoomRequest(name="A", max_seats=3, options=game_pb2.Options(lives=2))
        )
        await stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
        await stub.AddBot(pb.AddBotRequest(token=a.seat_token))
        await stub.StartGame(pb.StartGameRequest(token=a.seat_token))
        for _ in range(400):  # nobody human acts: human turns end on their deadline
            room = (await stub.GetRoom(pb.GetRoomRequest(room_id=a.room.room_id))).room
            if room.phase == pb.ROOM_PHASE_FINISHED:
                break
            await asyncio.sleep(0.05)
        assert room.phase == pb.ROOM_PHASE_FINISHED
        replay = await stub.GetReplay(pb.GetReplayRequest(room_id=a.room.room_id))
        assert {m.source for m in replay.moves} == {"timeout", "bot"}


async def _card_not_in_hand(
    stub: pb_grpc.SessionServiceAsyncStub, lang: tuple[tuple[str, str], ...]
) -> grpc.aio.AioRpcError:
    """Two humans, the mover plays a card id nobody holds; the engine's refusal comes back."""
    a = await stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    movers = [
        token
        for token in (a.seat_token, b.seat_token)
        if (await stub.GetView(pb.GetViewRequest(token=token))).view.my_turn
    ]
    assert len(movers) == 1
    action = game_pb2.Action(card_id="N1-999")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Play(pb.PlayRequest(token=movers[0], client_seq=1, action=action), metadata=lang)
    return caught.value


@pytest.mark.parametrize("lang", [(), ENGLISH], ids=["ko", "en"])
async def test_an_engine_refusal_reaches_the_player_as_with_the_engine_service(
    engine_port: int, tmp_path: Path, lang: tuple[tuple[str, str], ...]
) -> None:
    seen = []
    for target, db in ((f"127.0.0.1:{engine_port}", "remote.db"), ("local", "local.db")):
        async with running_session(target, f"sqlite:///{tmp_path}/{db}") as session:
            err = await _card_not_in_hand(session.stub, lang)
            info = error_info(err)
            assert info is not None
            seen.append((err.code(), err.details(), info.reason, info.domain, dict(info.metadata)))
    remote, local = seen
    assert remote[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert remote[2:] == ("CARD_NOT_IN_HAND", "engine.ninetynine", {"cardId": "N1-999"})
    assert is_english(remote[1]) if lang else is_korean(remote[1])
    assert local == remote

"""The engine goes away mid-game: the session refuses moves cleanly, touches nothing, and resumes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import grpc.aio
import pytest

from ninetynine.engine.server import create_engine_server
from ninetynine.engine.v1 import game_pb2
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import eventually, refused, sample, wait_finished

MakeStack = Callable[..., Awaitable[Stack]]


class Engine:
    """A real engine server that a test can stop and start again on the same port."""

    def __init__(self) -> None:
        self.port = 0
        self.server: grpc.aio.Server | None = None

    async def start(self) -> None:
        server, port, _ = create_engine_server(f"127.0.0.1:{self.port}")
        await server.start()
        self.server, self.port = server, port

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(None)
            self.server = None


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    running = Engine()
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
def engine_port(engine: Engine) -> int:
    """Overrides conftest's engine: the session stack talks to this stoppable one."""
    return engine.port


async def test_engine_outage_refuses_moves_untouched_and_play_resumes(
    make_stack: MakeStack, engine: Engine
) -> None:
    stack = await make_stack(time_scale=0.1)  # 10 s turns -> 1 s
    a = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=2, options=game_pb2.Options(turn_seconds=10))
    )
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    tokens = (a.seat_token, b.seat_token)
    views = {t: await stack.stub.GetView(pb.GetViewRequest(token=t)) for t in tokens}
    mover = next(t for t, v in views.items() if v.view.my_turn)
    before = views[mover]

    await engine.stop()
    play = pb.PlayRequest(token=mover, client_seq=1, action=before.view.legal_plays[0].action)
    err = await refused(stack.stub.Play(play), grpc.StatusCode.UNAVAILABLE, "ENGINE_UNAVAILABLE")
    assert err.details()
    # Past the turn deadline: without an engine nothing fires and nothing changes.
    await asyncio.sleep(max(0.0, (before.room.deadline_ms + 700) / 1000 - time.time()))
    during = await stack.stub.GetView(pb.GetViewRequest(token=mover))
    assert during.seq == before.seq and during.view.seq == before.view.seq
    assert [c.card.id for c in during.view.hand] == [c.card.id for c in before.view.hand]
    assert during.room.phase == pb.ROOM_PHASE_PLAYING
    assert sample(stack.registry, "ninetynine_session_engine_errors_total", {"code": "UNAVAILABLE"}) >= 1
    assert sample(stack.registry, "ninetynine_session_timeouts_total", {"mode": "kr-product"}) == 0

    await engine.start()  # same port

    async def overdue_fired() -> pb.GetViewResponse | None:
        now = await stack.stub.GetView(pb.GetViewRequest(token=mover))
        return now if now.seq > before.seq else None

    after = await eventually(overdue_fired, timeout=10)
    assert after.view.current != before.view.current, "the overdue deadline played the timed-out turn"
    assert sample(stack.registry, "ninetynine_session_timeouts_total", {"mode": "kr-product"}) >= 1

    # Play resumes: both humans play on until the game ends.
    seqs = dict.fromkeys(tokens, 1)
    played = 0
    while True:
        got = await stack.stub.GetView(pb.GetViewRequest(token=tokens[0]))
        if got.room.phase == pb.ROOM_PHASE_FINISHED:
            break
        for token in tokens:
            view = (await stack.stub.GetView(pb.GetViewRequest(token=token))).view
            if view.my_turn and view.legal_plays:
                seqs[token] += 1
                try:
                    await stack.stub.Play(
                        pb.PlayRequest(token=token, client_seq=seqs[token], action=view.legal_plays[0].action)
                    )
                    played += 1
                except grpc.aio.AioRpcError as refusal:  # a deadline may win the race for the turn
                    assert refusal.code() == grpc.StatusCode.FAILED_PRECONDITION, refusal
        await asyncio.sleep(0.005)
    assert played >= 1
    room = await wait_finished(stack.stub, a.room.room_id)
    replay = await stack.stub.GetReplay(pb.GetReplayRequest(room_id=room.room_id))
    assert {m.source for m in replay.moves} >= {"player", "timeout"}


async def test_play_resumes_promptly_after_a_long_engine_outage(
    make_stack: MakeStack, engine: Engine, store_url: Callable[[], str]
) -> None:
    if not store_url().startswith("sqlite"):
        pytest.skip("about the engine channel, not the store: one store is enough")
    stack = await make_stack(time_scale=1.0)  # 30 s turns: no deadline fires during the test
    a = await stack.stub.CreateRoom(
        pb.CreateRoomRequest(name="A", max_seats=2, options=game_pb2.Options(turn_seconds=30))
    )
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = {t: await stack.stub.GetView(pb.GetViewRequest(token=t)) for t in (a.seat_token, b.seat_token)}
    mover = next(t for t, v in views.items() if v.view.my_turn)
    play = pb.PlayRequest(token=mover, client_seq=1, action=views[mover].view.legal_plays[0].action)

    await engine.stop()
    # Players keep trying for 10 s; grpc's default reconnect backoff would have grown past 4 s by now.
    outage_end = time.monotonic() + 10
    while time.monotonic() < outage_end:
        await refused(stack.stub.Play(play), grpc.StatusCode.UNAVAILABLE, "ENGINE_UNAVAILABLE")
        await asyncio.sleep(0.5)
    await engine.start()
    back = time.monotonic()

    async def accepted() -> pb.PlayResponse | None:
        try:
            reply: pb.PlayResponse = await stack.stub.Play(play)
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, err
            return None
        return reply

    reply = await eventually(accepted, timeout=30, every=0.1)
    assert not reply.duplicate and reply.seq > views[mover].seq, "the refused attempts applied nothing"
    assert time.monotonic() - back < 3, "the session reconnects to a returning engine within seconds"


async def test_a_play_refused_for_lack_of_an_engine_applies_when_sent_again(
    make_stack: MakeStack, engine: Engine
) -> None:
    # ENGINE_UNAVAILABLE says nothing about the play: unlike a rule refusal it is not its outcome,
    # so the same client_seq sent again once the engine is back is judged and applied.
    stack = await make_stack(time_scale=1.0)  # 15 s turns: the turn is still the mover's after
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = {t: await stack.stub.GetView(pb.GetViewRequest(token=t)) for t in (a.seat_token, b.seat_token)}
    mover = next(t for t, v in views.items() if v.view.my_turn)
    play = pb.PlayRequest(token=mover, client_seq=1, action=views[mover].view.legal_plays[0].action)

    await engine.stop()
    await refused(stack.stub.Play(play), grpc.StatusCode.UNAVAILABLE, "ENGINE_UNAVAILABLE")
    await engine.start()

    async def applied() -> pb.PlayResponse | None:
        try:
            answer: pb.PlayResponse = await stack.stub.Play(play)
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, err  # the channel reconnecting
            return None
        return answer

    answer = await eventually(applied, timeout=10, every=0.1)
    assert not answer.duplicate and answer.seq > views[mover].seq

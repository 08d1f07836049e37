"""A session that shuts down drains its shared calls instead of holding them for the grace period.

Once ``serve``'s stop is set (what SIGTERM does), an open PlayMany call answers the plays it is
running, takes no new one and ends; an open SubscribeMany call ends too; the server then stops
long before its 30 s grace period. A play sent after the drain began got no answer and did not
land: its resend to another server on the same store is played once. Real engine, session and
SQLite store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from prometheus_client import CollectorRegistry

from ninetynine.common.grpcclient import create_channel
from ninetynine.session.draining import OpenStreams
from ninetynine.session.server import close_room_service, create_session_server, run_session
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.session.conftest import Stack
from tests.session.store.sqlite_lock import StoreLock
from tests.session.test_session_play_many import Plays, _room, _turn

GRACE_S = 30.0
# Far below the grace period: the calls were drained, not cut off when it ran out.
DRAINED_WITHIN_S = 10.0


def _session(engine_port: int, db: Path, streams: OpenStreams) -> tuple[Any, Any, Stack]:
    """A session server on ``db`` (not started), its health servicer, and a client stack for it."""
    server, port, health, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=f"sqlite:///{db}",
        time_scale=1.0,  # 15 s turns: nothing moves but the plays sent here
        registry=CollectorRegistry(),
        streams=streams,
    )
    channel = create_channel(f"127.0.0.1:{port}")
    stack = Stack(engine_port, port, rooms, pb_grpc.SessionServiceStub(channel), channel, CollectorRegistry())
    stack._server = server  # type: ignore[attr-defined]
    return server, health, stack


async def _subscription(
    stub: pb_grpc.SessionServiceAsyncStub, token: str
) -> tuple[Any, AsyncIterator[pb.SubscribeManyResponse]]:
    """A SubscribeMany call with one subscription open (its first message read) that never
    half-closes, and the iterator of its further messages."""

    async def requests() -> AsyncIterator[pb.SubscribeManyRequest]:
        spec = pb.OpenSubscription(id=1, request=pb.SubscribeRequest(token=token))
        yield pb.SubscribeManyRequest(open=spec)
        await asyncio.Event().wait()  # only the server can end this call

    call = stub.SubscribeMany(requests())
    messages: AsyncIterator[pb.SubscribeManyResponse] = call.__aiter__()
    async with asyncio.timeout(10):
        first = await anext(messages)
    assert first.items, "the subscription is open"
    return call, messages


async def test_shutdown_answers_the_running_plays_and_ends_the_shared_calls_long_before_grace(
    engine_port: int, tmp_path: Path
) -> None:
    db = tmp_path / "rooms.db"
    streams = OpenStreams()
    server, health, stack = _session(engine_port, db, streams)
    stack.rooms.start()
    stop = asyncio.Event()
    # As `ninety-nine session` runs; `stop` is what SIGTERM sets.
    serving = asyncio.create_task(run_session(server, health, stack.rooms, streams, grace=GRACE_S, stop=stop))
    restarted: Stack | None = None
    plays: Plays | None = None
    lock: StoreLock | None = None
    try:
        tables = [await _room(stack) for _ in range(3)]
        moves = [await _turn(stack, tokens) for _, tokens, _ in tables]
        requests = [
            pb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action)
            for mover, view, _ in moves
        ]
        subscription, messages = await _subscription(stack.stub, tables[0][1][0])
        plays = Plays(stack.stub)

        # Two plays running (their commits wait for the store) when the shutdown begins.
        lock = StoreLock(db)
        running = [plays.send(pb.PlayManyRequest(call_id=i, play=requests[i - 1])) for i in (1, 2)]
        await asyncio.sleep(0.3)
        assert not any(answer.done() for answer in running), "the plays wait for the store"
        stopped_at = time.monotonic()
        stop.set()
        async with asyncio.timeout(5):
            while not streams.draining:
                await asyncio.sleep(0.01)
        # Sent once the call is draining: not taken up, so never answered on this call.
        late = plays.send(pb.PlayManyRequest(call_id=3, play=requests[2]))
        await asyncio.sleep(0.2)
        lock.release()
        lock = None

        # The running plays are answered, then the call ends by itself (the caller never half-closed).
        async with asyncio.timeout(DRAINED_WITHIN_S):
            await plays.reader
        assert await plays.call.code() == grpc.StatusCode.OK
        assert [answer.result().WhichOneof("result") for answer in running] == ["played", "played"]
        assert not late.done(), "a play sent after the drain began is not answered"
        # The room stream's call ends as well: its subscriber resubscribes elsewhere.
        async with asyncio.timeout(DRAINED_WITHIN_S):
            async for _ in messages:
                pass
        assert await subscription.code() == grpc.StatusCode.OK
        async with asyncio.timeout(DRAINED_WITHIN_S):
            await serving
        took = time.monotonic() - stopped_at
        assert took < DRAINED_WITHIN_S, f"the server took {took:.1f} s to stop (grace {GRACE_S} s)"

        # Another server on the same store: the two plays landed, the late one did not, and its
        # resend (the caller's, on its new call) is played once.
        restarted = _session(engine_port, db, OpenStreams())[2]
        await restarted._server.start()  # type: ignore[attr-defined]
        restarted.rooms.start()
        for request in requests[:2]:
            again = await restarted.stub.Play(request, wait_for_ready=True)
            assert again.duplicate
        resent = await restarted.stub.Play(requests[2], wait_for_ready=True)
        assert not resent.duplicate and resent.client_seq == 1
    finally:
        if lock is not None:
            lock.release()
        if plays is not None:
            plays.cancel()
        if not serving.done():  # the test failed before the shutdown finished: cut it short
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
            await server.stop(None)
            await close_room_service(stack.rooms)
        await stack.channel.close(None)
        if restarted is not None:
            await restarted.close()

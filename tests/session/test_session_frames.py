"""The session's frames socket (``ninetynine/session/frames.py``): a gateway's shared calls on this machine.

The gateway's relays, opened on the socket instead of the gRPC stub, get what they get over gRPC:
plays answered and refused alike, room streams carrying the moves. The socket is its owner's only
and goes away with the session; a connection that does not speak the protocol, or sends bytes that
do not parse, is ended (MALFORMED_REQUEST counted); a shutdown drains its calls as it drains gRPC's.
Real engine, session and SQLite store.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from ninetynine.common.frames import frame, preamble
from ninetynine.common.grpcclient import create_channel
from ninetynine.gateway.relay import PlayRelay, SessionRelay, frames_calls
from ninetynine.session.draining import OpenStreams
from ninetynine.session.frames import PLAY_MANY
from ninetynine.session.server import create_session_server, run_session
from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.common.roomstream import room_stream
from tests.session.conftest import Stack
from tests.session.helpers import sample
from tests.session.test_session_play_many import _room, _turn


@dataclass
class Serving:
    stack: Stack
    socket: str
    stop: asyncio.Event
    serving: asyncio.Task[None]


@pytest.fixture
async def serving(engine_port: int, tmp_path: Path) -> AsyncIterator[Serving]:
    """A session serving gRPC and a frames socket (as ``ninety-nine session --frames-socket``)."""
    # A short directory: a Unix socket's path may not exceed ~100 bytes.
    directory = tempfile.mkdtemp(prefix="nn-frames-")
    path = os.path.join(directory, "session.sock")
    streams = OpenStreams()
    registry = CollectorRegistry()
    server, port, health, rooms = create_session_server(
        "127.0.0.1:0",
        engine_target=f"127.0.0.1:{engine_port}",
        store_url=f"sqlite:///{tmp_path}/rooms.db",
        time_scale=1.0,  # 15 s turns: nothing moves but the plays sent here
        registry=registry,
        streams=streams,
        frames_socket=path,
    )
    rooms.start()
    stop = asyncio.Event()
    task = asyncio.create_task(run_session(server, health, rooms, streams, grace=30.0, stop=stop))
    channel = create_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.SessionServiceStub(channel)
    await stub.ListRules(pb.ListRulesRequest(), wait_for_ready=True)
    try:
        yield Serving(Stack(engine_port, port, rooms, stub, channel, registry), path, stop, task)
    finally:
        stop.set()
        async with asyncio.timeout(30):
            await task
        await channel.close(None)
        shutil.rmtree(directory, ignore_errors=True)


async def _closed_by_the_session(reader: asyncio.StreamReader) -> bytes:
    """Everything the session sent until it ended the connection."""
    async with asyncio.timeout(10):
        return await reader.read()


async def test_a_gateways_plays_and_room_streams_on_the_socket_are_answered_as_over_grpc(
    serving: Serving,
) -> None:
    stack = serving.stack
    subscribe_many, play_many = frames_calls(serving.socket)
    rooms, plays = SessionRelay(subscribe_many), PlayRelay(play_many)
    try:
        _, tokens, spectator = await _room(stack)
        stream = room_stream(rooms, pb.SubscribeRequest(token=spectator, batched=True), "")
        async with asyncio.timeout(10):
            first = await anext(stream)
        assert first.batch.events[0].HasField("player_joined"), "the stream opens with the room's history"

        mover, view, other = await _turn(stack, tokens)
        action = view.legal_plays[0].action
        played = await plays.play(pb.PlayRequest(token=mover, client_seq=1, action=action), "", timeout=10)
        assert not played.duplicate and played.client_seq == 1 and played.seq > 0
        async with asyncio.timeout(10):
            async for item in stream:
                if item.batch.events and item.batch.events[-1].seq == played.seq:
                    assert len(item.batch.view.view.players) == 2, "the move's batch brings the view"
                    break

        # A refusal comes back as the unary Play's: code, message and the one ErrorInfo.
        wrong = pb.PlayRequest(token=other, client_seq=1, action=action)
        with pytest.raises(grpc.aio.AioRpcError) as over_frames:
            await plays.play(wrong, "en", timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as over_grpc:
            await stack.stub.Play(wrong, metadata=(("accept-language", "en"),))
        assert over_frames.value.code() == over_grpc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert over_frames.value.details() == over_grpc.value.details()
        assert over_frames.value.trailing_metadata() == over_grpc.value.trailing_metadata()
        await stream.aclose()
    finally:
        await rooms.close()
        await plays.close()


async def test_the_socket_is_its_owners_only_and_goes_away_with_the_session(serving: Serving) -> None:
    mode = os.stat(serving.socket).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600
    serving.stop.set()
    async with asyncio.timeout(30):
        await serving.serving
    assert not os.path.exists(serving.socket), "a stopped session leaves no socket behind"


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"GET / HTTP/1.1\r\n\r\n", id="not-the-protocol"),
        pytest.param(preamble("/ninetynine.session.v1.SessionService/Play"), id="a-method-it-does-not-carry"),
        pytest.param(preamble(PLAY_MANY) + frame(b"\xff\xff\xff"), id="bytes-that-do-not-parse"),
        pytest.param(preamble(PLAY_MANY) + (64 * 1024 * 1024).to_bytes(4, "big"), id="a-frame-too-long"),
    ],
)
async def test_a_connection_that_does_not_speak_the_protocol_is_ended_unanswered(
    serving: Serving, sent: bytes
) -> None:
    refusals = {"reason": "MALFORMED_REQUEST"}
    before = sample(serving.stack.registry, "ninetynine_session_refusals_total", refusals)
    reader, writer = await asyncio.open_unix_connection(serving.socket)
    writer.write(sent)
    assert await _closed_by_the_session(reader) == b""
    writer.close()
    after = sample(serving.stack.registry, "ninetynine_session_refusals_total", refusals)
    malformed = sent.startswith(preamble(PLAY_MANY))
    assert after - before == (1 if malformed else 0), "a request that does not parse is counted"


async def test_a_shutdown_answers_the_running_plays_and_ends_the_frames_calls(serving: Serving) -> None:
    stack = serving.stack
    _, tokens, _ = await _room(stack)
    mover, view, _ = await _turn(stack, tokens)
    reader, writer = await asyncio.open_unix_connection(serving.socket)
    request = pb.PlayManyRequest(
        call_id=7, play=pb.PlayRequest(token=mover, client_seq=1, action=view.legal_plays[0].action)
    )
    writer.write(preamble(PLAY_MANY) + frame(request.SerializeToString()))
    async with asyncio.timeout(10):
        size = int.from_bytes(await reader.readexactly(4), "big")
        answer = pb.PlayManyResponse.FromString(await reader.readexactly(size))
    assert answer.call_id == 7 and answer.WhichOneof("result") == "played"

    # The caller never half-closes: only the drain can end the call, long before the 30 s grace.
    serving.stop.set()
    async with asyncio.timeout(10):
        assert await reader.read() == b""
        await serving.serving
    writer.close()

"""The engine's frames socket (``ninetynine/engine/frames.py``): moves answered as on ApplyMany.

A real ``ninety-nine engine --frames-socket PATH`` process; the session's client
(:class:`~ninetynine.engine.client.EngineClient` with ``frames``) sends its moves there and keeps
Setup and the rest on gRPC. The answers, refusals and canonical lines are those of the stream; a
connection that does not speak the protocol is ended, and a move in flight when the engine
restarts is sent again on a new connection.
"""

from __future__ import annotations

import asyncio
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ninetynine.common.errors import ServiceError
from ninetynine.common.frames import MAX_FRAME
from ninetynine.engine import convert
from ninetynine.engine.client import EngineClient
from ninetynine.engine.frames import PREAMBLE
from ninetynine.engine.rules import timeout_action
from ninetynine.engine.v1 import engine_service_pb2 as pb
from ninetynine.engine.v1 import engine_service_pb2_grpc as pb_grpc
from tests.engine.service_fixtures import RunningEngine, start_engine, stop_engine

NOW_MS = 1_767_000_000_000


@pytest.fixture
def socket_path() -> Iterator[Path]:
    # A Unix socket's path is short (108 bytes): a private directory (0700) of its own in /tmp.
    private = Path(tempfile.mkdtemp(prefix="ninetynine-frames-"))
    try:
        yield private / "engine.sock"
    finally:
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def engine(tmp_path: Path, socket_path: Path) -> Iterator[RunningEngine]:
    running = start_engine(tmp_path, "--frames-socket", str(socket_path))
    try:
        yield running
    finally:
        stop_engine(running)


def _move(state: pb.SetupResponse | pb.ApplyResponse) -> pb.ApplyRequest:
    game = convert.state_from_proto(state.state)
    action = convert.action_to_proto(timeout_action(game))
    return pb.ApplyRequest(state=state.state, player_id=game.current, action=action, now_ms=NOW_MS + 1000)


async def test_moves_over_the_socket_are_answered_as_the_unary_calls_answer(
    engine: RunningEngine, socket_path: Path
) -> None:
    async with EngineClient(engine.target, frames=str(socket_path)) as client:
        setup = await client.setup(["a", "b", "c"], seed=11, now_ms=NOW_MS)
        request = _move(setup)
        applied = await client.apply(setup.state, request.player_id, request.action, now_ms=request.now_ms)
        timed_out = await client.timeout(applied.state, now_ms=NOW_MS + 20_000)
    with grpc.insecure_channel(engine.target) as channel:
        stub = pb_grpc.EngineServiceStub(channel)
        assert applied == stub.Apply(request)
        assert timed_out == stub.Timeout(pb.TimeoutRequest(state=applied.state, now_ms=NOW_MS + 20_000))
    lines = [line for line in engine.log_lines() if line.get("event") == "rpc"]
    methods = [line["method"] for line in lines]
    assert methods.count("ApplyMany/Apply") == 1 and methods.count("ApplyMany/Timeout") == 1, methods


async def test_a_refusal_over_the_socket_keeps_its_reason_and_language(
    engine: RunningEngine, socket_path: Path
) -> None:
    async with EngineClient(engine.target, frames=str(socket_path), lang="en") as client:
        setup = await client.setup(["a", "b"], seed=3, now_ms=NOW_MS)
        request = _move(setup)
        game = convert.state_from_proto(setup.state)
        other = next(p for p in game.seats if p != game.current)
        with pytest.raises(ServiceError) as refused:
            await client.apply(setup.state, other, request.action, now_ms=request.now_ms)
        # The connection goes on after a refusal.
        applied = await client.apply(setup.state, request.player_id, request.action, now_ms=request.now_ms)
    assert (
        refused.value.reason == "NOT_YOUR_TURN" and refused.value.code is grpc.StatusCode.FAILED_PRECONDITION
    )
    assert refused.value.message_en and refused.value.domain == "engine.ninetynine"
    assert applied.state.seq == 1


async def test_the_socket_is_readable_by_its_user_only(engine: RunningEngine, socket_path: Path) -> None:
    mode = stat.S_IMODE(socket_path.stat().st_mode)
    assert mode & 0o077 == 0, oct(mode)


async def _ended(socket_path: Path, data: bytes) -> bool:
    """Whether the engine ends a connection that sends ``data``."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        writer.close()


async def test_a_connection_that_does_not_speak_the_protocol_is_ended(
    engine: RunningEngine, socket_path: Path
) -> None:
    assert await _ended(socket_path, b"GET / HTTP/1.1\r\n\r\n")
    assert await _ended(socket_path, PREAMBLE + (MAX_FRAME + 1).to_bytes(4, "big"))
    garbage = b"\xff\xff\xff"  # not an ApplyManyRequest: MALFORMED_REQUEST ends the connection
    assert await _ended(socket_path, PREAMBLE + len(garbage).to_bytes(4, "big") + garbage)
    lines = [line for line in engine.log_lines() if line.get("event") == "engine frames: connection ended"]
    assert len(lines) == 3 and lines[-1]["reason"] == "MALFORMED_REQUEST", lines


async def test_a_move_in_flight_when_the_engine_restarts_is_sent_again(
    tmp_path: Path, socket_path: Path
) -> None:
    first = start_engine(tmp_path, "--frames-socket", str(socket_path))
    port = first.port
    client = EngineClient(f"127.0.0.1:{port}", timeout=20.0, frames=str(socket_path))
    try:
        setup = await client.setup(["a", "b"], seed=5, now_ms=NOW_MS)
        request = _move(setup)
        await client.apply(setup.state, request.player_id, request.action, now_ms=request.now_ms)
        stop_engine(first)  # the open connection ends
        assert not socket_path.exists(), "a stopped engine leaves no socket behind"
        # Sent while no engine listens: it waits for one, as a gRPC call waits for a ready server.
        again = asyncio.create_task(
            client.apply(setup.state, request.player_id, request.action, now_ms=request.now_ms)
        )
        await asyncio.sleep(0.3)
        assert not again.done()
        second = await asyncio.to_thread(
            start_engine, tmp_path, "--port", str(port), "--frames-socket", str(socket_path)
        )
        try:
            assert (await again).state.seq == 1
        finally:
            stop_engine(second)
    finally:
        await client.close()


async def test_a_peer_that_does_not_read_its_answers_is_not_read_from(
    engine: RunningEngine, socket_path: Path
) -> None:
    """The engine's answers wait in its buffer only up to a limit; then it stops taking requests,
    so a stuck session cannot make the engine's memory grow."""
    async with EngineClient(engine.target) as client:
        setup = await client.setup(["a", "b"], seed=5, now_ms=NOW_MS)
    request = pb.ApplyManyRequest(call_id=1, apply=_move(setup)).SerializeToString()
    frame = len(request).to_bytes(4, "big") + request
    sent = 5_000

    def answered() -> int:
        return sum(1 for line in engine.log_lines() if line.get("method") == "ApplyMany/Apply")

    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        writer.write(PREAMBLE + frame * sent)  # no answer is read
        await asyncio.sleep(2)
        stalled = answered()
        await asyncio.sleep(1)
        assert answered() == stalled < sent, "the engine kept answering a peer that does not read"
        for _ in range(sent):  # reading the answers lets it take the rest
            header = await asyncio.wait_for(reader.readexactly(4), 10)
            await reader.readexactly(int.from_bytes(header, "big"))
    finally:
        writer.close()

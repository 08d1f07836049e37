"""The session decodes a game state at most once per move, and encodes it once: in its room document.

Counted through a real run (engine and session servers in this process, or the in-process engine;
a batched subscriber watching the room) while a human plays one move and the bot answers it: a
profile hook counts the calls made from the session's own code to the rules' decoder
(``state_from_proto``) and to ``RoomDocument`` parsing and serialization, and copies of a
``State`` made by it or its engine client; counting wrappers around ``SerializeToString`` of
``State``, ``ApplyRequest`` and ``TimeoutRequest`` (installed before the servers start, so the
gRPC stubs serialize through them) count every other encoding of a state, whoever makes it.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from ninetynine.engine import convert
from ninetynine.engine.v1 import engine_service_pb2 as engine_pb
from ninetynine.engine.v1 import state_pb2
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

_DECODE = convert.state_from_proto.__code__


def _in_session(frame: FrameType | None) -> bool:
    return frame is not None and frame.f_globals.get("__name__", "").startswith("ninetynine.session")


def _in_session_or_its_client(frame: FrameType) -> bool:
    return _in_session(frame) or frame.f_globals.get("__name__") == "ninetynine.engine.client"


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count, from session code only, decodes of a game state and parses/serializations of a room."""
    counts: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _DECODE and _in_session(frame.f_back):
            counts["state decoded"] += 1
        elif event == "c_call":
            owner = getattr(arg, "__self__", None)
            name = getattr(arg, "__name__", "")
            document = owner is doc_pb.RoomDocument or isinstance(owner, doc_pb.RoomDocument)
            if (
                document
                and name in ("FromString", "ParseFromString", "MergeFromString")
                and _in_session(frame)
            ):
                counts["document parsed"] += 1
            elif document and name == "SerializeToString" and _in_session(frame):
                counts["document encoded"] += 1
            elif (
                isinstance(owner, state_pb2.State) and name == "CopyFrom" and _in_session_or_its_client(frame)
            ):
                counts["state copied"] += 1

    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(None)


def count_state_encodes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count encodings of a state outside a room document: a ``State`` or a request carrying one."""
    counts: Counter[str] = Counter()
    for message_type in (state_pb2.State, engine_pb.ApplyRequest, engine_pb.TimeoutRequest):
        original = message_type.SerializeToString

        def counted(message: Any, original: Any = original, **kwargs: Any) -> bytes:
            if isinstance(message, state_pb2.State) or message.HasField("state"):
                counts["state encoded"] += 1
            return bytes(original(message, **kwargs))

        monkeypatch.setattr(message_type, "SerializeToString", counted)
    return counts


@pytest.mark.parametrize("engine", ["grpc", "local"])
async def test_one_move_decodes_its_state_once_and_encodes_its_room_once(
    make_stack, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    encodes = count_state_encodes(monkeypatch)
    # Long human turns (no timeout can interfere), a fast bot.
    stack = await make_stack(
        bot_think_ms=20, time_scale=1.0, engine_target="local" if engine == "local" else None
    )
    stub = stack.stub
    host = await stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    await stub.AddBot(pb.AddBotRequest(token=host.seat_token))
    await stub.StartGame(pb.StartGameRequest(token=host.seat_token))
    views: asyncio.Queue[pb.ViewUpdate] = asyncio.Queue()

    async def watch() -> None:
        # Batched, as the gateways subscribe; every move ends with the viewer's view.
        async for item in stub.Subscribe(pb.SubscribeRequest(token=host.seat_token, batched=True)):
            if item.WhichOneof("item") == "batch" and item.batch.HasField("view"):
                views.put_nowait(item.batch.view)

    watcher = asyncio.create_task(watch())
    try:
        while True:  # up to the host's turn, the view of it delivered (the bot may start)
            view = (await asyncio.wait_for(views.get(), 10)).view
            if view.phase == state_pb2.PHASE_PLAYING and view.my_turn:
                break
        moves_before = view.seq
        # The new subscription's presence is a commit of its own: wait until it is recorded, so that
        # it cannot fall into the counted window.
        room_id = host.room.room_id
        for _ in range(200):
            if (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id))).room.seats[0].connected:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the host's subscription was never recorded as connected")
        encodes.clear()
        with counting() as counts:
            await stub.Play(
                pb.PlayRequest(token=host.seat_token, client_seq=1, action=view.legal_plays[0].action)
            )
            while True:  # the host's move, then the bot's, each followed by its view
                view = (await asyncio.wait_for(views.get(), 10)).view
                if view.seq >= moves_before + 2 or view.phase == state_pb2.PHASE_FINISHED:
                    break
        moves = view.seq - moves_before
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    assert moves >= 1
    assert counts["state decoded"] <= moves, f"{dict(counts)} for {moves} moves"
    assert counts["document parsed"] == 0, f"{dict(counts)}: the cached room is what was committed"
    assert counts["document encoded"] == moves, f"{dict(counts)}: one commit per move"
    # The previous state goes to the engine as committed, not encoded again. The new one is moved
    # from the parsed response into the room document (one copy), or converted straight into it
    # by the in-process engine (none).
    assert encodes["state encoded"] == 0, f"{dict(encodes)} beyond the room's commit, {moves} moves"
    assert counts["state copied"] <= (moves if engine == "grpc" else 0), f"{dict(counts)}"

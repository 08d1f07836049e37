"""The session decodes a game state at most once per move, and encodes its room document once.

Counted through a real run (engine and session servers in this process, a batched subscriber
watching the room): a profile hook counts the calls made from the session's own code to the
rules' decoder (``state_from_proto``), to ``RoomDocument`` parsing and to ``RoomDocument``
serialization, while a human plays one move and the bot answers it.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ninetynine.engine import convert
from ninetynine.engine.v1 import state_pb2
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb

_DECODE = convert.state_from_proto.__code__


def _in_session(frame: FrameType | None) -> bool:
    return frame is not None and frame.f_globals.get("__name__", "").startswith("ninetynine.session")


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count, from session code only, decodes of a game state and parses/serializations of a room."""
    counts: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _DECODE and _in_session(frame.f_back):
            counts["state decoded"] += 1
        elif event == "c_call" and _in_session(frame):
            owner = getattr(arg, "__self__", None)
            name = getattr(arg, "__name__", "")
            document = owner is doc_pb.RoomDocument or isinstance(owner, doc_pb.RoomDocument)
            if document and name in ("FromString", "ParseFromString", "MergeFromString"):
                counts["document parsed"] += 1
            elif document and name == "SerializeToString":
                counts["document encoded"] += 1

    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(None)


async def test_one_move_decodes_its_state_once_and_encodes_its_room_once(make_stack) -> None:
    # Long human turns (no timeout can interfere), a fast bot.
    stack = await make_stack(bot_think_ms=20, time_scale=1.0)
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
        await asyncio.sleep(0.1)  # presence of the new subscription recorded
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

"""A play answered on the room stream is never left waiting when that stream cannot answer it.

The follower (``ninetynine/gateway/follower.py``) sends `played` when a move's last event carries
the connection's play answer. A GAP_TOO_OLD snapshot replaces events the stream skipped, and an
ended stream brings nothing more: either way the waiting plays are told (``AnswerLost``), and the
relay asks for their answers on their own calls (tests/gateway/test_play_relay.py).
"""

from __future__ import annotations

import asyncio

import pytest

from ninetynine.common.sharedcalls import AnswerLost
from ninetynine.gateway.binding import Binding
from ninetynine.gateway.follower import RoomFollower
from ninetynine.gateway.outbox import Outgoing
from ninetynine.session.v1 import session_service_pb2 as spb


class _Conn:
    """What the follower uses of a connection here: what it delivers to the client."""

    def __init__(self) -> None:
        self.delivered: list[Outgoing] = []
        self.closing = False
        self.binding: Binding | None = None

    def deliver(self, out: Outgoing) -> None:
        self.delivered.append(out)


def _follower() -> tuple[RoomFollower, _Conn, Binding]:
    conn = _Conn()
    binding = Binding(room_id="r", token="r.t", player_id="p1", role="player", host=False)
    conn.binding = binding
    return RoomFollower(conn), conn, binding  # type: ignore[arg-type]


def _answer_event(seq: int, client_seq: int) -> spb.RoomEvent:
    event = spb.RoomEvent(seq=seq, batch_end=True)
    event.play_answer.player_id = "p1"
    event.play_answer.response.client_seq = client_seq
    event.play_answer.response.seq = seq
    return event


async def test_a_moves_answer_on_the_stream_is_sent_as_played() -> None:
    follower, conn, binding = _follower()
    expected = follower.expect_answer(3, "id-3", 0.0)
    assert expected is not None
    follower._on_stream_item(
        binding, spb.SubscribeResponse(batch=spb.EventBatch(events=[_answer_event(7, 3)]))
    )
    assert expected.sent and expected.future.result().played.seq == 7
    played = [out.msg.played for out in conn.delivered if out.msg.HasField("played")]
    assert [(p.client_seq, p.seq) for p in played] == [(3, 7)]


async def test_a_snapshot_tells_the_waiting_plays_their_answers_are_lost() -> None:
    follower, conn, binding = _follower()
    expected = follower.expect_answer(4, None, 0.0)
    assert expected is not None
    snapshot = spb.SubscribeResponse(snapshot=spb.Snapshot(seq=40, reason="GAP_TOO_OLD"))
    follower._on_stream_item(binding, snapshot)
    with pytest.raises(AnswerLost):
        expected.future.result()
    assert not expected.sent
    assert not any(out.msg.HasField("played") for out in conn.delivered), "no `played` from the stream"
    assert follower.last_seq == 40


async def test_an_ended_room_stream_tells_the_waiting_plays_their_answers_are_lost() -> None:
    follower, conn, binding = _follower()
    expected = follower.expect_answer(5, None, 0.0)
    assert expected is not None
    conn.binding = None  # the connection left its room: the stream is not followed again
    follower.follow(binding)
    assert follower.pump is not None
    await asyncio.wait_for(follower.pump, 1)
    with pytest.raises(AnswerLost):
        expected.future.result()

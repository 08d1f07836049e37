"""Plays that name the view they were chosen from (``PlayRequest.expected_move_seq``).

A play chosen for one situation must not land in another: once the game has moved past the view
the play names, the session refuses it (ABORTED, VIEW_OUTDATED) and changes nothing. The
client_seq checks still come first, so a resent play gets its first outcome back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc

from ninetynine.engine.v1 import view_pb2
from ninetynine.session.errors import REASONS
from ninetynine.session.v1 import session_service_pb2 as pb
from tests.session.conftest import Stack
from tests.session.helpers import ENGLISH, is_english, is_korean, only_error_info, refused, room_of

MakeStack = Callable[..., Awaitable[Stack]]


async def _views(stack: Stack, tokens: list[str]) -> dict[str, view_pb2.GameView]:
    return {t: (await stack.stub.GetView(pb.GetViewRequest(token=t))).view for t in tokens}


async def test_a_play_from_an_outdated_view_is_refused_and_changes_nothing(make_stack: MakeStack) -> None:
    stack = await make_stack(time_scale=1.0)  # 15 s turns: no timeout moves the game meanwhile
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    tokens = [a.seat_token, b.seat_token]
    first_views = await _views(stack, tokens)
    first_mover = next(t for t, v in first_views.items() if v.my_turn)
    opening = first_views[first_mover]

    # The right move counter: the play applies.
    first = await stack.stub.Play(
        pb.PlayRequest(
            token=first_mover,
            client_seq=1,
            action=opening.legal_plays[0].action,
            expected_move_seq=opening.seq,
        )
    )
    assert not first.duplicate

    # Whoever is to move now holds a play that is legal now, but names the opening view.
    before = await _views(stack, tokens)
    mover = next(t for t, v in before.items() if v.my_turn)
    assert before[mover].seq == opening.seq + 1
    room_before = await room_of(stack.stub, a.room.room_id)
    legal_now = before[mover].legal_plays[0].action
    stale = pb.PlayRequest(token=mover, client_seq=2, action=legal_now, expected_move_seq=opening.seq)
    korean = await refused(stack.stub.Play(stale), grpc.StatusCode.ABORTED, "VIEW_OUTDATED")
    info = only_error_info(korean)
    assert dict(info.metadata) == {"moveSeq": str(opening.seq), "currentMoveSeq": str(opening.seq + 1)}
    _, ko, en = REASONS["VIEW_OUTDATED"]
    assert is_korean(korean.details()) and korean.details() == ko
    stale.client_seq = 3
    english = await refused(
        stack.stub.Play(stale, metadata=ENGLISH), grpc.StatusCode.ABORTED, "VIEW_OUTDATED"
    )
    assert is_english(english.details()) and english.details() == en

    # Nothing was applied: same room log, same total, same hands, still the same player's turn.
    room_after = await room_of(stack.stub, a.room.room_id)
    assert room_after.last_seq == room_before.last_seq
    after = await _views(stack, tokens)
    for token in tokens:
        assert after[token].seq == before[token].seq
        assert after[token].total == before[token].total
        assert [c.card.id for c in after[token].hand] == [c.card.id for c in before[token].hand]
        assert after[token].my_turn == before[token].my_turn

    # A refused play does not use up the turn: the same card with today's counter applies.
    applied = await stack.stub.Play(
        pb.PlayRequest(token=mover, client_seq=4, action=legal_now, expected_move_seq=before[mover].seq)
    )
    assert not applied.duplicate and applied.seq > room_before.last_seq


async def test_a_resent_client_seq_returns_its_first_outcome_even_when_its_view_is_old(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(time_scale=1.0)
    a = await stack.stub.CreateRoom(pb.CreateRoomRequest(name="A", max_seats=2))
    b = await stack.stub.JoinRoom(pb.JoinRoomRequest(room_id=a.room.room_id, name="B"))
    await stack.stub.StartGame(pb.StartGameRequest(token=a.seat_token))
    views = await _views(stack, [a.seat_token, b.seat_token])
    mover = next(t for t, v in views.items() if v.my_turn)
    request = pb.PlayRequest(
        token=mover,
        client_seq=7,
        action=views[mover].legal_plays[0].action,
        expected_move_seq=views[mover].seq,
    )
    first = await stack.stub.Play(request)
    # The game has moved on (by this very play), so the request's counter is old now; it was applied
    # once, and a client that never saw the answer must get that answer, not VIEW_OUTDATED.
    again = await stack.stub.Play(request)
    assert again.duplicate and not first.duplicate
    assert (again.client_seq, again.seq, again.total) == (first.client_seq, first.seq, first.total)
    now = (await stack.stub.GetView(pb.GetViewRequest(token=mover))).view
    assert now.seq == views[mover].seq + 1, "the resent request applied nothing"

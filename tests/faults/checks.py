"""Room integrity checks against the session's own record (GetReplay / GetRoom)."""

from __future__ import annotations

from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc
from tests.faults.players import WsPlayer


async def assert_room_intact(stub: pb_grpc.SessionServiceAsyncStub, room_id: str) -> pb.GetReplayResponse:
    """A finished room whose log has no hole and one stored move per card played."""
    room = (await stub.GetRoom(pb.GetRoomRequest(room_id=room_id), timeout=10)).room
    assert room.phase == pb.ROOM_PHASE_FINISHED, f"room {room_id} is stuck in phase {room.phase}"
    replay: pb.GetReplayResponse = await stub.GetReplay(pb.GetReplayRequest(room_id=room_id), timeout=10)
    assert [e.seq for e in replay.events] == list(range(1, len(replay.events) + 1)), "a hole in the log"
    played = [e for e in replay.events if e.HasField("game") and e.game.HasField("card_played")]
    assert len(played) == len(replay.moves), "each card played is one stored move"
    assert [e.game.card_played.seq for e in played] == list(range(1, len(played) + 1))
    return replay


def assert_acked_moves_in_replay(replay: pb.GetReplayResponse, player_id: str, acked_seqs: list[int]) -> None:
    """Every acknowledged play of ``player_id`` is the last card played at or before its seq."""
    by_seq = {e.seq: e for e in replay.events}
    for acked in acked_seqs:
        assert acked in by_seq, f"acknowledged seq {acked} is not in the replay"
        last_played = max(
            s
            for s, e in by_seq.items()
            if s <= acked and e.HasField("game") and e.game.HasField("card_played")
        )
        played = by_seq[last_played].game.card_played
        assert played.player_id == player_id, (
            f"seq {acked} acknowledged to {player_id} is {played.player_id}'s move"
        )


async def game_event_seqs(stub: pb_grpc.SessionServiceAsyncStub, token: str) -> list[int]:
    """Seqs of the game events the session holds for this seat's eyes, start to gameFinished.

    These are what the gateway forwards as ``event`` messages (room, presence and hidden events
    are not), so a client that lost or repeated nothing saw exactly these.
    """
    seqs: list[int] = []
    stream = stub.Subscribe(pb.SubscribeRequest(token=token, after_seq=0), timeout=20)
    try:
        async for item in stream:
            if item.HasField("event") and item.event.HasField("game"):
                seqs.append(item.event.seq)
                if item.event.game.HasField("game_finished"):
                    break
    finally:
        stream.cancel()
    return seqs


async def assert_player_saw_the_game(
    stub: pb_grpc.SessionServiceAsyncStub, replay: pb.GetReplayResponse, player: WsPlayer
) -> None:
    """Through whatever failed: the player's acknowledged moves are in the replay, and their stream
    had every game event of their seat once, in order, with no snapshot standing in for a gap."""
    assert player.player_id is not None
    assert_acked_moves_in_replay(replay, player.player_id, player.acked)
    assert not player.repeated, f"{player.player_id} was sent events {player.repeated} twice"
    assert not [m for m in player.messages if m["type"] == "snapshot"], "nothing was lost"
    expected = await game_event_seqs(stub, player.token)
    assert player.event_seqs == expected, f"{player.player_id} missed or reordered events"

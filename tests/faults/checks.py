"""Room integrity checks against the session's own record (GetReplay / GetRoom)."""

from __future__ import annotations

from ninetynine.session.v1 import session_service_pb2 as pb
from ninetynine.session.v1 import session_service_pb2_grpc as pb_grpc


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

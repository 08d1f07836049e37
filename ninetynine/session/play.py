"""A seat's play: checked against the client's seq and the view it was chosen from, judged by the engine.

A play's outcome, applied or refused by the rules, is committed before it is answered (with the
seat's ``client_seq``), so that a resent play gets its first outcome back on any replica and a
refused one is never applied later. An applied play's answer is also committed on the move's last
event (``RoomEvent.play_answer``), so that a caller following the room learns it from the room's
stream without an answer of its own (``PlayManyRequest.answer_on_room_stream``).
:func:`advance` records a move in the document; the deadline scheduler's bot and timeout moves go
through it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ninetynine.common.context import bind_rpc_fields
from ninetynine.common.errors import ServiceError
from ninetynine.engine.v1 import engine_service_pb2, game_pb2
from ninetynine.session import games, rooms
from ninetynine.session.enginecalls import EngineCalls
from ninetynine.session.errors import session_error
from ninetynine.session.roomcache import NoChange, RoomCache, Step
from ninetynine.session.v1 import room_document_pb2 as doc_pb
from ninetynine.session.v1 import session_service_pb2 as pb


def advance(
    doc: doc_pb.RoomDocument,
    player_id: str,
    action: game_pb2.Action,
    source: str,
    now: int,
) -> None:
    """Record one move (how it was made) in the room document the engine wrote its new state into."""
    doc.moves.add(player_id=player_id, action=action, source=source, at_ms=now)
    if games.of(doc).finished(doc):
        doc.phase = pb.ROOM_PHASE_FINISHED


@dataclass(frozen=True, slots=True)
class PlayOutcome:
    """What a play returned, and whether its answer rides the move's last event (a new move)."""

    response: pb.PlayResponse
    on_room_stream: bool


class Plays:
    """The Play RPC's logic."""

    def __init__(self, cache: RoomCache, engine: EngineCalls) -> None:
        self.cache = cache
        self.engine = engine

    async def play(
        self,
        token: str,
        client_seq: int,
        action: game_pb2.Action,
        expected_move_seq: int | None = None,
    ) -> PlayOutcome:
        """Apply one play; ``expected_move_seq`` (the move counter of the view it was chosen from)
        refuses it with VIEW_OUTDATED once the game has moved past that view."""
        if client_seq < 1:
            raise session_error("INVALID_CLIENT_SEQ")
        games.check_any_action(action)
        room_id = rooms.token_room(token)
        refusal: list[ServiceError] = []  # the refusal the committed step recorded
        made: list[PlayOutcome] = []  # or the move it made

        async def step(doc: doc_pb.RoomDocument, now: int) -> Step:
            refusal.clear()
            made.clear()
            caller = rooms.identify(doc, token)
            if caller.player_id is None:
                raise session_error("SPECTATOR_CANNOT_ACT")
            bind_rpc_fields(player_id=caller.player_id)
            seat = rooms.seat_of(doc, caller.player_id)
            if client_seq == seat.last_client_seq:
                first = rooms.last_refusal(seat)
                if first is not None:
                    raise first
                raise NoChange(
                    pb.PlayResponse(
                        client_seq=client_seq,
                        seq=seat.last_outcome_seq,
                        total=seat.last_outcome_total,
                        duplicate=True,
                    )
                )
            if client_seq < seat.last_client_seq:
                raise session_error("STALE", clientSeq=client_seq, lastClientSeq=seat.last_client_seq)
            games.of(doc).check_action(action)
            try:
                applied = await self._judge(room_id, doc, caller.player_id, action, expected_move_seq, now)
            except ServiceError as err:
                if not rooms.is_play_outcome(err):
                    raise  # transient: nothing is recorded, the same client_seq may be sent again
                # The refusal is the play's outcome: committed (without events) before it is
                # answered, so that the same client_seq gets it again on any replica, and is
                # never applied later when the situation would allow it.
                rooms.refuse_play(seat, client_seq, err)
                refusal.append(err)
                return Step()
            out = Step(source="player")
            out.add_game(applied.events)
            advance(doc, caller.player_id, action, "player", now)
            seat.consecutive_timeouts = 0
            seat.last_client_seq = client_seq
            seat.last_outcome_seq = doc.last_seq + len(out.events)
            seat.last_outcome_total = games.of(doc).outcome_total(doc)
            seat.ClearField("last_refusal")
            response = pb.PlayResponse(
                client_seq=client_seq, seq=seat.last_outcome_seq, total=seat.last_outcome_total
            )
            if out.events:
                answer = out.events[-1][0].play_answer
                answer.player_id = caller.player_id
                answer.response.CopyFrom(response)
            made.append(PlayOutcome(response, on_room_stream=bool(out.events)))
            return out

        try:
            await self.cache.mutate(room_id, step)
        except NoChange as dup:
            assert isinstance(dup.answer, pb.PlayResponse)
            return PlayOutcome(dup.answer, on_room_stream=False)
        if refusal:
            raise refusal[0]
        return made[0]

    async def _judge(
        self,
        room_id: str,
        doc: doc_pb.RoomDocument,
        player_id: str,
        action: game_pb2.Action,
        expected_move_seq: int | None,
        now: int,
    ) -> engine_service_pb2.ApplyResponse:
        """The engine's answer to ``player_id`` playing ``action`` now (its new state written into
        ``doc.state``), or the refusal of it."""
        if doc.phase == pb.ROOM_PHASE_LOBBY:
            raise session_error("GAME_NOT_STARTED", roomId=doc.room_id)
        # After the client_seq checks, so a resent play still gets its first outcome: a play
        # chosen for an older situation must not land at today's total just because it is legal.
        game = games.of(doc)
        if expected_move_seq is not None and game.outdated(doc, expected_move_seq):
            current = game.state_seq(doc)
            raise session_error("VIEW_OUTDATED", moveSeq=expected_move_seq, currentMoveSeq=current)
        return await self.engine.apply(doc, self.cache.wire_at(room_id, doc.state), player_id, action, now)

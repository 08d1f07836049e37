"""Results and replays of finished games: the rules' result, the revealed seed, every move and event."""

from __future__ import annotations

from ninetynine.session import games
from ninetynine.session.errors import session_error
from ninetynine.session.roomcache import Loaded, RoomCache
from ninetynine.session.v1 import session_service_pb2 as pb


class Results:
    """GetResult and GetReplay."""

    def __init__(self, cache: RoomCache) -> None:
        self.cache = cache
        self.store = cache.store

    async def _finished(self, room_id: str) -> Loaded:
        loaded = await self.cache.load(room_id, fresh=True)
        if loaded.doc.phase != pb.ROOM_PHASE_FINISHED or not loaded.doc.HasField("state"):
            raise session_error("GAME_NOT_FINISHED", roomId=room_id)
        return loaded

    async def get_result(self, room_id: str) -> pb.GetResultResponse:
        loaded = await self._finished(room_id)
        game = games.of(loaded.doc)
        seed, commitment = game.seed(loaded.doc)
        response = pb.GetResultResponse(seed=seed, seed_commitment=commitment)
        game.result_into(loaded.game_state(), response)
        return response

    async def get_replay(self, room_id: str) -> pb.GetReplayResponse:
        loaded = await self._finished(room_id)
        doc = loaded.doc
        game = games.of(doc)
        response = pb.GetReplayResponse()
        game.replay_into(doc, loaded.game_state(), response)
        response.seed, response.seed_commitment = game.seed(doc)
        response.moves.extend(doc.moves)
        response.display_names.update({s.player_id: s.name for s in doc.seats})
        response.started_at_ms = doc.started_at_ms
        after = 0
        while True:
            batch = await self.cache.store_call("read", self.store.read_events(room_id, after, 1000))
            if not batch:
                break
            response.events.extend(pb.RoomEvent.FromString(e.payload) for e in batch)
            after = batch[-1].seq
        game.result_into(loaded.game_state(), response)
        return response

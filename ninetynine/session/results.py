"""Results and replays of finished games: the rules' result, the revealed seed, every move and event."""

from __future__ import annotations

from ninetynine.engine.convert import result_into
from ninetynine.engine.errors import from_rule_error
from ninetynine.engine.rules import RuleError, check_replayable, game_result
from ninetynine.session import rulebook
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
        game = loaded.game_state()
        response = pb.GetResultResponse(seed=game.seed, seed_commitment=game.seed_commitment)
        result_into(game_result(game).to_dict(), response.result)
        return response

    async def get_replay(self, room_id: str) -> pb.GetReplayResponse:
        loaded = await self._finished(room_id)
        game = loaded.game_state()
        try:
            check_replayable(game)
        except RuleError as err:
            raise from_rule_error(err) from None
        doc = loaded.doc
        response = pb.GetReplayResponse(
            player_ids=list(game.seats),
            options=doc.options,
            seed=game.seed,
            seed_commitment=game.seed_commitment,
            moves=list(doc.moves),
            display_names={s.player_id: s.name for s in doc.seats},
            started_at_ms=doc.started_at_ms,
        )
        if rulebook.plays_rules(doc.rules, doc.overrides):
            response.rules.CopyFrom(rulebook.room_rules(doc.rules, doc.overrides, doc.options))
        after = 0
        while True:
            batch = await self.cache.store_call("read", self.store.read_events(room_id, after, 1000))
            if not batch:
                break
            response.events.extend(pb.RoomEvent.FromString(e.payload) for e in batch)
            after = batch[-1].seq
        result_into(game_result(game).to_dict(), response.result)
        return response
